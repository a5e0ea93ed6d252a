"""Markdown comparison tables from results files: method × task (× k), mean ± std over seeds.

Inputs (any mix):

* an mteb results folder as ``hf-dumpembed eval`` writes it (``[results/]<org>__<name>/<revision>/<Task>.json``),
  read with mteb's ``ResultCache``; method = the model name with a trailing ``-seed<N>`` / ``_seed<N>`` taken off
  as the seed, k = the model's ``embed_dim`` from ``model_meta.json``;
* a JSON file of rows: a list of objects, or ``{"rows": [...]}``, or an object whose values hold ``"rows"``.
  A row has ``method`` and optionally ``k`` and ``seed``; its scores are either ``task`` + the metric key (or
  ``value``), or one numeric column per task (wide rows, as the benchmark scripts write them).
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._utils.atomic import check_separate
from .._utils.folders import check_new_file, staged_file
from .._utils.tables import percent, relative_change, render_markdown
from .results import embed_dim, eval_rows, load_results

DEFAULT_METRIC = "ndcg_at_10"
_SEED_RE = re.compile(r"^(?P<method>.+?)[-_]seed(?P<seed>\d+)$")
_ROW_KEYS = {"method", "k", "seed", "task", "value", "label", "model"}
MODEL_FOLDER_FILES = ("config.json", "modules.json")  # a folder holding one of these is a model's: never written


@dataclass(frozen=True)
class Record:
    """One score: a method (at output dimension k) on a task with one seed."""

    method: str
    task: str
    value: float
    k: int | None = None
    seed: int | None = None


def _split_seed(name: str) -> tuple[str, int | None]:
    match = _SEED_RE.match(name)
    return (match["method"], int(match["seed"])) if match else (name, None)


def records_from_mteb(results_dir: Path, metric: str = DEFAULT_METRIC) -> list[Record]:
    """Records of every model revision under an mteb results folder (main split/subset mean per task)."""
    records = []
    for model_result in load_results(results_dir).model_results:
        method, seed = _split_seed(model_result.model_name)
        for result in model_result.task_results:
            values = [row.scores[metric] for row in eval_rows([result]) if metric in row.scores]
            if not values:
                raise ValueError(f"{model_result.model_name} has no {metric!r} score on {result.task_name}; choose "
                                 "another --metric.")
            records.append(Record(method, result.task_name, statistics.mean(values), embed_dim(model_result), seed))
    return records


def _rows(payload: Any) -> Iterable[dict[str, Any]]:
    if isinstance(payload, list):
        yield from payload
    elif isinstance(payload, dict) and isinstance(payload.get("rows"), list):
        yield from payload["rows"]
    elif isinstance(payload, dict):
        for value in payload.values():
            if isinstance(value, (dict, list)):
                yield from _rows(value)


def records_from_json(path: Path, metric: str = DEFAULT_METRIC) -> list[Record]:
    """Records of a JSON rows file (long or wide rows, see the module docstring)."""
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error.msg}).") from None
    records = []
    for number, row in enumerate(_rows(payload), start=1):
        if not isinstance(row, dict) or "method" not in row:
            continue
        k = int(row["k"]) if isinstance(row.get("k"), (int, float)) else None
        seed = int(row["seed"]) if isinstance(row.get("seed"), (int, float)) else None
        if "task" in row:
            value = row.get(metric, row.get("value"))
            if not isinstance(value, (int, float)):
                raise ValueError(f"{path}: row {number} has a task but no numeric {metric!r} or 'value'.")
            records.append(Record(str(row["method"]), str(row["task"]), float(value), k, seed))
            continue
        for task, value in row.items():
            if task not in _ROW_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool):
                records.append(Record(str(row["method"]), task, float(value), k, seed))
    if not records:
        raise ValueError(f"{path} holds no rows with a 'method' and scores; see `hf-dumpembed report --help`.")
    return records


def load_records(inputs: list[str | Path], metric: str = DEFAULT_METRIC) -> list[Record]:
    """Records of every input (mteb results folders and JSON row files)."""
    records: list[Record] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            records += records_from_mteb(path, metric)
        elif path.is_file():
            records += records_from_json(path, metric)
        else:
            raise FileNotFoundError(f"{path} does not exist (expected an mteb results folder or a JSON file).")
    return records


def _value(values: list[float]) -> float | dict[str, float]:
    """One seed: its value; several: ``{"mean", "std"}`` (sample std)."""
    if len(values) == 1:
        return values[0]
    return {"mean": statistics.mean(values), "std": statistics.stdev(values)}


def summary_table(records: list[Record], tasks: list[str] | None = None,
                  baseline: str | None = None) -> tuple[list[str], list[list[Any]]]:
    """Header and raw rows of the comparison table (see ``markdown_table``): a cell is a float, ``{"mean",
    "std"}`` over seeds, "–" where there is nothing, and the baseline column a relative change (0.01 = +1%) or
    None."""
    if not records:
        raise ValueError("no records to tabulate.")
    tasks = tasks or sorted({r.task for r in records})
    grouped: dict[tuple[str, int | None], dict[str, dict[int | None, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    order: list[tuple[str, int | None]] = []
    for record in records:
        key = (record.method, record.k)
        if key not in grouped:
            order.append(key)
        grouped[key][record.task][record.seed].append(record.value)
    show_k = any(k is not None for _, k in order)
    header = ["method", *(["k"] if show_k else []), "seeds", *tasks, "mean"]
    means: dict[tuple[str, int | None], float] = {}
    rows = []
    for key in sorted(order, key=lambda m: (m[1] is None, -(m[1] or 0), order.index(m))):
        by_task = grouped[key]
        seeds = sorted({s for t in by_task.values() for s in t}, key=lambda s: (s is None, s))
        cells: list[Any] = []
        per_seed_means = []
        for task in tasks:
            values = [statistics.mean(by_task[task][s]) for s in seeds if by_task[task].get(s)]
            cells.append(_value(values) if values else "–")
        if all(by_task[task].get(s) for task in tasks for s in seeds):
            per_seed_means = [statistics.mean(statistics.mean(by_task[t][s]) for t in tasks) for s in seeds]
        if per_seed_means:
            means[key] = statistics.mean(per_seed_means)
        seed_text = str(len(seeds)) if seeds != [None] else "–"
        rows.append((key, [key[0], *([str(key[1]) if key[1] is not None else "–"] if show_k else []), seed_text,
                           *cells, _value(per_seed_means) if per_seed_means else "–"]))
    if not baseline:
        return header, [cells for _, cells in rows]
    header.append(f"vs {baseline}")
    table = []
    for key, cells in rows:
        reference = means.get((baseline, key[1])) or next((v for (m, _), v in means.items() if m == baseline), None)
        gain = None if key[0] == baseline else relative_change(means.get(key), reference)
        table.append([*cells, gain])
    return header, table


def _text(cell: Any, digits: int) -> str:
    if isinstance(cell, dict):
        return f"{cell['mean']:.{digits}f} ± {cell['std']:.{digits}f}"
    return f"{cell:.{digits}f}" if isinstance(cell, float) else str(cell)


def markdown_table(records: list[Record], tasks: list[str] | None = None, digits: int = 4,
                   baseline: str | None = None) -> str:
    """One row per (method, k), one column per task plus the mean over tasks; cells are mean ± std over seeds
    (std over the per-seed values; a seed-less method shows its single value). ``baseline`` adds the relative
    change of each row's mean against that method's mean at the same k (or its only k)."""
    header, rows = summary_table(records, tasks, baseline)
    texts = [[_text(cell, digits) for cell in (row[:-1] if baseline else row)]
             + ([percent(row[-1])] if baseline else []) for row in rows]
    return render_markdown(header, texts) + "\n"


def check_report_target(out: str | Path, inputs: Iterable[str | Path], overwrite: bool = False) -> Path:
    """``out`` when a report may be written there: not an existing file (unless ``overwrite``), and, whatever
    ``overwrite`` says, neither one of ``inputs`` nor inside one, nor inside a model folder."""
    out = Path(out).expanduser()
    target = out.parent.resolve() / out.name  # where the rename puts it (a link at ``out`` is replaced, not followed)
    check_separate(target, inputs)
    model = next((f for f in target.parents if any((f / name).is_file() for name in MODEL_FOLDER_FILES)), None)
    if model is not None:
        raise ValueError(f"{out} is inside the model folder {model} (it holds config.json or modules.json), which a "
                         "report never writes into: choose a path outside it.")
    if out.is_dir():
        raise IsADirectoryError(f"{out} is a folder; give a file path.")
    if not overwrite:
        check_new_file(out)
    return out


def write_report(text: str, out: str | Path, inputs: Iterable[str | Path], overwrite: bool = False) -> Path:
    """Write ``text`` to ``out`` (checked by `check_report_target`) in one rename: a failed write leaves the old
    file, or none."""
    out = check_report_target(out, inputs, overwrite)
    with staged_file(out, overwrite=overwrite) as staging:
        staging.write_text(text, encoding="utf-8")
    return out
