"""Portable file formats of the stock export: what sentence-transformers 3.x-6.x and transformers 4.x-5.x all read."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoConfig, AutoTokenizer

from hf_dumpembed.export.stock import export_stock_st
from hf_dumpembed.export.stock_compat import (
    LEGACY_MODULE_TYPES,
    legacy_backbone_config,
    legacy_dense_config,
    legacy_pooling_config,
    legacy_tokenizer_config,
)
from hf_dumpembed.export.verify import SAMPLE_TEXTS, encode_with_automodel
from hf_dumpembed.model.builder import save_dump_model
from hf_dumpembed.remote import DumpEmbedConfig, DumpEmbedModel

# The keyword arguments sentence-transformers 3.4's modules accept (their __init__ signatures).
ST3_TRANSFORMER_KEYS = {"max_seq_length", "do_lower_case", "model_args", "tokenizer_args", "config_args",
                        "cache_dir", "tokenizer_name_or_path", "backend"}
ST3_POOLING_KEYS = {"word_embedding_dimension", "pooling_mode", "pooling_mode_cls_token", "pooling_mode_max_tokens",
                    "pooling_mode_mean_tokens", "pooling_mode_mean_sqrt_len_tokens",
                    "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken", "include_prompt"}
ST3_DENSE_KEYS = {"in_features", "out_features", "bias", "activation_function", "init_weight", "init_bias"}


def _fitted(source, tmp_path):
    """``source`` with a random affine projection to 12 dimensions (a Dense layer in the export)."""
    model = DumpEmbedModel.from_pretrained(source)
    generator = torch.Generator().manual_seed(3)
    mean, matrix = torch.randn(32, generator=generator) * 0.1, torch.randn(32, 12, generator=generator)
    projected = DumpEmbedModel(DumpEmbedConfig(**{**model.config.to_dict(), "projection_dim": 12}))
    projected.load_state_dict({**model.state_dict(), "projection.mean": mean, "projection.matrix": matrix})
    return save_dump_model(projected, AutoTokenizer.from_pretrained(str(source)), tmp_path / "fitted")


@pytest.mark.parametrize("fixture", ["bert_dump_model", "llama_dump_model"])
def test_stock_export_files_use_portable_formats(request, fixture, tmp_path):
    source = request.getfixturevalue(fixture)
    out = export_stock_st(_fitted(source, tmp_path), tmp_path / "stock")

    modules = json.loads((out / "modules.json").read_text())
    assert [m["type"] for m in modules] == [LEGACY_MODULE_TYPES[n] for n in ("Transformer", "Pooling", "Dense",
                                                                             "Normalize")]
    assert set(json.loads((out / "sentence_bert_config.json").read_text())) <= ST3_TRANSFORMER_KEYS
    assert json.loads((out / "sentence_bert_config.json").read_text())["max_seq_length"] == 128
    pooling = json.loads((out / "1_Pooling" / "config.json").read_text())
    assert set(pooling) <= ST3_POOLING_KEYS and pooling["word_embedding_dimension"] == 32
    mode = "pooling_mode_cls_token" if fixture == "bert_dump_model" else "pooling_mode_lasttoken"
    assert [key for key, value in pooling.items() if value is True and key != "include_prompt"] == [mode]
    dense = json.loads((out / "2_Dense" / "config.json").read_text())
    assert set(dense) <= ST3_DENSE_KEYS and dense["activation_function"].endswith("Identity")
    assert json.loads((out / "3_Normalize" / "config.json").read_text()) == {}

    tokenizer_config = json.loads((out / "tokenizer_config.json").read_text())
    assert not isinstance(tokenizer_config.get("extra_special_tokens", {}), list)  # transformers 4.x needs a dict
    dump = [f"[DUMP{i}]" for i in range(1, 5 if fixture == "bert_dump_model" else 4)]
    assert tokenizer_config["additional_special_tokens"] == dump
    # transformers 5.x reads the rewritten files exactly as the originals.
    tokenizer, original = AutoTokenizer.from_pretrained(str(out)), AutoTokenizer.from_pretrained(str(source))
    assert tokenizer(list(SAMPLE_TEXTS))["input_ids"] == original(list(SAMPLE_TEXTS))["input_ids"]
    assert set(dump) <= set(tokenizer.all_special_tokens)
    backbone = json.loads((out / "config.json").read_text())
    if "rope_parameters" in backbone:
        assert backbone["rope_theta"] == backbone["rope_parameters"]["rope_theta"]
        assert AutoConfig.from_pretrained(str(out)).rope_parameters == backbone["rope_parameters"]

    vectors = SentenceTransformer(str(out), trust_remote_code=False).encode_document(list(SAMPLE_TEXTS))
    np.testing.assert_allclose(vectors, encode_with_automodel(out.parent / "fitted", list(SAMPLE_TEXTS)), atol=1e-5)


def test_legacy_pooling_config_sets_one_flag():
    config = legacy_pooling_config({"embedding_dimension": 8, "pooling_mode": "mean", "include_prompt": True})
    assert config["word_embedding_dimension"] == 8 and config["pooling_mode_mean_tokens"] is True
    assert sum(value is True for key, value in config.items() if key.startswith("pooling_mode")) == 1
    with pytest.raises(ValueError, match="no portable form"):
        legacy_pooling_config({"embedding_dimension": 8, "pooling_mode": ["cls", "mean"]})


def test_legacy_dense_config_refuses_what_older_clients_would_ignore():
    base = {"in_features": 4, "out_features": 2, "bias": True,
            "activation_function": "torch.nn.modules.linear.Identity"}
    assert legacy_dense_config({**base, "module_input_name": "sentence_embedding", "module_output_name": None}) == base
    with pytest.raises(ValueError, match="module_input_name"):
        legacy_dense_config({**base, "module_input_name": "token_embeddings"})
    with pytest.raises(ValueError, match="use_residual"):
        legacy_dense_config({**base, "use_residual": True})


def test_legacy_tokenizer_and_backbone_configs():
    tokenizer = legacy_tokenizer_config({"extra_special_tokens": ["[DUMP1]", "[DUMP2]"],
                                         "additional_special_tokens": ["<x>", "[DUMP1]"]})
    assert "extra_special_tokens" not in tokenizer and tokenizer["additional_special_tokens"] == ["<x>", "[DUMP1]",
                                                                                                  "[DUMP2]"]
    named = {"extra_special_tokens": {"image_token": "<image>"}}
    assert legacy_tokenizer_config(named) == named  # the 4.x dict form is left alone
    scaled = legacy_backbone_config({"rope_parameters": {"rope_theta": 5e5, "rope_type": "llama3", "factor": 8.0}})
    assert scaled["rope_theta"] == 5e5 and scaled["rope_scaling"] == {"rope_type": "llama3", "factor": 8.0}
    plain = legacy_backbone_config({"rope_parameters": {"rope_theta": 1e4, "rope_type": "default"}})
    assert plain["rope_theta"] == 1e4 and "rope_scaling" not in plain
    assert legacy_backbone_config({"model_type": "bert"}) == {"model_type": "bert"}
