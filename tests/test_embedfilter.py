"""EmbedFilter basis: orthonormal band, filtered inner products, eigh = SVD subspace, τ=1 identity."""

from __future__ import annotations

import numpy as np
import pytest

from hf_dumpembed.projections.embedfilter import band_size, embedfilter_map, gram_basis, svd_basis


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


def test_the_numpy_maps_are_the_shipped_formulas() -> None:
    """The fit's numpy maps and the remote code's torch functions (what a saved folder recomposes) agree."""
    import torch

    from hf_dumpembed.projections.linear import tempered_matrix
    from hf_dumpembed.remote.modeling_dumpembed import band_matrix, band_start, spectral_matrix

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
