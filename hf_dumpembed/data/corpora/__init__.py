"""Builders of the real-text retrieval collections (BEIR-style folders) used for evaluation and training.

Each builder reads a local or ``apt-get download``-able source, is deterministic, and writes ``corpus.jsonl``,
``queries.jsonl``, ``qrels/<split>.tsv`` and a ``manifest.json`` (source, counts, sha256 of every file).
"""

from .registry import BUILDERS, DatasetSummary, build_datasets

__all__ = ["BUILDERS", "DatasetSummary", "build_datasets"]
