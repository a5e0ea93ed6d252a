"""The package's shape: imports flow down the layers, no cycles, short functions, self-contained comments.

Run alone: ``python -m pytest tests/repository/test_layout.py`` (reads source files with ``ast``; imports nothing of the
package).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from functools import lru_cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "hf_dumpembed"


def _layers() -> tuple[str, ...]:
    """The layers, bottom to top, as scripts/architecture.py (which renders docs/architecture.md) defines them."""
    spec = importlib.util.spec_from_file_location("architecture", PACKAGE.parent / "scripts" / "architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.LAYERS)


# Bottom to top: a module may import from its own layer and the layers before it, never from a later one.
LAYERS = _layers()
MAX_FUNCTION_LINES = 80
# Phrases that point at material outside this repository; markdown files must be ones the repository holds.
OUTSIDE_REFERENCES = re.compile(r"\bseed \d{3}\b|\bthe brief\b|\.\./shared\b|/work/", re.IGNORECASE)
MARKDOWN_NAME = re.compile(r"[\w./-]*\w\.md\b")


def _module_name(path: Path) -> str:
    parts = ["hf_dumpembed", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every hf_dumpembed import in ``path``, including those inside functions."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" for alias in node.names]
            found += [(node.lineno, name) for name in names if name.startswith("hf_dumpembed.")]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("hf_dumpembed")]
    return found


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_belongs_to_a_layer() -> None:
    orphans = [_module_name(p) for p in _sources() if p.parent != PACKAGE or p.stem not in {"__init__"}]
    orphans = [m for m in orphans if _layer(m) is None]
    assert not orphans, f"modules outside every layer (add them to a subpackage or to LAYERS): {orphans}"


def test_imports_flow_down_the_layers() -> None:
    upward = []
    for path in _sources():
        source = _module_name(path)
        here = _layer(source)
        for line, target in _imports(path):
            there = _layer(target)
            if here is not None and there is not None and there > here:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({LAYERS[here]}) imports {target} "
                              f"({LAYERS[there]})")
    assert not upward, "upward imports between layers:\n" + "\n".join(upward)


def test_remote_code_imports_only_its_siblings() -> None:
    for path in (PACKAGE / "remote").glob("*.py"):
        for line, target in _imports(path):
            assert target.startswith("hf_dumpembed.remote"), f"{path.name}:{line} imports {target}"


def test_projection_maths_imports_only_itself_and_the_remote_code() -> None:
    """`projections/maths/` sits under the fitters and the fit: a fit walks down into it and never back up."""
    for path in (PACKAGE / "projections" / "maths").glob("*.py"):
        for line, target in _imports(path):
            assert target.startswith(("hf_dumpembed.projections.maths", "hf_dumpembed.remote")), \
                f"maths/{path.name}:{line} imports {target}"


def _module_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in _sources()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for _, target in _imports(path):
            # `from .pkg import name` names a module when `pkg.name` is one; else the import is of `pkg`.
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycles_between_modules() -> None:
    graph = _module_graph()
    # A package's __init__ re-exporting its own modules is not a cycle of logic: leave those edges out.
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    assert _find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None
    assert _layer("hf_dumpembed.evaluation.results") > _layer("hf_dumpembed.model.builder")
    assert _outside_references("see the notes.md guide (seed 001)", {"README.md"}) == ["notes.md", "seed 001"]
    assert _outside_references("see README.md and model_cards/card.md", {"README.md", "card.md"}) == []


def test_no_function_is_longer_than_the_limit() -> None:
    long = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({length} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them):\n" + "\n".join(long)


def _outside_references(line: str, repository_files: set[str]) -> list[str]:
    names = [m for m in MARKDOWN_NAME.findall(line) if m.rsplit("/", 1)[-1] not in repository_files]
    return names + [m.group(0) for m in OUTSIDE_REFERENCES.finditer(line)]


@lru_cache
def _written_markdown(repository: Path) -> set[str]:
    """Markdown files the code itself writes (a string literal that is just such a name, e.g. "logit_lens.md")."""
    names = set()
    for path in repository.glob("[hst]*/**/*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and MARKDOWN_NAME.fullmatch(node.value):
                names.add(node.value.rsplit("/", 1)[-1])
    return names


@pytest.mark.parametrize("folder", ["hf_dumpembed", "scripts", "tests"])
def test_comments_cite_only_this_repository_and_public_sources(folder: str) -> None:
    repository = PACKAGE.parent
    markdown = {p.name for p in repository.rglob("*.md") if ".git" not in p.parts} | _written_markdown(repository)
    hits = []
    for path in sorted((repository / folder).rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if found := _outside_references(line, markdown):
                hits.append(f"{path.relative_to(repository)}:{number}: {found}: {line.strip()}")
    assert not hits, "lines naming material outside the repository:\n" + "\n".join(hits)


# Test folders that are not a layer of the package: checks of the repository itself, integration on real models,
# and shared support code (no tests).
NON_LAYER_TEST_FOLDERS = {"repository", "integration", "support"}


def _package_modules(layer: str) -> set[str]:
    """The module (and subpackage) names of one layer; a one-module layer (cli) is its own name."""
    folder = PACKAGE / layer
    if not folder.is_dir():
        return {layer}
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()}


def _misplaced_tests(tests: Path) -> list[str]:
    """Test files that do not mirror the package: tests/<layer>/test_<module>[_<aspect>].py."""
    wrong = []
    for path in sorted(tests.rglob("test_*.py")):
        parts = path.relative_to(tests).parts
        if len(parts) != 2:
            wrong.append(f"{path.relative_to(tests)}: not in a layer folder (tests/<layer>/test_<module>.py)")
            continue
        folder, name = parts
        if folder in NON_LAYER_TEST_FOLDERS:
            continue
        if folder not in LAYERS:
            wrong.append(f"{folder}/{name}: {folder} is no layer of hf_dumpembed")
            continue
        stem = name.removeprefix("test_").removesuffix(".py")
        modules = _package_modules(folder)
        if not any(stem == m or stem.startswith(m + "_") for m in modules):
            wrong.append(f"{folder}/{name}: names no module of hf_dumpembed/{folder} ({', '.join(sorted(modules))})")
    return wrong


def test_tests_mirror_the_package() -> None:
    wrong = _misplaced_tests(PACKAGE.parent / "tests")
    assert not wrong, "test files that do not mirror the package:\n" + "\n".join(wrong)


def test_the_mirror_check_catches_a_stray_test(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "test_builder_zoo.py").write_text("")
    (tmp_path / "model" / "test_nothing_here.py").write_text("")
    (tmp_path / "test_top.py").write_text("")
    wrong = _misplaced_tests(tmp_path)
    assert len(wrong) == 2 and any("test_nothing_here" in w for w in wrong) and any("test_top" in w for w in wrong)
