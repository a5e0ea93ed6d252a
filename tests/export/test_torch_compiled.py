"""Compiled torch (compile_model): the DumpEmbed backbone compiled in place gives the eager model's vectors through
sentence-transformers and the model's own forward, with dynamic shapes and with length buckets; what it refuses.

The default run compiles with ``aot_eager`` (traced and run by torch, nothing built in C++: the padding, cutting and
routing are what is checked); the slow tests compile with inductor and frozen weights, in fp32 and bf16."""

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
from hf_dumpembed.export.torch_compiled import DEFAULT_BUCKETS, bucket_sizes, cut, pad_inputs
from hf_dumpembed.remote import DumpEmbedModel

TEXTS = ["A man is eating food.", "How do I read a file line by line in Python? " * 6, "x",
         "The quick brown fox jumps over the lazy dog."]


def _st(folder, dtype=torch.float32) -> SentenceTransformer:
    return SentenceTransformer(str(folder), trust_remote_code=True, model_kwargs={"dtype": dtype})


def _encodings(st: SentenceTransformer) -> list[np.ndarray]:
    """Queries and documents, one lone text, and a batch of other lengths (new shapes after the first call)."""
    return [st.encode_query(TEXTS), st.encode_document(TEXTS[:1]), st.encode_document(TEXTS[1:] * 3)]


@pytest.mark.parametrize("buckets", [None, True])
def test_compiled_model_gives_the_eager_vectors(bert_dump_model, buckets) -> None:
    eager = _encodings(_st(bert_dump_model))
    st = _st(bert_dump_model)
    assert compile_model(st, buckets=buckets, backend="aot_eager") is st
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
    compile_model(model, buckets=[8, 64], backend="aot_eager")
    with torch.inference_mode():
        got = model(**batch)  # padded to 64 inside, cut back to the batch's own length
    assert got.last_hidden_state.shape == want.last_hidden_state.shape
    assert torch.allclose(got.sentence_embedding, want.sentence_embedding, atol=1e-5)
    out = model(**batch)  # gradients on: the eager backbone, as before compiling
    out.sentence_embedding.sum().backward()
    assert torch.allclose(out.sentence_embedding, want.sentence_embedding, atol=1e-5)


def test_buckets_refuse_left_padding(bert_dump_model) -> None:
    st = _st(bert_dump_model)
    st.tokenizer.padding_side = "left"
    with pytest.raises(ValueError, match="pads on the left.*without buckets"):
        compile_model(st, buckets=True, backend="aot_eager")
    model = DumpEmbedModel.from_pretrained(bert_dump_model).eval()
    compile_model(model, buckets=True, backend="aot_eager")
    batch = st.tokenizer(TEXTS, padding=True, return_tensors="pt")  # left-padded, given to the model directly
    with torch.inference_mode(), pytest.raises(ValueError, match="padded on the left.*padding_side='right'"):
        model(**batch)


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


def test_bucket_sizes_padding_and_cutting() -> None:
    assert bucket_sizes(None, 512) == () and bucket_sizes(False, 512) == ()
    assert bucket_sizes(True, 100) == (16, 32, 64, 100)
    assert bucket_sizes(True, None) == DEFAULT_BUCKETS
    assert bucket_sizes([64, 8, 64], 512) == (8, 64)
    for bad in ([], [0], [8, "16"], "16", 16, [True]):
        with pytest.raises(ValueError, match="buckets must be"):
            bucket_sizes(bad, 512)
    ids = torch.tensor([[5, 6, 7]])
    padded, batch, length, width = pad_inputs({"input_ids": ids, "attention_mask": torch.ones_like(ids),
                                               "output_hidden_states": None}, (4, 8), pad_id=1)
    assert (batch, length, width) == (1, 3, 4)
    assert padded["input_ids"].tolist() == [[5, 6, 7, 1]] * 2  # a lone row doubled, padded with the pad id
    assert padded["attention_mask"].tolist() == [[1, 1, 1, 0]] * 2 and padded["output_hidden_states"] is None
    states = torch.arange(2 * 4 * 3).view(2, 4, 3)
    assert cut((states, torch.ones(2, 4)), batch, length, width)[0].shape == (1, 3, 3)
    assert cut(torch.ones(2, 4), batch, length, width).shape == (1, 4)  # (batch, hidden): rows only


@pytest.mark.slow
@pytest.mark.parametrize(("dtype", "buckets"), [(torch.float32, None), (torch.bfloat16, None),
                                                (torch.bfloat16, True)])
def test_inductor_with_frozen_weights_keeps_the_vectors(bert_dump_model, dtype, buckets) -> None:
    """Inductor's C++ kernels: fp32 within the fp32 export tolerance, bf16 within the bf16 one of eager bf16."""
    eager = _encodings(_st(bert_dump_model, dtype))
    st = compile_model(_st(bert_dump_model, dtype), buckets=buckets)
    for got, want in zip(_encodings(st), eager, strict=True):
        if dtype == torch.float32:
            assert np.abs(got - want).max() <= FP32_TOLERANCE
        else:
            assert row_cosines(got, want).min() >= MIN_COSINE["bf16"]
