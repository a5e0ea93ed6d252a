"""SpecTemp ``auto`` mode: γ(k), centring and truncation chosen on the fit corpus itself, with no labels.

Candidates at each k of a geometric grid (8, 16, 32, 64, ... below d, and d): γ-whitening for every γ of the
grid (0..1 step 0.05, the oracle's grid) *centred* (the paper's map, y = (x − μ) W_k) and *uncentred* (the same
W_k, y = x W_k: the corpus mean is kept), the reference rule's own γ(k), and prefix truncation. Each candidate is
scored on m texts sampled from the corpus (their vectors come from the corpus pass) by the sum of two
label-free nDCG@10s:

- inverse cloze (Lee et al., 2019): a text's first line or sentence (`pseudo_queries.py`) must retrieve its text
  among the m sampled texts — rewards maps that keep texts apart (it alone drifts to whitening);
- fidelity to the full-dimensional model: each sampled text's 10 nearest neighbours among the others under the
  unprojected embedding are its relevant documents — rewards maps that keep the model's own similarity (it alone
  drifts to PCA / the identity).

Scores are smoothed over neighbouring k (weights 1-2-1) before the argmax, and the reference γ is kept unless
another candidate beats it by more than ``tolerance``. The argmax gives the route (centred, uncentred, prefix) and
the score's γ; where the reference rule is informative (γ_ref(k) < 1, above the knee) the γ used is shrunk towards
the rule's, γ = (1 − w) γ_score + w γ_ref with ``rule_weight`` w = 0.5, because there the score's γ drifts towards
0 whenever inverse cloze saturates (BENCHMARKS.md, "SpecTemp auto mode"); where the rule saturates at whitening
(γ_ref(k) = 1, below the knee) the score's γ is used as it is. Between grid points the correction γ_auto − γ_ref is
interpolated linearly in log k; the route is the nearest grid point's.

Saturated pseudo-queries: when the unprojected model already retrieves the sampled texts from their first lines
almost perfectly (inverse-cloze nDCG@10 >= ``saturation``, 0.95 — typically a model fine-tuned on this very corpus),
inverse cloze can no longer tell the candidates apart and the summed score is fidelity alone, which drifts to PCA.
Auto then keeps the reference rule at every k (BENCHMARKS.md, "SpecTemp auto with the saturation check").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .pseudo_queries import check_pseudo_queries, paired_ndcg_from_scores, unit_rows
from .spectrum import SPECTRAL_EPS, Spectrum, tempered_scale

ORACLE_GRID = tuple(round(0.05 * i, 2) for i in range(21))  # 0, 0.05, ..., 1 (the paper's grid for the oracle γ*)

REFERENCE = "reference"
PREFIX = "prefix"
UNCENTRED = "u"  # label prefix of the uncentred candidates, e.g. "u0.25"
# Stored per-k route codes (DumpProjection ``routes``): centred spectral, uncentred spectral, prefix truncation.
ROUTE_CODES = {"centred": 0, "uncentred": 1, "prefix": 2}
MIN_GRID_K = 8
DEFAULT_TOLERANCE = 0.0
# The unprojected model's inverse-cloze nDCG@10 at or above which the pseudo-queries are saturated and auto keeps
# the reference rule (fine-tuned on the fit corpus: 0.98-0.99; the untrained all-MiniLM-L6-v2: 0.90-0.91).
DEFAULT_SATURATION = 0.95
# Weight of the reference rule's γ against the score's where the rule is below 1 (see the module docstring).
DEFAULT_RULE_WEIGHT = 0.5
# γ_ref(k) at or above this is the rule's saturation at whitening (below the knee): the score's γ is used there.
SATURATED_GAMMA = 1.0 - 1e-9
NEIGHBOURS = 10


def k_grid(d: int, smallest: int = MIN_GRID_K) -> np.ndarray:
    """Output dimensions 8, 16, 32, 64, ... below d, and d."""
    ks = {d}
    power = smallest
    while power < d:
        ks.add(power)
        power *= 2
    return np.array(sorted(ks), dtype=np.int64)


@dataclass(frozen=True)
class AutoSelection:
    """What the auto mode measured and chose.

    Attributes:
        ks: the output dimensions scored (ascending).
        candidates: labels: centred γ values ("0.25"), uncentred ones ("u0.25"), "reference" and "prefix".
        cloze: (len(ks), len(candidates)) mean inverse-cloze nDCG@10 of each candidate.
        fidelity: the same for the full-dimensional neighbours.
        scores: cloze + fidelity; smoothed: after 1-2-1 smoothing over neighbouring k.
        chosen: label chosen at each k of ``ks`` (the score's argmax; its γ before the shrink to the rule).
        gamma: (d,) γ_auto(k) for k = 1..d (the γ of the spectral map, after the shrink; kept where prefix is
            chosen).
        routes: (d,) route code per k (`ROUTE_CODES`: 0 centred, 1 uncentred, 2 prefix).
        reference_gamma: (d,) the reference rule's γ(k).
        num_queries: texts (and pseudo-queries) scored.
        rule_weight: weight of the rule's γ where the rule is below 1 (0: the score's γ alone).
        identity_cloze: the unprojected model's inverse-cloze nDCG@10 on the same pairs (None: not measured).
        saturation: identity_cloze at or above which the reference rule is kept at every k.
    """

    ks: np.ndarray
    candidates: list[str]
    cloze: np.ndarray
    fidelity: np.ndarray
    scores: np.ndarray
    smoothed: np.ndarray
    chosen: list[str]
    gamma: np.ndarray
    routes: np.ndarray
    reference_gamma: np.ndarray
    num_queries: int
    tolerance: float = DEFAULT_TOLERANCE
    rule_weight: float = DEFAULT_RULE_WEIGHT
    identity_cloze: float | None = None
    saturation: float = DEFAULT_SATURATION

    @property
    def saturated(self) -> bool:
        """Whether the pseudo-queries were too easy to choose by (the reference rule was kept at every k)."""
        return self.identity_cloze is not None and self.identity_cloze >= self.saturation

    def route_at(self, k: int) -> str:
        return {code: name for name, code in ROUTE_CODES.items()}[int(self.routes[k - 1])]

    def summary(self) -> dict[str, object]:
        """A JSON-able record for ``projection_info["auto"]``."""
        ref_col = self.candidates.index(REFERENCE)
        cols = [self.candidates.index(c) for c in self.chosen]
        return {
            "pseudo_queries": self.num_queries,
            "ks": [int(k) for k in self.ks],
            "chosen": list(self.chosen),
            "route": [self.route_at(int(k)) for k in self.ks],
            "gamma": [round(float(self.gamma[k - 1]), 4) for k in self.ks],
            "reference_gamma": [round(float(self.reference_gamma[k - 1]), 4) for k in self.ks],
            "score_chosen": [round(float(self.smoothed[i, c]), 4) for i, c in enumerate(cols)],
            "score_reference": [round(float(s), 4) for s in self.smoothed[:, ref_col]],
            "cloze_chosen": [round(float(self.cloze[i, c]), 4) for i, c in enumerate(cols)],
            "fidelity_chosen": [round(float(self.fidelity[i, c]), 4) for i, c in enumerate(cols)],
            "tolerance": self.tolerance,
            "rule_weight": self.rule_weight,
            "identity_cloze": None if self.identity_cloze is None else round(self.identity_cloze, 4),
            "saturation": self.saturation,
        }


def _label(gamma: float) -> str:
    return f"{gamma:.2f}"


def grid_gamma(label: str) -> float | None:
    """The γ of a grid candidate ("0.25", "u0.25"); None for "reference" and "prefix"."""
    value = label.removeprefix(UNCENTRED)
    return float(value) if value[:1].isdigit() else None


def _smooth(scores: np.ndarray) -> np.ndarray:
    """1-2-1 weighted mean over neighbouring rows (the first axis; edges: the rows that exist)."""
    if len(scores) < 2:
        return scores.copy()
    padded_sum = 2 * scores
    weights = np.full(len(scores), 2.0)
    padded_sum[1:] += scores[:-1]
    padded_sum[:-1] += scores[1:]
    weights[1:] += 1
    weights[:-1] += 1
    return padded_sum / weights.reshape(-1, *[1] * (scores.ndim - 1))


def neighbour_labels(documents: np.ndarray, count: int = NEIGHBOURS) -> np.ndarray:
    """(m, count) indices of each row's nearest other rows by cosine (the full-dimensional model's neighbours)."""
    d = unit_rows(documents)
    scores = d @ d.T
    scores.fill_diagonal_(-torch.inf)  # a row is not its own neighbour
    return torch.topk(scores, min(count, len(documents) - 1), dim=1).indices.numpy()


def neighbour_ndcg_from_scores(scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Per-row nDCG@10 (float64, binary relevance) of an (m × m) score matrix with −inf on its diagonal (a row
    never ranks itself) against the (m, c) relevant row indices ``labels``."""
    cut = min(10, scores.shape[0] - 1)
    top = torch.topk(scores, cut, dim=1).indices
    relevant = (top[:, :, None] == labels[:, None, :]).any(dim=2)
    discounts = 1.0 / torch.log2(torch.arange(2, cut + 2, dtype=torch.float64))
    return (relevant.double() * discounts).sum(dim=1) / discounts[: labels.shape[1]].sum()


