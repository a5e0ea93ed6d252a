"""The [DUMP] prefix on every tokenizer family of tests/support/zoo_tokenizers.py (XLM-R, T5, Llama-2, Mistral with EOS,
Gemma, Qwen3-Embedding, ModernBERT): K = 0 is the source token for token, K = 4 sits right after the leading special
token, appended tokens stay, pairs get one prefix, truncation keeps both ends, and save -> reload (transformers and
a bare ``tokenizers`` load) gives the same ids with left or right padding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer, processors
from transformers import AutoTokenizer

from hf_dumpembed.model.tokenizer import (
    UnsupportedTokenizerError,
    add_dump_tokens,
    dump_token_names,
    save_dump_tokenizer,
)
from tests.support.zoo_tokenizers import PROBE_TEXTS, ZOO_FAMILIES, Family

FAMILIES = list(ZOO_FAMILIES)
PAIRS = [(PROBE_TEXTS[1], PROBE_TEXTS[4]), ("x", " leading space"), (PROBE_TEXTS[-1], "hello world")]
K = 4


def _family(name: str) -> Family:
    return ZOO_FAMILIES[name]


def _with_pad(tokenizer):
    if tokenizer.pad_token is None:  # Llama-2 has none; the builder pads with EOS the same way
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def _without(ids: list[int], offset: int, k: int) -> list[int]:
    return ids[:offset] + ids[offset + k :]


def _components(tokenizer) -> dict:
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    return {key: spec[key] for key in ("normalizer", "pre_tokenizer", "model", "decoder")}


@pytest.mark.parametrize("name", FAMILIES)
def test_k0_tokenizes_exactly_as_the_source(name: str) -> None:
    source, rebuilt = _family(name).make(), _family(name).make()
    dump = add_dump_tokens(rebuilt, 0)
    assert dump.ids == () and dump.kind == _family(name).kind
    for text in PROBE_TEXTS:
        assert rebuilt(text) == source(text), text
        assert rebuilt(text, truncation=True, max_length=12) == source(text, truncation=True, max_length=12)
    for pair in PAIRS:
        assert rebuilt(*pair) == source(*pair), pair
    batch = dict(padding=True, truncation=True, max_length=40)
    _with_pad(source), _with_pad(rebuilt)
    assert rebuilt(PROBE_TEXTS, **batch) == source(PROBE_TEXTS, **batch)
    assert _components(rebuilt) == _components(source)  # normalizer, Metaspace prepend_scheme, model untouched


@pytest.mark.parametrize("name", FAMILIES)
def test_k4_follows_the_leading_special_token_and_keeps_the_appended_one(name: str) -> None:
    family = _family(name)
    source, tokenizer = family.make(), family.make()
    dump = add_dump_tokens(tokenizer, K)
    assert dump.offset == len(family.leading)
    assert tokenizer.convert_ids_to_tokens(list(dump.leading)) == list(family.leading)
    assert tokenizer.convert_ids_to_tokens(list(dump.appended)) == list(family.appended)
    assert _components(tokenizer) == _components(source)
    for text in PROBE_TEXTS:
        ids = tokenizer(text)["input_ids"]
        tokens = tokenizer.convert_ids_to_tokens(ids)
        assert tokens[: dump.offset] == list(family.leading)
        assert tokens[dump.offset : dump.offset + K] == dump_token_names(K)
        assert _without(ids, dump.offset, K) == source(text)["input_ids"], text
        assert tokens[len(tokens) - len(family.appended):] == list(family.appended)
        assert tokenizer(text)["attention_mask"] == [1] * len(ids)


@pytest.mark.parametrize("name", FAMILIES)
def test_pairs_get_one_prefix_and_the_source_layout(name: str) -> None:
    source, tokenizer = _family(name).make(), _family(name).make()
    dump = add_dump_tokens(tokenizer, K)
    for pair in PAIRS:
        encoded, original = tokenizer(*pair), source(*pair)
        ids = encoded["input_ids"]
        assert ids[dump.offset : dump.offset + K] == list(dump.ids)
        assert sum(ids.count(i) for i in dump.ids) == K  # no second prefix before $B
        assert _without(ids, dump.offset, K) == original["input_ids"]
        if "token_type_ids" in encoded:
            assert _without(encoded["token_type_ids"], dump.offset, K) == original["token_type_ids"]


@pytest.mark.parametrize("name", FAMILIES)
def test_truncation_keeps_the_prefix_and_the_appended_token(name: str) -> None:
    family = _family(name)
    tokenizer = family.make()
    dump = add_dump_tokens(tokenizer, K)
    room = dump.offset + K + len(family.appended)
    for max_length in (room + 1, room + 3, 32):
        ids = tokenizer(PROBE_TEXTS[-1], truncation=True, max_length=max_length)["input_ids"]
        tokens = tokenizer.convert_ids_to_tokens(ids)
        assert len(ids) == max_length
        assert ids[dump.offset : dump.offset + K] == list(dump.ids)
        assert tokens[: dump.offset] == list(family.leading)
        assert tokens[max_length - len(family.appended):] == list(family.appended)


@pytest.mark.parametrize("name", FAMILIES)
def test_save_and_reload_give_the_same_ids(name: str, tmp_path: Path) -> None:
    tokenizer = _with_pad(_family(name).make())
    tokenizer.init_kwargs.update(add_bos_token=True, add_eos_token=False, chat_template="{{ messages }}")
    dump = add_dump_tokens(tokenizer, K)
    save_dump_tokenizer(tokenizer, tmp_path, max_length=48)
    reloaded = AutoTokenizer.from_pretrained(str(tmp_path))
    for text in PROBE_TEXTS:
        assert reloaded(text)["input_ids"] == tokenizer(text)["input_ids"], text
    for pair in PAIRS:
        assert reloaded(*pair)["input_ids"] == tokenizer(*pair)["input_ids"], pair
    assert reloaded.padding_side == tokenizer.padding_side
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert not {"add_bos_token", "add_eos_token", "chat_template"} & set(config)
    assert config["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert config["model_max_length"] == config["max_length"] == 48
    # fastembed's load_tokenizer reads these from tokenizer_config.json when tokenizer.json has no padding
    assert config["pad_token"] == tokenizer.pad_token and config["padding_side"] == tokenizer.padding_side
    assert config["truncation_side"] == "right"
    assert not list(tmp_path.glob("*.model"))  # a SentencePiece file would tokenize without the prefix
    # A bare tokenizers load truncates at the folder's length, prefix and appended token kept, as transformers does.
    bare = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    expected = reloaded(PROBE_TEXTS[-1], truncation=True)["input_ids"]
    assert len(expected) == 48 and bare.encode(PROBE_TEXTS[-1]).ids == expected
    assert bare.encode(PROBE_TEXTS[-1]).ids[dump.offset : dump.offset + K] == list(dump.ids)


@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("name", FAMILIES)
def test_padding_on_either_side_keeps_each_row(name: str, side: str, tmp_path: Path) -> None:
    tokenizer = _with_pad(_family(name).make())
    dump = add_dump_tokens(tokenizer, K)
    save_dump_tokenizer(tokenizer, tmp_path, max_length=64)
    reloaded = AutoTokenizer.from_pretrained(str(tmp_path))
    texts = ["x", PROBE_TEXTS[1], PROBE_TEXTS[-1]]
    batch = reloaded(texts, padding=True, truncation=True, padding_side=side)
    assert len({len(row) for row in batch["input_ids"]}) == 1
    for text, ids, mask in zip(texts, batch["input_ids"], batch["attention_mask"], strict=True):
        real = [i for i, m in zip(ids, mask, strict=True) if m]
        assert real == reloaded(text, truncation=True)["input_ids"]
        start = mask.index(1)
        assert (start == 0) == (side == "right" or sum(mask) == len(mask))
        assert ids[start + dump.offset : start + dump.offset + K] == list(dump.ids)


@pytest.mark.parametrize("name", ["llama2", "gemma", "t5", "mistral-eos"])
def test_append_eos_adds_eos_once(name: str) -> None:
    tokenizer = _family(name).make()
    dump = add_dump_tokens(tokenizer, K, append_eos=True)
    eos = tokenizer.eos_token_id
    ids = tokenizer("hello world")["input_ids"]
    assert ids[-1] == eos and ids[-2] != eos and dump.appended == (eos,)
    pair = tokenizer("hello world", "x")["input_ids"]
    assert pair[-1] == eos and pair.count(eos) == 2


@pytest.mark.parametrize("name", ["qwen3", "modernbert", "xlmr"])
def test_append_eos_keeps_a_template_that_already_closes_the_input(name: str) -> None:
    """Qwen3-Embedding appends <|endoftext|> (its EOS is <|im_end|>): nothing more is added."""
    asked, plain = _family(name).make(), _family(name).make()
    dump = add_dump_tokens(asked, K, append_eos=True)
    add_dump_tokens(plain, K)
    assert asked.convert_ids_to_tokens(list(dump.appended)) == list(_family(name).appended)
    for args in [(t,) for t in PROBE_TEXTS] + PAIRS:
        assert asked(*args)["input_ids"] == plain(*args)["input_ids"]


def test_append_eos_matches_the_llama_eos_template() -> None:
    """Llama-2 + append_eos builds what transformers builds for add_eos_token=True (e5-mistral's tokenizer)."""
    plain, with_flag = ZOO_FAMILIES["llama2"].make(), ZOO_FAMILIES["mistral-eos"].make()
    add_dump_tokens(plain, K, append_eos=True)
    add_dump_tokens(with_flag, K)
    for args in [(t,) for t in PROBE_TEXTS] + PAIRS:
        assert plain(*args)["input_ids"] == with_flag(*args)["input_ids"]


def test_roberta_processing_is_restated_with_the_same_ids() -> None:
    source, tokenizer = ZOO_FAMILIES["modernbert"].make(), ZOO_FAMILIES["modernbert"].make()
    cls, sep = ("[CLS]", source.cls_token_id), ("[SEP]", source.sep_token_id)
    for tok in (source, tokenizer):
        tok.backend_tokenizer.post_processor = processors.RobertaProcessing(sep, cls)
    dump = add_dump_tokens(tokenizer, K)
    for args in [(t,) for t in PROBE_TEXTS] + PAIRS:
        assert _without(tokenizer(*args)["input_ids"], dump.offset, K) == source(*args)["input_ids"]
    steps = json.loads(tokenizer.backend_tokenizer.to_str())["post_processor"]["processors"]
    assert [s["type"] for s in steps] == ["ByteLevel", "TemplateProcessing"]


def test_a_post_processor_it_cannot_rewrite_is_refused_before_anything_is_added() -> None:
    tokenizer = ZOO_FAMILIES["xlmr"].make()
    bos, eos = ("<s>", tokenizer.bos_token_id), ("</s>", tokenizer.eos_token_id)
    two = processors.Sequence([processors.TemplateProcessing(single="<s> $A", pair="<s> $A $B", special_tokens=[bos]),
                               processors.TemplateProcessing(single="$A </s>", pair="$A $B", special_tokens=[eos])])
    tokenizer.backend_tokenizer.post_processor = two
    size = len(tokenizer)
    with pytest.raises(UnsupportedTokenizerError, match=r"Sequence of \['TemplateProcessing', 'TemplateProcessing'\]"
                                                        r".*Replace it with one TemplateProcessing"):
        add_dump_tokens(tokenizer, K)
    assert len(tokenizer) == size


def test_a_slow_only_tokenizer_is_refused_with_what_to_do() -> None:
    class SlowOnly:  # what a tokenizer without a tokenizers backend looks like to add_dump_tokens
        def get_vocab(self) -> dict[str, int]:
            return {}

    with pytest.raises(UnsupportedTokenizerError, match="has no tokenizers backend.*convert_slow_tokenizer"):
        add_dump_tokens(SlowOnly(), K)


def test_save_refuses_a_tokenizer_whose_prefix_was_reset(tmp_path: Path) -> None:
    tokenizer = ZOO_FAMILIES["llama2"].make()
    add_dump_tokens(tokenizer, K)
    tokenizer.add_eos_token = True  # transformers regenerates `<s> $A </s>` and drops the prefix
    with pytest.raises(RuntimeError, match="post-processor no longer adds them"):
        save_dump_tokenizer(tokenizer, tmp_path, max_length=32)


def test_a_stale_truncation_and_padding_are_not_saved(tmp_path: Path) -> None:
    """The saved files state the length asked for, whatever an earlier call left in the backend."""
    tokenizer = _with_pad(ZOO_FAMILIES["xlmr"].make())
    add_dump_tokens(tokenizer, K)
    tokenizer(PROBE_TEXTS, padding=True, truncation=True, max_length=20)  # leaves truncation 20 + padding behind
    tokenizer.init_kwargs.update(max_length=128, stride=0, truncation_strategy="longest_first")
    save_dump_tokenizer(tokenizer, tmp_path, max_length=40)
    spec = json.loads((tmp_path / "tokenizer.json").read_text())
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert spec["truncation"]["max_length"] == 40 and spec["padding"] is None
    assert config["max_length"] == config["model_max_length"] == 40
    assert "stride" not in config and "truncation_strategy" not in config
