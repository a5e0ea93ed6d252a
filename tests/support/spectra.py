"""Inputs of the projection maths tests: seeded samples with known spectra, and pseudo-query pairs that whitening
finds and PCA does not."""

from __future__ import annotations

import numpy as np

from hf_dumpembed.projections.maths.spectrum import Spectrum, eigendecompose
from hf_dumpembed.projections.maths.statistics import StreamingStats


def scaled_gaussian(n: int, d: int, seed: int = 0) -> np.ndarray:
    """(n, d) standard normal rows, column j scaled by linspace(3, 0.5, d)[j] (float64: a spread spectrum)."""
    return np.random.default_rng(seed).standard_normal((n, d)) * np.linspace(3.0, 0.5, d)


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Each row of ``x`` divided by its L2 norm."""
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def unit_sample(n: int = 500, d: int = 24, seed: int = 0) -> np.ndarray:
    """(n, d) correlated, off-centre unit-length float32 rows, like a model's pooled embeddings."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)) @ rng.standard_normal((d, d)) * 0.1 + rng.standard_normal(d)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def decaying_sample(n: int = 4000, d: int = 64, seed: int = 0) -> tuple[np.ndarray, Spectrum]:
    """Unit-length rows whose spectrum decays as i^(−1.6) in a random basis, off-centre; and their spectrum."""
    rng = np.random.default_rng(seed)
    scales = 1.0 / np.arange(1, d + 1) ** 0.8
    x = rng.standard_normal((n, d)) * scales @ np.linalg.qr(rng.standard_normal((d, d)))[0] + 0.3
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, eigendecompose(StreamingStats(d).update(x))


def pseudo_query_pairs(seed: int = 0, n: int = 400, d: int = 16) -> tuple[Spectrum, np.ndarray, np.ndarray]:
    """(spectrum, queries, docs): docs whose first 4 dimensions are loud noise, independent between a query and its
    document; the other 12 carry the shared signal at a low variance. Whitening (γ near 1) finds the pairs, PCA
    (γ = 0) does not."""
    rng = np.random.default_rng(seed)
    signal = 0.3 * rng.standard_normal((n, d - 4))
    docs = np.hstack([3.0 * rng.standard_normal((n, 4)), signal])
    queries = np.hstack([3.0 * rng.standard_normal((n, 4)), signal + 0.05 * rng.standard_normal((n, d - 4))])
    docs, queries = unit_rows(docs), unit_rows(queries)
    spectrum = eigendecompose(StreamingStats(d).update(docs))
    return spectrum, queries, docs
