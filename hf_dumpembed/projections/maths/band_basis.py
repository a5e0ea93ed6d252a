"""EmbedFilter's basis: the right singular vectors of a causal LM's unembedding matrix W_U, and the band width m.

Right singular vectors V of W_U (|V| × d), sorted by descending σ; keep the middle band of m = d // τ of them:
s = (d − m) // 2, B = Vᵀ[s : s + m] (m × d, orthonormal rows), y = B h, no centering, L2 after. The basis comes
from the eigendecomposition of WᵀW (d × d, float64, accumulated in row chunks) — the same subspaces as the SVD
at a fraction of the cost; `svd_basis` is the full-SVD reference path. The numpy map y = B h is
`reference_maps.embedfilter_map`; the fitter (`methods/embedfilter.py`) stores B in the model's buffers.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import torch
from tqdm.auto import tqdm

from .spectrum import check_dim, descending_eigh, fix_signs
from .statistics import gram as product

GRAM_CHUNK_ROWS = 16384


def _rows(weight: np.ndarray | torch.Tensor, exclude_rows: Iterable[int]) -> np.ndarray:
    """Boolean mask of the rows of ``weight`` to keep."""
    keep = np.ones(weight.shape[0], dtype=bool)
    excluded = np.asarray(sorted(set(int(i) for i in exclude_rows)), dtype=np.int64)
    if len(excluded) and (excluded.min() < 0 or excluded.max() >= weight.shape[0]):
        raise ValueError(f"exclude_rows must index rows 0..{weight.shape[0] - 1}; got {excluded.tolist()}.")
    keep[excluded] = False
    return keep


def _check_weight(weight: np.ndarray | torch.Tensor) -> None:
    if weight.ndim != 2 or weight.shape[0] < weight.shape[1]:
        raise ValueError(
            f"the unembedding matrix must be (vocabulary, hidden) with at least as many rows as columns; got "
            f"shape {tuple(weight.shape)}."
        )


def gram_basis(weight: np.ndarray | torch.Tensor, exclude_rows: Iterable[int] = (),
               progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(σ descending (d,), V (d, d) with column i the i-th right singular vector) from eigh(WᵀW) in float64."""
    _check_weight(weight)
    keep = _rows(weight, exclude_rows)
    d = weight.shape[1]
    gram = np.zeros((d, d), dtype=np.float64)
    starts = range(0, weight.shape[0], GRAM_CHUNK_ROWS)
    for start in tqdm(starts, desc="EmbedFilter WᵀW", unit="chunk", disable=not progress):
        chunk = weight[start : start + GRAM_CHUNK_ROWS]
        chunk = chunk.detach().cpu().numpy() if isinstance(chunk, torch.Tensor) else np.asarray(chunk)
        chunk = np.ascontiguousarray(chunk[keep[start : start + GRAM_CHUNK_ROWS]], dtype=np.float64)
        if not np.isfinite(chunk).all():
            raise ValueError("the unembedding matrix contains NaN or inf.")
        gram += product(chunk)
    eigenvalues, eigenvectors = descending_eigh((gram + gram.T) / 2)
    return np.sqrt(eigenvalues), eigenvectors


def svd_basis(weight: np.ndarray | torch.Tensor, exclude_rows: Iterable[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Reference path: full (thin) SVD of W_U in float64; same return as `gram_basis`."""
    _check_weight(weight)
    w = weight.detach().cpu().numpy() if isinstance(weight, torch.Tensor) else np.asarray(weight)
    w = np.asarray(w[_rows(w, exclude_rows)], dtype=np.float64)
    _, singular_values, vt = np.linalg.svd(w, full_matrices=False)
    return singular_values, fix_signs(vt.T)


def band_size(d: int, dim: int | None = None, ratio: int | None = None) -> int:
    """m: an explicit ``dim``, or d // τ for the filter ratio ``ratio`` (τ = 1 keeps everything)."""
    if dim is not None and ratio is not None:
        raise ValueError("give either dim (m) or ratio (τ) for EmbedFilter, not both.")
    if ratio is not None:
        if isinstance(ratio, bool) or not isinstance(ratio, (int, np.integer)) or not 1 <= ratio <= d:
            raise ValueError(f"ratio (τ) must be an integer between 1 and {d}; got {ratio!r}.")
        return d // int(ratio)
    return check_dim(d if dim is None else dim, d)
