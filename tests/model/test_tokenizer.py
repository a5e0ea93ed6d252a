"""The [DUMP] prefix: placement per tokenizer family, truncation, pairs, save -> reload, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tokenizers import processors
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed.model.tokenizer import (
    add_dump_tokens,
    check_dump_prefix,
    dump_token_names,
    save_dump_tokenizer,
    tokenizer_kind,
)
from tests.support import tiny_models
from tests.support.hypothesis_inputs import FIXTURE_SETTINGS, texts
from tests.support.tiny_models import byte_level_tokenizer, metaspace_tokenizer, wordpiece_tokenizer

TEXT = "A man is riding a white horse on an enclosed ground."


def _load(folder: Path):
    return AutoTokenizer.from_pretrained(str(folder))


def _prefix(tokenizer, ids: list[int], k: int, offset: int) -> list[str]:
    return tokenizer.convert_ids_to_tokens(ids[offset : offset + k])


@pytest.mark.parametrize(
    ("fixture", "offset", "first_token"),
    [
        ("tiny_bert", 1, "[CLS]"),
        ("tiny_llama", 1, "<|begin_of_text|>"),
        ("tiny_gpt2", 0, None),
        ("tiny_qwen2", 0, None),
    ],
)
def test_prefix_goes_after_the_leading_special_token(request, fixture, offset, first_token):
    tokenizer = _load(request.getfixturevalue(fixture))
    original = tokenizer(TEXT)["input_ids"]
    dump = add_dump_tokens(tokenizer, 4)
    ids = tokenizer(TEXT)["input_ids"]

    assert dump.offset == offset
    assert _prefix(tokenizer, ids, 4, offset) == dump_token_names(4)
    assert list(dump.ids) == ids[offset : offset + 4]
    # Everything else is the original tokenization, unchanged.
    assert ids[:offset] + ids[offset + 4 :] == original
    if first_token:
        assert tokenizer.convert_ids_to_tokens(ids[0]) == first_token


def test_wordpiece_pair_keeps_segments_and_one_prefix(tiny_bert):
    tokenizer = _load(tiny_bert)
    original = tokenizer("a man", "a horse")
    add_dump_tokens(tokenizer, 2)
    encoded = tokenizer("a man", "a horse")
    assert tokenizer.convert_ids_to_tokens(encoded["input_ids"][1:3]) == ["[DUMP1]", "[DUMP2]"]
    assert encoded["input_ids"][:1] + encoded["input_ids"][3:] == original["input_ids"]
    assert encoded["token_type_ids"] == [0, 0, 0] + original["token_type_ids"][1:]


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_llama", "tiny_gpt2"])
def test_truncation_never_cuts_the_prefix(request, fixture):
    tokenizer = _load(request.getfixturevalue(fixture))
    dump = add_dump_tokens(tokenizer, 4)
    for max_length in (dump.offset + 5, dump.offset + 7, 12):
        ids = tokenizer(TEXT * 5, truncation=True, max_length=max_length)["input_ids"]
        assert len(ids) == max_length
        assert ids[dump.offset : dump.offset + 4] == list(dump.ids)
    if fixture == "tiny_bert":  # [SEP] survives too
        assert tokenizer.convert_ids_to_tokens(ids[-1]) == "[SEP]"


@pytest.mark.parametrize("fixture", ["tiny_bert", "tiny_llama", "tiny_gpt2", "tiny_qwen2"])
def test_prefix_survives_save_and_reload(request, fixture, tmp_path):
    tokenizer = _load(request.getfixturevalue(fixture))
    dump = add_dump_tokens(tokenizer, 3)
    expected = tokenizer(TEXT)["input_ids"]
    save_dump_tokenizer(tokenizer, tmp_path, max_length=64)

    reloaded = _load(tmp_path)
    assert reloaded(TEXT)["input_ids"] == expected
    assert reloaded(TEXT, "second text")["input_ids"][dump.offset : dump.offset + 3] == list(dump.ids)
    assert reloaded.model_max_length == 64
    # The traps that regenerate the template on load are gone from the saved config.
    saved = (tmp_path / "tokenizer_config.json").read_text()
    for key in ("add_bos_token", "add_eos_token", "chat_template", "BertTokenizer"):
        assert key not in saved
    assert not (tmp_path / "chat_template.jinja").exists()


def test_k_zero_keeps_the_original_tokenization(tiny_bert, tiny_llama):
    for folder in (tiny_bert, tiny_llama):
        tokenizer = _load(folder)
        original = tokenizer(TEXT)["input_ids"], tokenizer(TEXT, "x y")["input_ids"]
        dump = add_dump_tokens(tokenizer, 0)
        assert dump.ids == ()
        assert (tokenizer(TEXT)["input_ids"], tokenizer(TEXT, "x y")["input_ids"]) == original


def test_unsupported_tokenizer_is_refused():
    """A word-level vocabulary (no subword model) is refused before anything is added; SentencePiece-style BPE,
    refused until 2026-12-01, now gets its prefix (the model zoo covers every family)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"[UNK]": 0, "hello": 1, "world": 2}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    vocab_before = len(tokenizer)
    with pytest.raises(ValueError, match="model 'WordLevel'.*refused rather than built silently wrong"):
        add_dump_tokens(tokenizer, 4)
    assert len(tokenizer) == vocab_before  # nothing was added
    metaspace = tiny_models.metaspace_tokenizer()
    dump = add_dump_tokens(metaspace, 2)
    assert dump.kind == "sentencepiece-bpe" and metaspace("hello world")["input_ids"][:2] == list(dump.ids)


