"""sentence-transformers' ``truncate_dim`` on a DumpEmbed folder gives what ``projection_dim`` gives.

sentence-transformers slices ``sentence_embedding[..., :truncate_dim]`` after the model runs; the remote code reads
the dimension it is about to slice to and returns the map fitted for it (unit norm). Before this, a folder fitted
at k = 16 loaded with ``truncate_dim=8`` returned the first 8 coordinates of the k = 16 map, not renormalised.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed.export.verify import encode_with_automodel
from hf_dumpembed.projections.fit import FitOptions, fit_projection
from tests.support.fit_fixtures import corpus_texts

TEXTS = ["A man is eating food.", "hello world second text", "Open the file, read every line.", "A monkey plays drums."]


@pytest.fixture(scope="module")
def fitted(llama_dump_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny Llama fitted with SpecTemp at k = 16 in both modes, and PCA at 16."""
    root = tmp_path_factory.mktemp("truncate")
    sentences = corpus_texts()  # two-sentence texts: the auto mode's pseudo-queries are their first sentences
    corpus = root / "paragraphs.txt"
    corpus.write_text("\n".join(f"{a} {b}" for a, b in zip(sentences, sentences[7:] + sentences[:7], strict=True)))
    options = {mode: FitOptions(method="spectemp", mode=mode, dim=16, progress=False, plots=False)
               for mode in ("reference", "auto")}
    options["pca"] = FitOptions(method="pca", dim=16, progress=False, plots=False)
    return {kind: fit_projection(llama_dump_model, root / kind, option, corpus=corpus)
            for kind, option in options.items()}


def at_dim(folder: Path, k: int) -> np.ndarray:
    """The folder loaded with ``projection_dim=k`` (the map fitted for k), through AutoModel."""
    model = AutoModel.from_pretrained(folder, trust_remote_code=True, projection_dim=k).eval()
    batch = AutoTokenizer.from_pretrained(folder)(TEXTS, padding=True, return_tensors="pt")
    with torch.inference_mode():
        return model(**batch).sentence_embedding.numpy()


@pytest.mark.parametrize("kind", ["reference", "auto", "pca"])
def test_constructor_truncate_dim_equals_projection_dim(fitted, kind) -> None:
    folder = fitted[kind]
    for k in (1, 5, 8, 16, 24):  # below, at and above the fitted dimension
        got = SentenceTransformer(str(folder), trust_remote_code=True, truncate_dim=k).encode(TEXTS)
        assert got.shape == (len(TEXTS), min(k, 32))
        np.testing.assert_allclose(got, at_dim(folder, k), atol=1e-6, rtol=0)
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_per_call_and_context_manager_truncate_dim(fitted) -> None:
    folder = fitted["auto"]
    model = SentenceTransformer(str(folder), trust_remote_code=True)
    full = model.encode(TEXTS)
    assert full.shape[1] == 16
    np.testing.assert_allclose(model.encode(TEXTS, truncate_dim=8), at_dim(folder, 8), atol=1e-6, rtol=0)
    np.testing.assert_allclose(model.encode_query(TEXTS, truncate_dim=3), at_dim(folder, 3), atol=1e-6, rtol=0)
    with model.truncate_embeddings(4):
        np.testing.assert_allclose(model.encode(TEXTS), at_dim(folder, 4), atol=1e-6, rtol=0)
    # the per-call dimension leaves the loaded map alone
    np.testing.assert_array_equal(model.encode(TEXTS), full)


def test_automodel_forward_takes_projection_dim(fitted) -> None:
    folder = fitted["reference"]
    model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.inference_mode():
        got = model(**batch, projection_dim=8).sentence_embedding.numpy()
        loaded = model(**batch).sentence_embedding.numpy()
    np.testing.assert_allclose(got, at_dim(folder, 8), atol=1e-6, rtol=0)
    np.testing.assert_allclose(loaded, at_dim(folder, 16), atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="projection_dim must be an integer between 1 and 32"):
        model(**batch, projection_dim=33)


def test_unfitted_folder_truncates_and_renormalises(llama_dump_model) -> None:
    """No fitted projection: the first k pooled coordinates, renormalised (the truncation map, unit norm)."""
    full = encode_with_automodel(llama_dump_model, TEXTS)
    got = SentenceTransformer(str(llama_dump_model), trust_remote_code=True, truncate_dim=6).encode(TEXTS)
    expected = full[:, :6] / np.linalg.norm(full[:, :6], axis=1, keepdims=True)
    np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0)


def test_mteb_wrapper_truncate_dim(fitted) -> None:
    """mteb's sentence-transformers wrapper passes ``embed_dim`` as ``truncate_dim``."""
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    folder = fitted["auto"]
    wrapper = SentenceTransformerEncoderWrapper(str(folder), embed_dim=8, trust_remote_code=True)
    np.testing.assert_allclose(wrapper.model.encode(TEXTS), at_dim(folder, 8), atol=1e-6, rtol=0)
