"""PCA, whitening and the oracle γ*: the paper's baselines as the tests state them, on the package's γ-whitening map.

Only the tests use these (the benchmarks score the γ grid themselves with `reference_maps.gamma_map`), so they
live here rather than in `hf_dumpembed.projections.maths.reference_maps`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hf_dumpembed.projections.maths.auto_selection import ORACLE_GRID
from hf_dumpembed.projections.maths.reference_maps import LinearMap, gamma_map
from hf_dumpembed.projections.maths.spectrum import SPECTRAL_EPS, Spectrum


def pca_map(spectrum: Spectrum, k: int) -> LinearMap:
    """PCA: the top-k eigenvectors, centred (γ = 0)."""
    return gamma_map(spectrum, k, 0.0)


def whiten_map(spectrum: Spectrum, k: int, eps: float = SPECTRAL_EPS) -> LinearMap:
    """Whitening: γ = 1 (unit variance along each of the top-k directions)."""
    return gamma_map(spectrum, k, 1.0, eps)


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
