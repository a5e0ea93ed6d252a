"""How public artefacts (config.json, the card, training/ side files) name local data and models: by a relative
path or a name, never by an absolute path of the author's machine (Hub ids and ``embedded:*`` names are kept)."""

from __future__ import annotations

import os
from pathlib import Path


def public_path(path: str | Path | None) -> str | None:
    """``path`` relative to the working directory when it lies inside it, else its last component; Hub ids,
    ``embedded:*`` names and relative paths are returned unchanged."""
    if path is None:
        return None
    text = str(path)
    expanded = Path(os.path.expanduser(text))
    if not expanded.is_absolute():
        return text
    try:
        return expanded.resolve().relative_to(Path.cwd().resolve()).as_posix() or "."
    except ValueError:
        return expanded.name or text


def private_prefixes(folder: Path | None = None) -> list[str]:
    """Absolute paths of this machine that must not appear in a published file: the home folder, the working
    directory and the folder's parent (each unless it is the filesystem root)."""
    candidates = [Path.home(), Path.cwd()]
    if folder is not None:
        candidates.append(Path(folder).resolve().parent)
    out = []
    for candidate in candidates:
        text = str(candidate.resolve()).rstrip("/")
        if len(Path(text).parts) >= 2 and text not in out:
            out.append(text)
    return out
