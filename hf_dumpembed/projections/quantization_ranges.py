"""Measure a fitted folder's quantization calibration on the fit corpus (stored as ``quantization.json``).

At each output dimension k the folder advertises, the corpus texts' final vectors — the pooled unit vectors
through the projection recomposed for k (as ``from_pretrained(..., projection_dim=k)`` recomposes it) and the L2
normalisation — give per dimension the int8 range and the binary threshold.

The int8 range is the per-dimension min/max (sentence-transformers' own rule) and the binary threshold is 0, the
sign: the choices `benchmarks.py quant-frontier` measured best (BENCHMARKS.md, "Quantized outputs"). The thresholds
are stored all the same, so the file's form does not depend on that choice.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..model.quantization import Calibration
from ..remote.modeling_dumpembed import DumpProjection
from .maths.pseudo_queries import paired_ndcg_from_scores

CALIBRATION_TEXTS = 10_000  # at most this many corpus texts (a seeded sample) are measured
INT8_PERCENTILE = 0.0  # int8 range: the INT8_PERCENTILE-th to (100 - INT8_PERCENTILE)-th percentile; 0 = min/max
BINARY_THRESHOLD = "zero"  # "zero" (sentence-transformers' signs) or the corpus "median" per dimension


def calibration_sample(num_texts: int, seed: int) -> np.ndarray:
    """Sorted corpus indices of the texts the calibration measures (all of them up to CALIBRATION_TEXTS)."""
    if num_texts <= CALIBRATION_TEXTS:
        return np.arange(num_texts, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(num_texts, size=CALIBRATION_TEXTS, replace=False))


def outputs_at(projection: DumpProjection, pooled: np.ndarray, k: int, normalize: bool = True) -> np.ndarray:
    """The folder's output vectors at dimension ``k`` for unit pooled vectors ``pooled`` (float32): the map recomposed
    for k, as a folder loaded with ``projection_dim=k`` applies it."""
    with torch.inference_mode():
        out = projection(torch.from_numpy(np.ascontiguousarray(pooled, dtype=np.float32)), k)
        if normalize:
            out = F.normalize(out, p=2, dim=-1)
    return out.numpy()


def int8_ranges(outputs: np.ndarray, percentile: float = INT8_PERCENTILE) -> np.ndarray:
    """(2, k) float32: per-dimension lower and upper bound of the int8 buckets."""
    if percentile == 0:
        return np.stack([outputs.min(axis=0), outputs.max(axis=0)]).astype(np.float32)
    return np.percentile(outputs, [percentile, 100 - percentile], axis=0).astype(np.float32)


def binary_threshold(outputs: np.ndarray, rule: str = BINARY_THRESHOLD) -> np.ndarray:
    """(k,) float32: a coordinate above it is a 1 bit."""
    if rule == "zero":
        return np.zeros(outputs.shape[1], dtype=np.float32)
    if rule == "median":
        return np.median(outputs, axis=0).astype(np.float32)
    raise ValueError(f"binary threshold rule must be 'median' or 'zero'; got {rule!r}.")


def calibrate(projection: DumpProjection, pooled: np.ndarray, dims: list[int], normalize: bool = True,
              info: dict[str, Any] | None = None) -> Calibration:
    """The calibration at each of ``dims`` from the unit pooled vectors ``pooled`` of the corpus sample."""
    if len(pooled) < 2:
        raise ValueError(f"quantization ranges need at least 2 corpus texts; got {len(pooled)}.")
    ranges, thresholds = {}, {}
    for k in sorted(set(dims)):
        outputs = outputs_at(projection, pooled, k, normalize)
        ranges[k] = int8_ranges(outputs)
        thresholds[k] = binary_threshold(outputs)
    statistic = "min/max" if INT8_PERCENTILE == 0 else f"{INT8_PERCENTILE:g}th-{100 - INT8_PERCENTILE:g}th percentile"
    described = {"int8_ranges": f"per-dimension {statistic} of the final output on the fit corpus",
                 "binary_threshold": f"per-dimension {BINARY_THRESHOLD} of the final output on the fit corpus"
                 if BINARY_THRESHOLD != "zero" else "0 (the sign)",
                 "int8_percentile": INT8_PERCENTILE, "binary_rule": BINARY_THRESHOLD, "num_texts": len(pooled)}
    return Calibration(ranges, thresholds, {**described, **(info or {})})


RESCORE_TOP = 100


def dequantize_int8(codes: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """int8 codes read back as values (each bucket's start, float64), as sentence-transformers' int8 rescoring
    and FAISS's SQ8 index read them."""
    steps = (ranges[1].astype(np.float64) - ranges[0]) / 255
    return (codes.astype(np.float64) + 128) * np.where(steps == 0, 1, steps) + ranges[0]


def _paired_ndcg(scores: np.ndarray, candidates: np.ndarray | None = None) -> float:
    """Mean nDCG@10 when query i's one relevant document is document i (`paired_ndcg_from_scores`: ties count
    against the positive); with ``candidates``, only a first stage's candidates are ranked (0 when the positive is
    not among them)."""
    scores = torch.from_numpy(np.asarray(scores, dtype=np.float64))
    if candidates is None:
        return float(paired_ndcg_from_scores(scores).mean())
    pool = torch.zeros(scores.shape, dtype=torch.bool)
    pool.scatter_(1, torch.from_numpy(candidates), True)
    gains = paired_ndcg_from_scores(scores.masked_fill(~pool, float("-inf")))
    return float(torch.where(pool.diagonal(), gains, torch.zeros_like(gains)).mean())


def pseudo_query_frontier(projection: DumpProjection, queries: np.ndarray, documents: np.ndarray,
                          calibration: Calibration, normalize: bool = True) -> dict[str, dict[str, float]]:
    """Label-free retrieval quality of each calibrated k at each precision: inverse-cloze nDCG@10 of the fit's
    pseudo-queries (a text's first line or sentence against all sampled texts), scored as a vector store would
    (int8: the fp32 query against the documents' dequantized codes; binary: Hamming; + rescore: the Hamming top
    100 re-scored by the fp32 query minus the threshold against the documents' bits)."""
    from sentence_transformers.util import quantize_embeddings

    frontier = {}
    for k in calibration.dims:
        ranges, threshold = calibration.at(k)
        q, d = outputs_at(projection, queries, k, normalize), outputs_at(projection, documents, k, normalize)
        int8 = dequantize_int8(quantize_embeddings(d, precision="int8", ranges=ranges), ranges)
        q_bits, d_bits = q > threshold, d > threshold
        hamming = (2.0 * q_bits - 1) @ (2.0 * d_bits - 1).T
        first = np.argsort(-hamming, axis=1, kind="stable")[:, :RESCORE_TOP]
        frontier[str(k)] = {
            "float32": _paired_ndcg(q @ d.T),
            "int8": _paired_ndcg(q @ int8.T),
            "binary": _paired_ndcg(hamming),
            "binary + rescore": _paired_ndcg((q - threshold) @ d_bits.T.astype(np.float64), first),
        }
    return frontier