def candidate_labels(grid: Sequence[float], prefix: bool = True, uncentred: bool = True) -> list[str]:
    labels = [_label(float(g)) for g in grid]
    if uncentred:
        labels += [UNCENTRED + _label(float(g)) for g in grid]
    return labels + [REFERENCE] + ([PREFIX] if prefix else [])


def score_candidates(spectrum: Spectrum, queries: np.ndarray, documents: np.ndarray, ks: np.ndarray,
                     reference_gamma: np.ndarray, labels: list[str],
                     eps: float = SPECTRAL_EPS) -> tuple[np.ndarray, np.ndarray]:
    """Per-text inverse-cloze and fidelity nDCG@10 of every candidate at every k: two (len(ks), len(labels), m)
    arrays.

    Each candidate costs one (2m × m) product in float32: the pseudo-queries and the texts against the texts,
    which gives the cloze rank of each positive and each text's 10 nearest others at once (the same numbers as
    scoring each candidate's vectors one nDCG@10 at a time, in one pass).
    """
    m = len(queries)
    cloze = np.zeros((len(ks), len(labels), m))
    fidelity = np.zeros((len(ks), len(labels), m))
    neighbours = torch.from_numpy(neighbour_labels(documents))
    both = {False: torch.from_numpy(np.concatenate([queries - spectrum.mean, documents - spectrum.mean])),
            True: torch.from_numpy(np.concatenate([queries, documents]))}
    eigenvalues = np.asarray(spectrum.eigenvalues, dtype=np.float64)
    with torch.no_grad():
        for row, k in enumerate(ks):
            k = int(k)
            basis = torch.from_numpy(np.ascontiguousarray(spectrum.eigenvectors[:, :k], dtype=np.float64))
            rotated = {keep: both[keep] @ basis for keep in (False, True)}
            for col, label in enumerate(labels):
                if label == PREFIX:
                    vectors = both[True][:, :k].float()
                else:
                    keep_mean = label.startswith(UNCENTRED)
                    gamma = float(reference_gamma[k - 1]) if label == REFERENCE else grid_gamma(label)
                    scale = torch.from_numpy(tempered_scale(eigenvalues[:k], gamma, eps))
                    vectors = (rotated[keep_mean] * scale).float()
                cloze[row, col], fidelity[row, col] = _pair_and_neighbour_ndcg(vectors, m, neighbours)
    return cloze, fidelity


