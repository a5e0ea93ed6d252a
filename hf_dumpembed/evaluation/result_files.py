"""mteb result files on disk (``<model_name>/<revision>/<Task>.json``): find them, read them with mteb's own class."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
