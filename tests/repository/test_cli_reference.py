"""docs/cli.md is the render of the parser: every subcommand, its description, and every argument and option with
its help, default and choices (rendered by ``scripts/cli_reference.py``; regenerate with
``python scripts/cli_reference.py``).

Run alone: ``python -m pytest tests/repository/test_cli_reference.py`` (imports the parser and the renderer script).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from hf_dumpembed.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "cli_reference.py"


def _load_renderer() -> ModuleType:
    """The renderer script as a module (repository tooling, not part of the package; loaded from its file)."""
    spec = importlib.util.spec_from_file_location("cli_reference", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _load_renderer()


def test_docs_cli_md_is_the_render_of_the_parser() -> None:
    expected = reference.render(build_parser())
    actual = reference.PAGE.read_text(encoding="utf-8") if reference.PAGE.is_file() else ""
    assert actual == expected, (
        f"docs/cli.md is not the render of hf_dumpembed.cli.build_parser() (the parser changed, or the page was edited "
        f"by hand). Regenerate it: `{reference.REGENERATE}` (or `scripts/in-env {reference.REGENERATE}`).\n"
        + reference.stale_diff(expected, actual))


def _sections(text: str) -> dict[str, str]:
    """Subcommand -> its section of the page (from its ``## hf-dumpembed NAME`` heading to the next heading)."""
    parts = re.split(r"^## hf-dumpembed ", text, flags=re.MULTILINE)[1:]
    return {part.split("\n", 1)[0].strip(): part for part in parts}


def _small_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hf-dumpembed", description="Top.")
    parser.add_argument("-v", "--verbose", action="store_true", help="chatty")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser("demo", help="one line", description="Reads <a>|<b>; writes plots/*.png.")
    demo.add_argument("model", help="a folder")
    demo.add_argument("--pick", choices=["x", "y"], default="x", help="which one (default: %(default)s, 100%%)")
    demo.add_argument("--task", action="append", required=True, metavar="NAME", help="`a|b` as code")
    demo.add_argument("--tasks", nargs="+", help="columns")
    demo.add_argument("--[no-]norm".replace("[no-]", ""), action=argparse.BooleanOptionalAction, help="norm")
    raw = commands.add_parser("raw", help="laid out", description="line one\n  indented\n",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    raw.add_argument("--flag", action="store_true", help="a flag")
    return parser


def test_the_renderer_on_a_small_parser() -> None:
    """Choices, defaults (``%(default)s`` filled in, ``%%`` as ``%``), append / nargs / boolean options, a required
    option in the synopsis, markdown escaping outside code spans, and a raw description kept as laid out."""
    text = reference.render(_small_parser())
    demo, raw = _sections(text)["demo"], _sections(text)["raw"]
    assert "```bash\nhf-dumpembed demo [options] MODEL --task NAME\n```" in demo
    assert "Reads &lt;a&gt;\\|&lt;b&gt;; writes plots/\\*.png." in demo
    assert "| `MODEL` | a folder |" in demo
    assert "| `--pick` | one of `x`, `y` | `x` | which one (default: x, 100%) |" in demo
    assert "| `--task` | `NAME` (repeatable) | required | `a\\|b` as code |" in demo
    assert "| `--tasks` | `TASKS [TASKS ...]` |  | columns |" in demo
    assert "| `--norm`, `--no-norm` | (flag) |  | norm |" in demo
    assert "```\nline one\n  indented\n```" in raw and "| `--flag` | (flag) |  | a flag |" in raw
    assert "| [`demo`](#hf-dumpembed-demo) | one line |" in text
    assert "| `-v`, `--verbose` | (flag) |  | chatty |" in text


def test_check_fails_on_a_stale_page_and_names_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "cli.md"
    monkeypatch.setattr(reference, "PAGE", page)
    monkeypatch.setattr(reference, "ROOT", tmp_path)
    assert reference.main([]) == 0 and page.read_text(encoding="utf-8") == reference.current_render()
    assert reference.main(["--check"]) == 0
    page.write_text(page.read_text(encoding="utf-8").replace("| `--pooling` |", "| `--poling` |"), encoding="utf-8")
    capsys.readouterr()
    assert reference.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert reference.REGENERATE in out and "--poling" in out
