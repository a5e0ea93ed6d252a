"""The docs a newcomer reads: README.md and docs/*.md.

- docs/architecture.md names every module of the package with a one-line job, under its layer, layers in the order
  tests/repository/test_layout.py enforces (and names nothing that does not exist);
- every relative link of README.md, docs/*.md, RELIABILITY.md and tests/README.md reaches a file, and its
  ``#anchor`` a heading of that file;
- every ``hf-dumpembed SUBCOMMAND --option`` a doc shows in a code block is one the parser has;
- the README stays short, links every page of docs/, and quotes no measured figure (those live in BENCHMARKS.md).

Run alone: ``python -m pytest tests/repository/test_docs.py`` (reads the markdown files; imports only the parser).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.repository.test_layout import LAYERS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hf_dumpembed"
DOCS_DIR = ROOT / "docs"
ARCHITECTURE = DOCS_DIR / "architecture.md"
README = ROOT / "README.md"
README_MAX_LINES = 300
# A module entry: a list item that starts with the module's path in backticks, then its job.
ENTRY = re.compile(r"^- `(hf_dumpembed/[\w/]*?(?:\.py|/))`:? \S", re.MULTILINE)
LAYER_HEADING = re.compile(r"^### \d+\. `hf_dumpembed/([\w]+)(?:/|\.py)`", re.MULTILINE)
LINK = re.compile(r"\]\(([^()\s]+)\)")


def pages() -> list[Path]:
    return sorted(DOCS_DIR.glob("*.md"))


def required_modules() -> set[str]:
    """Every module file under hf_dumpembed/ (``__init__.py`` aside) and every subpackage below a layer package."""
    required = set()
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        if path.name != "__init__.py":
            required.add(relative)
        elif len(path.relative_to(PACKAGE).parts) > 2:  # hf_dumpembed/<layer>/<subpackage>/__init__.py
            required.add(path.parent.relative_to(ROOT).as_posix() + "/")
    return required


def named_modules(text: str) -> list[str]:
    return ENTRY.findall(text)


def architecture_gaps(text: str) -> tuple[list[str], list[str]]:
    """(modules the page does not name, names that are not modules of the package)."""
    named = set(named_modules(text))
    missing = sorted(required_modules() - named)
    extra = sorted(name for name in named
                   if not (ROOT / name).exists() or (name.endswith("/") and not (ROOT / name / "__init__.py").exists()))
    return missing, extra


def test_architecture_names_every_module_and_only_modules():
    missing, extra = architecture_gaps(ARCHITECTURE.read_text(encoding="utf-8"))
    report = []
    if missing:
        report.append("missing from docs/architecture.md (add `- `path`: job` under its layer):\n  "
                      + "\n  ".join(missing))
    if extra:
        report.append("named in docs/architecture.md but not in the package:\n  " + "\n  ".join(extra))
    assert not report, "\n".join(report)


def test_architecture_lists_the_layers_bottom_to_top_with_each_module_under_its_layer():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    headings = LAYER_HEADING.findall(text)
    assert headings == list(LAYERS), f"layer headings {headings} are not test_layout.py's LAYERS {LAYERS}"
    sections = re.split(r"^### ", text, flags=re.MULTILINE)[1:]
    misplaced = []
    for layer, section in zip(headings, sections, strict=False):
        for name in named_modules(section):
            if name.split("/")[1].removesuffix(".py") != layer:
                misplaced.append(f"{name} (under {layer})")
    assert not misplaced, f"modules listed under another layer: {misplaced}"


def test_the_architecture_check_reports_missing_and_extra_modules():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    dropped = "- `hf_dumpembed/_utils/hashing.py`:"
    assert dropped in text
    broken = text.replace(dropped, "- `hf_dumpembed/_utils/no_such_module.py`:")
    missing, extra = architecture_gaps(broken)
    assert "hf_dumpembed/_utils/hashing.py" in missing and "hf_dumpembed/_utils/no_such_module.py" in extra


def github_anchor(heading: str) -> str:
    """The ``#anchor`` GitHub gives a markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    found: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE):
        anchor, n = github_anchor(heading), 1
        while anchor in found:  # repeated headings get -1, -2, ...
            anchor, n = f"{github_anchor(heading)}-{n}", n + 1
        found.add(anchor)
    return found


def test_github_anchor():
    assert github_anchor("Training cost: step time K = 4 vs K = 0, and GradCache memory") \
        == "training-cost-step-time-k--4-vs-k--0-and-gradcache-memory"
    assert github_anchor("SpecTemp auto mode: γ(k) chosen") == "spectemp-auto-mode-γk-chosen"


