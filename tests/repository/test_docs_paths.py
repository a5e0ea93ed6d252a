"""The docs cite only repository paths and tests that exist.

Run alone: ``python -m pytest tests/repository/test_docs_paths.py`` (reads the markdown files; imports nothing of the
package).

Only paths that look like repository paths are checked (``hf_dumpembed/``, ``tests/``, ``scripts/``, ``docs/``,
``model_cards/``, ``.ci/``); ``runs/`` and ``data/`` are built at run time. ``*`` globs must match a file,
``{a,b}`` alternatives must all exist, and templates with a ``<placeholder>`` are skipped. BENCHMARKS.md is
rendered from ``scripts/bench/results/*.json``: a path is fixed there and the file re-rendered
(``python scripts/bench/benchmarks.py render``).
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "RELIABILITY.md", "BENCHMARKS.md", "tests/README.md",
        *sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md")))
_PART = r"(?:[\w.*<>-]|\{[\w.,-]*\})*"
REPO_PATH = re.compile(rf"(?<![\w./-])((?:hf_dumpembed|tests|scripts|docs|model_cards|\.ci)/{_PART}(?:/{_PART})*)")


def _expand(path: str) -> list[str]:
    """``a{b,c}d`` -> ``abd``, ``acd`` (shell brace expansion, nested braces not needed)."""
    match = re.search(r"\{([^{}]*)\}", path)
    if match is None:
        return [path]
    return [expanded for choice in match.group(1).split(",")
            for expanded in _expand(path[:match.start()] + choice + path[match.end():])]


def cited_paths(text: str) -> set[str]:
    """The repository paths ``text`` cites (a sentence's final full stop is not part of the path)."""
    return {match.rstrip(".") for match in REPO_PATH.findall(text)}


def missing_paths(text: str) -> list[str]:
    missing = []
    for cited in sorted(cited_paths(text)):
        if "<" in cited:
            continue  # a template: scripts/bench/results/<section>.json
        for path in _expand(cited):
            found = any(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()
            if not found:
                missing.append(path)
    return missing


@pytest.mark.parametrize("doc", DOCS)
def test_every_repository_path_a_doc_cites_exists(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    assert len(cited_paths(text)) >= 3, f"{doc} cites (almost) no repository path: the pattern is out of date"
    missing = missing_paths(text)
    assert not missing, f"{doc} cites paths that do not exist: {missing}"


def test_the_path_check_reads_globs_braces_templates_and_refuses_a_missing_path():
    text = ("See `tests/projections/test_*.py`, scripts/configs/minilm-dump{4,0}-stdlibcode.yaml and "
            "`scripts/bench/results/<section>.json`, not runs/x.json or data/ManPages; also hf_dumpembed/cli.py.")
    assert cited_paths(text) == {"tests/projections/test_*.py", "scripts/configs/minilm-dump{4,0}-stdlibcode.yaml",
                                 "scripts/bench/results/<section>.json", "hf_dumpembed/cli.py"}
    assert missing_paths(text) == []
    assert missing_paths("`hf_dumpembed/atomic.py`, tests/test_nope_*.py, scripts/configs/minilm-dump{4,9}-x.yaml") \
        == ["hf_dumpembed/atomic.py", "scripts/configs/minilm-dump4-x.yaml", "scripts/configs/minilm-dump9-x.yaml",
            "tests/test_nope_*.py"]


def _defined_tests() -> tuple[set[str], set[str]]:
    """(test files relative to tests/, names of the test functions they define at the top level)."""
    files = sorted((ROOT / "tests").rglob("test_*.py"))
    names = {name for file in files
             for name in re.findall(r"^def (test_\w+)", file.read_text(encoding="utf-8"), re.MULTILINE)}
    return {file.relative_to(ROOT / "tests").as_posix() for file in files}, names


@pytest.mark.parametrize("doc", DOCS)
def test_every_test_a_doc_cites_exists(doc):
    """A cited `tests/x.py::test_name`, or a bare `test_name` (`test_*` a glob), names a test function that exists."""
    files, names = _defined_tests()
    cited = re.findall(r"`(?:tests/([\w/]+/test_\w+\.py)::)?(test_[\w*]+)`", (ROOT / doc).read_text(encoding="utf-8"))
    missing = sorted({f"tests/{file}" for file, _ in cited if file and file not in files}
                     | {name for _, name in cited if not fnmatch.filter(names, name)})
    assert not missing, f"{doc} cites tests that do not exist: {missing}"
