"""SpecTemp reference and robust modes, and the paper's baselines."""

from __future__ import annotations

import numpy as np
import pytest
from kneed import KneeLocator

from hf_dumpembed.projections import baselines
from hf_dumpembed.projections.linear import SPECTRAL_EPS, tempered_matrix
from hf_dumpembed.projections.spectemp import fit_spectemp, spectemp_curve
from hf_dumpembed.projections.stats import (
    Spectrum,
    StreamingStats,
    eigendecompose,
)


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


# Exact values against independent numpy computations (written to kill mutants: tests/MUTATION.md).


def data(n: int, d: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)) * np.linspace(3.0, 0.5, d)


def reference_gamma(lam: np.ndarray) -> tuple[float, np.ndarray, int | None, np.ndarray]:
    """The authors' recipe, written out independently: T0 = int(0.9 d), σ² = mean(λ[T0:]), SNR, Kneedle, γ."""
    d = len(lam)
    t0 = int(0.9 * d)
    floor = lam[t0:].mean()
    snr = np.maximum(0.0, (lam[:t0] - floor) / floor)
    knee = KneeLocator(np.arange(1, t0 + 1), snr, S=0.5, curve="convex", direction="decreasing").knee
    gammas = []
    for k in range(1, d + 1):
        ref = knee if knee is not None else max(1, k // 2)
        s_ref, s_k = snr[min(ref, t0) - 1], snr[min(k, t0) - 1]
        gammas.append(min(1.0, s_k / s_ref) if s_ref > 0 else 1.0)
    return floor, snr, knee, np.array(gammas)


def test_spectemp_curve_equals_the_written_out_recipe() -> None:
    lam = 1.0 / np.arange(1, 31) ** 2 + 0.01
    floor, snr, knee, gammas = reference_gamma(lam)
    curve = spectemp_curve(lam)
    assert curve.noise_floor == pytest.approx(floor, rel=1e-12) and curve.t0 == 27 and curve.used_rank == 30
    np.testing.assert_allclose(curve.snr, snr, rtol=1e-12)
    assert knee is not None and curve.knee == knee and curve.knees.tolist() == [knee] * 30
    np.testing.assert_allclose(curve.gamma, gammas, rtol=1e-12)
    assert curve.gamma_at(30) == gammas[-1] and curve.knee_at(1) == knee
    with pytest.raises(ValueError, match="between 1 and"):
        curve.gamma_at(31)
    robust = spectemp_curve(lam, "robust", count=100)
    assert robust.knee == int(np.argmax(robust.difference_curve)) + 1 and robust.used_rank == 30


def test_spectemp_no_knee_fallback_and_flat_snr() -> None:
    flat = np.ones(20)
    curve = spectemp_curve(flat)
    assert curve.knee is None and curve.knees.tolist() == [max(1, k // 2) for k in range(1, 21)]
    assert curve.gamma.tolist() == [1.0] * 20 and curve.difference_curve.tolist() == [0.0] * 18
    # a straight line has no convex knee: γ(k) = SNR(k) / SNR(k // 2), capped at 1
    line = np.linspace(2.0, 1.0, 20)
    floor, snr, knee, gammas = reference_gamma(line)
    curve = spectemp_curve(line)
    assert knee is None and curve.knee is None
    np.testing.assert_allclose(curve.gamma, gammas, rtol=1e-12)


def test_spectemp_refusals_and_tolerances() -> None:
    with pytest.raises(ValueError, match=r"at least 10 eigenvalues; got shape \(9,\)"):
        spectemp_curve(np.ones(9))
    spectemp_curve(np.ones(10))
    with pytest.raises(ValueError, match="descending"):
        spectemp_curve(np.r_[np.ones(9), 1.001])
    spectemp_curve(np.r_[np.ones(9), 1.0 + 1e-13])  # round-off above the tolerance of the largest value
    with pytest.raises(ValueError, match="noise floor .* is 0"):
        spectemp_curve(np.r_[np.ones(18), 0.0, 0.0])
    lam = np.r_[np.linspace(5, 1, 12), np.zeros(8)]
    with pytest.raises(ValueError, match="only 9 eigenvalues are above numerical zero"):
        spectemp_curve(lam, "robust", count=10)
    curve = spectemp_curve(lam, "robust")
    assert curve.used_rank == 12 and curve.t0 == 10
    assert curve.noise_floor == pytest.approx(lam[10:12].mean())
    with pytest.raises(ValueError, match="mode must be one of"):
        spectemp_curve(np.ones(10), "fast")
    negative = np.r_[np.linspace(2, 1, 19), -5.0]  # clipped at 0 before anything else
    assert spectemp_curve(negative).noise_floor == pytest.approx(np.r_[1.0, 0.0].mean())


def test_fit_spectemp_builds_the_tempered_map() -> None:
    x = data(60, 12, seed=3)
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


def test_spectemp_tolerance_scales_with_the_top_eigenvalue_and_stays_float64() -> None:
    big = np.r_[np.ones(9), 1 + 1e-13] * 1e6
    spectemp_curve(big)
    tiny_scale = np.r_[np.full(9, 1e-6), 1e-6 + 1e-13]
    with pytest.raises(ValueError, match="descending"):
        spectemp_curve(tiny_scale)
    spectemp_curve(np.r_[2.0, np.ones(8), 1 + 1.5e-12])  # within 1e-12 of the largest (2), not of the second
    lam = (1.0 / np.arange(1, 31) ** 2 + 0.01).astype(np.float32)
    np.testing.assert_allclose(spectemp_curve(lam).snr, reference_gamma(lam.astype(np.float64))[1], rtol=1e-12)
    ten = np.r_[np.linspace(5, 1, 10), np.zeros(5)]
    assert spectemp_curve(ten, "robust").used_rank == 10


def test_fit_spectemp_passes_the_count_and_keeps_the_spectrum() -> None:
    lam = np.linspace(20, 1, 20)
    spectrum = Spectrum(mean=np.zeros(20), eigenvalues=lam, eigenvectors=np.eye(20), count=13, rank=12)
    fit = fit_spectemp(spectrum, 4, "robust")
    assert fit.curve.used_rank == 12 and fit.spectrum is spectrum


def test_kneedle_sensitivity_is_the_reference_half() -> None:
    # a two-elbow spectrum where Kneedle's S matters: S = 0.5 finds the knee at rank 3, kneed's default S = 1 at 12
    lam = np.array([13.843486, 13.283077, 9.081359, 9.056804, 6.926726, 6.632569, 6.194163, 6.179362, 3.327242,
                    2.807339, 2.362838, 1.904899, 1.717041, 1.571532, 1.310284, 1.18463, 1.180844, 1.142105, 0.663271,
                    0.569199, 0.233783, 0.198884, 0.185047, 0.183137, 0.126102, 0.106075, 0.101159, 0.096235,
                    0.096142, 0.089172, 0.082588, 0.077185, 0.076353, 0.074079, 0.069339, 0.051292, 0.051193,
                    0.050582, 0.050003, 0.050002])
    assert spectemp_curve(lam).knee == reference_gamma(lam)[2] == 3
