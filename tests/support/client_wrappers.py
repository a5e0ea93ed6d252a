"""Support of the client-wrapper tests (tests/export/test_fastembed_prompts.py, test_lancedb_prompts.py): what a
wrapper module imports, and a script run in its client's own environment (the one tests/repository/test_clients_doc.py
builds for the client's docs/clients.md section) with the checkout on PYTHONPATH and none of hf_dumpembed's
dependencies installed."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.repository.test_clients_doc import CLIENTS, DOCUMENTS, QUERIES, client_python

ROOT = Path(__file__).resolve().parents[2]
# what importing a wrapper loads of the package besides itself: none of these may import a dependency
LIGHT_MODULES = ("hf_dumpembed/__init__.py", "hf_dumpembed/_utils/__init__.py", "hf_dumpembed/_utils/lazy.py",
                 "hf_dumpembed/export/__init__.py", "hf_dumpembed/export/artefacts.py")


def imports(path: Path) -> set[str]:
    """Every module ``path`` imports (a relative import as ``.name``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            found.add("." * node.level + (node.module or ""))
    return found


def third_party(path: Path) -> set[str]:
    """The top-level modules outside the standard library and the package that ``path`` imports."""
    return {name.split(".")[0] for name in imports(path) if not name.startswith(".")} - set(sys.stdlib_module_names)


def assert_imports_only(wrapper: str, client: str) -> None:
    """hf_dumpembed/export/``wrapper``.py imports ``client``, the light artefacts module and the standard library."""
    path = ROOT / "hf_dumpembed" / "export" / f"{wrapper}.py"
    assert third_party(path) == {client}, third_party(path)
    assert {name for name in imports(path) if name.startswith(".")} <= {".artefacts"}
    for light in LIGHT_MODULES:
        assert not third_party(ROOT / light), (light, third_party(ROOT / light))


def run_in_client_env(heading: str, script: str, args: list[str], work: Path) -> subprocess.CompletedProcess:
    """``script`` run in the environment of ``heading``'s client with ``args``, then ``work`` and the doc test's
    texts (json ``[queries, documents]``), in ``work``; fails the test when it fails."""
    python = client_python(heading, CLIENTS[heading][1])
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", DO_NOT_TRACK="1")
    result = subprocess.run([str(python), "-c", script, *args, str(work), json.dumps([QUERIES, DOCUMENTS])],
                            capture_output=True, text=True, env=env, cwd=work, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    return result
