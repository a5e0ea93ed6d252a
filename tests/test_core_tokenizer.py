"""Fast exact-token tests of the [DUMP] prefix on tokenizers built in memory (WordPiece with [CLS]/[SEP], byte-level
BPE with and without BOS): where the prefix goes, that pairs keep one prefix, that truncation keeps it, what the
saved tokenizer_config.json holds. Written to kill the mutants `scripts/mutation.py` finds (tests/MUTATION.md)."""

from __future__ import annotations

import json

import pytest
from tokenizers import processors

from hf_dumpembed.model.tokenizer import (
    add_dump_tokens,
    check_dump_prefix,
    dump_token_names,
    save_dump_tokenizer,
    tokenizer_kind,
)
from tests.tiny_models import byte_level_tokenizer, metaspace_tokenizer, wordpiece_tokenizer


def test_dump_token_names() -> None:
    assert dump_token_names(0) == [] and dump_token_names(3) == ["[DUMP1]", "[DUMP2]", "[DUMP3]"]


def test_kinds() -> None:
    assert tokenizer_kind(wordpiece_tokenizer()) == "wordpiece"
    assert tokenizer_kind(byte_level_tokenizer(None)) == "byte-level-bpe"
    assert tokenizer_kind(metaspace_tokenizer()) == "sentencepiece-bpe"
    nested = byte_level_tokenizer(None)
    spec = json.loads(nested.backend_tokenizer.to_str())
    spec["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": False},
                                                                   spec["pre_tokenizer"]]}
    from tokenizers import Tokenizer

    nested._tokenizer = Tokenizer.from_str(json.dumps(spec))
    assert tokenizer_kind(nested) == "byte-level-bpe"
    spec["pre_tokenizer"] = None
    nested._tokenizer = Tokenizer.from_str(json.dumps(spec))
    # A BPE with no pre-tokenizer is the Llama-2 SentencePiece layout (its normalizer prepends "▁")
    assert tokenizer_kind(nested) == "sentencepiece-bpe"


def test_wordpiece_prefix_after_cls_single_and_pair() -> None:
    tok = wordpiece_tokenizer()
    dump = add_dump_tokens(tok, 2)
    cls, sep = tok.cls_token_id, tok.sep_token_id
    assert dump.tokens == ("[DUMP1]", "[DUMP2]") and dump.offset == 1 and dump.kind == "wordpiece"
    assert dump.ids == tuple(tok.convert_tokens_to_ids(["[DUMP1]", "[DUMP2]"])) and len(set(dump.ids)) == 2
    text = tok("hello world", add_special_tokens=False)["input_ids"]
    other = tok("second text", add_special_tokens=False)["input_ids"]
    single = tok("hello world")
    assert single["input_ids"] == [cls, *dump.ids, *text, sep]
    pair = tok("hello world", "second text")
    assert pair["input_ids"] == [cls, *dump.ids, *text, sep, *other, sep]
    assert pair["token_type_ids"] == [0] * (len(text) + 4) + [1] * (len(other) + 1)
    assert tok.convert_ids_to_tokens(list(dump.ids)) == ["[DUMP1]", "[DUMP2]"]
    assert set(dump.ids) <= set(tok.all_special_ids)


@pytest.mark.parametrize("bos", [None, "<|begin_of_text|>"])
def test_byte_level_prefix_first_or_after_bos(bos: str | None) -> None:
    tok = byte_level_tokenizer(bos)
    dump = add_dump_tokens(tok, 3)
    text = tok("hello world", add_special_tokens=False)["input_ids"]
    lead = [tok.bos_token_id] if bos else []
    assert dump.offset == len(lead) and dump.kind == "byte-level-bpe"
    assert tok("hello world")["input_ids"] == [*lead, *dump.ids, *text]
    assert tok.decode(tok(" spaced")["input_ids"], skip_special_tokens=True) == " spaced"
    processor = json.loads(tok.backend_tokenizer.to_str())["post_processor"]
    assert processor["type"] == "Sequence" and processor["processors"][0]["type"] == "ByteLevel"


@pytest.mark.parametrize("make", [wordpiece_tokenizer, lambda: byte_level_tokenizer("<|begin_of_text|>")])
@pytest.mark.parametrize("max_length", [5, 6, 9])
def test_truncation_keeps_the_prefix(make, max_length: int) -> None:
    tok = make()
    dump = add_dump_tokens(tok, 2)
    ids = tok("a man is riding a white horse", truncation=True, max_length=max_length)["input_ids"]
    assert ids[dump.offset : dump.offset + 2] == list(dump.ids) and len(ids) == max_length


