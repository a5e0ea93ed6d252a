"""Rules several modules share, each held in one place: "is this a decoder" and "can stock modules export it"."""

from __future__ import annotations

import pytest

from hf_dumpembed.model.backbone import is_decoder_backbone, is_decoder_folder


@pytest.mark.parametrize(
    ("text_config", "decoder"),
    [
        ({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}, True),
        ({"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2"}, True),
        ({"architectures": ["BertModel"], "model_type": "bert", "is_decoder": False}, False),
        ({"model_type": "bert", "is_decoder": True}, True),
        ({}, False),
    ],
)
def test_one_decoder_rule_for_configs_and_saved_dicts(text_config: dict, decoder: bool) -> None:
    from transformers import PretrainedConfig

    assert is_decoder_backbone(text_config) is decoder
    assert is_decoder_backbone(PretrainedConfig(**text_config)) is decoder
    # The folder's pooling does not decide it: a decoder pooled with the mean is still a decoder.
    assert is_decoder_folder({"pooling": "mean" if decoder else "last", "text_config": text_config}) is decoder
