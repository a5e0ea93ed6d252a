"""SpecTemp's γ(k) curve, reference and robust modes: the paper's Table 3 row and the authors' recipe written out."""

from __future__ import annotations

import numpy as np
import pytest
from kneed import KneeLocator

from hf_dumpembed.projections.maths.gamma_curve import spectemp_curve
from hf_dumpembed.projections.maths.spectrum import eigendecompose
from hf_dumpembed.projections.maths.statistics import StreamingStats
from tests.support.spectra import decaying_sample


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


@pytest.mark.parametrize("mode", ["reference", "robust"])
def test_gamma_never_increases_with_k_and_stays_in_unit_interval(mode: str) -> None:
    for eigenvalues in (population_spectrum(), decaying_sample()[1].eigenvalues):
        gamma = spectemp_curve(eigenvalues, mode).gamma
        assert np.all((gamma >= 0) & (gamma <= 1))
        assert np.all(np.diff(gamma) <= 1e-12)


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


# Exact values against independent numpy computations (written to kill mutants: tests/MUTATION.md).


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


def test_kneedle_sensitivity_is_the_reference_half() -> None:
    # a two-elbow spectrum where Kneedle's S matters: S = 0.5 finds the knee at rank 3, kneed's default S = 1 at 12
    lam = np.array([13.843486, 13.283077, 9.081359, 9.056804, 6.926726, 6.632569, 6.194163, 6.179362, 3.327242,
                    2.807339, 2.362838, 1.904899, 1.717041, 1.571532, 1.310284, 1.18463, 1.180844, 1.142105, 0.663271,
                    0.569199, 0.233783, 0.198884, 0.185047, 0.183137, 0.126102, 0.106075, 0.101159, 0.096235,
                    0.096142, 0.089172, 0.082588, 0.077185, 0.076353, 0.074079, 0.069339, 0.051292, 0.051193,
                    0.050582, 0.050003, 0.050002])
    assert spectemp_curve(lam).knee == reference_gamma(lam)[2] == 3
