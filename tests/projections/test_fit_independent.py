"""`fit` against an independent computation, and k chosen at load time = fitting at k for every method that has it.

The independent side encodes the corpus one text at a time (no padding, no batching, none of the fit's encoding
code) through the source folder's `AutoModel`, L2-normalises the pooled vectors in numpy and takes `np.cov` /
`np.linalg.eigh` of them. The fit encodes in sorted, padded batches in float32, so the two agree to float32
round-off (~1e-8 measured here), not bit for bit; every tolerance below is a few orders of magnitude above that
round-off and far below what a wrong formula gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed.export.verify import encode_with_automodel
from hf_dumpembed.projections.fit import FitOptions, fit_projection
from tests.support.fit_fixtures import corpus_texts, numpy_spectrum, unit_pooled_one_by_one, write_corpus

TEXTS = ["A man is eating food.", "hello world second text", "Open the file, read every line.", "A monkey plays drums."]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "texts.txt")


def reference_knee_and_gamma(model_dir: Path, k: int) -> tuple[int, float]:
    """The authors' rule by hand on the numpy spectrum of the model's unit pooled vectors of the fixture corpus:
    noise floor σ² = mean(λ[int(0.9d):]), SNR_i = max(0, (λ_i − σ²) / σ²) for i < int(0.9d), knee by
    `kneed.KneeLocator(convex, decreasing, S=0.5)`, γ(k) = min(1, SNR(k) / SNR(knee)).

    Replaces a `0 <= γ <= 1` check."""
    from kneed import KneeLocator

    _, values, _ = numpy_spectrum(unit_pooled_one_by_one(model_dir, corpus_texts()))
    t0 = int(0.9 * len(values))
    floor = values[t0:].mean()
    snr = np.maximum(0.0, (values[:t0] - floor) / floor)
    knee = int(KneeLocator(np.arange(1, t0 + 1), snr, S=0.5, curve="convex", direction="decreasing").knee)
    return knee, min(1.0, snr[k - 1] / snr[knee - 1])


@pytest.fixture(scope="module")
def independent(llama_dump_model: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return numpy_spectrum(unit_pooled_one_by_one(llama_dump_model, corpus_texts()))


@pytest.fixture(scope="module")
def pca_folder(llama_dump_model: Path, corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fit_projection(llama_dump_model, tmp_path_factory.mktemp("pca") / "pca32",
                          FitOptions(method="pca", dim=32, progress=False, plots=False), corpus=corpus)


def test_fit_mean_and_spectrum_equal_numpy_cov_and_eigh_of_the_unit_pooled_vectors(pca_folder, independent) -> None:
    """The stored mean / eigenvalues / eigenvectors are those of the model's own unit pooled vectors."""
    mean, values, vectors = independent
    projection = AutoModel.from_pretrained(pca_folder, trust_remote_code=True).projection
    stored_mean = projection.mean.double().numpy()
    stored_values = projection.eigenvalues.double().numpy()
    stored_vectors = projection.basis.double().numpy()
    np.testing.assert_allclose(stored_mean, mean, rtol=0, atol=1e-7)
    # fp32 buffers; both sides descend; the trailing eigenvalues are tiny, so compare relative to the largest.
    assert np.abs(stored_values - values).max() <= 1e-6 * values[0]
    np.testing.assert_allclose(stored_values[:8], values[:8], rtol=1e-5)
    # Whole spectrum, sign-free: U Λ Uᵀ is the covariance itself.
    cov = vectors @ np.diag(values) @ vectors.T  # = np.cov of the unit vectors, to float64 round-off
    rebuilt = stored_vectors @ np.diag(stored_values) @ stored_vectors.T
    assert np.abs(rebuilt - cov).max() <= 1e-6 * values[0]
    # Column by column where the eigengap makes a column well defined (perturbation ≈ ‖ΔC‖ / gap).
    gaps = np.minimum(np.abs(np.diff(values, prepend=np.inf)), np.abs(np.diff(values, append=-np.inf)))
    separated = np.flatnonzero(gaps > 0.02 * values[0])
    assert len(separated) >= 3, gaps / values[0]
    for column in separated:
        assert abs(stored_vectors[:, column] @ vectors[:, column]) >= 1 - 1e-6, column
        np.testing.assert_allclose(stored_vectors[:, column], vectors[:, column], atol=1e-5)
    assert np.abs(stored_vectors.T @ stored_vectors - np.eye(32)).max() <= 1e-5


