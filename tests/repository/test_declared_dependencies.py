"""Every distribution the package imports is declared in pyproject.toml (a dependency or an optional extra).

Run alone: ``python -m pytest tests/repository/test_declared_dependencies.py`` (reads source files with ``ast`` and the
installed distributions' metadata; imports nothing of the package).

A module that is imported but not installed here is looked up under its own name (``onnx_ir`` -> ``onnx-ir``).
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from packaging.requirements import Requirement

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, packaged
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hf_dumpembed"


def _normalise(name: str) -> str:
    """PEP 503: runs of '-', '_' and '.' become one '-', lower case."""
    return re.sub(r"[-_.]+", "-", name).lower()


@lru_cache(maxsize=1)
def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def declared_distributions() -> set[str]:
    """The normalised names in ``[project].dependencies`` and every ``[project.optional-dependencies]`` extra."""
    project = _pyproject()["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    return {_normalise(Requirement(r).name) for r in requirements}


@lru_cache(maxsize=1)
def imported_modules() -> dict[str, tuple[str, ...]]:
    """Top-level module name -> the package files importing it (absolute imports; stdlib and self left out)."""
    own = _normalise(_pyproject()["project"]["name"])
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or _normalise(top) == own:
                    continue
                found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return {module: tuple(sorted(files)) for module, files in sorted(found.items())}


def undeclared(declared: set[str]) -> dict[str, str]:
    """Module -> why: each imported module none of whose providing distributions is in ``declared``."""
    providers = md.packages_distributions()
    missing = {}
    for module, files in imported_modules().items():
        dists = {_normalise(d) for d in providers.get(module, [module])}
        if not dists & declared:
            missing[module] = f"imported by {', '.join(files)}; provided by {sorted(dists)}"
    return missing


def test_every_imported_distribution_is_declared():
    missing = undeclared(declared_distributions())
    assert not missing, "Imported but not declared in pyproject.toml:\n" + "\n".join(
        f"  {module}: {why}" for module, why in missing.items()
    )


def test_every_directly_imported_declared_dependency_is_load_bearing():
    """Dropping any one declared distribution that the package imports makes the check fail (so the walk sees the
    third-party imports: an empty walk would pass the check above vacuously)."""
    providers = md.packages_distributions()
    declared = declared_distributions()
    used = {_normalise(d) for module in imported_modules() for d in providers.get(module, [module])} & declared
    assert used
    for name in sorted(used):
        assert undeclared(declared - {name}), f"removing {name} from pyproject.toml went unnoticed"