def test_k_zero_and_refusals() -> None:
    tok = wordpiece_tokenizer()
    before = tok("hello world", "second text")["input_ids"]
    dump = add_dump_tokens(tok, 0)
    assert dump.ids == () and dump.tokens == () and dump.offset == 1
    assert tok("hello world", "second text")["input_ids"] == before
    assert "[DUMP1]" not in tok.get_vocab()
    for bad in (-1, 1.0, "2"):
        with pytest.raises(ValueError, match="num_dump_tokens must be an integer >= 0"):
            add_dump_tokens(wordpiece_tokenizer(), bad)
    twice = wordpiece_tokenizer()
    add_dump_tokens(twice, 1)
    with pytest.raises(ValueError, match="already has \\[DUMP\\] tokens"):
        add_dump_tokens(twice, 1)


def test_fixed_padding_and_truncation_are_removed() -> None:
    tok = wordpiece_tokenizer()
    tok.backend_tokenizer.enable_padding(length=40)
    tok.backend_tokenizer.enable_truncation(max_length=3)
    add_dump_tokens(tok, 1)
    assert tok.backend_tokenizer.padding is None and tok.backend_tokenizer.truncation is None


def test_check_dump_prefix_refuses_a_tokenizer_without_it() -> None:
    tok = wordpiece_tokenizer()
    dump = add_dump_tokens(tok, 2)
    check_dump_prefix(tok, dump.ids, dump.offset)
    with pytest.raises(RuntimeError, match=r"expected \[.*\] at position 0"):
        check_dump_prefix(tok, dump.ids, 0)
    plain = wordpiece_tokenizer()
    with pytest.raises(RuntimeError, match="does not prepend"):
        check_dump_prefix(plain, (7,), 1)
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] [DUMP1] [DUMP2] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.cls_token_id), ("[SEP]", tok.sep_token_id),
                        ("[DUMP1]", dump.ids[0]), ("[DUMP2]", dump.ids[1])])
    with pytest.raises(RuntimeError, match="does not prepend"):  # the pair input lacks the prefix
        check_dump_prefix(tok, dump.ids, dump.offset)


def test_save_keeps_the_prefix_and_drops_template_rebuilding_keys(tmp_path) -> None:
    from transformers import AutoTokenizer

    tok = byte_level_tokenizer("<|begin_of_text|>")
    tok.chat_template = "{{ messages }}"
    tok.init_kwargs.update(add_bos_token=True, add_eos_token=False, add_prefix_space=False)
    dump = add_dump_tokens(tok, 2)
    save_dump_tokenizer(tok, tmp_path, max_length=64)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    for key in ("add_bos_token", "add_eos_token", "add_prefix_space", "chat_template"):
        assert key not in config
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast" and config["model_max_length"] == 64
    assert config["model_input_names"] == list(tok.model_input_names)
    assert not (tmp_path / "chat_template.jinja").exists() and not (tmp_path / "chat_template.json").exists()
    assert (tmp_path / "tokenizer_config.json").read_text().endswith("}\n")
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again("hello")["input_ids"][1:3] == list(dump.ids)
    keep = wordpiece_tokenizer()
    keep.model_max_length = 77
    save_dump_tokenizer(keep, tmp_path / "keep", max_length=None)
    assert json.loads((tmp_path / "keep" / "tokenizer_config.json").read_text())["model_max_length"] == 77


def test_kind_refuses_a_tokenizer_without_a_backend() -> None:
    with pytest.raises(ValueError, match="has no tokenizers backend"):
        tokenizer_kind(object())


def test_existing_extra_special_tokens_are_kept() -> None:
    tok = wordpiece_tokenizer()
    tok.add_special_tokens({"extra_special_tokens": ["<keep>"]})
    add_dump_tokens(tok, 2)
    assert {"<keep>", "[DUMP1]", "[DUMP2]"} <= set(tok.all_special_tokens)


def test_save_removes_a_stray_chat_template_json(tmp_path) -> None:
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "chat_template.json").write_text("{}")
    tok = wordpiece_tokenizer()
    add_dump_tokens(tok, 1)
    save_dump_tokenizer(tok, tmp_path, max_length=None)
    assert not (tmp_path / "chat_template.json").exists()
