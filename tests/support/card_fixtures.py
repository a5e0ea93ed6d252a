"""Model folders with projection / training / evaluation metadata set per the agreed schemas (card, push tests)."""

from __future__ import annotations

import json
import os
import shutil
import struct
import zlib
from pathlib import Path

SHA = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
PROJECTION_INFO = {
    "method": "spectemp",
    "mode": "reference",
    "dim": None,  # set to the folder's projection_dim
    "gamma": 0.4861,
    "knee": 7,
    "ratio": None,
    "seed": None,
    "corpus": {"path": "data/StdlibCodeTrain/corpus.jsonl", "sha256": SHA, "num_texts": 2048},
    "fitted_at": "2026-11-30",
    "plots": ["plots/spectrum.png", "plots/gamma.png", "plots/missing.png"],
}
TRAINING_INFO = {
    "datasets": [
        {"name": "StdlibCodeTrain", "path": "data/StdlibCodeTrain", "sha256": SHA, "num_rows": 1234},
        {"name": "rlhn/rlhn-100K", "path": "rlhn/rlhn-100K", "sha256": SHA, "num_rows": 100000},
    ],
    "loss": "CachedMultipleNegativesRankingLoss",
    "hyperparameters": {"learning_rate": 0.0001, "per_device_train_batch_size": 64, "warmup_ratio": 0.05,
                        "num_train_epochs": 1},
    "seed": 12,
    "steps": 321,
    "trained_at": "2026-11-30T12:00:00",
}


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    """A small valid grey PNG image."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes([128] * width) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def copy_model(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def hub_cache_snapshot(source: Path, snapshot: Path, blobs: Path) -> Path:
    """``source`` laid out as a Hub cache snapshot: every file a link to a blob of its own."""
    for path in sorted(source.rglob("*")):
        if path.is_file():
            rel = path.relative_to(source)
            blob = blobs / rel.as_posix().replace("/", "__")
            blob.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, blob)
            (snapshot / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(blob, snapshot / rel)
    return snapshot


def set_config(model_dir: Path, **fields: object) -> None:
    """Set top-level config.json fields, as the projection fit and the training write them."""
    path = model_dir / "config.json"
    config = json.loads(path.read_text())
    config.update(fields)
    path.write_text(json.dumps(config, indent=2))


def add_projection_metadata(model_dir: Path) -> None:
    dim = json.loads((model_dir / "config.json").read_text())["projection_dim"]
    set_config(model_dir, projection_info={**PROJECTION_INFO, "dim": dim})
    (model_dir / "plots").mkdir(exist_ok=True)
    # snr.png exists but is not listed; missing.png is listed but does not exist
    for name in ("spectrum.png", "gamma.png", "snr.png"):
        (model_dir / "plots" / name).write_bytes(png_bytes())


def add_training_metadata(model_dir: Path) -> None:
    set_config(model_dir, training_info=TRAINING_INFO)
    (model_dir / "training").mkdir(exist_ok=True)
    (model_dir / "training" / "config.yaml").write_text("backbone: tiny\nnum_dump_tokens: 4\nseed: 12\n")
    (model_dir / "training" / "environment.json").write_text(json.dumps({"torch": "2.13.0"}))


def write_mteb_results(results_dir: Path, model_name: str, revision: str, scores: dict[str, float]) -> Path:
    """mteb's own TaskResult for NQHardNegatives (metadata ships with mteb), saved in mteb's results layout."""
    import mteb
    from mteb.results import TaskResult

    task = mteb.get_task("NQHardNegatives")
    result = TaskResult.from_task_results(task, {"test": {"default": scores}}, evaluation_time=1.5)
    folder = results_dir / model_name.replace("/", "__") / revision
    folder.mkdir(parents=True, exist_ok=True)
    result.to_disk(folder / f"{task.metadata.name}.json")
    return folder