def _pair_and_neighbour_ndcg(vectors: torch.Tensor, m: int, neighbours: torch.Tensor
                             ) -> tuple[np.ndarray, np.ndarray]:
    """Per-query inverse-cloze nDCG@10 (rows :m are the queries of rows m: ) and per-text fidelity nDCG@10, from
    one product of the unit rows against the texts."""
    unit = vectors / vectors.norm(dim=1, keepdim=True).clamp_min(1e-12)
    scores = unit @ unit[m:].T  # (2m, m): queries then texts, against the texts
    text_scores = scores[m:]
    text_scores.fill_diagonal_(-torch.inf)
    return (paired_ndcg_from_scores(scores[:m]).numpy(), neighbour_ndcg_from_scores(text_scores, neighbours).numpy())


def _route(label: str) -> int:
    if label == PREFIX:
        return ROUTE_CODES["prefix"]
    return ROUTE_CODES["uncentred" if label.startswith(UNCENTRED) else "centred"]


def select_auto(spectrum: Spectrum, queries: np.ndarray, documents: np.ndarray, reference_gamma: np.ndarray,
                grid: Sequence[float] = ORACLE_GRID, prefix: bool = True, uncentred: bool = True,
                tolerance: float = DEFAULT_TOLERANCE, ks: Sequence[int] | None = None,
                eps: float = SPECTRAL_EPS, rule_weight: float = DEFAULT_RULE_WEIGHT,
                saturation: float = DEFAULT_SATURATION) -> AutoSelection:
    """Choose γ(k) and the route (centred, uncentred, prefix) for every k from pseudo-query vectors and their texts.

    ``queries`` and ``documents`` are the unit-length pooled vectors of the pseudo-queries and of their texts
    (row i of each is a pair). ``grid`` may be empty: with ``prefix=False`` the result is the reference rule.
    ``saturation`` above 1 never keeps the rule for saturated pseudo-queries.
    """
    d = spectrum.dim
    reference_gamma = np.asarray(reference_gamma, dtype=np.float64)
    if reference_gamma.shape != (d,):
        raise ValueError(f"reference_gamma must hold γ(k) for k = 1..{d}; got shape {reference_gamma.shape}.")
    if queries.shape != documents.shape or queries.ndim != 2 or queries.shape[1] != d:
        raise ValueError(f"queries and documents must both be (m, {d}); got {queries.shape} and {documents.shape}.")
    check_pseudo_queries(len(queries))
    ks = k_grid(d) if ks is None else np.array(sorted({int(k) for k in ks}), dtype=np.int64)
    labels = candidate_labels(grid, prefix, uncentred and len(grid) > 0)
    cloze, fidelity = score_candidates(spectrum, queries, documents, ks, reference_gamma, labels, eps)
    identity = paired_ndcg_from_scores(unit_rows(queries) @ unit_rows(documents).T)
    return choose(ks, labels, cloze.mean(axis=2), fidelity.mean(axis=2), reference_gamma, tolerance, len(queries),
                  rule_weight=rule_weight, identity_cloze=float(identity.mean()), saturation=saturation)


