"""The corpus spectrum: the covariance's eigendecomposition (sorted, signs fixed, numerical rank) and the tempered
scale on it, (λ + eps)^(−γ/2), that PCA (γ = 0), whitening (γ = 1) and SpecTemp (γ(k)) all use.

Also the one check of an output dimension k against the spectrum's d (`check_dim`).
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from ...remote.modeling_dumpembed import SPECTRAL_EPS, spectral_scale
from .statistics import StreamingStats

logger = logging.getLogger(__name__)


def check_dim(k: int, d: int, name: str = "dim") -> int:
    """``k`` must be an integer in 1..d."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= d:
        raise ValueError(f"{name} must be an integer between 1 and the embedding dimension {d}; got {k!r}.")
    return int(k)


@dataclass(frozen=True)
class Spectrum:
    """Eigendecomposition of a covariance, sorted by descending eigenvalue.

    Attributes:
        mean: (d,) the corpus mean.
        eigenvalues: (d,) descending, clipped at 0.
        eigenvectors: (d, d) column i belongs to eigenvalue i.
        count: n, the number of vectors behind the statistics.
        rank: number of eigenvalues above numerical zero (≤ min(n − 1, d)).
    """

    mean: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    count: int
    rank: int

    @property
    def dim(self) -> int:
        return len(self.eigenvalues)


# Eigenvalues below this fraction of the largest one are numerical zeros (float64 round-off of Σxxᵀ − nμμᵀ).
ZERO_EIGENVALUE_RTOL = 1e-10


def numerical_rank(eigenvalues: np.ndarray, count: int | None = None) -> int:
    """Number of eigenvalues (descending) that are not numerically zero; at most n − 1 when n is known."""
    top = float(eigenvalues[0]) if len(eigenvalues) else 0.0
    rank = int((eigenvalues > top * ZERO_EIGENVALUE_RTOL).sum()) if top > 0 else 0
    if count is not None:
        rank = min(rank, max(count - 1, 0))
    return rank


def descending_eigh(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`eigh` of a symmetric matrix sorted by descending eigenvalue, eigenvalues clipped at 0, each eigenvector's
    sign fixed (its largest-magnitude entry positive)."""
    eigenvalues, eigenvectors = np.linalg.eigh(matrix)
    order = np.argsort(eigenvalues)[::-1]
    return np.clip(eigenvalues[order], 0.0, None), fix_signs(eigenvectors[:, order])


def fix_signs(vectors: np.ndarray) -> np.ndarray:
    """Columns with a deterministic sign: the largest-magnitude entry of each is positive."""
    signs = np.sign(vectors[np.abs(vectors).argmax(axis=0), np.arange(vectors.shape[1])])
    return vectors * np.where(signs == 0, 1.0, signs)


def eigendecompose(stats: StreamingStats) -> Spectrum:
    """Covariance → `eigh` (float64), sorted descending, eigenvalues clipped at 0; warns when n ≤ d."""
    cov = stats.covariance()
    if not (np.isfinite(cov).all() and np.isfinite(stats.mean).all()):
        raise ValueError(
            f"the corpus statistics (mean / covariance of {stats.count} embeddings) hold NaN or infinite values: the "
            "model gives non-finite vectors for some texts (damaged weights, or an overflow in reduced precision). "
            "Check the model with `hf-dumpembed verify`, or fit in float32; no projection was written."
        )
    eigenvalues, eigenvectors = descending_eigh(cov)
    rank = numerical_rank(eigenvalues, stats.count)
    if stats.count <= stats.dim:
        message = (
            f"only n={stats.count} vectors for d={stats.dim} dimensions: the covariance has rank ≤ {stats.count - 1} "
            f"(numerical rank {rank}); the trailing eigenvalues are zero. Fit on more texts, or use the robust "
            "mode, which drops the zero eigenvalues before estimating the noise floor."
        )
        warnings.warn(message, stacklevel=2)
        logger.warning(message)
    return Spectrum(mean=stats.mean, eigenvalues=eigenvalues, eigenvectors=eigenvectors, count=stats.count, rank=rank)


def tempered_scale(eigenvalues: np.ndarray, gamma: float, eps: float = SPECTRAL_EPS) -> np.ndarray:
    """(λ + eps)^(−γ/2) in float64: the shipped `remote.modeling_dumpembed.spectral_scale`, on numpy arrays."""
    if not 0.0 <= gamma <= 1.0 or not np.isfinite(gamma):
        raise ValueError(f"gamma must be in [0, 1]; got {gamma!r}.")
    return spectral_scale(torch.from_numpy(np.asarray(eigenvalues, dtype=np.float64)), gamma, eps).numpy()


def tempered_matrix(eigenvectors: np.ndarray, eigenvalues: np.ndarray, gamma: float, k: int,
                    eps: float = SPECTRAL_EPS) -> np.ndarray:
    """W_k = U_k · diag((λ_1..k + eps)^(−γ/2)); γ=0 is PCA, γ=1 whitening.

    The shipped formula (`spectral_scale`) kept in float64: the shipped ``spectral_matrix`` rounds W_k to the
    stored fp32; the reference maps keep float64.
    """
    k = check_dim(k, eigenvectors.shape[1])
    return eigenvectors[:, :k] * tempered_scale(eigenvalues[:k], gamma, eps)[None, :]
