"""The docs a newcomer reads: README.md and docs/*.md.

- docs/architecture.md's layers and modules are the render of the package (``scripts/architecture.py``);
- every relative link of README.md, docs/*.md, RELIABILITY.md and tests/README.md reaches a file, and its
  ``#anchor`` a heading of that file;
- every ``hf-dumpembed SUBCOMMAND --option`` a doc shows in a code block is one the parser has, and every
  ``from hf_dumpembed... import`` of a doc's Python blocks imports.

Run alone: ``python -m pytest tests/repository/test_docs.py`` (reads the markdown files; imports only the parser).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS_DIR = ROOT / "docs"
README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^()\s]+)\)")


def pages() -> list[Path]:
    return sorted(DOCS_DIR.glob("*.md"))


def _load_script(name: str):
    """A script of scripts/ as a module (repository tooling, not part of the package; loaded from its file)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_architecture_md_is_the_render_of_the_package():
    architecture = _load_script("architecture")
    page = architecture.PAGE.read_text(encoding="utf-8")
    expected = architecture.render(page)
    assert page == expected, (
        "docs/architecture.md's layers and modules are not the render of the package (a module was added, moved or "
        f"its docstring changed). Regenerate them: `{architecture.REGENERATE}`.\n"
        + architecture.stale_diff(expected, page))


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
