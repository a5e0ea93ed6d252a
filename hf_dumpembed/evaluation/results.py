"""mteb results on disk (``<model_name>/<revision>/<Task>.json``), read with mteb's own ``ResultCache`` into its
``BenchmarkResults``; one `EvalRow` per (task, split, subset) for the tables that show them."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._utils.tables import render_markdown

logger = logging.getLogger(__name__)

# The retrieval metrics shown next to each task (mteb's score keys), in order.
TABLE_METRICS = {"ndcg_at_10": "nDCG@10", "recall_at_10": "Recall@10", "mrr_at_10": "MRR@10"}
LAYOUT = ("mteb's layout DIR/results/<model_name>/<revision>/<Task>.json (DIR as passed to `hf-dumpembed eval "
          "--results-dir`), or the results/ folder itself")


@dataclass(frozen=True)
class EvalRow:
    """One (task, split, subset) result: its main score and every numeric score mteb recorded."""

    task: str
    split: str
    subset: str
    main_score: float
    scores: dict[str, float]


def eval_rows(task_results: Iterable[Any]) -> list[EvalRow]:
    """The rows of mteb ``TaskResult`` objects, in their order."""
    rows = []
    for task_result in task_results:
        for split, entries in task_result.scores.items():
            for entry in entries:
                scores = {k: float(v) for k, v in entry.items() if isinstance(v, (int, float))}
                rows.append(EvalRow(task_result.task_name, split, str(entry.get("hf_subset", "default")),
                                    float(entry["main_score"]), scores))
    return rows


def result_cache(results_dir: str | Path) -> Any:
    """mteb's ``ResultCache`` over ``results_dir``: a cache root (it holds ``results/``), or that ``results/``."""
    from mteb.cache import ResultCache

    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise FileNotFoundError(f"The results folder {results_dir} does not exist; run `hf-dumpembed eval` first.")
    if (results_dir / "results").is_dir():
        return ResultCache(results_dir)
    if results_dir.name == "results":
        return ResultCache(results_dir.parent)
    raise ValueError(f"No mteb results under {results_dir}: expected {LAYOUT}, as written by `hf-dumpembed eval`.")


def result_files(results_dir: str | Path) -> list[Path]:
    """Task files of mteb's layout under ``results_dir`` (a cache root or its ``results/``), sorted."""
    cache = result_cache(results_dir)
    return sorted(cache.get_cache_paths(require_model_meta=False, include_remote=False))


def read_task_result(path: Path) -> Any:
    """``mteb.results.TaskResult.from_disk(path)``, with an error naming the file when it is not one."""
    from mteb.results import TaskResult

    try:
        return TaskResult.from_disk(path)
    except Exception as error:  # mteb raises pydantic / JSON errors: name the file
        raise ValueError(f"{path} is not a valid mteb result file: {error}") from error


def load_results(results_dir: str | Path) -> Any:
    """Every model revision under ``results_dir`` as mteb's ``BenchmarkResults`` (``ResultCache.load_results``),
    model revisions and their tasks in name order; an error naming the file when one is not a valid result."""
    cache = result_cache(results_dir)
    try:
        results = cache.load_results(require_model_meta=False, include_remote=False)
    except Exception:
        for path in result_files(results_dir):
            read_task_result(path)  # raises, naming the broken file
        raise
    if not results.model_results:
        raise ValueError(f"{results_dir} holds no mteb results: expected {LAYOUT}, as written by `hf-dumpembed eval`.")
    for model_result in results.model_results:
        model_result.task_results.sort(key=lambda t: t.task_name)
    results.model_results.sort(key=lambda r: (r.model_name, str(r.model_revision or "")))
    return results


def embed_dim(model_result: Any) -> int | None:
    """The output dimension recorded in the revision's ``model_meta.json`` (None when there is none)."""
    meta = getattr(model_result, "model_meta", None)
    dim = getattr(meta, "embed_dim", None)
    return int(dim) if dim else None


def _matches(model_name: str, wanted: list[str]) -> bool:
    names = {model_name, model_name.replace("__", "/"), model_name.split("/")[-1]}
    return any(w in names or w.split("/")[-1] in names for w in wanted if w)


def select_model_result(model_results: list[Any], wanted: list[str], results_dir: Path) -> Any:
    """The results of this model: the only model in the folder, or the one named like ``wanted``."""
    models = sorted({r.model_name for r in model_results})
    candidates = model_results if len(models) == 1 else [r for r in model_results if _matches(r.model_name, wanted)]
    if not candidates:
        raise ValueError(
            f"{results_dir} holds results of several models ({', '.join(models)}) and none is named like "
            f"{' / '.join(w for w in wanted if w)}; pass --results-model NAME to choose one."
        )
    if len({r.model_name for r in candidates}) > 1:
        names = ", ".join(sorted({r.model_name for r in candidates}))
        raise ValueError(f"Several models in {results_dir} match ({names}); pass --results-model NAME to choose one.")

    def newest(result: Any) -> float:
        dates = [t.date.timestamp() for t in result.task_results if t.date is not None]
        return max(dates, default=0.0)

    chosen = max(candidates, key=newest)
    if len(candidates) > 1:
        logger.info("Several revisions of %s in %s; using the newest, %s", chosen.model_name, results_dir,
                    chosen.model_revision)
    return chosen


def card_evaluation(results_dir: str | Path, model_dir: str | Path, model_id: str | None = None,
                    results_model: str | None = None) -> dict[str, Any]:
    """The model card's evaluation table (`hf_dumpembed.model.card.render_card`'s ``evaluation``) from the mteb
    results under ``results_dir``: those of ``results_model``, else of the model named like ``model_id`` or like
    ``model_dir``'s folder name."""
    names = [results_model] if results_model else [model_id or str(model_dir), Path(model_dir).name]
    results_dir = Path(results_dir)
    chosen = select_model_result(load_results(results_dir).model_results, names, results_dir)
    rows = eval_rows(chosen.task_results)
    columns = [key for key in TABLE_METRICS if all(key in row.scores for row in rows)]  # no column with empty cells
    header = ["task", "split", "subset", *[TABLE_METRICS[c] for c in columns], "main score"]
    body = [
        [f"`{row.task}`", row.split, row.subset, *[f"{row.scores[c]:.4f}" for c in columns], f"{row.main_score:.4f}"]
        for row in rows
    ]
    return {
        "model_name": chosen.model_name,
        "revision": str(chosen.model_revision or ""),
        "mteb_version": ", ".join(sorted({t.mteb_version for t in chosen.task_results if t.mteb_version})),
        "table": render_markdown(header, body),
        "tasks": sorted({row.task for row in rows}),
    }
