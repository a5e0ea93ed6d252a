"""Builders of the real-text retrieval collections (BEIR-style folders) used for evaluation and training.

Each builder reads a local or ``apt-get download``-able source, is deterministic, and writes ``corpus.jsonl``,
``queries.jsonl``, ``qrels/<split>.tsv`` and a ``manifest.json`` (source, counts, sha256 of every file).
``catalog`` names them all (imports nothing); the builders load on first use.
"""

from __future__ import annotations

from ..._utils.lazy import lazy_attributes
from .catalog import (
    BUILDER_NAMES,
    COLLECTION,
    COLLECTION_NAMES,
    COLLECTIONS,
    EVAL_COLLECTIONS,
    HELD_OUT,
    TRAIN_COLLECTION,
    Collection,
)

_LAZY = {"BUILDERS": "registry", "DatasetSummary": "manifest", "build_datasets": "registry"}
__all__ = ["BUILDER_NAMES", "COLLECTION", "COLLECTIONS", "COLLECTION_NAMES", "EVAL_COLLECTIONS", "HELD_OUT",
           "TRAIN_COLLECTION", "Collection", *_LAZY]
__getattr__ = lazy_attributes(__name__, _LAZY)
