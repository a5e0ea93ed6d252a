"""RELIABILITY.md names only what exists: every repository path it cites, every test it lists.

Fails on main: it cited `hf_dumpembed/atomic.py`, `folders.py`, `public_paths.py`, `model_folder.py` and
`text_input.py`, which had moved.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "RELIABILITY.md").read_text(encoding="utf-8")


def test_every_path_it_names_exists() -> None:
    paths = set(re.findall(r"`((?:hf_dumpembed|tests|scripts)/[\w./-]+)`", DOC))
    assert paths, "RELIABILITY.md names no path: the pattern is out of date"
    missing = sorted(path for path in paths if not (ROOT / path).exists())
    assert not missing, f"RELIABILITY.md names paths that do not exist: {missing}"


def test_every_test_it_lists_exists() -> None:
    tests = ROOT / "tests"
    defined = {match for file in tests.rglob("test_*.py")
               for match in re.findall(r"^def (test_\w+)", file.read_text(encoding="utf-8"), re.MULTILINE)}
    files = {file.relative_to(tests).as_posix() for file in tests.rglob("test_*.py")}
    cited = re.findall(r"`(?:tests/([\w/]+/test_\w+\.py)::)?(test_[\w*]+)`", DOC)
    assert cited
    missing_files = sorted({file for file, _ in cited if file and file not in files})
    missing = sorted({name for _, name in cited if not fnmatch.filter(defined, name)})
    assert not missing_files and not missing, f"RELIABILITY.md lists unknown tests: {missing_files + missing}"
