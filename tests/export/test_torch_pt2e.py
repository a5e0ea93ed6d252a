"""torch int8 through PT2E: the exported DumpEmbed graph quantised by torchao's X86InductorQuantizer keeps the
vectors within the int8 tolerance, for any batch and length; calibration texts come from the fit corpus, else the
stdlib; what it refuses.

The default run compiles the quantised graph with ``aot_eager`` (quantise / dequantise run as torch ops); the slow
test compiles it with inductor and frozen weights (oneDNN int8 kernels), at fp32 and at bf16 for what stays float."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer

pytest.importorskip("torchao", reason="pip install 'hf_dumpembed[serve]'")

from hf_dumpembed.export.embedding_graph import graph_inputs  # noqa: E402
from hf_dumpembed.export.onnx import MIN_COSINE  # noqa: E402
from hf_dumpembed.export.runtimes import row_cosines, torch_vectors  # noqa: E402
from hf_dumpembed.export.torch_pt2e import STDLIB_CALIBRATION, calibration_texts, quantize_pt2e  # noqa: E402
from hf_dumpembed.projections.fit import FitOptions, fit_projection  # noqa: E402
from hf_dumpembed.remote import DumpEmbedModel  # noqa: E402
from tests.support.fit_fixtures import corpus_texts, write_corpus  # noqa: E402

TEXTS = ["A man is eating food.", "How do I read a file line by line in Python? " * 6, "x",
         "The quick brown fox jumps over the lazy dog."]


def _check(int8, model, tokenizer) -> None:
    """int8 vectors of batches of several lengths and sizes (one text too) against the fp32 model's."""
    inputs = graph_inputs(model, tokenizer)
    for texts in (TEXTS, TEXTS[:1], TEXTS[1:] * 5):
        encoded = tokenizer(texts, padding=True, return_tensors="np")
        batch = {name: encoded[name].astype("int64") for name in inputs}
        got = int8(batch)
        assert got.shape == (len(texts), model.projection.matrix.shape[1]) and got.dtype == "float32"
        assert row_cosines(got, torch_vectors(model, batch)).min() >= MIN_COSINE["int8"]


def test_int8_graph_keeps_the_vectors(bert_dump_model) -> None:
    model = DumpEmbedModel.from_pretrained(bert_dump_model).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(bert_dump_model), trust_remote_code=True)
    int8 = quantize_pt2e(model, tokenizer, corpus_texts()[:40], backend="aot_eager")
    assert int8.inputs == ["input_ids", "attention_mask", "token_type_ids"] and int8.calibrated_on == 40
    _check(int8, model, tokenizer)


def test_what_cannot_be_quantised_is_refused(bert_dump_model) -> None:
    tokenizer = AutoTokenizer.from_pretrained(str(bert_dump_model), trust_remote_code=True)
    bf16 = DumpEmbedModel.from_pretrained(bert_dump_model, dtype=torch.bfloat16).eval()
    with pytest.raises(ValueError, match="from fp32 weights.*load it without dtype"):
        quantize_pt2e(bf16, tokenizer, TEXTS)
    model = DumpEmbedModel.from_pretrained(bert_dump_model).eval()
    with pytest.raises(ValueError, match="calibration texts are empty"):
        quantize_pt2e(model, tokenizer, ["", "  "])


def test_calibration_texts_are_the_fit_corpus_else_stdlib(bert_dump_model, tmp_path) -> None:
    texts, source = calibration_texts(bert_dump_model, limit=50)  # built, never fitted: no corpus recorded
    assert source == STDLIB_CALIBRATION and len(texts) == 50 and all(t.strip() for t in texts)
    corpus = write_corpus(tmp_path / "texts.txt")
    options = FitOptions(method="spectemp", mode="reference", dim=16, progress=False, plots=False)
    fitted = fit_projection(bert_dump_model, tmp_path / "fitted", options, corpus=corpus)
    texts, source = calibration_texts(fitted, limit=10)
    assert source == "the fit corpus (texts.txt)" and len(texts) == 10 and set(texts) <= set(corpus_texts())


@pytest.mark.slow
@pytest.mark.parametrize("bf16", [False, True])
def test_inductor_int8_kernels_keep_the_vectors(bert_dump_model, bf16) -> None:
    model = DumpEmbedModel.from_pretrained(bert_dump_model).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(bert_dump_model), trust_remote_code=True)
    _check(quantize_pt2e(model, tokenizer, corpus_texts()[:40], bf16=bf16), model, tokenizer)