LINKING_DOCS = [README, ROOT / "RELIABILITY.md", ROOT / "tests" / "README.md", *pages()]


@pytest.mark.parametrize("doc", LINKING_DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file_and_heading(doc: Path):
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.DOTALL)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https://... is not checked here
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)}: links that reach no file or heading: {broken}"


def _command_lines(text: str) -> list[str]:
    """``hf-dumpembed ...`` command lines of the code blocks (continuations joined, each ``&&`` part apart)."""
    lines = []
    for block in re.findall(r"```(?:bash)?\n(.*?)```", text, flags=re.DOTALL):
        block = block.replace("\\\n", " ")
        for line in block.splitlines():
            line = line.split(" #", 1)[0]
            for part in line.split("&&"):
                part = re.sub(r"^.*?-m hf_dumpembed\.cli ", "hf-dumpembed ", part.strip())
                if part.startswith("hf-dumpembed "):
                    lines.append(part)
    return lines


def _subparsers() -> dict:
    from hf_dumpembed.cli import build_parser

    return dict(build_parser()._subparsers._group_actions[0].choices)


@pytest.mark.parametrize("doc", [README, *pages()], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_command_a_doc_shows_has_the_subcommand_and_options(doc: Path):
    parsers = _subparsers()
    wrong = []
    for line in _command_lines(doc.read_text(encoding="utf-8")):
        words = line.split()
        name = words[1] if len(words) > 1 else ""
        if name not in parsers:
            wrong.append(f"{line!r}: no subcommand {name!r}")
            continue
        known = {option for action in parsers[name]._actions for option in action.option_strings}
        for option in re.findall(r"(?<![\w-])--(?:\[no-\])?\w[\w-]*", line):
            option = option.replace("[no-]", "")
            if option not in known:
                wrong.append(f"{line!r}: {name} has no {option}")
    assert not wrong, "\n".join(wrong)


def test_the_readme_is_short_and_links_every_page_of_docs():
    text = README.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/"
    unlinked = [page.name for page in pages() if f"(docs/{page.name})" not in text]
    assert not unlinked, f"README.md does not link: {unlinked}"
    assert len(pages()) >= 6


def test_the_readme_quotes_no_measured_figure():
    """Quality, speed-ups and measured times live in BENCHMARKS.md; the README links its sections. Allowed: the
    default test run's "~8 min" (an instruction) and tolerances such as 1e-5."""
    text = README.read_text(encoding="utf-8")
    prose = re.sub(r"```python.*?```", "", text, flags=re.DOTALL)
    figures = re.findall(r"[+−-]?\d+(?:\.\d+)?\s?%|\b\d+(?:\.\d+)?x\b|\b\d+\.\d+×|\b0\.\d{2,}\b"
                         r"|\b\d+(?:\.\d+)?\s?(?:s|sec|seconds|minutes|min|texts/s)\b", prose)
    figures = [figure for figure in figures if figure != "8 min"]
    assert not figures, f"README.md quotes figures that belong in BENCHMARKS.md: {figures}"


def _top_level_names(source: Path) -> set[str]:
    """The names a module's source binds at its top level (functions, classes, assignments)."""
    names = set()
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return names


@pytest.mark.parametrize("doc", [README, *pages()], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_name_a_doc_imports_from_the_package_exists(doc: Path):
    """``from hf_dumpembed... import a, b`` in a doc's Python blocks names importable modules and attributes (the
    public API of ``hf_dumpembed/__init__.py`` changes: the docs must follow)."""
    import importlib

    wrong = []
    for block in re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.DOTALL):
        for module, names in re.findall(r"^from (hf_dumpembed[\w.]*) import ([\w, ]+)", block, flags=re.MULTILINE):
            wanted = [n.strip() for n in names.split(",")]
            try:
                imported = importlib.import_module(module)
            except ModuleNotFoundError as error:
                source = ROOT / (module.replace(".", "/") + ".py")
                if (error.name or "").startswith("hf_dumpembed") or not source.is_file():
                    wrong.append(f"{module}: {error}")
                    continue
                # a module for a client not installed here (docs/clients.md's wrappers): the names its source binds
                wrong += [f"{module}.{name}" for name in wanted if name not in _top_level_names(source)]
                continue
            except ImportError as error:
                wrong.append(f"{module}: {error}")
                continue
            wrong += [f"{module}.{name}" for name in wanted if not hasattr(imported, name)]
    assert not wrong, f"{doc.relative_to(ROOT)} imports what does not exist: {wrong}"
