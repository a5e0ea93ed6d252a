"""The hf-dumpembed command: help on every subcommand, build/export/verify end to end, clear errors."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_dumpembed.cli import build_parser, main
from hf_dumpembed.data.beir import write_beir
from hf_dumpembed.model.builder import MAX_DUMP_TOKENS, BuildOptions


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    return dict(build_parser()._subparsers._group_actions[0].choices)


SUBCOMMANDS = sorted(_subparsers())


@pytest.mark.parametrize("command", [[], *[[c] for c in SUBCOMMANDS]])
def test_help_explains_every_subcommand_and_documents_each_option(command, capsys):
    """`--help` works for the top level and every subcommand, describes the command, and documents every option:
    each argument has help text and each option string and positional appears in the printed help."""
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: hf-dumpembed {' '.join(command)}".rstrip())
    if not command:
        assert all(name in text for name in SUBCOMMANDS)
        return
    parser = _subparsers()[command[0]]
    assert len(parser.description) > 40
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        names = action.option_strings or [action.metavar or action.dest]
        assert action.help and action.help != argparse.SUPPRESS, f"{command[0]} {names[0]} has no help text"
        assert all(name in text for name in names), (command[0], names)


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
    # A local path that does not exist says so (not "Repo id must be in the form ..." from the Hub client).
    with pytest.raises(SystemExit, match="missing does not exist"):
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


# Boundary checks: a bad parameter is refused with a message that names it.


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(args=st.lists(st.sampled_from(["--dump-tokens", "-1", "5", "100000", "x", "1e3", "--pooling", "cls", "bad",
                                      "--max-seq-length", "0", "--init", "mean", "--seed", "--overwrite"]),
                     max_size=6))
def test_build_command_line_parses_or_exits_cleanly(args, tmp_path):
    """Any mix of build options either parses into valid BuildOptions or ends in argparse's usage error / a
    ValueError, never in a traceback of another kind."""
    try:
        parsed = build_parser().parse_args(["build", "embedded:encoder", str(tmp_path / "m"), *args])
    except SystemExit as exit_:
        assert exit_.code == 2
        return
    try:
        options = BuildOptions(num_dump_tokens=parsed.dump_tokens, pooling=parsed.pooling, init=parsed.init,
                               max_seq_length=parsed.max_seq_length, seed=parsed.seed)
    except ValueError:
        return
    assert 0 <= options.num_dump_tokens <= MAX_DUMP_TOKENS and options.seed >= 0


@pytest.mark.parametrize(
    "argv",
    [
        ["fit", "{plain}", "{out}", "--method", "truncate", "--dim", "8"],
        ["export-st", "{plain}", "{out}"],
        ["verify", "{plain}"],
    ],
)
def test_every_command_says_not_a_dumpembed_model_folder(tiny_bert, tmp_path, argv):
    task = write_beir(tmp_path / "Task", {"d": {"title": "", "text": "x"}}, {"q": "x"}, {"q": {"d": 1}})
    argv = [a.format(plain=tiny_bert, out=tmp_path / "out", task=task) for a in argv]
    with pytest.raises(SystemExit, match="not a DumpEmbed model folder"):
        main(argv)
    assert not (tmp_path / "out").exists()


# Damaged inputs and full disks: one `error:` line, nothing left behind, the old output whole.


def _one_line_error(argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    message = str(exit_info.value.code)
    assert message.startswith(f"hf-dumpembed {argv[0]}: error: ") and "\n" not in message, message
    return message


@pytest.fixture(scope="module")
def truncated_model(bert_dump_model, tmp_path_factory) -> Path:
    """A copy of the K=4 BERT folder whose model.safetensors lost its second half (a cut-short download)."""
    from tests.support.card_fixtures import copy_model

    folder = copy_model(bert_dump_model, tmp_path_factory.mktemp("truncated") / "model")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    return folder


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "{model}"],
        ["fit", "{model}", "{out}", "--method", "truncate", "--dim", "8", "--no-plots"],
        ["eval", "{model}", "--task", "{task}", "--results-dir", "{out}"],
        ["export-st", "{model}", "{out}"],
    ],
    ids=lambda argv: argv[0],
)
def test_a_damaged_safetensors_file_is_one_line_naming_it(truncated_model, tmp_path, argv):
    """A truncated model.safetensors ends in one line naming the file and the fix (rebuild or re-download); nothing
    is written."""
    task = write_beir(tmp_path / "Task", {"d": {"title": "", "text": "x"}}, {"q": "x"}, {"q": {"d": 1}})
    argv = [a.format(model=truncated_model, out=tmp_path / "out", task=task) for a in argv]
    message = _one_line_error(argv)
    assert f"{truncated_model / 'model.safetensors'} is damaged (" in message
    assert message.endswith("): rebuild or re-download it.")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Task"]


def test_a_full_disk_during_fit_is_one_line_and_keeps_the_old_output(bert_dump_model, tmp_path, monkeypatch):
    """ENOSPC half-way through `fit`'s weights ends in one line naming the output and what to do; the previous
    output is whole and no staging folder is left."""
    import transformers.modeling_utils as modeling_utils
    from safetensors import SafetensorError

    out = tmp_path / "out"
    main(["fit", str(bert_dump_model), str(out), "--method", "truncate", "--dim", "8", "--no-plots"])
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def disk_full(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"\0" * 1000)  # half a file, then the device is full
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(modeling_utils, "safe_save_file", disk_full)
    message = _one_line_error(["fit", str(bert_dump_model), str(out), "--method", "truncate", "--dim", "4",
                               "--no-plots", "--overwrite"])
    assert f"could not write {out}: no space is left on the device; free space on it, or choose an output on " \
           "another disk." in message
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_disk_error_outside_a_staged_output_is_one_line_naming_the_file():
    """A writer that is not a staged output (eval's results folder, push's --stage-dir) hitting a read-only file
    system or a full disk: one line naming the file and what to do, not "[Errno 30] ..."."""
    import errno

    from safetensors import SafetensorError

    from hf_dumpembed.cli import error_message

    assert error_message(OSError(errno.EROFS, "Read-only file system", "/mnt/ro/results")) == (
        "could not write /mnt/ro/results: the file system is read-only; choose an output on a writable file system.")
    assert error_message(OSError(errno.EDQUOT, "Disk quota exceeded", "/home/u/x.json")).startswith(
        "could not write /home/u/x.json: the disk quota is exceeded; free space within your quota")

    def save(path: str) -> None:
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    try:
        save("/data/cache/vectors.safetensors")
    except SafetensorError as error:
        assert error_message(error) == ("could not write /data/cache/vectors.safetensors: no space is left on the "
                                        "device; free space on it, or choose an output on another disk.")
    assert error_message(RuntimeError("a bug")) is None  # shown with its traceback


def test_a_refused_config_field_is_one_line_saying_what_was_wrong():
    from transformers import BertConfig

    from hf_dumpembed.cli import error_message
    from hf_dumpembed.remote import DumpEmbedConfig

    for fields, message in (({"projection_dim": 64}, "projection_dim must be between 1 and the pooled embedding size "
                                                     "32; got 64."),
                            ({"normalize": 1}, "Field 'normalize' expected bool, got int (value: 1)")):
        try:
            DumpEmbedConfig(text_config=BertConfig(hidden_size=32, num_attention_heads=4), **fields)
        except Exception as error:  # noqa: BLE001 (the error class is what is tested)
            assert error_message(error) == message
        else:
            raise AssertionError(f"{fields} was accepted")
