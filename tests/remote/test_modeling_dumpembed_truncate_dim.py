"""sentence-transformers' ``truncate_dim`` on a DumpEmbed folder gives what ``projection_dim`` gives.

sentence-transformers slices ``sentence_embedding[..., :truncate_dim]`` after the model runs; the remote code reads
the dimension it is about to slice to and returns the map fitted for it (unit norm). Before this, a folder fitted
at k = 16 loaded with ``truncate_dim=8`` returned the first 8 coordinates of the k = 16 map, not renormalised.
"""

from __future__ import annotations

import logging
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


def _library_call(function, name: str = "forward", owner: object = None):
    """``function`` called from a method ``name`` of ``owner`` in a sentence-transformers module (a stack frame of
    the library that holds no ``truncate_dim`` local)."""
    scope = {"__name__": "sentence_transformers.fake_release", "function": function}
    exec(f"def {name}(self):\n    return function()\n", scope)
    return scope[name](owner)


class _Owner:
    """Stands for a SentenceTransformer of a release whose ``_inference`` keeps no ``truncate_dim`` local."""


_Owner.__module__ = "sentence_transformers.fake_release"


@pytest.fixture
def other_release(monkeypatch):
    """sentence-transformers reports 7.1.0; the once-per-message record of transformers' logger is fresh."""
    import sentence_transformers

    from hf_dumpembed.remote import modeling_dumpembed

    monkeypatch.setattr(sentence_transformers, "__version__", "7.1.0")
    logging.Logger.warning_once.cache_clear()
    yield modeling_dumpembed
    logging.Logger.warning_once.cache_clear()


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "whose truncate_dim it reads" in r.getMessage()]


def test_a_release_whose_frame_is_not_found_warns_once_naming_it(other_release, caplog) -> None:
    """sentence-transformers passes the model no truncate_dim (no supported hook): the value is read from
    ``SentenceTransformer._inference``'s locals. On a release whose frames hold no such local, the model says so
    once, naming the version, and keeps the loaded map."""
    read = other_release.sentence_transformers_truncate_dim
    with caplog.at_level(logging.WARNING), torch.inference_mode():
        assert _library_call(read) is None
        assert _library_call(read) is None
        (said,) = _warnings(caplog)
        logging.Logger.warning_once.cache_clear()
        assert _library_call(read, "_inference", _Owner()) is None  # an _inference frame without the local
    assert _warnings(caplog) == [said, said]
    assert "sentence-transformers 7.1.0 runs" in said and "projection_dim" in said


def test_no_warning_where_the_value_is_found_or_not_an_encode(other_release, fitted, caplog) -> None:
    """The real encode finds its truncate_dim (no warning, whatever version the library reports); a forward that is
    not sentence-transformers inference (no inference mode: training) says nothing."""
    folder = fitted["auto"]
    with caplog.at_level(logging.WARNING):
        got = SentenceTransformer(str(folder), trust_remote_code=True).encode(TEXTS, truncate_dim=8)
        np.testing.assert_allclose(got, at_dim(folder, 8), atol=1e-6, rtol=0)
        with torch.no_grad():
            assert _library_call(other_release.sentence_transformers_truncate_dim) is None
    assert _warnings(caplog) == []
