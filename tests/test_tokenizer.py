"""The [DUMP] prefix: placement per tokenizer family, truncation, pairs, save -> reload, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoTokenizer

from hf_dumpembed.model.tokenizer import add_dump_tokens, dump_token_names, save_dump_tokenizer
from tests import tiny_models

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
