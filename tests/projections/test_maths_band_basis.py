"""EmbedFilter's basis: orthonormal band, filtered inner products, eigh = SVD subspace, τ=1 identity."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hf_dumpembed.projections.maths import band_basis
from hf_dumpembed.projections.maths.band_basis import band_size, gram_basis, svd_basis
from hf_dumpembed.projections.maths.reference_maps import embedfilter_map
from hf_dumpembed.remote.modeling_dumpembed import band_start
from tests.support.spectra import scaled_gaussian


def _head(vocab: int = 400, d: int = 32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((vocab, d)) * np.linspace(3.0, 0.2, d)).astype(np.float32)


def test_rows_orthonormal_and_inner_products_equal_the_filtered_ones() -> None:
    w = _head()
    sigma, v = gram_basis(w)
    assert np.all(np.diff(sigma) <= 0)
    d = w.shape[1]
    m = band_size(d, ratio=2)
    assert m == 16
    linear = embedfilter_map(v, m)
    b = linear.matrix.T  # (m, d)
    assert np.allclose(b @ b.T, np.eye(m), atol=1e-12)
    s = (d - m) // 2
    edge = np.concatenate([v[:, :s], v[:, s + m :]], axis=1)
    filtered = np.eye(d) - edge @ edge.T
    h = np.random.default_rng(1).standard_normal((6, d))
    assert np.allclose((h @ b.T) @ (h @ b.T).T, h @ filtered @ h.T, atol=1e-10)
    assert not linear.mean.any()


def test_eigh_path_and_svd_path_span_the_same_subspace() -> None:
    w = _head()
    sigma_e, v_e = gram_basis(w)
    sigma_s, v_s = svd_basis(w)
    assert np.allclose(sigma_e, sigma_s, rtol=1e-9)
    for m in (8, 16, 31):
        p_e = embedfilter_map(v_e, m).matrix
        p_s = embedfilter_map(v_s, m).matrix
        assert np.allclose(p_e @ p_e.T, p_s @ p_s.T, atol=1e-8)


def test_ratio_one_is_the_identity_up_to_rotation() -> None:
    w = _head()
    _, v = gram_basis(w)
    linear = embedfilter_map(v, band_size(32, ratio=1))
    h = np.random.default_rng(3).standard_normal((4, 32))
    unit = h / np.linalg.norm(h, axis=1, keepdims=True)
    y = linear.apply(h)  # a rotation of the identity: every cosine similarity is unchanged
    assert np.allclose(y @ y.T, unit @ unit.T, atol=1e-12)
    assert np.allclose(linear.matrix @ linear.matrix.T, np.eye(32), atol=1e-12)


def test_excluded_rows_do_not_count() -> None:
    w = _head()
    with_extra = np.concatenate([w, 50 * np.ones((3, 32), dtype=np.float32)])
    _, v_excluded = gram_basis(with_extra, exclude_rows=[400, 401, 402])
    _, v_plain = gram_basis(w)
    assert np.allclose(np.abs(v_excluded), np.abs(v_plain), atol=1e-9)
    _, v_polluted = gram_basis(with_extra)
    assert not np.allclose(np.abs(v_polluted[:, 0]), np.abs(v_plain[:, 0]), atol=1e-3)


def test_bad_band_arguments() -> None:
    with pytest.raises(ValueError, match="either dim"):
        band_size(32, dim=8, ratio=2)
    for ratio in (0, 33, 1.5):
        with pytest.raises(ValueError, match="ratio"):
            band_size(32, ratio=ratio)
    with pytest.raises(ValueError, match="between 1"):
        band_size(32, dim=40)
    with pytest.raises(ValueError, match="at least as many rows"):
        gram_basis(np.ones((4, 8)))
    with pytest.raises(ValueError, match="exclude_rows"):
        gram_basis(_head(), exclude_rows=[400])


# Exact values against independent numpy computations (written to kill mutants: tests/MUTATION.md).


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


def test_gram_basis_in_chunks_with_excluded_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    w = scaled_gaussian(11, 4, seed=5)
    values, vectors = gram_basis(w, exclude_rows=[2, 9, 9])
    kept = np.delete(w, [2, 9], axis=0)
    ref_values, ref_vectors = svd_basis(w, exclude_rows=[9, 2])
    np.testing.assert_allclose(values, np.linalg.svd(kept, compute_uv=False), rtol=1e-10)
    np.testing.assert_allclose(values, ref_values, rtol=1e-10)
    np.testing.assert_allclose(vectors, ref_vectors, atol=1e-8)
    for i in range(4):
        assert vectors[np.abs(vectors[:, i]).argmax(), i] > 0
    monkeypatch.setattr(band_basis, "GRAM_CHUNK_ROWS", 3)
    chunked_values, chunked = gram_basis(torch.from_numpy(w), exclude_rows=[2, 9])
    np.testing.assert_allclose(chunked_values, values, rtol=1e-10)
    np.testing.assert_allclose(chunked, vectors, atol=1e-8)
    assert gram_basis(w)[0][0] == pytest.approx(np.linalg.svd(w, compute_uv=False)[0])
    svd_values, _ = svd_basis(torch.from_numpy(w))
    np.testing.assert_allclose(svd_values, np.linalg.svd(w, compute_uv=False), rtol=1e-10)


def test_embedfilter_refusals() -> None:
    w = scaled_gaussian(5, 3)
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
    assert np.array_equal(band_basis.fix_signs(np.array([[0.0, -2.0], [0.0, 1.0]])), np.array([[0.0, 2.0],
                                                                                                [0.0, -1.0]]))


def test_tensor_weights_that_require_grad_are_read() -> None:
    w = torch.from_numpy(scaled_gaussian(6, 3)).requires_grad_(True)
    np.testing.assert_allclose(gram_basis(w)[0], svd_basis(w)[0], rtol=1e-10)
