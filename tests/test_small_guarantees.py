"""Smaller guarantees of issue 26: the user's umask, `verify --texts` on an empty file, `build` of a path that
does not exist, no leftovers from a failed `eval`, `analyze` or `report --out`. Each fails on main."""

from __future__ import annotations

import json
import os
import stat

import pytest

from hf_dumpembed._utils.folders import staged_file, staged_output
from hf_dumpembed.cli import main


def test_outputs_are_created_with_the_users_umask(tmp_path):
    """Fails on main: staged folders were 0700 (tempfile) whatever the umask."""
    old = os.umask(0o022)
    try:
        with staged_output(tmp_path / "out") as staging:
            (staging / "sub").mkdir()
            (staging / "sub" / "a.txt").write_text("a")
            fd = os.open(staging / "secretive.bin", os.O_CREAT | os.O_WRONLY, 0o600)
            os.close(fd)
        with staged_file(tmp_path / "table.md") as staging:
            staging.write_text("| a |\n")
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [tmp_path / "out", *(tmp_path / "out").rglob("*"),
                                                             tmp_path / "table.md"]}
    assert modes == {"out": 0o755, "sub": 0o755, "a.txt": 0o644, "secretive.bin": 0o644, "table.md": 0o644}


def test_verify_with_an_empty_texts_file_is_an_error(bert_dump_model, tmp_path):
    """Fails on main: an empty --texts silently checked the built-in samples."""
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(SystemExit, match="holds no text"):
        main(["verify", str(bert_dump_model), "--texts", str(empty)])


def test_build_of_a_missing_local_path_says_so(tmp_path):
    """Fails on main ("Repo id must be in the form ..."): the error says the path does not exist."""
    with pytest.raises(SystemExit, match="BACKBONE /nonexistent/path does not exist"):
        main(["build", "/nonexistent/path", str(tmp_path / "m")])
    assert not (tmp_path / "m").exists()


def test_a_failed_eval_leaves_no_results_folder(bert_dump_model, tmp_path):
    """Fails on main: `eval --batch-size 0` left an empty results folder."""
    from tests.training_fixtures import write_beir_folder

    with pytest.raises(SystemExit, match="batch_size must be a positive integer"):
        main(["eval", str(bert_dump_model), "--task", str(write_beir_folder(tmp_path / "beir")),
              "--results-dir", str(tmp_path / "results"), "--batch-size", "0"])
    assert not (tmp_path / "results").exists()


def test_a_failed_analyze_leaves_its_old_output_whole(bert_dump_model, tmp_path, monkeypatch):
    """Fails on main (analyze wrote into --out directly): a failure mid-way leaves the previous analysis."""
    from hf_dumpembed.analysis import run

    out = tmp_path / "analysis"
    out.mkdir()
    (out / "analysis.json").write_text('{"old": true}\n')

    def fail(*args, **kwargs):
        raise RuntimeError("the plot failed")

    monkeypatch.setattr(run, "plot_token_statistics", fail)
    with pytest.raises(RuntimeError):
        run.analyze([bert_dump_model], ["a text", "another text"], out)
    assert sorted(p.name for p in out.iterdir()) == ["analysis.json"]
    assert (out / "analysis.json").read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_failed_file_write_leaves_the_old_file(tmp_path):
    """`report --out` and `card` write through staged_file: an error keeps the old file and leaves no temporary."""
    target = tmp_path / "table.md"
    target.write_text("old\n")
    with pytest.raises(RuntimeError):
        with staged_file(target) as staging:
            staging.write_text("half")
            raise RuntimeError("failed")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["table.md"]


def test_a_train_that_fails_on_its_data_leaves_no_checkpoint_folder(tiny_bert, tmp_path):
    """Fails on main: a data error left OUT.checkpoints/run_config.yaml."""
    from hf_dumpembed.training import train
    from hf_dumpembed.training.config import config_from_dict
    from tests.training_fixtures import run_config, write_jsonl

    data = write_jsonl(tmp_path / "bad.jsonl", [{"query": "q", "positive": ""}, "not an object"])
    config = config_from_dict(run_config(tiny_bert, data, tmp_path / "out"))
    with pytest.raises(ValueError):
        train(config)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_card_source_must_be_the_folder_the_export_came_from(bert_dump_model, tiny_bert, tmp_path):
    """Fails on main: `card EXPORT --source OTHER` rendered a card describing OTHER, and on a plain
    sentence-transformers folder overwrote its README. The export now records its source's content hash."""
    import shutil

    from sentence_transformers import SentenceTransformer

    from hf_dumpembed.export.stock import export_stock_st
    from hf_dumpembed.model.export_record import EXPORT_RECORD, source_sha256

    source = tmp_path / "source"
    shutil.copytree(bert_dump_model, source)
    stock = export_stock_st(source, tmp_path / "stock")
    record = json.loads((stock / EXPORT_RECORD).read_text())
    assert record["source"] == {"name": "source", "sha256": source_sha256(source)}
    main(["card", str(stock), "--source", str(source)])
    assert "## Usage" in (stock / "README.md").read_text()

    other = tmp_path / "other"
    main(["build", str(tiny_bert), str(other), "--dump-tokens", "2", "--match-steps", "0"])
    card_before = (stock / "README.md").read_bytes()
    with pytest.raises(SystemExit, match="was not exported from"):
        main(["card", str(stock), "--source", str(other)])
    (source / "config.json").write_text((source / "config.json").read_text().replace('"normalize": true',
                                                                                     '"normalize": false'))
    with pytest.raises(SystemExit, match="the folder changed since the export"):
        main(["card", str(stock), "--source", str(source)])
    assert (stock / "README.md").read_bytes() == card_before

    plain = tmp_path / "plain"
    SentenceTransformer(str(tiny_bert)).save(str(plain))
    (plain / "README.md").write_text("the user's own card\n")
    with pytest.raises(SystemExit, match=f"has no {EXPORT_RECORD}"):
        main(["card", str(plain), "--source", str(other)])
    assert (plain / "README.md").read_text() == "the user's own card\n"
