"""The installed package and the repository's scripts stay apart: nothing under hf_dumpembed/ reads scripts/ (the
package works where only it is installed), and the scripts under scripts/ use only the package's public names and
its shared helpers (``hf_dumpembed._utils``: the one machine description, markdown table and console line that the
package's own reports use), never another private module or a ``_``-prefixed name.

Run alone: ``python -m pytest tests/repository/test_package_boundary.py`` (reads source files with ``ast``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hf_dumpembed"
SCRIPTS = ROOT / "scripts"
# Ways to run or import a file by its path.
LOADERS = {"spec_from_file_location", "module_from_spec", "exec_module", "SourceFileLoader", "runpy", "run_path"}
# A string that is a path into scripts/ (as code builds one), not prose telling a user which script to run.
SCRIPTS_PATH = re.compile(r"[./]*scripts(?:/[\w.*/-]*)?")
PRIVATE_NAME = re.compile(r"hf_dumpembed(?:\.\w+)*\._(?!utils\b)\w*")
SHARED_HELPERS = "_utils"  # the package's shared helpers, which scripts may use


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree`` (module, classes, functions)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _loader_names(node: ast.AST) -> list[str]:
    """The file-loading names ``node`` uses, looks up or imports."""
    if isinstance(node, ast.Name):
        names = [node.id]
    elif isinstance(node, ast.Attribute):
        names = [node.attr]
    elif isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        names = [node.module or "", *(alias.name for alias in node.names)]
    else:
        return []
    return [name for name in names if set(name.split(".")) & LOADERS]


def reads_scripts(source: str, name: str) -> list[str]:
    """Where ``source`` (a package module) loads a file by path or names a scripts/ path outside its docstrings."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        found += [(node.lineno, f"uses {loader}") for loader in _loader_names(node)]
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                and SCRIPTS_PATH.fullmatch(node.value.strip())):
            found.append((node.lineno, f"names the path {node.value!r}"))
    return [f"{name}:{line} {what}" for line, what in sorted(found)]


def _private(module: str) -> bool:
    """True when a dotted hf_dumpembed name has a ``_``-prefixed part (dunders such as ``__version__`` and the shared
    helpers ``_utils`` aside)."""
    parts = module.split(".")
    return parts[0] == "hf_dumpembed" and any(p.startswith("_") and not p.endswith("__") and p != SHARED_HELPERS
                                              for p in parts[1:])


def private_uses(source: str, name: str) -> list[str]:
    """Where ``source`` (a script) imports a private module or name of hf_dumpembed, or names one in a string."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"imports {a.name}") for a in node.names if _private(a.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("hf_dumpembed"):
            targets = [f"{node.module}.{alias.name}" for alias in node.names]
            found += [(node.lineno, f"imports {target}") for target in targets if _private(target)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and PRIVATE_NAME.search(node.value):
            found.append((node.lineno, f"names {PRIVATE_NAME.search(node.value).group(0)}"))
    return [f"{name}:{line} {what}" for line, what in sorted(found)]


def _sources(folder: Path) -> list[tuple[str, str]]:
    """(repository path, text) of every Python file under ``folder``."""
    return [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8")) for p in sorted(folder.rglob("*.py"))]


def test_the_package_never_reads_the_scripts_folder() -> None:
    found = [hit for name, source in _sources(PACKAGE) for hit in reads_scripts(source, name)]
    assert not found, ("hf_dumpembed/ reaches into scripts/ (the installed package has no scripts/; move what it "
                       "needs into the package, or make it a script's own command):\n" + "\n".join(found))


def test_scripts_use_only_the_public_names_of_the_package() -> None:
    found = [hit for name, source in _sources(SCRIPTS) for hit in private_uses(source, name)]
    assert not found, ("scripts use private names of hf_dumpembed (use a public module, a helper of "
                       "hf_dumpembed._utils, or scripts/bench/benchmarks.py):\n" + "\n".join(found))


OLD_REPORT = '''
"""Provenance may be cited here: scripts/bench/benchmarks.py renders BENCHMARKS.md."""
import importlib.util
from pathlib import Path

HELP = "a collection built by `python scripts/build_datasets.py` under --data-dir"

def _benchmarks_module():
    """The renderer, scripts/bench/benchmarks.py."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "benchmarks.py"
    spec = importlib.util.spec_from_file_location("benchmarks", path)
    return f"{path}/scripts/bench"
'''


def test_the_package_check_catches_a_load_by_path_and_a_built_path() -> None:
    """A load by path and a built scripts/ path are caught; docstrings and a help text naming a script are not."""
    found = reads_scripts(OLD_REPORT, "evaluate.py")
    assert found == ["evaluate.py:10 names the path 'scripts'", "evaluate.py:11 uses spec_from_file_location",
                     "evaluate.py:12 names the path '/scripts/bench'"], found
    assert reads_scripts("import runpy\nrunpy.run_path(p)\n", "x.py") == [
        "x.py:1 uses runpy", "x.py:2 uses run_path", "x.py:2 uses runpy"]


@pytest.mark.parametrize(("line", "caught"), [
    ("from hf_dumpembed._utils.machine import _gpu_name", True),
    ("import hf_dumpembed.model._internal", True),
    ("from hf_dumpembed.model.builder import _check", True),
    ("module = importlib.import_module('hf_dumpembed._utils.tables._width')", True),
    ("module = importlib.import_module('hf_dumpembed.model._internal')", True),
    ("from hf_dumpembed._utils.machine import machine_info", False),
    ("import hf_dumpembed._utils.console", False),
    ("from hf_dumpembed import _utils", False),
    ("module = importlib.import_module('hf_dumpembed._utils.tables')", False),
    ("from hf_dumpembed import __version__", False),
    ("from ._helpers import x", False),
])
def test_the_script_check_catches_private_names(line: str, caught: bool) -> None:
    assert bool(private_uses(line, "s.py")) is caught
