"""The hf-dumpembed command: help on every subcommand, build/export/verify end to end, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hf_dumpembed.cli import build_parser, main

SUBCOMMANDS = ["build", "export-st", "verify", "card", "assets", "quickstart"]


@pytest.mark.parametrize("command", [[], *[[c] for c in SUBCOMMANDS]])
def test_help_explains_every_subcommand(command, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert "usage: hf-dumpembed" in text
    if command:
        assert len(build_parser()._subparsers._group_actions[0].choices[command[0]].description) > 40


def test_console_script_is_installed():
    result = subprocess.run([sys.executable, "-m", "hf_dumpembed.cli", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "build" in result.stdout


def test_build_export_verify(tiny_llama, tmp_path, capsys):
    main(["build", str(tiny_llama), str(tmp_path / "m"), "--dump-tokens", "2", "--pooling", "mean", "--init",
          "normal", "--max-seq-length", "32"])
    config = json.loads((tmp_path / "m" / "config.json").read_text())
    assert config["num_dump_tokens"] == 2 and config["pooling"] == "mean" and config["dump_init"] == "normal"
    main(["export-st", str(tmp_path / "m"), str(tmp_path / "stock")])
    assert "ok" in capsys.readouterr().out
    texts = tmp_path / "texts.txt"
    texts.write_text("first line\nsecond, longer line of text\n")
    main(["verify", str(tmp_path / "m"), "--stock", str(tmp_path / "stock"), "--texts", str(texts)])
    out = capsys.readouterr().out
    assert "mteb" in out and "MISMATCH" not in out


def test_user_errors_exit_with_a_message(tiny_bert, tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file").write_text("x")
    with pytest.raises(SystemExit, match="already exists and is not empty"):
        main(["build", str(tiny_bert), str(tmp_path / "busy")])
    with pytest.raises(SystemExit) as exit_info:  # argparse rejects an unknown choice
        main(["build", str(tiny_bert), str(tmp_path / "x"), "--pooling", "avg"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit, match="Could not load the backbone"):
        main(["build", str(tmp_path / "missing"), str(tmp_path / "y")])


def test_ctrl_c_exits_130_and_says_how_to_resume(monkeypatch, tmp_path, capsys):
    import hf_dumpembed.quickstart.pipeline as pipeline

    def interrupted(options):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "run_quickstart", interrupted)
    with pytest.raises(SystemExit) as exit_info:
        main(["quickstart", "--output-dir", str(tmp_path / "qs")])
    assert exit_info.value.code == 130
    assert "interrupted; run the same command again to resume" in capsys.readouterr().err