def test_tokenizer_that_already_has_dump_tokens_is_refused(tiny_bert):
    tokenizer = _load(tiny_bert)
    add_dump_tokens(tokenizer, 2)
    with pytest.raises(ValueError, match="already has \\[DUMP\\] tokens"):
        add_dump_tokens(tokenizer, 2)


@pytest.mark.parametrize("bad", [-1, 1.5, "4"])
def test_bad_k_is_refused(tiny_bert, bad):
    with pytest.raises(ValueError, match="num_dump_tokens must be an integer >= 0"):
        add_dump_tokens(_load(tiny_bert), bad)


# Exact tokens on tokenizers built in memory (written to kill mutants: tests/MUTATION.md).


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


# Property-based (hypothesis): the inputs are a space, not a few examples.


@pytest.fixture(scope="module")
def tokenizers(bert_dump_model: Path, llama_dump_model: Path) -> dict[str, tuple]:
    """Each saved tokenizer, its model (config: [DUMP] ids and offset) and the special tokens it ends a text with."""
    out = {}
    for name, folder in (("bert", bert_dump_model), ("llama", llama_dump_model)):
        model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
        tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True)
        out[name] = (tokenizer, model, [tokenizer.sep_token_id] if name == "bert" else [])
    return out


@FIXTURE_SETTINGS
@given(name=st.sampled_from(["bert", "llama"]), room=st.integers(1, 70),
       text=st.one_of(st.lists(texts, max_size=12).map(" ".join),
                      st.text(st.sampled_from("abc XYZ.,é😀-"), max_size=200)))
def test_dump_prefix_survives_any_truncation_length(tokenizers, name, text, room):
    """For any text and any max_length that leaves room for at least one text token, the truncated input keeps the
    leading special token, [DUMP1..K] right after it and the trailing [SEP]; the text part is a prefix of the
    untruncated text part; and the model accepts the row."""
    tokenizer, model, ending = tokenizers[name]
    config = model.config
    offset, k, trailing = config.dump_token_offset, config.num_dump_tokens, len(ending)
    lead = offset + k
    max_length = lead + trailing + room
    full = tokenizer(text)["input_ids"]
    ids = tokenizer(text, truncation=True, max_length=max_length)["input_ids"]
    assert len(ids) == min(len(full), max_length)
    assert ids[:offset] == full[:offset]
    assert ids[offset:lead] == list(config.dump_token_ids)
    assert ids[len(ids) - trailing:] == full[len(full) - trailing:] == ending
    kept = ids[lead:len(ids) - trailing]
    assert kept == full[lead:lead + len(kept)]
    model.check_dump_prefix(torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.long))
