"""A folder whose config.json and tokenizer.json disagree about the [DUMP] tokens is refused before anything loads, by
every command that takes a DumpEmbed folder (`require_dumpembed_folder`, and `eval`'s run).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_dumpembed.model.dumpembed_folder import check_dump_template, require_dumpembed_folder
from tests.support.card_fixtures import copy_model

MISMATCH = r"config\.json says num_dump_tokens=.*but tokenizer\.json's template"


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
@pytest.mark.parametrize("entry", ["require_dumpembed_folder", "check_load_paths", "export_stock_st", "run_eval"])
def test_config_and_tokenizer_template_must_agree(bert_dump_model, tmp_path, variant, entry):
    from hf_dumpembed.evaluation import run_eval
    from hf_dumpembed.export.stock import export_stock_st
    from hf_dumpembed.export.verify import check_load_paths

    folder = _edit_config(copy_model(bert_dump_model, tmp_path / "model"), **_variants(bert_dump_model)[variant])
    call = {
        "require_dumpembed_folder": lambda: require_dumpembed_folder(folder),
        "check_load_paths": lambda: check_load_paths(folder),
        "export_stock_st": lambda: export_stock_st(folder, tmp_path / "out"),
        "run_eval": lambda: run_eval(folder, ["unused"], results_dir=tmp_path / "out"),
    }[entry]
    with pytest.raises(ValueError, match=MISMATCH):
        call()
    assert not (tmp_path / "out").exists()


def test_verify_refuses_a_self_contradicting_folder(bert_dump_model, tmp_path):
    from hf_dumpembed.cli import main

    folder = _edit_config(copy_model(bert_dump_model, tmp_path / "model"), **_variants(bert_dump_model)["fewer"])
    with pytest.raises(SystemExit, match="do not belong together"):
        main(["verify", str(folder)])


def test_a_tokenizer_without_a_template_for_the_dump_tokens_is_refused():
    check_dump_template({"num_dump_tokens": 0}, {"post_processor": None})
    with pytest.raises(ValueError, match="expects 2 \\[DUMP\\] tokens, but tokenizer.json has no TemplateProcessing"):
        check_dump_template({"num_dump_tokens": 2, "dump_token_ids": [5, 6]}, {"post_processor": None})


def test_decoder_folders_and_consistent_folders_pass(bert_dump_model, llama_dump_model):
    """The check passes on what `build` writes (encoder: [CLS] first; decoder: BOS first, a Sequence processor)."""
    for folder in (bert_dump_model, llama_dump_model):
        assert require_dumpembed_folder(folder) == folder
