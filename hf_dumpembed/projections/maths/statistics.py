"""Streaming, mergeable corpus statistics: n, Σx and Σxxᵀ in float64 (the input of every corpus-fitted map).

Memory is O(d²) whatever the corpus size. Partial statistics from several workers merge exactly (they are
sums), in-process with `merge` or across a `torch.distributed` job with `all_reduce`. Their eigendecomposition
is `spectrum.eigendecompose`.
"""

from __future__ import annotations

import mmap

import numpy as np
import torch


def as_float_array(batch: np.ndarray | torch.Tensor, dim: int | None = None, check_finite: bool = True) -> np.ndarray:
    """A 2-D float array view of ``batch``; refuses NaN/inf and a wrong width with a clear error."""
    if isinstance(batch, torch.Tensor):
        batch = batch.detach().cpu().numpy()
    batch = np.asarray(batch)
    if batch.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D array (n, d); got shape {batch.shape}.")
    if not np.issubdtype(batch.dtype, np.floating):
        batch = batch.astype(np.float64)
    if dim is not None and batch.shape[1] != dim:
        raise ValueError(f"embeddings have {batch.shape[1]} dimensions; these statistics expect {dim}.")
    if check_finite and not np.isfinite(batch).all():
        bad = int((~np.isfinite(batch)).any(axis=1).sum())
        raise ValueError(
            f"{bad} embedding row(s) contain NaN or inf; nothing was accumulated from this batch. Check the "
            "model (e.g. fp16 overflow) or drop those texts."
        )
    return batch


def gram(x: np.ndarray) -> np.ndarray:
    """xᵀx of a float64 array through torch's BLAS (MKL in the CPU wheels: ~1.4× numpy's OpenBLAS here)."""
    t = torch.from_numpy(x)
    return (t.T @ t).numpy()


class StreamingStats:
    """Count, Σx and Σxxᵀ of a stream of d-dimensional vectors, accumulated in float64.

    float32 inputs are widened to float64 before the product, so each xᵢxⱼ is exact and only the sums round.
    """

    def __init__(self, dim: int) -> None:
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive integer; got {dim!r}.")
        self.dim = dim
        self.count = 0
        self.sum = np.zeros(dim, dtype=np.float64)
        self.sum_outer = np.zeros((dim, dim), dtype=np.float64)

    def update(self, batch: np.ndarray | torch.Tensor) -> StreamingStats:
        """Add a batch of rows (n_b, d). Returns self."""
        batch = as_float_array(batch, self.dim, check_finite=False)
        if len(batch) == 0:
            return self
        x = np.ascontiguousarray(batch, dtype=np.float64)
        column_sums = x.sum(axis=0)
        if not np.isfinite(column_sums).all():  # NaN/inf anywhere makes its column sum non-finite
            as_float_array(batch, self.dim)  # raises, naming the bad rows; nothing has been accumulated
            raise ValueError("embedding values are too large: their float64 sums overflow.")
        self.count += len(x)
        self.sum += column_sums
        self.sum_outer += gram(x)
        return self

    def merge(self, other: StreamingStats) -> StreamingStats:
        """Add another worker's partial statistics (exact: all three are sums). Returns self."""
        if other.dim != self.dim:
            raise ValueError(f"cannot merge statistics of dimension {other.dim} into {self.dim}.")
        self.count += other.count
        self.sum += other.sum
        self.sum_outer += other.sum_outer
        return self

    def all_reduce(self, group: object | None = None) -> StreamingStats:
        """Sum the statistics of every rank of the default (or given) `torch.distributed` process group.

        Each rank encodes its own shard; after this call every rank holds the statistics of the whole corpus.
        """
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError("all_reduce needs an initialised torch.distributed process group (e.g. torchrun).")
        packed = torch.from_numpy(
            np.concatenate([[float(self.count)], self.sum, self.sum_outer.ravel()]).astype(np.float64)
        )
        dist.all_reduce(packed, op=dist.ReduceOp.SUM, group=group)
        values = packed.numpy()
        self.count = int(round(values[0]))
        self.sum = values[1 : 1 + self.dim].copy()
        self.sum_outer = values[1 + self.dim :].reshape(self.dim, self.dim).copy()
        return self

    @property
    def mean(self) -> np.ndarray:
        self._need(1)
        return self.sum / self.count

    def covariance(self) -> np.ndarray:
        """Unbiased covariance (1/(n−1)), as ``np.cov(X, rowvar=False)``."""
        self._need(2)
        mean = self.mean
        cov = (self.sum_outer - self.count * np.outer(mean, mean)) / (self.count - 1)
        return (cov + cov.T) / 2

    def _need(self, n: int) -> None:
        if self.count < n:
            raise ValueError(
                f"these statistics hold {self.count} vector(s); at least {n} are needed (is the corpus empty?)."
            )


def accumulate(array: np.ndarray, batch_size: int = 16384, progress: bool = False) -> StreamingStats:
    """Statistics of an (n, d) array read in row batches; a `np.memmap` is released page by page.

    Pages of a memory-mapped file count towards the process's resident memory once read; after each batch they
    are handed back (``MADV_DONTNEED``), so memory stays O(d² + batch · d) however large the file is.
    """
    from tqdm.auto import tqdm

    if array.ndim != 2:
        raise ValueError(f"embeddings must be a 2-D array (n, d); got shape {array.shape}.")
    stats = StreamingStats(array.shape[1])
    mapping = getattr(array, "_mmap", None)
    row_bytes = array.shape[1] * array.dtype.itemsize
    # numpy maps the file from the allocation-granularity boundary below the array's byte offset.
    offset = getattr(array, "offset", 0) % mmap.ALLOCATIONGRANULARITY
    page = mmap.PAGESIZE
    for start in tqdm(range(0, len(array), batch_size), desc="statistics", unit="batch", disable=not progress):
        stats.update(array[start : start + batch_size])
        if mapping is not None and hasattr(mapping, "madvise"):
            begin = (offset + start * row_bytes) // page * page
            end = offset + min(start + batch_size, len(array)) * row_bytes
            mapping.madvise(mmap.MADV_DONTNEED, begin, (end - begin) // page * page)
    return stats
