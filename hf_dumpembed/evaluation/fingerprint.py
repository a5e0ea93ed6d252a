"""Content addresses of evaluation data: hashes of the files themselves (a manifest is never trusted) and of the
texts actually encoded, so that a cached score or encoding is only reused for the very same data."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .._utils.hashing import files_sha256
from ..data.beir import CORPUS_FILE, QUERIES_FILE, BeirData


def beir_files_sha256(folder: str | Path, split: str) -> str:
    """sha256 over the names and sha256s of the data files a BEIR folder's ``split`` is read from."""
    return files_sha256(folder, [CORPUS_FILE, QUERIES_FILE, f"qrels/{split}.tsv"])


def beir_data_sha256(data: BeirData) -> str:
    """sha256 of what is encoded and scored: every query and document (id, title, text) and the judgements."""
    digest = hashlib.sha256()
    for part in (data.queries, data.corpus, data.qrels):
        digest.update(json.dumps(part, sort_keys=True, ensure_ascii=False).encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()
