"""Fast exact-value tests of the projection formulas and statistics (linear maps, streaming stats, eigh, SpecTemp's
γ(k), EmbedFilter's band, the baselines), each checked against an independent numpy computation. Written to kill
the mutants `scripts/mutation.py` finds (tests/MUTATION.md)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kneed import KneeLocator

from hf_dumpembed.projections import embedfilter, stats
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
from hf_dumpembed.projections.embedfilter import band_size, embedfilter_map, gram_basis, svd_basis
from hf_dumpembed.projections.linear import SPECTRAL_EPS, LinearMap, check_dim, l2_normalize, tempered_matrix
from hf_dumpembed.projections.spectemp import fit_spectemp, spectemp_curve
from hf_dumpembed.projections.stats import (
    Spectrum,
    StreamingStats,
    accumulate,
    as_float_array,
    eigendecompose,
    numerical_rank,
)
from hf_dumpembed.remote.modeling_dumpembed import band_start


def data(n: int, d: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)) * np.linspace(3.0, 0.5, d)


# --- linear -------------------------------------------------------------------------------------------------

def test_check_dim_bounds_and_types() -> None:
    assert check_dim(1, 4) == 1 and check_dim(np.int64(4), 4) == 4 and type(check_dim(np.int64(4), 4)) is int
    for bad in (0, 5, True, 2.0, "2"):
        with pytest.raises(ValueError, match=r"k_name must be an integer between 1 and the embedding dimension 4"):
            check_dim(bad, 4, "k_name")
    with pytest.raises(ValueError, match=r"^dim must"):
        check_dim(0, 4)


def test_l2_normalize_and_linear_map() -> None:
    x = np.array([[3.0, 4.0], [0.0, 0.0], [1e-13, 0.0]])
    assert np.array_equal(l2_normalize(x), np.array([[0.6, 0.8], [0.0, 0.0], [0.1, 0.0]]))
    linear = LinearMap(np.array([1.0, 1.0, 0.0]), np.array([[1.0, 0.0], [0.0, 2.0], [5.0, 5.0]]))
    assert (linear.in_dim, linear.out_dim) == (3, 2)
    assert np.array_equal(linear.apply([[4.0, 3.0, 0.0]], normalize=False), np.array([[3.0, 4.0]]))
    assert np.array_equal(linear.apply(np.array([[4, 3, 0]])), np.array([[0.6, 0.8]]))


def test_tempered_matrix_formula_and_gamma_range() -> None:
    vectors, values = np.eye(3), np.array([4.0, 1.0, 0.0])
    assert SPECTRAL_EPS == 1e-6
    expected = np.diag((values + 1e-6) ** -0.25)[:, :2]
    assert np.array_equal(tempered_matrix(vectors, values, 0.5, 2), expected)
    np.testing.assert_allclose(tempered_matrix(vectors, values, 1.0, 3, eps=1.0), np.diag((values + 1.0) ** -0.5),
                               rtol=1e-15)
    assert np.array_equal(tempered_matrix(vectors, values, 0.0, 3), np.eye(3))
    fp32 = np.array([3.3, 0.7], dtype=np.float32)  # the scale is computed in float64 whatever the input dtype
    expected = np.diag((fp32.astype(np.float64) + 1e-6) ** -0.35)
    assert np.array_equal(tempered_matrix(np.eye(2), fp32, 0.7, 2), expected)
    for bad in (-0.01, 1.01, float("nan")):
        with pytest.raises(ValueError, match="gamma must be in"):
            tempered_matrix(vectors, values, bad, 2)
    with pytest.raises(ValueError, match="between 1 and the embedding dimension 3"):
        tempered_matrix(vectors, values, 0.5, 4)


# --- streaming statistics -----------------------------------------------------------------------------------

def test_as_float_array_checks() -> None:
    assert as_float_array(torch.ones(2, 3, requires_grad=True)).dtype == np.float32
    ints = as_float_array(np.array([[1, 2]]))
    assert ints.dtype == np.float64 and ints.tolist() == [[1.0, 2.0]]
    with pytest.raises(ValueError, match=r"2-D array \(n, d\); got shape \(3,\)"):
        as_float_array(np.ones(3))
    with pytest.raises(ValueError, match="embeddings have 3 dimensions; these statistics expect 2"):
        as_float_array(np.ones((1, 3)), dim=2)
    bad = np.ones((4, 2))
    bad[1, 0], bad[3, 1], bad[3, 0] = np.nan, np.inf, np.nan
    with pytest.raises(ValueError, match=r"^2 embedding row\(s\) contain NaN"):
        as_float_array(bad)
    assert as_float_array(bad, check_finite=False) is bad


def test_streaming_stats_sums_merge_and_moments() -> None:
    x = data(7, 3)
    s = StreamingStats(3)
    assert s.update(np.zeros((0, 3))) is s and s.count == 0
    assert s.update(x[:4]).update(torch.from_numpy(x[4:])) is s
    assert s.count == 7
    np.testing.assert_allclose(s.sum, x.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(s.sum_outer, x.T @ x, rtol=1e-12)
    np.testing.assert_allclose(s.mean, x.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(s.covariance(), np.cov(x, rowvar=False), rtol=1e-10, atol=1e-12)
    a, b = StreamingStats(3).update(x[:2]), StreamingStats(3).update(x[2:])
    assert a.merge(b) is a and a.count == 7
    np.testing.assert_allclose(a.sum_outer, s.sum_outer, rtol=1e-12)
    np.testing.assert_allclose(a.sum, s.sum, rtol=1e-12)
    with pytest.raises(ValueError, match="cannot merge statistics of dimension 2 into 3"):
        a.merge(StreamingStats(2))
    for bad in (0, 2.0):
        with pytest.raises(ValueError, match="dim must be a positive integer"):
            StreamingStats(bad)
    one = StreamingStats(3).update(x[:1])
    np.testing.assert_array_equal(one.mean, x[0])
    with pytest.raises(ValueError, match=r"hold 1 vector\(s\); at least 2 are needed"):
        one.covariance()
    with pytest.raises(ValueError, match=r"hold 0 vector\(s\); at least 1"):
        StreamingStats(3).mean  # noqa: B018
    two = StreamingStats(3).update(x[:2])
    np.testing.assert_allclose(two.covariance(), np.cov(x[:2], rowvar=False), rtol=1e-10, atol=1e-12)


def test_update_refuses_bad_rows_and_overflow_without_accumulating() -> None:
    s = StreamingStats(2).update(np.ones((1, 2)))
    with pytest.raises(ValueError, match=r"1 embedding row\(s\) contain NaN"):
        s.update(np.array([[1.0, np.nan], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="float64 sums overflow"), np.errstate(over="ignore"):
        s.update(np.full((2, 2), 1e308))
    assert s.count == 1 and s.sum.tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="expect 2"):
        s.update(np.ones((1, 3)))


def test_accumulate_in_batches_equals_one_pass() -> None:
    x = data(10, 3)
    whole = StreamingStats(3).update(x)
    for batch in (1, 3, 10, 64):
        got = accumulate(x, batch_size=batch)
        assert got.count == 10
        np.testing.assert_allclose(got.sum_outer, whole.sum_outer, rtol=1e-12)
    assert accumulate(x).count == 10
    with pytest.raises(ValueError, match="2-D array"):
        accumulate(np.ones(4))


def test_numerical_rank_cases() -> None:
    assert stats.ZERO_EIGENVALUE_RTOL == 1e-10
    assert numerical_rank(np.array([])) == 0
    assert numerical_rank(np.array([0.0, 0.0])) == 0
    assert numerical_rank(np.array([1.0, 2e-10, 1e-10, 0.0])) == 2
    assert numerical_rank(np.array([1.0, 0.5, 0.2]), count=3) == 2
    assert numerical_rank(np.array([1.0, 0.5, 0.2]), count=4) == 3
    assert numerical_rank(np.array([1.0, 0.5]), count=0) == 0
    assert numerical_rank(np.array([1.0, 0.5]), count=None) == 2


def test_eigendecompose_matches_numpy_with_fixed_signs() -> None:
    x = data(12, 4)
    spectrum = eigendecompose(StreamingStats(4).update(x))
    values, vectors = np.linalg.eigh(np.cov(x, rowvar=False))
    np.testing.assert_allclose(spectrum.eigenvalues, values[::-1], rtol=1e-10)
    for i in range(4):
        column = spectrum.eigenvectors[:, i]
        assert column[np.abs(column).argmax()] > 0
        np.testing.assert_allclose(np.abs(column), np.abs(vectors[:, 3 - i]), atol=1e-10)
    np.testing.assert_allclose(spectrum.mean, x.mean(axis=0), rtol=1e-12)
    assert spectrum.count == 12 and spectrum.rank == 4 and spectrum.dim == 4


def test_eigendecompose_warns_when_n_is_at_most_d_and_clips() -> None:
    x = data(3, 3)
    with pytest.warns(UserWarning, match=r"only n=3 vectors for d=3 dimensions: the covariance has rank ≤ 2 "
                                         r"\(numerical rank 2\)"):
        spectrum = eigendecompose(StreamingStats(3).update(x))
    assert spectrum.rank == 2 and spectrum.eigenvalues[-1] < 1e-10 * spectrum.eigenvalues[0]
    assert (spectrum.eigenvalues >= 0).all()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eigendecompose(StreamingStats(3).update(data(4, 3)))
    huge = StreamingStats(2).update(np.array([[1e200, 1.0], [1e200, 2.0]]))
    with pytest.raises(ValueError, match="hold NaN or infinite values"):
        eigendecompose(huge)


# --- SpecTemp -----------------------------------------------------------------------------------------------

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


# --- baselines ----------------------------------------------------------------------------------------------

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


# --- EmbedFilter --------------------------------------------------------------------------------------------

def test_band_size_and_start() -> None:
    assert band_size(8) == 8 and band_size(8, dim=3) == 3 and band_size(8, ratio=3) == 2 and band_size(8, ratio=8) == 1
    assert band_size(8, ratio=np.int64(2)) == 4 and band_size(8, ratio=1) == 8
    for bad in (0, 9, True, 2.0):
        with pytest.raises(ValueError, match=r"ratio \(τ\) must be an integer between 1 and 8"):
            band_size(8, ratio=bad)
    with pytest.raises(ValueError, match="not both"):
        band_size(8, dim=2, ratio=2)
    with pytest.raises(ValueError, match="between 1"):
        band_size(8, dim=9)
    assert [band_start(8, m) for m in (8, 7, 6, 3, 1)] == [0, 0, 1, 2, 3]


def test_embedfilter_map_is_the_middle_band_without_centering() -> None:
    basis = np.arange(36, dtype=float).reshape(6, 6)
    linear = embedfilter_map(basis, 2)
    assert linear.mean.tolist() == [0.0] * 6 and np.array_equal(linear.matrix, basis[:, 2:4])
    with pytest.raises(ValueError, match=r"dim \(m\) must be an integer between 1 and the embedding dimension 6"):
        embedfilter_map(basis, 7)


def test_gram_basis_in_chunks_with_excluded_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    w = data(11, 4, seed=5)
    values, vectors = gram_basis(w, exclude_rows=[2, 9, 9])
    kept = np.delete(w, [2, 9], axis=0)
    ref_values, ref_vectors = svd_basis(w, exclude_rows=[9, 2])
    np.testing.assert_allclose(values, np.linalg.svd(kept, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(values, ref_values, rtol=1e-10)
    np.testing.assert_allclose(vectors, ref_vectors, atol=1e-8)
    for i in range(4):
        assert vectors[np.abs(vectors[:, i]).argmax(), i] > 0
    monkeypatch.setattr(embedfilter, "GRAM_CHUNK_ROWS", 3)
    chunked_values, chunked = gram_basis(torch.from_numpy(w), exclude_rows=[2, 9])
    np.testing.assert_allclose(chunked_values, values, rtol=1e-10)
    np.testing.assert_allclose(chunked, vectors, atol=1e-8)
    assert gram_basis(w)[0][0] == pytest.approx(np.linalg.svd(w, compute_uv=False)[0])
    svd_values, _ = svd_basis(torch.from_numpy(w))
    np.testing.assert_allclose(svd_values, np.linalg.svd(w, compute_uv=False), rtol=1e-10)


def test_embedfilter_refusals() -> None:
    w = data(5, 3)
    for bad in ([-1], [5]):
        with pytest.raises(ValueError, match=r"exclude_rows must index rows 0\.\.4"):
            gram_basis(w, exclude_rows=bad)
    gram_basis(w, exclude_rows=[0, 4])
    for shape in ((2, 3), (6,)):
        with pytest.raises(ValueError, match="at least as many rows as columns"):
            svd_basis(np.ones(shape))
    gram_basis(np.eye(3))
    w[1, 1] = np.nan
    with pytest.raises(ValueError, match="contains NaN or inf"):
        gram_basis(w)
    assert np.array_equal(embedfilter._fix_signs(np.array([[0.0, -2.0], [0.0, 1.0]])), np.array([[0.0, 2.0],
                                                                                                [0.0, -1.0]]))


def test_all_reduce_in_a_one_process_group_keeps_the_statistics(tmp_path) -> None:
    import torch.distributed as dist

    x = data(5, 3)
    s = StreamingStats(3).update(x)
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        assert s.all_reduce() is s
    finally:
        dist.destroy_process_group()
    assert s.count == 5 and isinstance(s.count, int)
    np.testing.assert_array_equal(s.sum, x.sum(axis=0))
    np.testing.assert_allclose(s.sum_outer, x.T @ x, rtol=1e-12)


def test_tensor_weights_that_require_grad_are_read() -> None:
    w = torch.from_numpy(data(6, 3)).requires_grad_(True)
    np.testing.assert_allclose(gram_basis(w)[0], svd_basis(w)[0], rtol=1e-10)


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


def test_edge_dimensions_and_negative_spectra() -> None:
    one = StreamingStats(1).update(np.array([[1.0], [3.0]]))
    assert one.covariance().tolist() == [[2.0]]
    assert numerical_rank(np.array([-1.0, -2.0])) == 0


def test_kneedle_sensitivity_is_the_reference_half() -> None:
    # a two-elbow spectrum where Kneedle's S matters: S = 0.5 finds the knee at rank 3, kneed's default S = 1 at 12
    lam = np.array([13.843486, 13.283077, 9.081359, 9.056804, 6.926726, 6.632569, 6.194163, 6.179362, 3.327242,
                    2.807339, 2.362838, 1.904899, 1.717041, 1.571532, 1.310284, 1.18463, 1.180844, 1.142105, 0.663271,
                    0.569199, 0.233783, 0.198884, 0.185047, 0.183137, 0.126102, 0.106075, 0.101159, 0.096235,
                    0.096142, 0.089172, 0.082588, 0.077185, 0.076353, 0.074079, 0.069339, 0.051292, 0.051193,
                    0.050582, 0.050003, 0.050002])
    assert spectemp_curve(lam).knee == reference_gamma(lam)[2] == 3


def test_eigenvector_signs_on_a_wider_spectrum() -> None:
    rotation = np.linalg.qr(np.random.default_rng(12).standard_normal((8, 8)))[0]  # eigenvectors far from the axes
    spectrum = eigendecompose(StreamingStats(8).update(data(40, 8, seed=11) @ rotation))
    columns = spectrum.eigenvectors.T
    assert all(column[np.abs(column).argmax()] > 0 for column in columns)
