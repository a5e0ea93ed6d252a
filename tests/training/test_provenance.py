"""Every parameter checked at the boundary: K that leaves no room for text, commands given a folder that is not a
DumpEmbed model, non-UTF-8 input naming file and line, no absolute local paths in public artefacts, and property
tests (hypothesis) of the CLI's argument validation and the jsonl / BEIR readers."""

from __future__ import annotations

import json


def test_the_published_run_config_names_no_absolute_path(tiny_bert, tmp_path):
    from hf_dumpembed.training.config import config_from_dict
    from hf_dumpembed.training.provenance import public_config
    from tests.support.training_fixtures import run_config, toy_rows, write_jsonl

    data = write_jsonl(tmp_path / "toy.jsonl", toy_rows())
    raw = run_config(tiny_bert, data, tmp_path / "m")
    raw["data"]["mining"] = {"cache_dir": str(tmp_path / "mined")}
    text = json.dumps(public_config(config_from_dict(raw)).to_dict())
    assert str(tmp_path) not in text and str(tiny_bert) not in text
    assert '"cache_dir": "mined"' in text and '"path": "toy.jsonl"' in text
