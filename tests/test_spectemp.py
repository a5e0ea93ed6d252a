"""SpecTemp reference and robust modes, and the paper's baselines."""

from __future__ import annotations

import numpy as np
import pytest

from hf_dumpembed.projections import baselines
from hf_dumpembed.projections.spectemp import fit_spectemp, spectemp_curve
from hf_dumpembed.projections.stats import StreamingStats, eigendecompose


def population_spectrum() -> np.ndarray:
    i = np.arange(1, 3585)
    return 1e-4 * (1 + 4000 / (i + 3) ** 0.92)


@pytest.mark.parametrize("mode", ["reference", "robust"])
def test_population_spectrum_reproduces_table3_predicted_row(mode: str) -> None:
    curve = spectemp_curve(population_spectrum(), mode)
    assert abs(curve.knee - 122) <= 2
    expected = {768: 0.15, 512: 0.24, 256: 0.49, 128: 0.96, 64: 1.00}
    for k, gamma in expected.items():
        assert curve.gamma_at(k) == pytest.approx(gamma, abs=0.01), k
    assert curve.t0 == int(0.9 * 3584)
    assert curve.noise_floor == pytest.approx(population_spectrum()[3225:].mean())


def _spectrum(n: int = 4000, d: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    scales = 1.0 / np.arange(1, d + 1) ** 0.8
    x = rng.standard_normal((n, d)) * scales @ np.linalg.qr(rng.standard_normal((d, d)))[0] + 0.3
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x, eigendecompose(StreamingStats(d).update(x))


@pytest.mark.parametrize("mode", ["reference", "robust"])
def test_gamma_never_increases_with_k_and_stays_in_unit_interval(mode: str) -> None:
    for eigenvalues in (population_spectrum(), _spectrum()[1].eigenvalues):
        gamma = spectemp_curve(eigenvalues, mode).gamma
        assert np.all((gamma >= 0) & (gamma <= 1))
        assert np.all(np.diff(gamma) <= 1e-12)


def test_gamma_zero_equals_pca_and_gamma_one_whitens() -> None:
    x, spectrum = _spectrum()
    k = 16
    pca = baselines.pca_map(spectrum, k)
    centred = x - x.mean(axis=0)
    # PCA: projection onto the top-k eigenvectors of np.cov.
    top = np.linalg.eigh(np.cov(x, rowvar=False))[1][:, ::-1][:, :k]
    assert np.allclose(np.abs(pca.matrix.T @ top), np.eye(k), atol=1e-8)
    assert np.allclose(baselines.gamma_map(spectrum, k, 0.0).matrix, pca.matrix)
    white = baselines.whiten_map(spectrum, k, eps=0.0)
    projected = centred @ white.matrix
    assert np.allclose(np.cov(projected, rowvar=False), np.eye(k), atol=1e-8)
    # With the paper's absolute eps the covariance is I up to λ/(λ+1e-6).
    projected = centred @ baselines.whiten_map(spectrum, k).matrix
    assert np.allclose(np.cov(projected, rowvar=False), np.eye(k), atol=1e-3)


def test_spectemp_map_is_tempered_pca_with_its_gamma() -> None:
    _, spectrum = _spectrum()
    fit = fit_spectemp(spectrum, 12)
    assert fit.gamma == fit.curve.gamma_at(12)
    expected = spectrum.eigenvectors[:, :12] * (spectrum.eigenvalues[:12] + 1e-6) ** (-fit.gamma / 2)
    assert np.allclose(fit.map.matrix, expected, rtol=0, atol=1e-12)
    assert np.array_equal(fit.map.mean, spectrum.mean)
    y = fit.map.apply(np.ones((3, 64)))
    assert np.allclose(np.linalg.norm(y, axis=1), 1.0)


def test_reference_no_knee_fallback_uses_half_k() -> None:
    flat = np.linspace(1.0, 0.5, 100)  # a straight line: no convex knee
    curve = spectemp_curve(flat)
    assert curve.knee is None
    assert curve.knee_at(40) == 20 and curve.knee_at(1) == 1
    assert curve.gamma_at(40) == pytest.approx(min(1.0, curve.snr[39] / curve.snr[19]))
    assert curve.gamma_at(100) == pytest.approx(curve.snr[89] / curve.snr[49])  # k > T0 reads SNR(T0)


def test_rank_deficient_robust_drops_zero_eigenvalues() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 64)) / np.arange(1, 65) ** 0.5
    with pytest.warns(UserWarning):
        spectrum = eigendecompose(StreamingStats(64).update(x))
    robust = spectemp_curve(spectrum.eigenvalues, "robust", count=spectrum.count)
    assert robust.used_rank == 39
    assert robust.noise_floor > 1e-3 * spectrum.eigenvalues[0]
    assert np.all((robust.gamma >= 0) & (robust.gamma <= 1))


def test_bad_dims_and_modes() -> None:
    _, spectrum = _spectrum()
    for k in (0, -1, 65, 2.5):
        with pytest.raises(ValueError, match="between 1 and the embedding dimension 64"):
            fit_spectemp(spectrum, k)
    with pytest.raises(ValueError, match="mode must be one of"):
        fit_spectemp(spectrum, 8, mode="fast")
    with pytest.raises(ValueError, match="gamma must be in"):
        baselines.gamma_map(spectrum, 8, 1.5)
    with pytest.raises(ValueError, match="noise floor"):
        spectemp_curve(np.r_[np.ones(20), np.zeros(5)])


def test_prefix_random_truncation_and_random_projection() -> None:
    x = np.random.default_rng(2).standard_normal((5, 32))
    y = baselines.truncate_map(32, 8).apply(x)
    assert np.allclose(y, x[:, :8] / np.linalg.norm(x[:, :8], axis=1, keepdims=True))
    a, b = baselines.random_truncate_map(32, 8, seed=5), baselines.random_truncate_map(32, 8, seed=5)
    assert np.array_equal(a.matrix, b.matrix)
    chosen = np.flatnonzero(a.matrix.any(axis=1))
    assert len(chosen) == 8 and np.allclose(a.apply(x, normalize=False), x[:, chosen])
    assert not np.array_equal(a.matrix, baselines.random_truncate_map(32, 8, seed=6).matrix)
    p = baselines.random_project_map(32, 8, seed=1999)
    assert np.array_equal(p.matrix, baselines.random_project_map(32, 8, seed=1999).matrix)
    assert not p.mean.any()
    assert abs(np.sum(p.matrix**2) / 32 - 1.0) < 0.5  # entries ~ N(0, 1/k): each row has squared norm ≈ 1


def test_oracle_gamma_grid_search_finds_the_best_gamma() -> None:
    _, spectrum = _spectrum()
    calls = []

    def evaluate(linear_map) -> float:
        gamma = float(-np.log(linear_map.matrix[:, 0] @ linear_map.matrix[:, 0]) /
                      np.log(spectrum.eigenvalues[0] + 1e-6))
        calls.append(gamma)
        return -abs(gamma - 0.35)

    best, scores = baselines.oracle_gamma(spectrum, 8, evaluate)
    assert best == pytest.approx(0.35)
    assert len(scores) == 21 and min(scores) == 0.0 and max(scores) == 1.0
