"""The per-query nDCG@10s that SpecTemp's auto mode scores in one fused pass, computed one at a time as the tests'
reference (the package only needs the fused scorer, `auto_selection.score_candidates`)."""

from __future__ import annotations

import numpy as np
import torch

from hf_dumpembed.projections.maths.auto_selection import neighbour_ndcg_from_scores
from hf_dumpembed.projections.maths.pseudo_queries import paired_ndcg_from_scores, unit_rows


def paired_ndcg_at_10(queries: np.ndarray, documents: np.ndarray) -> np.ndarray:
    """Per-query nDCG@10 when row i of ``documents`` is the only relevant document of query i (cosine ranking
    over all rows; ties count against the positive). Equals mteb's nDCG@10 for one relevant document."""
    return paired_ndcg_from_scores(unit_rows(queries) @ unit_rows(documents).T).numpy()


def fidelity_ndcg_at_10(documents: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per-row nDCG@10 (binary relevance) of ranking the other rows of ``documents`` against ``labels``."""
    unit = unit_rows(documents)
    scores = unit @ unit.T
    scores.fill_diagonal_(-float("inf"))
    return neighbour_ndcg_from_scores(scores, torch.from_numpy(labels)).numpy()
