"""Fast exact-value tests of the projection formulas and statistics (linear maps, streaming stats, eigh, SpecTemp's
γ(k), EmbedFilter's band, the baselines), each checked against an independent numpy computation. Written to kill
the mutants `scripts/mutation.py` finds (tests/MUTATION.md)."""

from __future__ import annotations

import numpy as np
import pytest

from hf_dumpembed.projections.baselines import (
    ORACLE_GRID,
    gamma_map,
    oracle_gamma,
    pca_map,
    random_project_map,
    random_truncate_map,
    truncate_map,
    whiten_map,
)
from hf_dumpembed.projections.stats import (
    Spectrum,
)


def spectrum_of(d: int = 4) -> Spectrum:
    return Spectrum(mean=np.arange(d, dtype=float), eigenvalues=np.linspace(4, 1, d), eigenvectors=np.eye(d),
                    count=100, rank=d)


def test_gamma_pca_whiten_and_truncation_maps() -> None:
    s = spectrum_of()
    np.testing.assert_array_equal(pca_map(s, 2).matrix, np.eye(4, 2))
    np.testing.assert_array_equal(pca_map(s, 2).mean, s.mean)
    np.testing.assert_array_equal(whiten_map(s, 2).matrix, np.diag((s.eigenvalues + 1e-6) ** -0.5)[:, :2])
    np.testing.assert_array_equal(whiten_map(s, 2, eps=1.0).matrix, np.diag((s.eigenvalues + 1.0) ** -0.5)[:, :2])
    # γ = 0.5 goes through torch's pow (the shipped `spectral_scale`): equal to numpy's to an ulp
    np.testing.assert_allclose(gamma_map(s, 3, 0.5).matrix, np.diag((s.eigenvalues + 1e-6) ** -0.25)[:, :3],
                               rtol=1e-15, atol=0)
    np.testing.assert_array_equal(gamma_map(s, 3, 0.5, eps=2.0).matrix, np.diag((s.eigenvalues + 2) ** -0.25)[:, :3])
    t = truncate_map(4, 2)
    assert t.mean.tolist() == [0.0] * 4 and np.array_equal(t.matrix, np.eye(4, 2))
    with pytest.raises(ValueError, match="between 1"):
        truncate_map(4, 5)


def test_random_baselines_are_seeded_and_scaled() -> None:
    r = random_truncate_map(6, 3, seed=1)
    chosen = np.sort(np.random.default_rng(1).choice(6, size=3, replace=False))
    assert r.mean.tolist() == [0.0] * 6 and r.matrix.sum() == 3
    assert [int(np.flatnonzero(r.matrix[:, j])[0]) for j in range(3)] == chosen.tolist()
    p = random_project_map(6, 4, seed=2)
    np.testing.assert_array_equal(p.matrix, np.random.default_rng(2).standard_normal((6, 4)) / 2.0)
    assert p.mean.tolist() == [0.0] * 6
    for make in (random_truncate_map, random_project_map):
        with pytest.raises(ValueError, match="between 1"):
            make(6, 7, seed=0)


def test_oracle_gamma_picks_the_best_and_the_smaller_on_ties() -> None:
    assert ORACLE_GRID[0] == 0.0 and ORACLE_GRID[-1] == 1.0 and len(ORACLE_GRID) == 21 and ORACLE_GRID[1] == 0.05
    s = spectrum_of()
    best, scores = oracle_gamma(s, 2, lambda m: -abs(float(m.matrix[0, 0]) - 4 ** -0.2), grid=(0.1, 0.4, 0.7))
    assert best == 0.4 and set(scores) == {0.1, 0.4, 0.7}
    tie, _ = oracle_gamma(s, 2, lambda m: 1.0, grid=(0.6, 0.2, 0.9))
    assert tie == 0.2
