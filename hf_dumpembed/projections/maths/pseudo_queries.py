"""Self-supervised pseudo-queries from the fit corpus (inverse cloze), to score projections without labels.

A text's first segment (its first non-blank line when it has several lines, e.g. a function signature; else its
first sentence) is the query; the whole text, as the corpus pass already encoded it, is its one positive
document, and the other sampled texts are the negatives. This is the inverse cloze task of Lee et al. (2019,
"Latent Retrieval for Weakly Supervised Open Domain QA") with the sentence left in its context. Only the short
queries need encoding beyond the corpus pass; auto mode (`auto_selection.py`) scores its candidates on them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# A pseudo-query needs at least this many word characters; shorter first segments ("{", "#") say nothing.
MIN_QUERY_CHARS = 8
MAX_QUERY_WORDS = 48
DEFAULT_MAX_PAIRS = 1000
# Below this many pseudo-queries the scores are too noisy to choose from.
MIN_PSEUDO_QUERIES = 10


def first_segment(text: str) -> str | None:
    """The pseudo-query of ``text``: its first non-blank line (several lines) or first sentence (one line),
    cut to 48 words; None when that leaves nothing distinctive or nothing else of the text."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if len(lines) >= 2:
        segment = lines[0]
    else:
        parts = [part for part in SENTENCE_END.split(text.strip()) if part.strip()]
        if len(parts) < 2:
            return None
        segment = parts[0].strip()
    if len(re.findall(r"\w", segment)) < MIN_QUERY_CHARS:
        return None
    return " ".join(segment.split()[:MAX_QUERY_WORDS])


@dataclass(frozen=True)
class PseudoQueries:
    """Pseudo-query texts and the corpus indices of their positive documents (one each, all distinct)."""

    queries: list[str]
    indices: np.ndarray
    candidates: int

    def __len__(self) -> int:
        return len(self.queries)


def build_pseudo_queries(texts: list[str], max_pairs: int = DEFAULT_MAX_PAIRS, seed: int = 0) -> PseudoQueries:
    """A seeded sample of at most ``max_pairs`` (first segment, whole text) pairs, in corpus order.

    Duplicate texts and duplicate queries are kept once, so no query ever meets a copy of its own text among
    its negatives. ``candidates`` counts the texts that could give a pair.
    """
    if max_pairs < 1:
        raise ValueError(f"max_pairs must be >= 1; got {max_pairs}.")
    seen_texts: set[str] = set()
    seen_queries: set[str] = set()
    usable: list[tuple[int, str]] = []
    for index, text in enumerate(texts):
        query = first_segment(text)
        key = text.strip()
        if query is not None and key not in seen_texts and query not in seen_queries:
            seen_queries.add(query)
            usable.append((index, query))
        seen_texts.add(key)
    chosen = usable
    if len(usable) > max_pairs:
        keep = np.sort(np.random.default_rng(seed).choice(len(usable), size=max_pairs, replace=False))
        chosen = [usable[i] for i in keep]
    return PseudoQueries(queries=[q for _, q in chosen], indices=np.array([i for i, _ in chosen], dtype=np.int64),
                         candidates=len(usable))


def check_pseudo_queries(count: int) -> None:
    """A clear error when there are too few pseudo-queries to choose from."""
    if count < MIN_PSEUDO_QUERIES:
        raise ValueError(
            f"only {count} pseudo-queries (distinct texts whose first line or sentence, of at least 8 letters or "
            f"digits, can be split from the rest); the auto mode needs at least {MIN_PSEUDO_QUERIES}. Fit on more "
            "(or longer) texts, or use --mode reference."
        )


def unit_rows(x: np.ndarray) -> torch.Tensor:
    """Rows scaled to unit length, float32 (rankings only; twice as fast as float64)."""
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    return t / t.norm(dim=1, keepdim=True).clamp_min(1e-12)


def paired_ndcg_from_scores(scores: torch.Tensor) -> torch.Tensor:
    """Per-query nDCG@10 (float64) from an (m × m) score matrix whose diagonal holds each query's positive."""
    positive = scores.diagonal().clone()
    others = scores >= positive[:, None]
    others.fill_diagonal_(False)
    rank = others.sum(dim=1).double()  # 0-based rank of the positive
    return torch.where(rank < 10, 1.0 / torch.log2(rank + 2.0), torch.zeros((), dtype=torch.float64))
