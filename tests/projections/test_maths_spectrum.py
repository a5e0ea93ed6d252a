"""The corpus spectrum: eigh of the streamed covariance (sorted, signs fixed, numerical rank), the dimension check and
the tempered matrix, each against an independent numpy computation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hf_dumpembed.projections.maths.spectrum import (
    SPECTRAL_EPS,
    ZERO_EIGENVALUE_RTOL,
    check_dim,
    eigendecompose,
    numerical_rank,
    tempered_matrix,
)
from hf_dumpembed.projections.maths.statistics import StreamingStats
from tests.support.spectra import scaled_gaussian, unit_sample


def test_rank_deficient_spectrum_warns_and_reports_rank() -> None:
    x = unit_sample(n=10, d=24)
    with pytest.warns(UserWarning, match="rank"):
        spectrum = eigendecompose(StreamingStats(24).update(x))
    assert spectrum.rank == 9
    assert np.all(spectrum.eigenvalues >= 0)


# Exact values against independent numpy computations (written to kill mutants: tests/MUTATION.md).


def test_numerical_rank_cases() -> None:
    assert ZERO_EIGENVALUE_RTOL == 1e-10
    assert numerical_rank(np.array([])) == 0
    assert numerical_rank(np.array([0.0, 0.0])) == 0
    assert numerical_rank(np.array([1.0, 2e-10, 1e-10, 0.0])) == 2
    assert numerical_rank(np.array([1.0, 0.5, 0.2]), count=3) == 2
    assert numerical_rank(np.array([1.0, 0.5, 0.2]), count=4) == 3
    assert numerical_rank(np.array([1.0, 0.5]), count=0) == 0
    assert numerical_rank(np.array([1.0, 0.5]), count=None) == 2


def test_eigendecompose_matches_numpy_with_fixed_signs() -> None:
    x = scaled_gaussian(12, 4)
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
    x = scaled_gaussian(3, 3)
    with pytest.warns(UserWarning, match=r"only n=3 vectors for d=3 dimensions: the covariance has rank ≤ 2 "
                                         r"\(numerical rank 2\)"):
        spectrum = eigendecompose(StreamingStats(3).update(x))
    assert spectrum.rank == 2 and spectrum.eigenvalues[-1] < 1e-10 * spectrum.eigenvalues[0]
    assert (spectrum.eigenvalues >= 0).all()

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eigendecompose(StreamingStats(3).update(scaled_gaussian(4, 3)))
    huge = StreamingStats(2).update(np.array([[1e200, 1.0], [1e200, 2.0]]))
    with pytest.raises(ValueError, match="hold NaN or infinite values"):
        eigendecompose(huge)


def test_edge_dimensions_and_negative_spectra() -> None:
    one = StreamingStats(1).update(np.array([[1.0], [3.0]]))
    assert one.covariance().tolist() == [[2.0]]
    assert numerical_rank(np.array([-1.0, -2.0])) == 0


def test_eigenvector_signs_on_a_wider_spectrum() -> None:
    rotation = np.linalg.qr(np.random.default_rng(12).standard_normal((8, 8)))[0]  # eigenvectors far from the axes
    spectrum = eigendecompose(StreamingStats(8).update(scaled_gaussian(40, 8, seed=11) @ rotation))
    columns = spectrum.eigenvectors.T
    assert all(column[np.abs(column).argmax()] > 0 for column in columns)


def test_check_dim_bounds_and_types() -> None:
    assert check_dim(1, 4) == 1 and check_dim(np.int64(4), 4) == 4 and type(check_dim(np.int64(4), 4)) is int
    for bad in (0, 5, True, 2.0, "2"):
        with pytest.raises(ValueError, match=r"k_name must be an integer between 1 and the embedding dimension 4"):
            check_dim(bad, 4, "k_name")
    with pytest.raises(ValueError, match=r"^dim must"):
        check_dim(0, 4)


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
