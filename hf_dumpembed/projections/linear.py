"""The affine map every projection method produces: ``y = normalize((x − mean) @ matrix)``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..remote.modeling_dumpembed import SPECTRAL_EPS, spectral_scale


def check_dim(k: int, d: int, name: str = "dim") -> int:
    """``k`` must be an integer in 1..d."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= int(k) <= d:
        raise ValueError(f"{name} must be an integer between 1 and the embedding dimension {d}; got {k!r}.")
    return int(k)


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


def tempered_scale(eigenvalues: np.ndarray, gamma: float, eps: float = SPECTRAL_EPS) -> np.ndarray:
    """(λ + eps)^(−γ/2) in float64: the shipped `remote.modeling_dumpembed.spectral_scale`, on numpy arrays."""
    if not 0.0 <= gamma <= 1.0 or not np.isfinite(gamma):
        raise ValueError(f"gamma must be in [0, 1]; got {gamma!r}.")
    return spectral_scale(torch.from_numpy(np.asarray(eigenvalues, dtype=np.float64)), gamma, eps).numpy()


def tempered_matrix(eigenvectors: np.ndarray, eigenvalues: np.ndarray, gamma: float, k: int,
                    eps: float = SPECTRAL_EPS) -> np.ndarray:
    """W_k = U_k · diag((λ_1..k + eps)^(−γ/2)); γ=0 is PCA, γ=1 whitening.

    The shipped formula (`spectral_scale`) kept in float64: the shipped ``spectral_matrix`` rounds W_k to the
    stored fp32; the baselines keep float64.
    """
    k = check_dim(k, eigenvectors.shape[1])
    return eigenvectors[:, :k] * tempered_scale(eigenvalues[:k], gamma, eps)[None, :]
