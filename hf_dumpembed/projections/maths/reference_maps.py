"""The numpy reference maps: every method's map in float64 as ``y = normalize((x − mean) @ matrix)`` (`LinearMap`).

Public for the benchmarks (``scripts/bench/``) and the tests, which measure them or check the shipped fp32 buffers
against them: γ-whitening at any γ (γ = 0 is PCA, γ = 1 whitening), SpecTemp's map at k (`fit_spectemp`), EmbedFilter's
band and the fixed maps (prefix truncation, a seeded choice of k coordinates, a seeded Gaussian projection
``randn(d, k)/√k``), none of which centre. The fixed methods' fitter (`methods/fixed.py`) stores these matrices as
they are; the spectral fitters store the spectrum, which the model recomposes in fp32 (`spectral_matrix`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ...remote.modeling_dumpembed import band_matrix
from .gamma_curve import SpecTempCurve, SpecTempMode, spectemp_curve
from .spectrum import SPECTRAL_EPS, Spectrum, check_dim, tempered_matrix


def l2_normalize(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


@dataclass(frozen=True)
class LinearMap:
    """``y = (x − mean) @ matrix`` (float64), followed by L2 normalisation when applied."""

    mean: np.ndarray
    matrix: np.ndarray

    @property
    def in_dim(self) -> int:
        return self.matrix.shape[0]

    @property
    def out_dim(self) -> int:
        return self.matrix.shape[1]

    def apply(self, x: np.ndarray, normalize: bool = True) -> np.ndarray:
        y = (np.asarray(x, dtype=np.float64) - self.mean) @ self.matrix
        return l2_normalize(y) if normalize else y


def gamma_map(spectrum: Spectrum, k: int, gamma: float, eps: float = SPECTRAL_EPS) -> LinearMap:
    """γ-whitening: W = U_k diag((λ + eps)^(−γ/2)), centred."""
    return LinearMap(spectrum.mean, tempered_matrix(spectrum.eigenvectors, spectrum.eigenvalues, gamma, k, eps))


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


def embedfilter_map(basis: np.ndarray, m: int) -> LinearMap:
    """y = Bh with B = Vᵀ[s : s + m]: stored as matrix = V[:, s : s + m], mean 0 (no centering)."""
    d = basis.shape[0]
    m = check_dim(m, d, "dim (m)")
    return LinearMap(np.zeros(d), band_matrix(torch.from_numpy(np.ascontiguousarray(basis)), m).numpy())


@dataclass(frozen=True)
class SpecTempFit:
    """A SpecTemp fit: the whole γ(k) curve, the knee, the spectrum and the map for the requested k."""

    curve: SpecTempCurve
    spectrum: Spectrum
    dim: int
    gamma: float
    knee: int
    map: LinearMap
    eps: float = SPECTRAL_EPS


def fit_spectemp(spectrum: Spectrum, k: int, mode: SpecTempMode | str = "reference",
                 eps: float = SPECTRAL_EPS) -> SpecTempFit:
    """SpecTemp map for dimension ``k``: W_k = U_k diag((λ + eps)^(−γ(k)/2)), y = (x − μ) W_k, then L2."""
    k = check_dim(k, spectrum.dim)
    curve = spectemp_curve(spectrum.eigenvalues, mode, count=spectrum.count)
    gamma = curve.gamma_at(k)
    matrix = tempered_matrix(spectrum.eigenvectors, spectrum.eigenvalues, gamma, k, eps)
    return SpecTempFit(curve=curve, spectrum=spectrum, dim=k, gamma=gamma, knee=curve.knee_at(k),
                       map=LinearMap(spectrum.mean, matrix), eps=eps)