@pytest.mark.parametrize("method,gamma", [("pca", 0.0), ("whiten", 1.0), ("gamma", 0.3), ("spectemp", None)])
def test_fitted_vectors_equal_the_numpy_map_of_the_unit_pooled_vectors(method, gamma, llama_dump_model, corpus,
                                                                       independent, tmp_path) -> None:
    """End to end: the folder's vectors are normalise((x̂ − μ) U_k diag((λ + 1e-6)^(−γ/2))) with x̂ the unit pooled
    vector, μ, U, λ from numpy (and for SpecTemp γ(k) by hand)."""
    mean, values, vectors = independent
    k = 12  # above this corpus's knee, where SpecTemp's γ(k) is below 1 (0.24)
    if gamma is None:  # SpecTemp: γ(12) by the authors' rule, by hand
        gamma = reference_knee_and_gamma(llama_dump_model, k)[1]
    extra = {"gamma": gamma} if method == "gamma" else {"mode": "reference"} if method == "spectemp" else {}
    out = fit_projection(llama_dump_model, tmp_path / method,
                         FitOptions(method=method, dim=k, progress=False, plots=False, **extra), corpus=corpus)
    x = unit_pooled_one_by_one(llama_dump_model, TEXTS)
    y = (x - mean) @ (vectors[:, :k] * (values[:k] + 1e-6) ** (-gamma / 2))
    expected = y / np.linalg.norm(y, axis=1, keepdims=True)
    got = encode_with_automodel(out, TEXTS)
    assert got.shape == (len(TEXTS), k)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4 if gamma else 1e-5)


# Each method that supports load-time k, with the options it is fitted with; k = 16 stored, k = 9 chosen at load
# (on this corpus γ(9) ≠ γ(10) for SpecTemp, so an off-by-one in the γ index shows, and
# (32 − 9) is odd, so a band start rounded the other way shows).
LOAD_TIME_K = {
    "pca": {"method": "pca"},
    "whiten": {"method": "whiten"},
    "gamma": {"method": "gamma", "gamma": 0.3},
    "truncate": {"method": "truncate"},
    "embedfilter": {"method": "embedfilter"},
    "spectemp-reference": {"method": "spectemp", "mode": "reference"},
    "spectemp-robust": {"method": "spectemp", "mode": "robust"},
    "spectemp-auto": {"method": "spectemp", "mode": "auto"},
}


@pytest.fixture(scope="module")
def paragraphs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two-sentence texts (auto mode's pseudo-queries are first sentences with something after them)."""
    sentences = corpus_texts()
    path = tmp_path_factory.mktemp("paragraphs") / "paragraphs.txt"
    path.write_text("\n".join(f"{a} {b}" for a, b in zip(sentences, sentences[7:] + sentences[:7], strict=True)))
    return path


@pytest.mark.parametrize("name", list(LOAD_TIME_K))
def test_k_chosen_at_load_equals_fitting_at_k(name, llama_dump_model, corpus, paragraphs, tmp_path) -> None:
    """Bit for bit: the same corpus pass gives the same float64 spectrum, and both the fit and the load-time
    recomposition build the fp32 matrix with the same function (`spectral_matrix` / `band_matrix` / the prefix
    identity), so matrix, mean and vectors are equal, not merely close."""
    options = dict(LOAD_TIME_K[name])
    method = options.pop("method")
    base = {"progress": False, "plots": False, **options}
    corpus_arg = {"embedfilter": None, "truncate": None}.get(method, paragraphs if name.endswith("auto") else corpus)
    wide = fit_projection(llama_dump_model, tmp_path / "k16", FitOptions(method=method, dim=16, **base),
                          corpus=corpus_arg)
    narrow = fit_projection(llama_dump_model, tmp_path / "k9", FitOptions(method=method, dim=9, **base),
                            corpus=corpus_arg)
    chosen = AutoModel.from_pretrained(wide, trust_remote_code=True, projection_dim=9)
    fitted = AutoModel.from_pretrained(narrow, trust_remote_code=True)
    assert chosen.projection.matrix.shape == (32, 9)
    assert torch.equal(chosen.projection.matrix, fitted.projection.matrix)
    assert torch.equal(chosen.projection.mean, fitted.projection.mean)
    fitted_info = json.loads((narrow / "config.json").read_text())["projection_info"]
    for key in ("dim", "gamma", "route"):
        assert chosen.config.projection_info.get(key) == fitted_info.get(key), key
    tokenizer = AutoTokenizer.from_pretrained(str(wide), trust_remote_code=True)
    with torch.inference_mode():
        batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
        assert torch.equal(chosen(**batch).sentence_embedding, fitted(**batch).sentence_embedding)
