"""Fast exact-value tests of the projection formulas and statistics (linear maps, streaming stats, eigh, SpecTemp's
γ(k), EmbedFilter's band, the baselines), each checked against an independent numpy computation. Written to kill
the mutants `scripts/mutation.py` finds (tests/MUTATION.md)."""

from __future__ import annotations

import numpy as np
import pytest

from hf_dumpembed.projections.linear import SPECTRAL_EPS, LinearMap, check_dim, l2_normalize, tempered_matrix


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
