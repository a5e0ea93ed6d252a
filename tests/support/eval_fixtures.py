"""Shared fixtures of the evaluation tests: a tiny BEIR folder with known rankings and one mteb run on it."""

from __future__ import annotations

import math
from pathlib import Path

from hf_dumpembed.data.beir import write_beir

# Two documents. q1's text is d1's text and d1 is relevant: rank 1. q2's text is also d1's text but only d2 is
# relevant: with two documents d2 is necessarily rank 2, whatever the model (d1 scores cosine 1, the maximum).
KNOWN_NDCG_AT_10 = (1.0 + 1.0 / math.log2(3)) / 2
KNOWN_MRR_AT_10 = (1.0 + 0.5) / 2
MODEL_NAME = "test-org/tiny-dump"
REVISION = "0123456789abcdef0123456789abcdef01234567"


def write_known_task(folder: Path) -> Path:
    text_1 = "the quick brown fox jumps over the lazy dog"
    text_2 = "a completely different sentence about databases and indexes"
    return write_beir(
        folder,
        {"d1": {"title": "", "text": text_1}, "d2": {"title": "", "text": text_2}},
        {"q1": text_1, "q2": text_1},
        {"q1": {"d1": 1}, "q2": {"d2": 1}},
    )
