"""Content hashes of files (provenance of data, fits and uploads)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

CHUNK_BYTES = 1 << 20


def update_with_file(digest: Any, path: str | Path) -> Any:
    """Feed a file's bytes to a ``hashlib`` digest in 1 MiB blocks; returns the digest."""
    with Path(path).open("rb") as handle:
        while block := handle.read(CHUNK_BYTES):
            digest.update(block)
    return digest


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks."""
    return update_with_file(hashlib.sha256(), path).hexdigest()


def files_sha256(folder: str | Path, relative_paths: list[str]) -> str:
    """sha256 over the names and sha256s of those of ``relative_paths`` that are files in ``folder`` (a content
    address of a set of files, independent of where the folder lies)."""
    folder = Path(folder)
    lines = [f"{name} {sha256_file(folder / name)}" for name in relative_paths if (folder / name).is_file()]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
