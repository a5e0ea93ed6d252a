"""The numpy reference maps (γ-whitening, SpecTemp at k, truncation, random maps, EmbedFilter's band), each against an
independent numpy computation and the shipped torch formulas."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hf_dumpembed.projections.maths.auto_selection import ORACLE_GRID
from hf_dumpembed.projections.maths.gamma_curve import spectemp_curve
from hf_dumpembed.projections.maths.reference_maps import (
    LinearMap,
    embedfilter_map,
    fit_spectemp,
    gamma_map,
    l2_normalize,
    random_project_map,
    random_truncate_map,
    truncate_map,
)
from hf_dumpembed.projections.maths.spectrum import SPECTRAL_EPS, Spectrum, eigendecompose, tempered_matrix
from hf_dumpembed.projections.maths.statistics import StreamingStats
from hf_dumpembed.remote.modeling_dumpembed import band_start
from tests.support.baseline_maps import oracle_gamma, pca_map, whiten_map
from tests.support.spectra import decaying_sample, scaled_gaussian

# Exact values against independent numpy computations (written to kill mutants: tests/MUTATION.md).


def test_l2_normalize_and_linear_map() -> None:
    x = np.array([[3.0, 4.0], [0.0, 0.0], [1e-13, 0.0]])
    assert np.array_equal(l2_normalize(x), np.array([[0.6, 0.8], [0.0, 0.0], [0.1, 0.0]]))
    linear = LinearMap(np.array([1.0, 1.0, 0.0]), np.array([[1.0, 0.0], [0.0, 2.0], [5.0, 5.0]]))
    assert (linear.in_dim, linear.out_dim) == (3, 2)
    assert np.array_equal(linear.apply([[4.0, 3.0, 0.0]], normalize=False), np.array([[3.0, 4.0]]))
    assert np.array_equal(linear.apply(np.array([[4, 3, 0]])), np.array([[0.6, 0.8]]))


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


def test_gamma_zero_equals_pca_and_gamma_one_whitens() -> None:
    x, spectrum = decaying_sample()
    k = 16
    pca = pca_map(spectrum, k)
    centred = x - x.mean(axis=0)
    # PCA: projection onto the top-k eigenvectors of np.cov.
    top = np.linalg.eigh(np.cov(x, rowvar=False))[1][:, ::-1][:, :k]
    assert np.allclose(np.abs(pca.matrix.T @ top), np.eye(k), atol=1e-8)
    assert np.allclose(gamma_map(spectrum, k, 0.0).matrix, pca.matrix)
    white = whiten_map(spectrum, k, eps=0.0)
    projected = centred @ white.matrix
    assert np.allclose(np.cov(projected, rowvar=False), np.eye(k), atol=1e-8)
    # With the paper's absolute eps the covariance is I up to λ/(λ+1e-6).
    projected = centred @ whiten_map(spectrum, k).matrix
    assert np.allclose(np.cov(projected, rowvar=False), np.eye(k), atol=1e-3)


def test_spectemp_map_is_tempered_pca_with_its_gamma() -> None:
    _, spectrum = decaying_sample()
    fit = fit_spectemp(spectrum, 12)
    assert fit.gamma == fit.curve.gamma_at(12)
    expected = spectrum.eigenvectors[:, :12] * (spectrum.eigenvalues[:12] + 1e-6) ** (-fit.gamma / 2)
    assert np.allclose(fit.map.matrix, expected, rtol=0, atol=1e-12)
    assert np.array_equal(fit.map.mean, spectrum.mean)
    y = fit.map.apply(np.ones((3, 64)))
    assert np.allclose(np.linalg.norm(y, axis=1), 1.0)


def test_bad_dims_and_modes() -> None:
    _, spectrum = decaying_sample()
    for k in (0, -1, 65, 2.5):
        with pytest.raises(ValueError, match="between 1 and the embedding dimension 64"):
            fit_spectemp(spectrum, k)
    with pytest.raises(ValueError, match="mode must be one of"):
        fit_spectemp(spectrum, 8, mode="fast")
    with pytest.raises(ValueError, match="gamma must be in"):
        gamma_map(spectrum, 8, 1.5)
    with pytest.raises(ValueError, match="noise floor"):
        spectemp_curve(np.r_[np.ones(20), np.zeros(5)])


def test_prefix_random_truncation_and_random_projection() -> None:
    x = np.random.default_rng(2).standard_normal((5, 32))
    y = truncate_map(32, 8).apply(x)
    assert np.allclose(y, x[:, :8] / np.linalg.norm(x[:, :8], axis=1, keepdims=True))
    a, b = random_truncate_map(32, 8, seed=5), random_truncate_map(32, 8, seed=5)
    assert np.array_equal(a.matrix, b.matrix)
    chosen = np.flatnonzero(a.matrix.any(axis=1))
    assert len(chosen) == 8 and np.allclose(a.apply(x, normalize=False), x[:, chosen])
    assert not np.array_equal(a.matrix, random_truncate_map(32, 8, seed=6).matrix)
    p = random_project_map(32, 8, seed=1999)
    assert np.array_equal(p.matrix, random_project_map(32, 8, seed=1999).matrix)
    assert not p.mean.any()
    assert abs(np.sum(p.matrix**2) / 32 - 1.0) < 0.5  # entries ~ N(0, 1/k): each row has squared norm ≈ 1


def test_oracle_gamma_grid_search_finds_the_best_gamma() -> None:
    _, spectrum = decaying_sample()
    calls = []

    def evaluate(linear_map) -> float:
        gamma = float(-np.log(linear_map.matrix[:, 0] @ linear_map.matrix[:, 0]) /
                      np.log(spectrum.eigenvalues[0] + 1e-6))
        calls.append(gamma)
        return -abs(gamma - 0.35)

    best, scores = oracle_gamma(spectrum, 8, evaluate)
    assert best == pytest.approx(0.35)
    assert len(scores) == 21 and min(scores) == 0.0 and max(scores) == 1.0


def test_fit_spectemp_builds_the_tempered_map() -> None:
    x = scaled_gaussian(60, 12, seed=3)
    spectrum = eigendecompose(StreamingStats(12).update(x))
    fit = fit_spectemp(spectrum, 5, eps=1e-3)
    curve = spectemp_curve(spectrum.eigenvalues)
    assert fit.gamma == curve.gamma_at(5) and fit.knee == curve.knee_at(5) and fit.dim == 5 and fit.eps == 1e-3
    np.testing.assert_array_equal(fit.map.matrix, tempered_matrix(spectrum.eigenvectors, spectrum.eigenvalues,
                                                                  fit.gamma, 5, 1e-3))
    np.testing.assert_array_equal(fit.map.mean, spectrum.mean)
    assert fit_spectemp(spectrum, 5).eps == SPECTRAL_EPS
    assert fit_spectemp(spectrum, 5, "robust").curve.mode.value == "robust"
    with pytest.raises(ValueError, match="between 1 and the embedding dimension 12"):
        fit_spectemp(spectrum, 13)


def test_fit_spectemp_passes_the_count_and_keeps_the_spectrum() -> None:
    lam = np.linspace(20, 1, 20)
    spectrum = Spectrum(mean=np.zeros(20), eigenvalues=lam, eigenvectors=np.eye(20), count=13, rank=12)
    fit = fit_spectemp(spectrum, 4, "robust")
    assert fit.curve.used_rank == 12 and fit.spectrum is spectrum


def test_the_numpy_maps_are_the_shipped_formulas() -> None:
    """The fit's numpy maps and the remote code's torch functions (what a saved folder recomposes) agree."""

    from hf_dumpembed.remote.modeling_dumpembed import band_matrix, spectral_matrix

    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.normal(size=(24, 24)))
    eigenvalues = np.sort(rng.uniform(1e-4, 2.0, 24))[::-1].copy()
    for k, gamma in [(1, 0.0), (7, 0.37), (24, 1.0)]:
        shipped = spectral_matrix(torch.from_numpy(basis).float(), torch.from_numpy(eigenvalues).float(), gamma, k)
        ours = tempered_matrix(basis, eigenvalues, gamma, k)
        assert np.allclose(ours, shipped.double().numpy(), rtol=1e-5, atol=1e-6), (k, gamma)
    for m in (1, 5, 12, 24):
        s = band_start(24, m)
        assert np.array_equal(embedfilter_map(basis, m).matrix, band_matrix(torch.from_numpy(basis), m).numpy())
        assert np.array_equal(embedfilter_map(basis, m).matrix, basis[:, s : s + m])


def test_embedfilter_map_is_the_middle_band_without_centering() -> None:
    basis = np.arange(36, dtype=float).reshape(6, 6)
    linear = embedfilter_map(basis, 2)
    assert linear.mean.tolist() == [0.0] * 6 and np.array_equal(linear.matrix, basis[:, 2:4])
    with pytest.raises(ValueError, match=r"dim \(m\) must be an integer between 1 and the embedding dimension 6"):
        embedfilter_map(basis, 7)
