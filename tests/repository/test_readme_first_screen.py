"""README's first screen runs as printed: "Make your own" (build, fit, verify) and then "Use it" on that folder.

Swaps, and nothing else: the embedded encoder for the tiny random BERT, the projection's k for one it has room for,
and the quickstart's folder (which `-m slow`'s quickstart tests make) for the folder "Make your own" wrote.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from hf_dumpembed.cli import main
from hf_dumpembed.data.sample_texts import stdlib_docstrings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def block_after(heading: str, language: str) -> str:
    """The first fenced ``language`` block after the ``## heading`` line."""
    match = re.search(rf"^## {re.escape(heading)}\n.*?^```{language}\n(.*?)^```", README, re.MULTILINE | re.DOTALL)
    assert match, f"README has no {language} block under '## {heading}'"
    return match.group(1)


def test_make_your_own_then_use_it(tiny_bert: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    texts = [" ".join(text.split()) for text in stdlib_docstrings(80)]  # one paragraph a line, as users keep texts
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    commands = [line.split("#")[0] for line in block_after("Make your own", "bash").splitlines() if line.strip()]
    assert [shlex.split(line)[1] for line in commands] == ["build", "fit", "verify"]
    for line in commands:
        argv = shlex.split(line.replace("embedded:encoder", str(tiny_bert)).replace("--dim 128", "--dim 8"))
        assert argv[0] == "hf-dumpembed"
        main(argv[1:])
    fitted = tmp_path / "my-model-st"
    assert (fitted / "config.json").is_file()

    code = block_after("Use it", "python")
    assert len(code.strip().splitlines()) <= 6
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code.replace("hf-dumpembed-quickstart/minilm-k4-spectemp128", str(fitted)), "README", "exec"), {})
    printed = output.getvalue()
    assert printed.startswith("tensor([[") and printed.count(",") == 1, printed
