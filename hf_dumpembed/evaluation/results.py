"""mteb results on disk (``<model_name>/<revision>/<Task>.json``): find, read and tabulate them with mteb's own
result classes (``TaskResult``, ``ModelResult``)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# The retrieval metrics shown next to each task (mteb's score keys), in order.
TABLE_METRICS = {"ndcg_at_10": "nDCG@10", "recall_at_10": "Recall@10", "mrr_at_10": "MRR@10"}


def result_files(results_dir: Path) -> list[Path]:
    """Task files of mteb's layout under ``results_dir`` (itself, or the ``results/`` inside a ResultCache)."""
    files: list[Path] = []
    for base in (results_dir, results_dir / "results"):
        files += [p for p in base.glob("*/*/*.json") if p.name != "model_meta.json"]
    return sorted(set(files))


def read_task_result(path: Path) -> Any:
    """``mteb.results.TaskResult.from_disk(path)``, with an error naming the file when it is not one."""
    from mteb.results import TaskResult

    try:
        return TaskResult.from_disk(path)
    except Exception as error:  # mteb raises pydantic / JSON errors: name the file
        raise ValueError(f"{path} is not a valid mteb result file: {error}") from error


def result_identity(revision_dir: Path) -> tuple[str, str]:
    """(model name, revision) from mteb's ``model_meta.json``, else from the folder names as mteb does."""
    meta_path = revision_dir / "model_meta.json"
    if meta_path.exists():
        meta = json.loads(meta_path.read_text())
        return str(meta["name"]), str(meta.get("revision") or revision_dir.name)
    return revision_dir.parent.name.replace("__", "/"), revision_dir.name


# The retrieval metrics the card shows next to each task's main score.
METRICS = TABLE_METRICS


@dataclass(frozen=True)
class EvalRow:
    """One (task, split, subset) line of the evaluation table."""

    task: str
    split: str
    subset: str
    main_score: float
    metrics: dict[str, float]


@dataclass(frozen=True)
class EvalTable:
    """The results of one model revision, as the card shows them."""

    model_name: str
    revision: str
    mteb_version: str
    rows: list[EvalRow]

    @property
    def metric_columns(self) -> list[str]:
        """Metrics every row has (a column is shown only when no cell would be empty)."""
        return [key for key in METRICS if all(key in row.metrics for row in self.rows)]


def load_model_results(results_dir: str | Path) -> list[Any]:
    """Every model revision under ``results_dir`` as mteb ``ModelResult`` objects (``TaskResult.from_disk``)."""
    from mteb.results import ModelResult

    results_dir = Path(results_dir)
    if not results_dir.is_dir():
        raise FileNotFoundError(f"The results folder {results_dir} does not exist; run `hf-dumpembed eval` first.")
    grouped: dict[tuple[str, str], list[Any]] = {}
    for path in result_files(results_dir):
        grouped.setdefault(result_identity(path.parent), []).append(read_task_result(path))
    if not grouped:
        raise ValueError(
            f"No mteb results under {results_dir}: expected mteb's layout <model_name>/<revision>/<Task>.json "
            "(directly or under results/), as written by `hf-dumpembed eval`."
        )
    return [
        ModelResult(model_name=name, model_revision=rev, task_results=tasks) for (name, rev), tasks in grouped.items()
    ]


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


def eval_table(results_dir: str | Path, model_names: list[str]) -> EvalTable:
    """The evaluation table of the model named like ``model_names`` in ``results_dir`` (mteb results layout)."""
    results_dir = Path(results_dir)
    chosen = select_model_result(load_model_results(results_dir), model_names, results_dir)
    rows = []
    versions = set()
    for task_result in sorted(chosen.task_results, key=lambda t: t.task_name):
        versions.add(task_result.mteb_version or "")
        for split, entries in task_result.scores.items():
            for entry in entries:
                metrics = {k: float(entry[k]) for k in METRICS if isinstance(entry.get(k), (int, float))}
                rows.append(EvalRow(task_result.task_name, split, str(entry["hf_subset"]),
                                    float(entry["main_score"]), metrics))
    return EvalTable(chosen.model_name, str(chosen.model_revision or ""), ", ".join(sorted(v for v in versions if v)),
                     rows)
