"""Every closed set of names is defined once; each other place that lists it derives from that definition.

The definitions: `DumpInit` (the [DUMP] init modes), the remote config's `PROMPT_MODES` (prompt modes) and
`PADDING_SENSITIVE_POOLING` (beside the pooling table), `DTYPES` (``build --dtype``), `OPENVINO_PRECISIONS`
(``export-onnx --precision``) and the projection methods `METHODS` (their classes, SpecTemp's modes, the any-k ones;
the remote code holds no copy of the any-k methods: it reads a folder's `projection_info`).
"""

from __future__ import annotations

import argparse
import re
import typing
from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer, BertConfig

from hf_dumpembed._utils.checked import field_annotation
from hf_dumpembed.model.embeddings import INIT_HELP, DumpInit, init_dump_rows, resolve_init
from hf_dumpembed.projections.registry import METHODS
from hf_dumpembed.remote.configuration_dumpembed import PADDING_SENSITIVE_POOLING, POOLING_MODES, PROMPT_MODES

REMOTE_DIR = Path(__file__).resolve().parents[2] / "hf_dumpembed" / "remote"


def _option(command: str, dest: str) -> argparse.Action:
    """The argparse action of ``hf-dumpembed COMMAND``'s option ``dest``, read from the real parser."""
    from hf_dumpembed.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return next(a for a in commands.choices[command]._actions if a.dest == dest)


# --- [DUMP] init modes: `DumpInit` ---------------------------------------------------------------------------------

def test_init_choices_derive_from_dump_init() -> None:
    from hf_dumpembed.model.builder import BuildOptions
    from hf_dumpembed.training.config import InitChoice, ModelConfig

    values = tuple(mode.value for mode in DumpInit)
    assert tuple(_option("build", "init").choices) == values and _option("build", "init").default == "auto"
    assert typing.get_args(InitChoice) == values
    assert field_annotation(ModelConfig, ("init",))[0] == InitChoice and ModelConfig().init == DumpInit.AUTO.value
    assert field_annotation(BuildOptions, ("init",))[0] is DumpInit


def test_every_init_mode_has_its_help_its_card_text_and_its_rows() -> None:
    """auto is resolved before anything is recorded; every other mode has card words and a row rule."""
    from hf_dumpembed.model.card import init_text
    from hf_dumpembed.model.embeddings import INIT_CARD_TEXT

    assert set(INIT_HELP) == set(DumpInit)
    help_text = _option("build", "init").help
    assert all(f"{mode.value}{' (default)' if mode is DumpInit.AUTO else ''} = {INIT_HELP[mode]}" in help_text
               for mode in DumpInit)
    recorded = [mode for mode in DumpInit if mode is not DumpInit.AUTO]
    assert set(INIT_CARD_TEXT) == set(recorded)
    assert {resolve_init(DumpInit.AUTO, decoder) for decoder in (False, True)} <= set(recorded)
    for mode in recorded:
        assert init_text("token:." if mode is DumpInit.TOKEN else mode.value) is not None, mode
    embedding = torch.nn.Embedding(6, 4)
    backbone = type("Backbone", (), {"get_input_embeddings": lambda self: embedding})()
    for mode in recorded:
        init_dump_rows(backbone, [4, 5], mode, first_token_id=0, copy_token_id=1)
    with pytest.raises(ValueError, match="resolve 'auto' first"):
        init_dump_rows(backbone, [4, 5], DumpInit.AUTO)


# --- prompt modes: the remote config's PROMPT_MODES -----------------------------------------------------------------

def test_prompt_modes_derive_from_the_remote_config() -> None:
    from hf_dumpembed.commands.fit import description
    from hf_dumpembed.model.prompting import PROMPT_TEMPLATES, PromptMode
    from hf_dumpembed.projections.options import FitSettings

    assert tuple(mode.value for mode in PromptMode) == PROMPT_MODES
    assert set(PROMPT_TEMPLATES) == set(PromptMode)
    assert tuple(_option("build", "prompt").choices) == PROMPT_MODES
    assert tuple(_option("fit", "prompt").choices) == PROMPT_MODES
    assert f"--prompt {'|'.join(PROMPT_MODES)} " in description()
    assert field_annotation(FitSettings, ("prompt",))[0] is PromptMode


# --- dtypes and precisions ------------------------------------------------------------------------------------------

