"""Streaming corpus statistics: equal to one-shot np.cov, exact merges in any order, torch.distributed all-reduce."""

from __future__ import annotations

import socket
import warnings

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from hf_dumpembed.projections.maths.spectrum import eigendecompose
from hf_dumpembed.projections.maths.statistics import StreamingStats, accumulate, as_float_array
from tests.support import projection_dist_worker
from tests.support.spectra import scaled_gaussian, unit_sample


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / np.abs(b).max())


def test_streaming_equals_one_shot_cov_and_eigh() -> None:
    x = unit_sample()
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
    x = unit_sample(n=301)
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_process_gloo_all_reduce_equals_one_process(tmp_path) -> None:
    x = unit_sample(n=103, d=6)
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
    x = unit_sample(n=1000, d=16)
    path = tmp_path / "x.f32"
    header = np.zeros(3, dtype=np.float32)  # a byte offset that is not page-aligned
    path.write_bytes(header.tobytes() + x.tobytes())
    mapped = np.memmap(path, dtype=np.float32, mode="r", offset=header.nbytes, shape=x.shape)
    stats = accumulate(mapped, batch_size=129)
    assert stats.count == 1000
    assert _relative(stats.covariance(), np.cov(x.astype(np.float64), rowvar=False)) <= 1e-10


# Exact values against independent numpy computations (written to kill mutants: tests/MUTATION.md).


def test_as_float_array_checks() -> None:
    assert as_float_array(torch.ones(2, 3, requires_grad=True)).dtype == np.float32
    ints = as_float_array(np.array([[1, 2]]))
    assert ints.dtype == np.float64 and ints.tolist() == [[1.0, 2.0]]
    with pytest.raises(ValueError, match=r"2-D array \(n, d\); got shape \(3,\)"):
        as_float_array(np.ones(3))
    with pytest.raises(ValueError, match="embeddings have 3 dimensions; these statistics expect 2"):
        as_float_array(np.ones((1, 3)), dim=2)
    bad = np.ones((4, 2))
    bad[1, 0], bad[3, 1], bad[3, 0] = np.nan, np.inf, np.nan
    with pytest.raises(ValueError, match=r"^2 embedding row\(s\) contain NaN"):
        as_float_array(bad)
    assert as_float_array(bad, check_finite=False) is bad


def test_streaming_stats_sums_merge_and_moments() -> None:
    x = scaled_gaussian(7, 3)
    s = StreamingStats(3)
    assert s.update(np.zeros((0, 3))) is s and s.count == 0
    assert s.update(x[:4]).update(torch.from_numpy(x[4:])) is s
    assert s.count == 7
    np.testing.assert_allclose(s.sum, x.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(s.sum_outer, x.T @ x, rtol=1e-12)
    np.testing.assert_allclose(s.mean, x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(s.covariance(), np.cov(x, rowvar=False), rtol=1e-10, atol=1e-12)
    a, b = StreamingStats(3).update(x[:2]), StreamingStats(3).update(x[2:])
    assert a.merge(b) is a and a.count == 7
    np.testing.assert_allclose(a.sum_outer, s.sum_outer, rtol=1e-12)
    np.testing.assert_allclose(a.sum, s.sum, rtol=1e-12)
    with pytest.raises(ValueError, match="cannot merge statistics of dimension 2 into 3"):
        a.merge(StreamingStats(2))
    for bad in (0, 2.0):
        with pytest.raises(ValueError, match="dim must be a positive integer"):
            StreamingStats(bad)
    one = StreamingStats(3).update(x[:1])
    np.testing.assert_array_equal(one.mean, x[0])
    with pytest.raises(ValueError, match=r"hold 1 vector\(s\); at least 2 are needed"):
        one.covariance()
    with pytest.raises(ValueError, match=r"hold 0 vector\(s\); at least 1"):
        StreamingStats(3).mean  # noqa: B018
    two = StreamingStats(3).update(x[:2])
    np.testing.assert_allclose(two.covariance(), np.cov(x[:2], rowvar=False), rtol=1e-10, atol=1e-12)


def test_update_refuses_bad_rows_and_overflow_without_accumulating() -> None:
    s = StreamingStats(2).update(np.ones((1, 2)))
    with pytest.raises(ValueError, match=r"1 embedding row\(s\) contain NaN"):
        s.update(np.array([[1.0, np.nan], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="float64 sums overflow"), np.errstate(over="ignore"):
        s.update(np.full((2, 2), 1e308))
    assert s.count == 1 and s.sum.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="expect 2"):
        s.update(np.ones((1, 3)))


def test_accumulate_in_batches_equals_one_pass() -> None:
    x = scaled_gaussian(10, 3)
    whole = StreamingStats(3).update(x)
    for batch in (1, 3, 10, 64):
        got = accumulate(x, batch_size=batch)
        assert got.count == 10
        np.testing.assert_allclose(got.sum_outer, whole.sum_outer, rtol=1e-12)
    assert accumulate(x).count == 10
    with pytest.raises(ValueError, match="2-D array"):
        accumulate(np.ones(4))


def test_all_reduce_in_a_one_process_group_keeps_the_statistics(tmp_path) -> None:
    import torch.distributed as dist

    x = scaled_gaussian(5, 3)
    s = StreamingStats(3).update(x)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        assert s.all_reduce() is s
    finally:
        dist.destroy_process_group()
    assert s.count == 5 and isinstance(s.count, int)
    np.testing.assert_array_equal(s.sum, x.sum(axis=0))
    np.testing.assert_allclose(s.sum_outer, x.T @ x, rtol=1e-12)


# Property-based (hypothesis): the inputs are a space, not a few examples.


def _stats(rows: np.ndarray) -> StreamingStats:
    return StreamingStats(rows.shape[1]).update(rows)


@st.composite
def sharded(draw) -> tuple[np.ndarray, list[np.ndarray], list[int]]:
    """A (n, d) float array, a split of its rows into consecutive shards (some may be empty), a merge order."""
    n, d = draw(st.integers(2, 40)), draw(st.integers(1, 6))
    x = draw(arrays(np.float64, (n, d), elements=st.floats(-4, 4, allow_nan=False, width=32)))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=5)))
    shards = np.split(x, cuts)
    order = draw(st.permutations(range(len(shards))))
    return x, shards, list(order)


@settings(max_examples=60, deadline=None)
@given(case=sharded())
def test_stats_merge_in_any_order_equals_one_pass(case):
    """Σ-statistics merged from any sharding, in any merge order (and nested merges), equal one pass over all
    rows, to float64 round-off of the sums."""
    x, shards, order = case
    whole = _stats(x)
    parts = [_stats(shard) for shard in shards]
    merged = StreamingStats(x.shape[1])
    for index in order:
        merged.merge(parts[index])
    half = len(order) // 2  # (a + b) + (c + d): the tree all-reduce's shape
    left, right = StreamingStats(x.shape[1]), StreamingStats(x.shape[1])
    for index in order[:half]:
        left.merge(_stats(shards[index]))
    for index in order[half:]:
        right.merge(_stats(shards[index]))
    nested = right.merge(left)
    scale = max(1.0, float(np.abs(x).max()) ** 2) * len(x) * 1e-13
    for got in (merged, nested):
        assert got.count == whole.count == len(x)
        np.testing.assert_allclose(got.sum, whole.sum, rtol=0, atol=scale)
        np.testing.assert_allclose(got.sum_outer, whole.sum_outer, rtol=0, atol=scale)
        np.testing.assert_allclose(got.covariance(), np.cov(x, rowvar=False).reshape(x.shape[1], -1), rtol=0,
                                   atol=scale * 10)
