"""What a training run records about its data: public names (no absolute local paths) and the data hashes a
resumed run must match."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

from .._utils.public_paths import public_path
from .config import TrainConfig
from .data import DataReport

logger = logging.getLogger(__name__)

DATA_HASHES = "data_sha256.json"


def _public(value: Any) -> Any:
    """``value`` with every absolute path string (at any depth of dataclasses, tuples, lists, dicts) made public."""
    if isinstance(value, str):
        return public_path(value) if Path(value).expanduser().is_absolute() else value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: _public(getattr(value, f.name))
                                             for f in dataclasses.fields(value) if f.init})
    if isinstance(value, (list, tuple)):
        return type(value)(_public(item) for item in value)
    if isinstance(value, dict):
        return {key: _public(item) for key, item in value.items()}
    return value


def public_config(config: TrainConfig) -> TrainConfig:
    """The run config as published in ``training/config.yaml``: every local path (data, backbone, output,
    checkpoints, mining model and cache, ...) as a relative path or a name."""
    return _public(config)


def public_report(report: DataReport, entry: bool = False) -> dict[str, Any]:
    """``training/data_files.json`` row (or, with ``entry``, the ``training_info["datasets"]`` entry) of one data
    source, naming it by name, relative path and sha256."""
    row = _public(report.dataset_entry() if entry else dataclasses.asdict(report))
    row["path"] = public_path(report.path)
    return row


def check_data_unchanged(checkpoints: Path, reports: list[DataReport], resuming: bool) -> None:
    """Record the training data's hashes next to the checkpoints; when resuming, refuse data that changed since."""
    path = checkpoints / DATA_HASHES
    now = {report.name: report.sha256 for report in reports}
    if resuming and path.is_file():
        before = json.loads(path.read_text(encoding="utf-8"))
        changed = sorted(name for name in set(before) | set(now) if before.get(name) != now.get(name))
        if changed:
            details = "; ".join(f"{name}: sha256 {str(before.get(name))[:12]} then, {str(now.get(name))[:12]} now"
                                for name in changed)
            raise ValueError(f"--resume: the training data changed since the checkpoints in {checkpoints} were made "
                             f"({details}). Resume with the data the run started with, or start a new run "
                             "elsewhere (or delete the checkpoints).")
        return
    if resuming:
        logger.warning("--resume: %s has no record of the data hashes (an older run); recording them now.", checkpoints)
    checkpoints.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(now, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    partial.replace(path)
