"""A folder whose config.json and tokenizer.json disagree about the [DUMP] tokens is refused at load, on every
load path (the check is in the remote code).

Fails on main: a config with fewer [DUMP] ids than the tokenizer prepends (or another id order) loaded, `verify`
passed, and the vectors shifted (cos 0.95).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.card_fixtures import copy_model


def _edit_config(folder: Path, **fields: object) -> Path:
    config = json.loads((folder / "config.json").read_text())
    config.update(fields)
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


def _variants(source: Path) -> dict[str, dict[str, object]]:
    ids = json.loads((source / "config.json").read_text())["dump_token_ids"]
    return {
        "fewer": {"num_dump_tokens": len(ids) - 1, "dump_token_ids": ids[:-1]},
        "reordered": {"dump_token_ids": [ids[1], ids[0], *ids[2:]]},
        "none": {"num_dump_tokens": 0, "dump_token_ids": []},
        "offset": {"dump_token_offset": 0},
    }


@pytest.mark.parametrize("variant", ["fewer", "reordered", "none", "offset"])
@pytest.mark.parametrize("loader", ["automodel", "sentence-transformers"])
def test_config_and_tokenizer_template_must_agree(bert_dump_model, tmp_path, variant, loader):
    folder = _edit_config(copy_model(bert_dump_model, tmp_path / "model"), **_variants(bert_dump_model)[variant])
    with pytest.raises(ValueError, match=r"config\.json says num_dump_tokens=.*but tokenizer\.json's template"):
        if loader == "automodel":
            from transformers import AutoModel

            AutoModel.from_pretrained(str(folder), trust_remote_code=True)
        else:
            from sentence_transformers import SentenceTransformer

            SentenceTransformer(str(folder), trust_remote_code=True)


def test_verify_refuses_a_self_contradicting_folder(bert_dump_model, tmp_path):
    from hf_dumpembed.cli import main

    folder = _edit_config(copy_model(bert_dump_model, tmp_path / "model"), **_variants(bert_dump_model)["fewer"])
    with pytest.raises(SystemExit, match="do not belong together"):
        main(["verify", str(folder)])


def test_decoder_folders_and_consistent_folders_still_load(bert_dump_model, llama_dump_model):
    """The check passes on what `build` writes (encoder: [CLS] first; decoder: BOS first, a Sequence processor)."""
    from transformers import AutoModel

    for folder in (bert_dump_model, llama_dump_model):
        assert AutoModel.from_pretrained(str(folder), trust_remote_code=True).config.num_dump_tokens > 0
