"""Streaming corpus statistics: equal to one-shot np.cov + eigh, exact merges, torch.distributed all-reduce."""

from __future__ import annotations

import socket
import warnings

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from hf_dumpembed.projections.stats import StreamingStats, accumulate, eigendecompose
from tests import projection_dist_worker


def _data(n: int = 500, d: int = 24, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)) @ rng.standard_normal((d, d)) * 0.1 + rng.standard_normal(d)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


def test_streaming_equals_one_shot_cov_and_eigh() -> None:
    x = _data()
    stats = StreamingStats(x.shape[1])
    for start in range(0, len(x), 37):
        stats.update(x[start : start + 37])
    reference_cov = np.cov(x.astype(np.float64), rowvar=False)
    assert stats.count == len(x)
    assert _relative(stats.mean, x.astype(np.float64).mean(axis=0)) <= 1e-12
    assert _relative(stats.covariance(), reference_cov) <= 1e-10
    spectrum = eigendecompose(stats)
    reference_values = np.linalg.eigh(reference_cov)[0][::-1]
    assert _relative(spectrum.eigenvalues, reference_values) <= 1e-10
    assert np.all(np.diff(spectrum.eigenvalues) <= 0)
    # Columns are eigenvectors: C U = U Λ, and orthonormal.
    cov = stats.covariance()
    u = spectrum.eigenvectors
    assert np.abs(cov @ u - u * spectrum.eigenvalues).max() <= 1e-12
    assert np.abs(u.T @ u - np.eye(u.shape[1])).max() <= 1e-12


def test_merging_shards_equals_one_pass() -> None:
    x = _data(n=301)
    whole = StreamingStats(x.shape[1]).update(x)
    shards = [StreamingStats(x.shape[1]).update(part) for part in np.array_split(x, 4)]
    merged = shards[0]
    for shard in shards[1:]:
        merged.merge(shard)
    assert merged.count == whole.count
    assert _relative(merged.covariance(), whole.covariance()) <= 1e-12
    with pytest.raises(ValueError, match="dimension"):
        merged.merge(StreamingStats(3))


def test_bad_inputs_are_refused_and_nothing_is_accumulated() -> None:
    stats = StreamingStats(4)
    stats.update(np.ones((2, 4)))
    bad = np.ones((3, 4))
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="NaN or inf"):
        stats.update(bad)
    bad[1, 2] = np.inf
    with pytest.raises(ValueError, match="NaN or inf"):
        stats.update(bad)
    assert stats.count == 2
    with pytest.raises(ValueError, match="4"):
        stats.update(np.ones((2, 5)))
    with pytest.raises(ValueError, match="at least 2"):
        StreamingStats(4).covariance()
    with pytest.raises(ValueError, match="positive integer"):
        StreamingStats(0)


def test_rank_deficient_spectrum_warns_and_reports_rank() -> None:
    x = _data(n=10, d=24)
    with pytest.warns(UserWarning, match="rank"):
        spectrum = eigendecompose(StreamingStats(24).update(x))
    assert spectrum.rank == 9
    assert np.all(spectrum.eigenvalues >= 0)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_process_gloo_all_reduce_equals_one_process(tmp_path) -> None:
    x = _data(n=103, d=6)
    out = str(tmp_path / "stats")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mp.start_processes(
            projection_dist_worker.worker, args=(2, _free_port(), x, out), nprocs=2, start_method="spawn"
        )
    whole = StreamingStats(6).update(x)
    for rank in range(2):
        got = np.load(f"{out}.{rank}.npz")
        assert int(got["count"]) == whole.count
        assert np.allclose(got["sum"], whole.sum, rtol=1e-13, atol=0)
        assert np.allclose(got["sum_outer"], whole.sum_outer, rtol=1e-13, atol=0)


def test_all_reduce_needs_a_process_group() -> None:
    if torch.distributed.is_initialized():
        pytest.skip("a process group is already initialised")
    with pytest.raises(RuntimeError, match="torch.distributed"):
        StreamingStats(3).all_reduce()


def test_accumulate_reads_a_memmap_in_batches(tmp_path) -> None:
    x = _data(n=1000, d=16)
    path = tmp_path / "x.f32"
    header = np.zeros(3, dtype=np.float32)  # a byte offset that is not page-aligned
    path.write_bytes(header.tobytes() + x.tobytes())
    mapped = np.memmap(path, dtype=np.float32, mode="r", offset=header.nbytes, shape=x.shape)
    stats = accumulate(mapped, batch_size=129)
    assert stats.count == 1000
    assert _relative(stats.covariance(), np.cov(x.astype(np.float64), rowvar=False)) <= 1e-10
