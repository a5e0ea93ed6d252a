"""The stock sentence-transformers export: module list, Dense = the projection, vectors equal without remote code."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer

from hf_dumpembed.export.stock import export_stock_st
from hf_dumpembed.export.verify import SAMPLE_TEXTS, encode_with_automodel
from hf_dumpembed.model.builder import save_dump_model
from hf_dumpembed.remote import DumpEmbedConfig, DumpEmbedModel


def _module_types(folder):
    return [m["type"].rsplit(".", 1)[-1] for m in json.loads((folder / "modules.json").read_text())]


def test_identity_projection_exports_without_dense(bert_dump_model, tmp_path):
    out = export_stock_st(bert_dump_model, tmp_path / "stock")
    assert _module_types(out) == ["Transformer", "Pooling", "Normalize"]
    assert json.loads((out / "config.json").read_text())["model_type"] == "bert"  # native backbone, no auto_map
    assert "auto_map" not in json.loads((out / "config.json").read_text())
    assert not list(out.glob("*.py")) and not (out / "README.md").exists()
    assert json.loads((out / "1_Pooling" / "config.json").read_text())["pooling_mode_cls_token"] is True
    # The tokenizer is the DumpEmbed one, byte for byte: the prefix is still there.
    assert (out / "tokenizer.json").read_bytes() == (bert_dump_model / "tokenizer.json").read_bytes()


@pytest.mark.parametrize("fixture", ["bert_dump_model", "llama_dump_model"])
def test_fitted_projection_becomes_a_dense_layer_with_equal_vectors(request, fixture, tmp_path):
    from transformers import AutoTokenizer

    source = request.getfixturevalue(fixture)
    model = DumpEmbedModel.from_pretrained(source)
    generator = torch.Generator().manual_seed(7)
    mean, matrix = torch.randn(32, generator=generator) * 0.1, torch.randn(32, 12, generator=generator)
    projected = DumpEmbedModel(DumpEmbedConfig(**{**model.config.to_dict(), "projection_dim": 12}))
    projected.load_state_dict({**model.state_dict(), "projection.mean": mean, "projection.matrix": matrix})
    tokenizer = AutoTokenizer.from_pretrained(str(source), trust_remote_code=True)
    fitted = save_dump_model(projected, tokenizer, tmp_path / "fitted")

    assert SentenceTransformer(str(fitted), trust_remote_code=True).get_embedding_dimension() == 12
    out = export_stock_st(fitted, tmp_path / "stock")
    assert _module_types(out) == ["Transformer", "Pooling", "Dense", "Normalize"]
    stock = SentenceTransformer(str(out), trust_remote_code=False)
    dense = stock[2]
    torch.testing.assert_close(dense.linear.weight.detach(), matrix.T)
    torch.testing.assert_close(dense.linear.bias.detach(), -(mean @ matrix))
    vectors = stock.encode_document(list(SAMPLE_TEXTS))
    assert vectors.shape == (len(SAMPLE_TEXTS), 12)
    np.testing.assert_allclose(vectors, encode_with_automodel(fitted, list(SAMPLE_TEXTS)), atol=1e-5)


def test_export_refuses_to_overwrite(bert_dump_model, tmp_path):
    (tmp_path / "stock").mkdir()
    (tmp_path / "stock" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        export_stock_st(bert_dump_model, tmp_path / "stock")
    assert (tmp_path / "stock" / "keep.txt").read_text() == "mine"
