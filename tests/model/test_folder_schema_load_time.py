"""Backbone settings transformers acts on at load, backbones a folder cannot be, and hostile tokenizers.

On main, `text_config.quantization_config` (and the other keys of `LOAD_TIME_KEYS`) passed the allowlist because the
backbone's config class stores them as data, although transformers quantizes, patches or picks kernels from them at
load; an `architectures` of another model type and a composite (CLIP) backbone passed and ended in an AttributeError;
a catastrophic-backtracking pre-tokenizer regex ended in a Rust panic traceback after ~15 s; a 64 MB tokenizer.json
loaded for 78 s.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from hf_dumpembed.cli import main
from hf_dumpembed.data.assets import default_encoder_path
from hf_dumpembed.data.beir import write_beir
from hf_dumpembed.model import tokenizer_bounds
from hf_dumpembed.model.folder_schema import LOAD_TIME_KEYS, UntrustedRemoteCode, folder_code_may_run
from hf_dumpembed.model.tokenizer_bounds import TokenizerBoundError, backtracking_group, require_bounded_tokenizer
from tests.support.card_fixtures import copy_model

HOSTILE_REGEX = "(a+)+$"


def _edit(path: Path, edit) -> None:
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))


def _backbone(folder: Path, edit) -> None:
    _edit(folder / "config.json", lambda config: {**config, "text_config": edit(dict(config["text_config"]))})


LOAD_TIME_VALUES = {
    "quantization_config": {"quant_method": "bitnet", "linear_class": "autobitlinear"},
    "fusion_config": {"rms_norm": True},
    "transformers_weights": "../elsewhere.safetensors",
    "distributed_config": {"tp_size": 2},
    "attn_implementation": "kernels-community/flash-attn",
    "_attn_implementation": "kernels-community/flash-attn",
    "experts_implementation": "grouped_mm",
    "_experts_implementation": "grouped_mm",
    "kernel_config": {"kernel_mapping": {}},
    "use_kernels": True,
}


def test_every_load_time_key_has_a_case() -> None:
    assert set(LOAD_TIME_VALUES) == set(LOAD_TIME_KEYS)


@pytest.mark.parametrize("key", LOAD_TIME_VALUES)
def test_a_backbone_setting_transformers_acts_on_at_load_is_refused(key: str, bert_dump_model: Path,
                                                                    tmp_path: Path) -> None:
    folder = copy_model(bert_dump_model, tmp_path / "model")
    _backbone(folder, lambda text: {**text, key: LOAD_TIME_VALUES[key]})
    with pytest.raises(UntrustedRemoteCode, match=rf"config\.json \[text_config\.{key}\]: transformers"):
        folder_code_may_run(folder)


def test_a_quantization_config_at_any_depth_is_refused(bert_dump_model: Path, tmp_path: Path) -> None:
    folder = copy_model(bert_dump_model, tmp_path / "model")
    _backbone(folder, lambda text: {**text, "rope_parameters": {"quantization_config": {"quant_method": "hqq"}}})
    with pytest.raises(UntrustedRemoteCode,
                       match=r"\[text_config\.rope_parameters\.quantization_config\]: transformers quantizes"):
        folder_code_may_run(folder)


def test_verify_names_the_quantization_config_in_one_error_line(bert_dump_model: Path, tmp_path: Path) -> None:
    folder = copy_model(bert_dump_model, tmp_path / "model")
    _backbone(folder, lambda text: {**text, "quantization_config": {"quant_method": "mxfp8"}})
    with pytest.raises(SystemExit, match=r"(?s)hf-dumpembed verify: error: .*text_config\.quantization_config"):
        main(["verify", str(folder)])


def test_architectures_of_another_model_type_are_refused_naming_the_fix(bert_dump_model: Path,
                                                                        tmp_path: Path) -> None:
    folder = copy_model(bert_dump_model, tmp_path / "model")
    _backbone(folder, lambda text: {**text, "architectures": ["T5EncoderModel"]})
    with pytest.raises(SystemExit) as refused:
        main(["verify", str(folder)])
    message = str(refused.value)
    assert "[text_config.architectures]: 'T5EncoderModel' is not a transformers model class of model_type 'bert'" \
        in message and "hf-dumpembed build" in message, message


def test_a_composite_backbone_is_refused_naming_the_fix(bert_dump_model: Path, tmp_path: Path) -> None:
    from transformers import CLIPConfig

    folder = copy_model(bert_dump_model, tmp_path / "model")
    _edit(folder / "config.json", lambda config: {**config, "text_config": CLIPConfig().to_dict()})
    with pytest.raises(SystemExit) as refused:
        main(["fit", str(folder), str(tmp_path / "fitted"), "--method", "truncate", "--dim", "8"])
    message = str(refused.value)
    assert "is a composite clip config (text_config, vision_config)" in message, message
    assert "build from its text backbone" in message and not (tmp_path / "fitted").exists()


# --- tokenizer.json --------------------------------------------------------------------------------------------------

@pytest.fixture()
def plain(tmp_path: Path) -> Path:
    """A copy of the embedded all-MiniLM-L6-v2 as published (not a folder hf_dumpembed writes)."""
    return Path(shutil.copytree(default_encoder_path(), tmp_path / "plain"))


@pytest.fixture()
def beir(tmp_path: Path) -> Path:
    corpus = {"d0": {"title": "", "text": "a" * 40 + "!"}, "d1": {"title": "", "text": "a plain document"}}
    return write_beir(tmp_path / "beir", corpus, {"q0": "a" * 40 + "!"}, {"q0": {"d0": 1}}, split="test")


def _hostile_pre_tokenizer(folder: Path) -> None:
    _edit(folder / "tokenizer.json", lambda data: {**data, "pre_tokenizer": {
        "type": "Split", "pattern": {"Regex": HOSTILE_REGEX}, "behavior": "Isolated", "invert": False}})


def test_a_backtracking_pre_tokenizer_is_refused_in_seconds(plain: Path, beir: Path, tmp_path: Path) -> None:
    _hostile_pre_tokenizer(plain)
    start = time.perf_counter()
    with pytest.raises(SystemExit) as refused:
        main(["eval", str(plain), "--task", str(beir), "--results-dir", str(tmp_path / "results")])
    assert time.perf_counter() - start < 10
    message = str(refused.value)
    assert message.startswith("hf-dumpembed eval: error: ") and "tokenizer.json [pre_tokenizer.pattern]" in message
    assert "(a+)+" in message and not (tmp_path / "results").exists()


def test_a_rust_panic_is_one_error_line_naming_the_file(bert_dump_model: Path, beir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the bound (switched off here), the tokenizer's own panic (a BaseException) is still one error line."""
    folder = copy_model(bert_dump_model, tmp_path / "model")
    _hostile_pre_tokenizer(folder)
    monkeypatch.setattr("hf_dumpembed.model.folder_schema.require_bounded_tokenizer", lambda folder: None)
    with pytest.raises(SystemExit) as refused:
        main(["eval", str(folder), "--task", str(beir), "--results-dir", str(tmp_path / "results")])
    message = str(refused.value)
    assert message.startswith("hf-dumpembed eval: error: ") and "panicked" in message, message
    assert "tokenizer.json" in message, message