def choose(ks: np.ndarray, labels: list[str], cloze: np.ndarray, fidelity: np.ndarray, reference_gamma: np.ndarray,
           tolerance: float = DEFAULT_TOLERANCE, num_queries: int = 0,
           weights: tuple[float, float] = (1.0, 1.0), rule_weight: float = DEFAULT_RULE_WEIGHT,
           identity_cloze: float | None = None, saturation: float = DEFAULT_SATURATION) -> AutoSelection:
    """The choice from candidate scores (``select_auto``'s second half; ``weights`` of cloze and fidelity, other
    ``rule_weight`` values and subsets of ``labels`` with their score columns serve the benchmark's ablations).

    With ``identity_cloze`` (the unprojected model's inverse cloze) at or above ``saturation`` the reference rule is
    kept at every k."""
    if not 0.0 <= rule_weight <= 1.0:
        raise ValueError(f"rule_weight must be between 0 and 1; got {rule_weight!r}.")
    d = len(reference_gamma)
    scores = weights[0] * cloze + weights[1] * fidelity
    smoothed = _smooth(scores)
    ref_col = labels.index(REFERENCE)
    saturated = identity_cloze is not None and identity_cloze >= saturation
    chosen = []
    for row in smoothed:
        best = int(np.argmax(row))  # first maximum: the smallest γ among ties, centred before uncentred
        chosen.append(labels[best] if row[best] > row[ref_col] + tolerance and not saturated else REFERENCE)
    # The correction to the reference rule at each grid k (shrunk where the rule is informative), interpolated
    # over log k.
    delta = np.array([0.0 if grid_gamma(c) is None else
                      (grid_gamma(c) - reference_gamma[k - 1])
                      * (1.0 if reference_gamma[k - 1] >= SATURATED_GAMMA else 1.0 - rule_weight)
                      for c, k in zip(chosen, ks, strict=True)])
    all_k = np.arange(1, d + 1)
    gamma = np.clip(reference_gamma + np.interp(np.log(all_k), np.log(ks), delta), 0.0, 1.0)
    nearest = np.abs(np.log(all_k)[:, None] - np.log(ks)[None, :]).argmin(axis=1)
    routes = np.array([_route(chosen[i]) for i in nearest], dtype=np.int64)
    return AutoSelection(ks=ks, candidates=labels, cloze=cloze, fidelity=fidelity, scores=scores, smoothed=smoothed,
                         chosen=chosen, gamma=gamma, routes=routes, reference_gamma=reference_gamma,
                         num_queries=num_queries, tolerance=tolerance, rule_weight=rule_weight,
                         identity_cloze=identity_cloze, saturation=saturation)

