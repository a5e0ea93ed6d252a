"""Retrieval scores from precomputed embeddings, with mteb's own metric code (pytrec_eval + mteb's MRR).

For benchmarks that encode once and score many variants (projections, truncations): the ranking is exact
(brute force over all documents), the top ``max(k_values)`` documents per query go to
``mteb._evaluators.retrieval_metrics.calculate_retrieval_scores`` and the keys come out as mteb writes them
(``ndcg_at_10``, ``recall_at_10``, ``mrr_at_10``, ``map_at_10``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import torch

from ..data.beir import unknown_judgement

# mteb's AbsTaskRetrieval.k_values
K_VALUES = (1, 3, 5, 10, 20, 100, 1000)


def _as_matrix(name: str, vectors: object) -> torch.Tensor:
    matrix = torch.as_tensor(np.asarray(vectors), dtype=torch.float32)
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n, dim); got shape {tuple(matrix.shape)}.")
    return matrix


def retrieval_metrics(
    query_embeddings: object,
    document_embeddings: object,
    query_ids: Sequence[str],
    document_ids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
    similarity: Literal["cosine", "dot"] = "cosine",
    k_values: Sequence[int] = K_VALUES,
    batch_size: int = 1024,
) -> dict[str, float]:
    """nDCG/recall/MRR/MAP/precision@k of ranking ``document_embeddings`` for each query, as mteb scores them.

    ``qrels`` maps query id -> document id -> relevance; queries without a positive judgement are left out
    (as mteb does), and every judged query and document must be among the given ids.
    """
    queries = _as_matrix("query_embeddings", query_embeddings)
    documents = _as_matrix("document_embeddings", document_embeddings)
    if queries.shape[0] != len(query_ids) or documents.shape[0] != len(document_ids):
        raise ValueError(
            f"got {queries.shape[0]} query vectors for {len(query_ids)} ids and {documents.shape[0]} document "
            f"vectors for {len(document_ids)} ids; they must match one to one."
        )
    if queries.shape[1] != documents.shape[1]:
        raise ValueError(f"query dim {queries.shape[1]} != document dim {documents.shape[1]}.")
    if similarity not in ("cosine", "dot"):
        raise ValueError(f"similarity must be 'cosine' or 'dot'; got {similarity!r}.")
    if len(set(document_ids)) != len(document_ids):
        raise ValueError("document_ids has duplicates.")
    query_ids, document_ids = [str(q) for q in query_ids], [str(d) for d in document_ids]
    judged = {
        str(q): {str(d): int(s) for d, s in docs.items()}
        for q, docs in qrels.items()
        if any(int(s) > 0 for s in docs.values())
    }
    if not judged:
        raise ValueError("qrels has no query with a positive judgement.")
    unknown = unknown_judgement(judged, set(query_ids), set(document_ids))
    if unknown and unknown[1] is None:
        raise ValueError(f"qrels query id {unknown[0]!r} is not among query_ids.")
    if unknown:
        raise ValueError(f"qrels document id {unknown[1]!r} (query {unknown[0]!r}) is not among document_ids.")
    results = top_k_results(queries, documents, query_ids, document_ids, min(max(k_values), len(document_ids)),
                            similarity=similarity, only=judged, batch_size=batch_size)
    return metrics_from_results(results, judged, k_values)


def top_k_results(
    queries: torch.Tensor,
    documents: torch.Tensor,
    query_ids: Sequence[str],
    document_ids: Sequence[str],
    top: int,
    similarity: Literal["cosine", "dot"] = "cosine",
    only: Mapping[str, object] | None = None,
    batch_size: int = 1024,
) -> dict[str, dict[str, float]]:
    """query id -> {document id: score} for the ``top`` best documents (exact brute force; torch only, no mteb).

    ``only`` restricts the queries ranked (e.g. to the judged ones). The result is what mteb's metric code scores,
    and is small enough to store when the scoring happens elsewhere (the nDCG@k of a ranking needs only its top k).
    """
    if similarity == "cosine":
        queries = torch.nn.functional.normalize(queries, dim=-1)
        documents = torch.nn.functional.normalize(documents, dim=-1)
    rows = [i for i, q in enumerate(query_ids) if only is None or q in only]
    results: dict[str, dict[str, float]] = {}
    for start in range(0, len(rows), batch_size):
        chunk = rows[start : start + batch_size]
        scores = queries[chunk] @ documents.T
        values, indices = scores.topk(top, dim=1)
        for row, vals, idx in zip(chunk, values.tolist(), indices.tolist(), strict=True):
            results[query_ids[row]] = {document_ids[j]: float(v) for v, j in zip(vals, idx, strict=True)}
    return results


def metrics_from_results(
    results: Mapping[str, Mapping[str, float]], judged: Mapping[str, Mapping[str, int]], k_values: Sequence[int]
) -> dict[str, float]:
    """mteb's retrieval scores of a ranking (query id -> {document id: score}) against positive judgements."""
    # Private on purpose: mteb 2.x has no public scorer of a given ranking (AbsTaskRetrieval calls this one itself).
    from mteb._evaluators.retrieval_metrics import calculate_retrieval_scores, make_score_dict

    evaluation = calculate_retrieval_scores(dict(results), dict(judged), list(k_values))
    scores = make_score_dict(
        ndcg=evaluation.ndcg,
        _map=evaluation.map,
        recall=evaluation.recall,
        precision=evaluation.precision,
        mrr=evaluation.mrr,
        naucs=evaluation.naucs,
        naucs_mrr=evaluation.naucs_mrr,
        hit_rate=evaluation.hit_rate,
        task_scores={},
    )
    # nAUC (abstention) scores need many queries to mean anything; they stay in full mteb runs only.
    return {
        key: float(value)
        for key, value in scores.items()
        if isinstance(value, (int, float)) and not key.startswith("nauc_")
    }
