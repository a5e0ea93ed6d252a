"""Rules several modules share, each held in one place: "is this a decoder" and "can stock modules export it"."""

from __future__ import annotations

import pytest

from hf_dumpembed.model.backbone import is_decoder_backbone, is_decoder_folder
from hf_dumpembed.model.exportable import stock_export_blocker


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


def test_stock_export_blocker_names_what_stock_modules_cannot_express() -> None:
    assert stock_export_blocker({"pooling": "cls"}) is None
    assert stock_export_blocker({"pooling": "last", "prompt_mode": None}) is None
    assert "mean over every token except the [DUMP] slots" in stock_export_blocker({"pooling": "mean_no_dump"})
    assert "'prompteol' prompt" in stock_export_blocker({"pooling": "last", "prompt_mode": "prompteol"})
