"""The zoo's source folders (tests/support/zoo.py) are what they claim to be: stock sentence-transformers models of the
real families, loading without remote code, with the real stack on disk, and deterministic vectors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers import SentenceTransformer

from tests.support.zoo import FAMILIES, MAX_SEQ_LENGTH, TEXTS, Family

NAMES = list(FAMILIES)
# Where sentence-transformers' encode_document looks for its prompt, in order.
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")


def _load(folder: Path) -> SentenceTransformer:
    return SentenceTransformer(str(folder), device="cpu", trust_remote_code=False)


def _document_prompt(prompts: dict[str, str]) -> str:
    return next((prompts[name] for name in DOCUMENT_PROMPT_NAMES if name in prompts), "")


def _module_kinds(folder: Path) -> list[str]:
    modules = json.loads((folder / "modules.json").read_text())
    return [module["type"].rsplit(".", 1)[-1] for module in modules]


def test_zoo_covers_the_required_families() -> None:
    """At least ten real families, each backbone class once or more, and both refusal kinds."""
    classes = {family.backbone_class for family in FAMILIES.values()}
    assert len(FAMILIES) >= 14
    assert {"BertModel", "MPNetModel", "XLMRobertaModel", "ModernBertModel", "Qwen3Model", "MistralModel",
            "Gemma3TextModel", "LlamaModel", "T5EncoderModel", "GPTNeoModel"} <= classes
    assert {f.pooling_format for f in FAMILIES.values()} >= {"new", "legacy2", "legacy3"}
    assert any(isinstance(f.pooling, str) and f.pooling in {"weightedmean", "max", "mean_sqrt_len_tokens"}
               for f in FAMILIES.values() if f.supported)
    assert sum(not f.supported for f in FAMILIES.values()) >= 2
    assert all(f.refusal_words for f in FAMILIES.values() if not f.supported)


@pytest.mark.parametrize("name", NAMES)
def test_saved_stack_is_the_real_one(name: str, zoo_source: Callable[[str], Path]) -> None:
    """modules.json, the Pooling config format, Dense configs, prompts and the backbone class are as declared."""
    family: Family = FAMILIES[name]
    folder = zoo_source(name)
    expected = ["Transformer", "Pooling"] + ["Dense"] * len(family.dense) + (["Normalize"] if family.normalize else [])
    assert _module_kinds(folder) == expected
    modules = json.loads((folder / "modules.json").read_text())
    pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text())
    modes = family.pooling if isinstance(family.pooling, tuple) else (family.pooling,)
    if family.pooling_format == "new":
        assert pooling["pooling_mode"] == (list(modes) if len(modes) > 1 else modes[0])
        assert pooling["include_prompt"] is family.include_prompt
        assert not any(key.startswith("pooling_mode_") for key in pooling)
    else:
        assert "pooling_mode" not in pooling
        assert all(module["type"].startswith("sentence_transformers.models.") for module in modules)
        assert sum(value is True for key, value in pooling.items() if key.startswith("pooling_mode_")) == len(modes)
        assert ("include_prompt" in pooling) is (family.pooling_format == "legacy3")
        assert json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"] == MAX_SEQ_LENGTH
    for module, spec in zip(modules[2:2 + len(family.dense)], family.dense, strict=True):
        dense = json.loads((folder / module["path"] / "config.json").read_text())
        assert dense["out_features"] == spec.out_features and dense["bias"] is spec.bias
        assert dense["activation_function"].endswith("Tanh" if spec.activation == "tanh" else "Identity")
    st_config = json.loads((folder / "config_sentence_transformers.json").read_text())
    assert dict(family.prompts).items() <= st_config["prompts"].items()
    assert st_config["default_prompt_name"] == family.default_prompt_name
    config = json.loads((folder / "config.json").read_text())
    architectures = family.config_updates.get("architectures", [family.backbone_class])
    assert config["architectures"] == architectures


@pytest.mark.parametrize("name", NAMES)
def test_tokenizer_family(name: str, zoo_source: Callable[[str], Path]) -> None:
    """The leading special token (or none), the appended EOS of last-token decoders, and the padding side."""
    family = FAMILIES[name]
    tokenizer = _load(zoo_source(name)).tokenizer
    ids = tokenizer("hello world")["input_ids"]
    special = set(tokenizer.all_special_ids)
    assert (ids[0] in special) is family.leading_special
    if family.pooling == "lasttoken" and family.name != "llama-3":  # Qwen3 and e5-mistral pool an appended EOS
        assert ids[-1] in special
    if family.name == "qwen3-embedding":
        assert tokenizer.padding_side == "left"
    assert tokenizer.pad_token is not None
    assert len(tokenizer(TEXTS[-1])["input_ids"]) > MAX_SEQ_LENGTH  # the long text really is truncated


@pytest.mark.parametrize("name", NAMES)
def test_source_encodes(name: str, zoo_source: Callable[[str], Path]) -> None:
    """encode / encode_query / encode_document: finite vectors of the family's dimension, unit length iff the stack
    ends in Normalize; query and document vectors differ exactly when the real prompts do."""
    family = FAMILIES[name]
    model = _load(zoo_source(name))
    assert model.max_seq_length == MAX_SEQ_LENGTH
    plain, query, document = model.encode(TEXTS), model.encode_query(TEXTS), model.encode_document(TEXTS)
    for vectors in (plain, query, document):
        assert vectors.shape == (len(TEXTS), family.dimension)
        assert np.isfinite(vectors).all()
        norms = np.linalg.norm(vectors, axis=1)
        assert bool(np.allclose(norms, 1.0, atol=1e-5)) is family.normalize
    prompts = dict(family.prompts)
    query_prompt, document_prompt = prompts.get("query", ""), _document_prompt(prompts)
    assert bool(np.abs(query - document).max() > 1e-4) is (query_prompt != document_prompt)
    assert bool(np.abs(query - plain).max() > 1e-4) is (query_prompt != "")


@pytest.mark.parametrize("name", [n for n in NAMES if FAMILIES[n].prompts])
def test_named_prompts_are_prepended(name: str, zoo_source: Callable[[str], Path]) -> None:
    """encode(prompt_name=p) is the text with the prompt in front (include_prompt=True) or differs from it
    (include_prompt=False: the prompt tokens are left out of the pooling)."""
    family = FAMILIES[name]
    model = _load(zoo_source(name))
    for prompt_name, prompt in family.prompts.items():
        named = model.encode(TEXTS[:3], prompt_name=prompt_name)
        manual = model.encode([prompt + text for text in TEXTS[:3]])
        same = bool(np.abs(named - manual).max() <= 1e-6)
        assert same is (family.include_prompt or not prompt), prompt_name


@pytest.mark.parametrize("name", NAMES)
def test_source_vectors_are_deterministic(name: str, zoo_source: Callable[[str], Path]) -> None:
    """Two loads of one source folder give the same vectors, with and without prompts."""
    first, second = _load(zoo_source(name)), _load(zoo_source(name))
    for encode in ("encode", "encode_query", "encode_document"):
        np.testing.assert_array_equal(getattr(first, encode)(TEXTS), getattr(second, encode)(TEXTS))


def test_save_is_reproducible(tmp_path: Path, zoo_source: Callable[[str], Path]) -> None:
    """Saving a family twice gives the same weights and tokenizer (seeded init, deterministic tokenizer training)."""
    name = "multilingual-e5-small"
    again = FAMILIES[name].save(tmp_path / "again")
    np.testing.assert_array_equal(_load(zoo_source(name)).encode(TEXTS), _load(again).encode(TEXTS))
    assert (again / "tokenizer.json").read_text() == (zoo_source(name) / "tokenizer.json").read_text()
