"""Compiled torch (compile_model): the DumpEmbed backbone compiled in place gives the eager model's vectors through
sentence-transformers and the model's own forward, with dynamic shapes; what it refuses.

The default run compiles with ``aot_eager`` (traced and run by torch, nothing built in C++: the lone-row doubling and
the routing are what is checked); the slow tests compile with inductor and frozen weights, in fp32 and bf16."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoTokenizer

from hf_dumpembed import compile_model
from hf_dumpembed.export import torch_compiled
from hf_dumpembed.export.onnx import FP32_TOLERANCE, MIN_COSINE
from hf_dumpembed.export.runtimes import row_cosines
from hf_dumpembed.export.torch_compiled import doubled_lone_row, first_row
from hf_dumpembed.remote import DumpEmbedModel

TEXTS = ["A man is eating food.", "How do I read a file line by line in Python? " * 6, "x",
         "The quick brown fox jumps over the lazy dog."]


def _st(folder, dtype=torch.float32) -> SentenceTransformer:
    return SentenceTransformer(str(folder), trust_remote_code=True, model_kwargs={"dtype": dtype})


def _encodings(st: SentenceTransformer) -> list[np.ndarray]:
    """Queries and documents, one lone text, and a batch of other lengths (new shapes after the first call)."""
    return [st.encode_query(TEXTS), st.encode_document(TEXTS[:1]), st.encode_document(TEXTS[1:] * 3)]


def test_compiled_model_gives_the_eager_vectors(bert_dump_model) -> None:
    eager = _encodings(_st(bert_dump_model))
    st = _st(bert_dump_model)
    assert compile_model(st, backend="aot_eager") is st
    for got, want in zip(_encodings(st), eager, strict=True):
        assert np.abs(got - want).max() <= 1e-5
    model = st[0].auto_model
    with pytest.raises(ValueError, match="compiled already"):
        compile_model(model, backend="aot_eager")


def test_the_forward_keeps_training_gradients_and_outputs(bert_dump_model) -> None:
    model = DumpEmbedModel.from_pretrained(bert_dump_model).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(bert_dump_model), trust_remote_code=True)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.inference_mode():
        want = model(**batch)
    compile_model(model, backend="aot_eager")
    with torch.inference_mode():
        got = model(**batch)
        lone = model(**{name: value[:1] for name, value in batch.items()})  # doubled inside, cut back to one row
    assert got.last_hidden_state.shape == want.last_hidden_state.shape
    assert torch.allclose(got.sentence_embedding, want.sentence_embedding, atol=1e-5)
    assert lone.last_hidden_state.shape[0] == 1 and torch.allclose(lone.sentence_embedding[0],
                                                                   want.sentence_embedding[0], atol=1e-5)
    out = model(**batch)  # gradients on: the eager backbone, as before compiling
    out.sentence_embedding.sum().backward()
    assert torch.allclose(out.sentence_embedding, want.sentence_embedding, atol=1e-5)


def test_what_is_not_a_dumpembed_model_is_refused(tmp_path) -> None:
    for thing in (torch.nn.Linear(2, 2), "a folder", None):
        with pytest.raises(TypeError, match="model_type 'dumpembed'.*auto_model.compile"):
            compile_model(thing)


def test_a_missing_cpp_compiler_is_named(bert_dump_model, monkeypatch) -> None:
    monkeypatch.setattr(torch_compiled, "cpp_compiler", lambda: None)
    model = DumpEmbedModel.from_pretrained(bert_dump_model).eval()
    with pytest.raises(RuntimeError, match="no C\\+\\+ compiler.*apt-get install g\\+\\+"):
        compile_model(model)
    assert model.backbone.forward.__func__ is type(model.backbone).forward  # nothing was changed


def test_a_lone_row_is_doubled_and_cut_back() -> None:
    ids = torch.tensor([[5, 6, 7]])
    doubled = doubled_lone_row({"input_ids": ids, "attention_mask": torch.ones_like(ids), "output_hidden_states": None})
    assert doubled["input_ids"].tolist() == [[5, 6, 7]] * 2 and doubled["attention_mask"].tolist() == [[1, 1, 1]] * 2
    assert doubled["output_hidden_states"] is None
    two = {"input_ids": torch.ones(2, 3)}
    assert doubled_lone_row(two) is two
    states = torch.arange(2 * 4 * 3).view(2, 4, 3)
    assert first_row((states, torch.ones(2, 4)))[0].shape == (1, 4, 3) and first_row(None) is None


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_inductor_with_frozen_weights_keeps_the_vectors(bert_dump_model, dtype) -> None:
    """Inductor's C++ kernels: fp32 within the fp32 export tolerance, bf16 within the bf16 one of eager bf16."""
    eager = _encodings(_st(bert_dump_model, dtype))
    st = compile_model(_st(bert_dump_model, dtype))
    for got, want in zip(_encodings(st), eager, strict=True):
        if dtype == torch.float32:
            assert np.abs(got - want).max() <= FP32_TOLERANCE
        else:
            assert row_cosines(got, want).min() >= MIN_COSINE["bf16"]
