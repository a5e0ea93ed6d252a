"""SpecTemp ``auto`` mode: γ(k) chosen on the fit corpus itself, with pseudo-queries and no labels.

For k on a geometric grid (8, 12, 16, 24, 32, ... up to d, and d) every candidate map is scored by the mean
nDCG@10 of the pseudo-queries (`pseudo.py`): γ-whitening at each γ of the grid (0..1 step 0.05, the oracle's
grid), the reference rule's own γ(k), and prefix truncation (no centring, no rotation). Scores are smoothed
over neighbouring k (weights 1-2-1) before the argmax, and the reference γ is kept unless another candidate
beats it by more than ``tolerance``. Between grid points the correction γ_auto − γ_ref is interpolated
linearly in log k, so γ_auto(k) = γ_ref(k) wherever the pseudo-queries do not move it; prefix truncation is
chosen for the k whose nearest grid point chose it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .baselines import ORACLE_GRID
from .linear import EIGEN_EPS, tempered_matrix
from .pseudo import paired_ndcg_at_10
from .stats import Spectrum

REFERENCE = "reference"
PREFIX = "prefix"
MIN_GRID_K = 8
DEFAULT_TOLERANCE = 0.0
# Below this many pseudo-queries the scores are too noisy to choose from.
MIN_PSEUDO_QUERIES = 10


def check_pseudo_queries(count: int) -> None:
    """A clear error when there are too few pseudo-queries to choose from."""
    if count < MIN_PSEUDO_QUERIES:
        raise ValueError(
            f"only {count} pseudo-queries (distinct texts whose first line or sentence, of at least 8 letters or "
            f"digits, can be split from the rest); the auto mode needs at least {MIN_PSEUDO_QUERIES}. Fit on more "
            "(or longer) texts, or use --mode reference."
        )


def k_grid(d: int, smallest: int = MIN_GRID_K) -> np.ndarray:
    """Geometric output dimensions 8, 12, 16, 24, 32, 48, ... (×1.5, ×4/3 alternately) below d, and d."""
    ks = {d}
    power = smallest
    while power < d:
        ks.update(k for k in (power, power * 3 // 2) if k < d)
        power *= 2
    return np.array(sorted(k for k in ks if k >= 1), dtype=np.int64)


@dataclass(frozen=True)
class AutoSelection:
    """What the auto mode measured and chose.

    Attributes:
        ks: the output dimensions scored (ascending).
        candidates: candidate labels: the γ grid values, ``"reference"`` and (if allowed) ``"prefix"``.
        scores: (len(ks), len(candidates)) mean pseudo-query nDCG@10 of each candidate.
        smoothed: the same after 1-2-1 smoothing over neighbouring k.
        chosen: label chosen at each k of ``ks``.
        gamma: (d,) γ_auto(k) for k = 1..d (the γ of the spectral map; kept where prefix is chosen).
        prefix: (d,) True where prefix truncation is chosen.
        reference_gamma: (d,) the reference rule's γ(k).
        num_queries: pseudo-queries scored.
    """

    ks: np.ndarray
    candidates: list[str]
    scores: np.ndarray
    smoothed: np.ndarray
    chosen: list[str]
    gamma: np.ndarray
    prefix: np.ndarray
    reference_gamma: np.ndarray
    num_queries: int
    tolerance: float = DEFAULT_TOLERANCE
    reference_scores: np.ndarray = field(default=None, repr=False)

    def summary(self) -> dict[str, object]:
        """A JSON-able record for ``projection_info["auto"]``."""
        return {
            "pseudo_queries": self.num_queries,
            "ks": [int(k) for k in self.ks],
            "chosen": list(self.chosen),
            "gamma": [round(float(self.gamma[k - 1]), 4) for k in self.ks],
            "reference_gamma": [round(float(self.reference_gamma[k - 1]), 4) for k in self.ks],
            "score_chosen": [round(float(self.smoothed[i, self.candidates.index(c)]), 4)
                             for i, c in enumerate(self.chosen)],
            "score_reference": [round(float(s), 4) for s in self.smoothed[:, self.candidates.index(REFERENCE)]],
            "tolerance": self.tolerance,
        }


def _label(gamma: float) -> str:
    return f"{gamma:.2f}"


def _smooth(scores: np.ndarray) -> np.ndarray:
    """1-2-1 weighted mean over neighbouring rows (edges: the rows that exist)."""
    if len(scores) < 2:
        return scores.copy()
    padded_sum = 2 * scores
    weights = np.full(len(scores), 2.0)
    padded_sum[1:] += scores[:-1]
    padded_sum[:-1] += scores[1:]
    weights[1:] += 1
    weights[:-1] += 1
    return padded_sum / weights[:, None]


def score_candidates(spectrum: Spectrum, queries: np.ndarray, documents: np.ndarray, ks: np.ndarray,
                     reference_gamma: np.ndarray, grid: Sequence[float] = ORACLE_GRID, prefix: bool = True,
                     eps: float = EIGEN_EPS) -> tuple[list[str], np.ndarray]:
    """Mean pseudo-query nDCG@10 of every candidate at every k: (labels, (len(ks), len(labels)) scores)."""
    labels = [_label(float(g)) for g in grid] + [REFERENCE] + ([PREFIX] if prefix else [])
    scores = np.zeros((len(ks), len(labels)))
    q_centred = queries - spectrum.mean
    d_centred = documents - spectrum.mean
    for row, k in enumerate(ks):
        k = int(k)
        basis = spectrum.eigenvectors[:, :k]
        q_rot, d_rot = q_centred @ basis, d_centred @ basis
        for col, label in enumerate(labels):
            if label == PREFIX:
                scores[row, col] = paired_ndcg_at_10(queries[:, :k], documents[:, :k]).mean()
                continue
            gamma = float(reference_gamma[k - 1]) if label == REFERENCE else float(label)
            scale = tempered_matrix(np.eye(k), spectrum.eigenvalues, gamma, k, eps).diagonal()
            scores[row, col] = paired_ndcg_at_10(q_rot * scale, d_rot * scale).mean()
    return labels, scores


def select_auto(spectrum: Spectrum, queries: np.ndarray, documents: np.ndarray, reference_gamma: np.ndarray,
                grid: Sequence[float] = ORACLE_GRID, prefix: bool = True, tolerance: float = DEFAULT_TOLERANCE,
                ks: Sequence[int] | None = None, eps: float = EIGEN_EPS) -> AutoSelection:
    """Choose γ(k) (or prefix truncation) for every k from pseudo-query vectors and their positive documents.

    ``queries`` and ``documents`` are the unit-length pooled vectors of the pseudo-queries and of their texts
    (row i of each is a pair). ``grid`` may be empty: with ``prefix=False`` the result is the reference rule.
    """
    d = spectrum.dim
    reference_gamma = np.asarray(reference_gamma, dtype=np.float64)
    if reference_gamma.shape != (d,):
        raise ValueError(f"reference_gamma must hold γ(k) for k = 1..{d}; got shape {reference_gamma.shape}.")
    if queries.shape != documents.shape or queries.ndim != 2 or queries.shape[1] != d:
        raise ValueError(f"queries and documents must both be (m, {d}); got {queries.shape} and {documents.shape}.")
    check_pseudo_queries(len(queries))
    ks = k_grid(d) if ks is None else np.array(sorted({int(k) for k in ks}), dtype=np.int64)
    labels, scores = score_candidates(spectrum, queries, documents, ks, reference_gamma, grid, prefix, eps)
    smoothed = _smooth(scores)
    ref_col = labels.index(REFERENCE)
    chosen = []
    for row in smoothed:
        best = int(np.argmax(row))  # first maximum: the smallest γ among ties, before reference and prefix
        chosen.append(labels[best] if row[best] > row[ref_col] + tolerance else REFERENCE)
    # The correction to the reference rule at each grid k, interpolated over log k.
    delta = np.array([0.0 if c in (REFERENCE, PREFIX) else float(c) - reference_gamma[k - 1]
                      for c, k in zip(chosen, ks, strict=True)])
    all_k = np.arange(1, d + 1)
    gamma = np.clip(reference_gamma + np.interp(np.log(all_k), np.log(ks), delta), 0.0, 1.0)
    nearest = np.abs(np.log(all_k)[:, None] - np.log(ks)[None, :]).argmin(axis=1)
    is_prefix = np.array([chosen[i] == PREFIX for i in nearest])
    return AutoSelection(ks=ks, candidates=labels, scores=scores, smoothed=smoothed, chosen=chosen, gamma=gamma,
                         prefix=is_prefix, reference_gamma=reference_gamma, num_queries=len(queries),
                         tolerance=tolerance, reference_scores=scores[:, ref_col])
