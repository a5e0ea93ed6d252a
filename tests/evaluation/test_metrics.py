"""retrieval_metrics on cached embeddings: hand-computed values and bad inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hf_dumpembed.evaluation import retrieval_metrics

QUERIES = np.array([[1.0, 0.0], [0.0, 1.0]])
DOCS = np.array([[1.0, 0.1], [0.9, 0.5], [0.0, 1.0], [0.5, 0.5]])
DOC_IDS = ["d1", "d2", "d3", "d4"]


def test_hand_computed_scores() -> None:
    # Query a ranks d1 > d2 > d4 > d3 (cosine): its one relevant document d2 is 2nd.
    # Query b ranks d3 > d4 > d2 > d1: both relevant documents (d3, d4) come first.
    scores = retrieval_metrics(QUERIES, DOCS, ["a", "b"], DOC_IDS, {"a": {"d2": 1}, "b": {"d3": 1, "d4": 1}})
    assert scores["ndcg_at_10"] == pytest.approx((1 / math.log2(3) + 1.0) / 2, abs=1e-5)
    assert scores["recall_at_10"] == pytest.approx(1.0)
    assert scores["recall_at_1"] == pytest.approx((0 + 0.5) / 2)
    assert scores["mrr_at_10"] == pytest.approx((0.5 + 1.0) / 2)


def test_dot_differs_from_cosine_on_unnormalised_vectors() -> None:
    docs = np.array([[10.0, 0.0], [0.9, 0.1]])
    qrels = {"a": {"d2": 1}}
    cosine = retrieval_metrics([[0.9, 0.1]], docs, ["a"], ["d1", "d2"], qrels)
    dot = retrieval_metrics([[0.9, 0.1]], docs, ["a"], ["d1", "d2"], qrels, similarity="dot")
    assert cosine["mrr_at_10"] == 1.0 and dot["mrr_at_10"] == 0.5


def test_queries_without_positives_are_left_out() -> None:
    scores = retrieval_metrics(QUERIES, DOCS, ["a", "b"], DOC_IDS, {"a": {"d1": 1}, "b": {"d1": 0}})
    assert scores["ndcg_at_10"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"qrels": {"a": {"nope": 1}}}, "'nope'.*not among document_ids"),
        ({"qrels": {"zz": {"d1": 1}}}, "'zz' is not among query_ids"),
        ({"qrels": {"a": {"d1": 0}}}, "no query with a positive"),
        ({"query_ids": ["a"]}, "must match one to one"),
        ({"similarity": "euclid"}, "similarity must be"),
    ],
)
def test_bad_inputs(kwargs: dict, message: str) -> None:
    arguments = {
        "query_embeddings": QUERIES, "document_embeddings": DOCS, "query_ids": ["a", "b"],
        "document_ids": DOC_IDS, "qrels": {"a": {"d1": 1}},
    }
    with pytest.raises(ValueError, match=message):
        retrieval_metrics(**{**arguments, **kwargs})
