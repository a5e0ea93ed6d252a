"""Worker of the 2-process gloo test. Loads ``projections/maths/statistics.py`` by file path (it needs only numpy and
torch), so the spawned processes skip importing transformers through the ``hf_dumpembed`` package."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np

STATS_FILE = Path(__file__).resolve().parents[2] / "hf_dumpembed" / "projections" / "maths" / "statistics.py"


def _stats_module():
    spec = importlib.util.spec_from_file_location("_dumpembed_stats", STATS_FILE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def worker(rank: int, world: int, port: int, x: np.ndarray, out: str) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        shard = np.array_split(x, world)[rank]
        stats = _stats_module().StreamingStats(x.shape[1]).update(shard).all_reduce()
        np.savez(f"{out}.{rank}.npz", count=stats.count, sum=stats.sum, sum_outer=stats.sum_outer)
    finally:
        dist.destroy_process_group()