def test_dtype_and_precision_choices_derive_from_their_definitions() -> None:
    from hf_dumpembed.export.onnx import OPENVINO_PRECISIONS
    from hf_dumpembed.model import builder
    from hf_dumpembed.model.backbone import DTYPES

    assert tuple(_option("build", "dtype").choices) == tuple(DTYPES) and builder.DTYPES is DTYPES
    assert typing.get_args(field_annotation(builder.BuildOptions, ("dtype",))[0]) == tuple(DTYPES)
    assert tuple(_option("export-onnx", "precision").choices) == OPENVINO_PRECISIONS


# --- projection methods: their classes ------------------------------------------------------------------------------

def test_spectemp_mode_names_derive_from_the_method() -> None:
    """SpecTemp's modes are defined once (its module); ``--mode`` and the quickstart's folders use those names."""
    from hf_dumpembed.projections.methods.spectemp import DEFAULT_MODE, MODE_NAMES, MODES
    from hf_dumpembed.quickstart.pipeline import SPECTEMP_FOLDER_MODES

    assert MODE_NAMES == tuple(mode.name for mode in MODES)
    assert tuple(_option("fit", "mode").choices) == MODE_NAMES
    assert set(SPECTEMP_FOLDER_MODES.values()) <= set(MODE_NAMES)
    assert SPECTEMP_FOLDER_MODES["spectemp"] == DEFAULT_MODE  # the card's folder is `fit`'s default


def test_the_remote_code_holds_no_method_list() -> None:
    """Whether a folder serves any k is its ``projection_info["selection"]`` (set exactly for the any-k methods), so
    the remote code copies no method list: its errors point at ``fit --help``, which names every any-k method."""
    from hf_dumpembed.cli import build_parser
    from hf_dumpembed.remote.modeling_dumpembed import DumpProjection

    with pytest.raises(ValueError, match=r"serves any dimension \(`hf-dumpembed fit --help` lists the methods\)"):
        DumpProjection(4, 2).matrix_for(3)
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    fit_help = commands.choices["fit"].format_help()
    assert all(method.name in fit_help for method in METHODS.values() if method.any_k)
    names = "|".join(re.escape(name) for name in METHODS)
    written_out = re.compile(rf"\b(?:{names})\b,? (?:(?:and )?\b(?:{names})\b,? ){{1,}}")  # "a, b, c" in prose
    for path in sorted(REMOTE_DIR.glob("*.py")):
        assert not written_out.search(path.read_text(encoding="utf-8")), f"{path.name} writes out a method list"


# --- pooling that depends on the padding side -------------------------------------------------------------------------

def _pooled(mode: str, reverse: bool) -> torch.Tensor:
    """A tiny model's pooled vector of one row of 7 random token states, their order reversed or not."""
    from hf_dumpembed.remote.configuration_dumpembed import DumpEmbedConfig
    from hf_dumpembed.remote.modeling_dumpembed import DumpEmbedModel

    text = BertConfig(vocab_size=40, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                      max_position_embeddings=24, pad_token_id=0)
    torch.manual_seed(0)
    model = DumpEmbedModel(DumpEmbedConfig(text_config=text, num_dump_tokens=2, dump_token_ids=[30, 31],
                                           dump_token_offset=1)).eval()
    states = torch.randn(1, 7, 8, generator=torch.Generator().manual_seed(1))
    return model.pool(states.flip(1) if reverse else states, torch.ones(1, 7, dtype=torch.long), mode)


@pytest.mark.parametrize("mode", POOLING_MODES)
def test_padding_sensitive_pooling_is_the_pooling_that_reads_positions(mode: str) -> None:
    """A mode reads positions (its vector changes when the real tokens change places) exactly when the table says
    it depends on the padding side: left padding moves those positions."""
    assert PADDING_SENSITIVE_POOLING <= set(POOLING_MODES)
    moved = not torch.allclose(_pooled(mode, reverse=False), _pooled(mode, reverse=True), atol=1e-6)
    assert moved is (mode in PADDING_SENSITIVE_POOLING)


def test_the_onnx_export_checks_left_padding_for_every_padding_sensitive_pooling(tiny_bert) -> None:
    from hf_dumpembed.export.onnx import parity_batches

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert))
    for mode in POOLING_MODES:
        batches = parity_batches(tokenizer, ["input_ids", "attention_mask"], mode)
        expected = ["right padding", "left padding", "one text"] if mode in PADDING_SENSITIVE_POOLING else [
            "right padding", "one text"]
        assert list(batches) == expected, mode
    left = parity_batches(tokenizer, ["input_ids", "attention_mask"], "weightedmean")["left padding"]
    assert (left["attention_mask"][:, 0] == 0).any()  # padded on the left indeed
