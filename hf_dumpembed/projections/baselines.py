"""The paper's baselines behind one interface: every map is followed by L2 normalisation.

PCA (γ=0, centred), whitening (γ=1), γ-whitening (any γ), prefix truncation ``x[:, :k]``, random truncation (a
seeded choice of k dimensions) and random projection ``randn(d, k)/√k`` (seeded, no centering). Plus the oracle
γ*(k): a grid search over γ given an evaluation callback, for measurement only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .linear import SPECTRAL_EPS, LinearMap, check_dim, tempered_matrix
from .stats import Spectrum

ORACLE_GRID = tuple(round(0.05 * i, 2) for i in range(21))  # 0, 0.05, ..., 1 (the paper's grid)


def gamma_map(spectrum: Spectrum, k: int, gamma: float, eps: float = SPECTRAL_EPS) -> LinearMap:
    """γ-whitening: W = U_k diag((λ + eps)^(−γ/2)), centred."""
    return LinearMap(spectrum.mean, tempered_matrix(spectrum.eigenvectors, spectrum.eigenvalues, gamma, k, eps))


def pca_map(spectrum: Spectrum, k: int) -> LinearMap:
    """PCA: the top-k eigenvectors, centred (γ = 0)."""
    return gamma_map(spectrum, k, 0.0)


def whiten_map(spectrum: Spectrum, k: int, eps: float = SPECTRAL_EPS) -> LinearMap:
    """Whitening: γ = 1 (unit variance along each of the top-k directions)."""
    return gamma_map(spectrum, k, 1.0, eps)


def truncate_map(d: int, k: int) -> LinearMap:
    """Prefix truncation: keep the first k coordinates (no centering)."""
    k = check_dim(k, d)
    return LinearMap(np.zeros(d), np.eye(d, k))


def random_truncate_map(d: int, k: int, seed: int) -> LinearMap:
    """Keep a seeded random choice of k coordinates (in ascending order; no centering)."""
    k = check_dim(k, d)
    chosen = np.sort(np.random.default_rng(seed).choice(d, size=k, replace=False))
    matrix = np.zeros((d, k))
    matrix[chosen, np.arange(k)] = 1.0
    return LinearMap(np.zeros(d), matrix)


def random_project_map(d: int, k: int, seed: int) -> LinearMap:
    """Gaussian random projection randn(d, k)/√k, seeded; no centering."""
    k = check_dim(k, d)
    return LinearMap(np.zeros(d), np.random.default_rng(seed).standard_normal((d, k)) / np.sqrt(k))


def oracle_gamma(
    spectrum: Spectrum,
    k: int,
    evaluate: Callable[[LinearMap], float],
    grid: Sequence[float] = ORACLE_GRID,
) -> tuple[float, dict[float, float]]:
    """The γ on ``grid`` whose γ-whitening map scores highest under ``evaluate`` (higher is better).

    Returns (γ*, {γ: score}); ties go to the smaller γ. For measurement: it needs labelled evaluation data.
    """
    scores = {float(g): float(evaluate(gamma_map(spectrum, k, float(g)))) for g in grid}
    best = max(scores, key=lambda g: (scores[g], -g))
    return best, scores
