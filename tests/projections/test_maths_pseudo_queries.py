"""Inverse-cloze pseudo-queries: the first-segment rule, a seeded sample that never meets its own text, nDCG@10 equal
to mteb's."""

from __future__ import annotations

import numpy as np
import pytest

from hf_dumpembed.evaluation import retrieval_metrics
from hf_dumpembed.projections.maths.pseudo_queries import build_pseudo_queries, first_segment
from tests.support.ranking_oracles import paired_ndcg_at_10


def test_first_segment_rules() -> None:
    assert first_segment("def parse(text):\n    return text.split()") == "def parse(text):"
    assert first_segment("Open the file first. Then read each line.") == "Open the file first."
    assert first_segment("One sentence only.") is None  # nothing left to be the document
    assert first_segment("{\n  x = 1\n}") is None  # too short to say anything
    long = " ".join(f"w{i}" for i in range(100)) + ". Rest."
    assert len(first_segment(long).split()) == 48


def test_pseudo_queries_are_deterministic_and_never_meet_their_own_text() -> None:
    base = [f"def function_{i}(x):\n    return x + {i}" for i in range(60)]
    texts = base + base[:10] + ["def function_0(x):\n    return 'other body'"] + ["too short"]
    first = build_pseudo_queries(texts, max_pairs=25, seed=3)
    again = build_pseudo_queries(texts, max_pairs=25, seed=3)
    assert np.array_equal(first.indices, again.indices) and first.queries == again.queries
    assert len(first) == 25 and first.candidates == 60  # 10 copies, 1 repeated query and 1 short text left out
    chosen = [texts[i] for i in first.indices]
    assert len(set(chosen)) == len(chosen) and len(set(first.queries)) == len(first.queries)
    assert all(q == first_segment(texts[i]) for q, i in zip(first.queries, first.indices, strict=True))
    assert list(first.indices) == sorted(first.indices)
    everything = build_pseudo_queries(texts, max_pairs=1000)
    assert len(everything) == 60 and max(everything.indices) < 60  # the copies (indices ≥ 60) never appear
    with pytest.raises(ValueError, match="max_pairs"):
        build_pseudo_queries(texts, max_pairs=0)


def test_paired_ndcg_equals_mteb_metric() -> None:
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((40, 12))
    queries = docs + 1.2 * rng.standard_normal((40, 12))
    ids = [f"d{i}" for i in range(40)]
    expected = retrieval_metrics(queries, docs, [f"q{i}" for i in range(40)], ids,
                                 {f"q{i}": {f"d{i}": 1} for i in range(40)}, k_values=(1, 3, 5, 10))["ndcg_at_10"]
    assert paired_ndcg_at_10(queries, docs).mean() == pytest.approx(expected, abs=1e-5)
