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