def test_a_tokenizer_file_over_the_size_bound_is_refused_unread(plain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokenizer_bounds, "MAX_TOKENIZER_BYTES", 100_000)
    with pytest.raises(TokenizerBoundError, match=r"tokenizer\.json: 0 MB is over the 0 MB"):
        folder_code_may_run(plain)


def test_a_vocabulary_over_the_bound_is_refused(plain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokenizer_bounds, "MAX_VOCABULARY", 30_000)
    with pytest.raises(TokenizerBoundError, match=r"30,5\d\d vocabulary entries is over the 30,000"):
        require_bounded_tokenizer(plain)


def test_the_bounds_are_far_above_published_tokenizers(plain: Path) -> None:
    from hf_dumpembed.data.assets import default_decoder_path

    for folder in (plain, Path(default_decoder_path())):
        require_bounded_tokenizer(folder)


@pytest.mark.parametrize("pattern", [
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+",
    r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r" ?[^(\s|[.,!?…。，、।۔،])]+", r"(ab)+", r"\(a+\)+",
])
def test_published_pre_tokenizer_patterns_pass(pattern: str) -> None:
    assert backtracking_group(pattern) is None


@pytest.mark.parametrize("pattern", [HOSTILE_REGEX, r"(a|aa)+", r"(\w+\s?)+$", r"((ab)*)*", r"(a{2,})+",
                                     r"(?:a*)*", r"(a+){3,}"])
def test_repeated_groups_that_match_in_several_ways_are_caught(pattern: str) -> None:
    assert backtracking_group(pattern) is not None
