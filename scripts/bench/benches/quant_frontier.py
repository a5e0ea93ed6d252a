"""Quantized outputs: nDCG@10 against bytes per vector, k × {fp32, int8, binary, binary + rescoring}, per method.

Same setting as the projection-quality and spectemp-auto benches (their cached embeddings are reused): the
embedded all-MiniLM-L6-v2 as a DumpEmbed K=0 mean-pooling folder; every map and every calibration is fitted on
data/StdlibCodeTrain (training text only) and evaluated on ManPages, PyFAQ and StdlibCode (test qrels, disjoint
from the fit text). Each set is encoded once; the projections (the fit's own `fit_spectral` / `Truncate.fit_dim`
DumpProjections, recomposed for each k as a folder loaded with projection_dim=k recomposes them) and the
quantization run over the cached vectors.

Methods: SpecTemp auto (`fit --method spectemp --mode auto`), PCA, prefix truncation (k < d) and the raw model
(k = d: the normalised pooled vector). Precisions, as sentence-transformers' `quantize_embeddings` and
`semantic_search_usearch` use them, with the calibration `fit` stores (hf_dumpembed.projections.quantization_ranges):

- fp32: cosine;
- int8: the documents as int8 codes with the stored ranges, scored against the fp32 query after dequantisation
  (as FAISS's SQ8 index and sentence-transformers' int8 rescoring do; the ablation also scores codes against
  codes, usearch's i8 "ip" without rescoring);
- binary: bits above the stored threshold, Hamming distance;
- binary + rescore: the Hamming top 100 re-scored by the fp32 query minus the threshold against the documents'
  bits (sentence-transformers' rescoring of embeddings shifted by the threshold; the index stays k/8 bytes);
- binary → fp32 docs: the Hamming top 100 re-ranked with the documents' fp32 vectors, fetched from disk.

Ties rank in corpus order, as a flat index returns them.

The calibration statistics are measured too (int8 range: min/max or percentiles; binary threshold: 0 or the
median), which is how `fit`'s defaults were chosen.

    python scripts/bench/benchmarks.py quant-frontier   # writes scripts/bench/results/quant-frontier.json
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from benchmarks import Table, finish_run, run_or_rerecord, say
from harness import Subparsers, bench_parser, load_recorded

from benches import projection_quality as quality
from benches.spectemp_auto import timed_encode
from hf_dumpembed.evaluation.metrics import metrics_from_results
from hf_dumpembed.model.quantization import bytes_per_vector
from hf_dumpembed.projections import quantization_ranges
from hf_dumpembed.projections.corpus import read_corpus
from hf_dumpembed.projections.fit import FitOptions
from hf_dumpembed.projections.maths.pseudo_queries import DEFAULT_MAX_PAIRS, build_pseudo_queries
from hf_dumpembed.projections.methods.base import PseudoSet
from hf_dumpembed.projections.methods.fixed import Truncate
from hf_dumpembed.projections.registry import fit_spectral
from hf_dumpembed.remote.modeling_dumpembed import DumpProjection

DIMS = (32, 64, 128, 256, 384)
METHODS = ("SpecTemp auto", "PCA", "truncation", "raw model")
PRECISIONS = ("fp32", "int8", "binary", "binary + rescore", "binary → fp32 docs")
RESCORE_TOP = 100
PERCENTILES = (0.0, 0.1, 0.5, 1.0, 2.5)
THRESHOLDS = ("zero", "median")
SECTION = ("quant-frontier", 25, "Quantized outputs: nDCG@10 against bytes per vector (k × fp32 / int8 / binary)")


def ranked(scores: np.ndarray, doc_ids: list[str], query_ids: list[str], top: int = 10,
           candidates: np.ndarray | None = None) -> dict[str, dict[str, float]]:
    """query id -> {doc id: rank score} of the ``top`` best; ties in corpus order. With ``candidates`` (per query
    the document indices a first stage returned, in its order), only those are ranked, by ``scores`` over them."""
    results = {}
    for row, query in enumerate(query_ids):
        if candidates is None:
            order = np.argsort(-scores[row], kind="stable")[:top]
        else:
            order = candidates[row][np.argsort(-scores[row][candidates[row]], kind="stable")][:top]
        results[query] = {doc_ids[j]: float(top - rank) for rank, j in enumerate(order)}
    return results


def ndcg_of(results: dict, qrels: dict) -> float:
    judged = {str(q): {str(d): int(s) for d, s in docs.items()} for q, docs in qrels.items()
              if any(int(s) > 0 for s in docs.values())}
    return metrics_from_results(results, judged, (1, 3, 5, 10))["ndcg_at_10"]  # the top 10 is all it reads


def int8_codes(x: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    from sentence_transformers.util import quantize_embeddings

    return quantize_embeddings(x, precision="int8", ranges=ranges).astype(np.float64)


def dequantized(x: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    """The int8 codes of ``x`` read back as values (bucket start), as sentence-transformers' rescoring reads them."""
    return quantization_ranges.dequantize_int8(int8_codes(x, ranges), ranges)


def scores_by_precision(q: np.ndarray, d: np.ndarray, ranges: np.ndarray, threshold: np.ndarray,
                        precisions: tuple[str, ...]) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """Per precision: the score matrix and, for the two-stage ones, the first stage's candidates."""
    out = {}
    if "fp32" in precisions:
        out["fp32"] = (q @ d.T, None)
    if "int8" in precisions:  # fp32 query against the documents' int8 codes (FAISS SQ8, ST's int8 rescoring)
        out["int8"] = (q @ dequantized(d, ranges).T, None)
    if "int8 codes · codes" in precisions:  # both sides as codes, inner product (usearch i8 "ip", no rescoring)
        out["int8 codes · codes"] = (int8_codes(q, ranges) @ int8_codes(d, ranges).T, None)
    if any(p.startswith("binary") for p in precisions):
        q_bits, d_bits = q > threshold, d > threshold
        hamming_score = (2.0 * q_bits - 1) @ (2.0 * d_bits - 1).T  # k − 2 × Hamming distance
        first = np.argsort(-hamming_score, axis=1, kind="stable")[:, :RESCORE_TOP]
        out["binary"] = (hamming_score, None)
        # The fp32 query (minus the threshold, as the bits are) against the stored bits: sentence-transformers'
        # rescoring of embeddings shifted by the threshold.
        out["binary + rescore"] = ((q - threshold) @ d_bits.T.astype(np.float64), first)
        out["binary → fp32 docs"] = (q @ d.T, first)
    return {p: out[p] for p in precisions}


def evaluate(outputs: dict, sets: dict, ranges: np.ndarray, threshold: np.ndarray,
             precisions: tuple[str, ...] = PRECISIONS) -> dict[str, dict[str, float]]:
    """precision -> {set: nDCG@10, "mean": ...} of one method at one k."""
    scores: dict[str, dict[str, float]] = {p: {} for p in precisions}
    for name, (_, _, query_ids, doc_ids, qrels) in sets.items():
        q, d = outputs[name]
        for precision, (matrix, first) in scores_by_precision(q, d, ranges, threshold, precisions).items():
            scores[precision][name] = ndcg_of(ranked(matrix, doc_ids, query_ids, candidates=first), qrels)
    for per_set in scores.values():
        per_set["mean"] = float(np.mean([per_set[n] for n in sets]))
    return scores


def projections(spectrum, corpus_texts: list[str], train: np.ndarray, model, tokenizer, cache: Path,
                batch_size: int) -> dict[str, DumpProjection]:
    """The folder each method's fit would write (at k = d; other k are recomposed from it)."""
    d = spectrum.dim
    pairs = build_pseudo_queries(corpus_texts, DEFAULT_MAX_PAIRS, 1999)
    queries, seconds = timed_encode(model, tokenizer, pairs.queries,
                                    cache / f"pseudo-queries-{DEFAULT_MAX_PAIRS}-1999.npy", batch_size)
    pseudo = PseudoSet(pairs, queries.astype(np.float64), train[pairs.indices].astype(np.float64), seconds)
    auto = fit_spectral(spectrum, FitOptions(method="spectemp", mode="auto", dim=d, progress=False), pseudo)
    pca = fit_spectral(spectrum, FitOptions(method="pca", dim=d, progress=False))
    truncate = Truncate.fit_dim(d, FitOptions(method="truncate", dim=d, progress=False))
    return {"SpecTemp auto": auto.projection, "PCA": pca.projection, "truncation": truncate.projection,
            "raw model": DumpProjection(d, d)}


def measure(args: argparse.Namespace) -> dict:
    """``frontier`` with the load averages before and after it."""
    result: dict = {}
    with load_recorded(result):
        result.update(frontier(args))
    return result


def frontier(args: argparse.Namespace) -> dict:
    """Every method × k × precision on the held-out sets, and the calibration statistics' ablation."""
    model, tokenizer = quality.encoder_model()
    corpus = read_corpus(args.data / quality.FIT_SET)
    cache = quality.ROOT / "cache" / "minilm"
    train = quality.encode(model, tokenizer, corpus.texts, cache / f"{quality.FIT_SET}-corpus.npy", args.batch_size)
    sets = quality.encode_sets(model, tokenizer, args.data, "minilm", args.batch_size)
    spectrum = quality.corpus_spectrum(train)
    d = spectrum.dim
    maps = projections(spectrum, corpus.texts, train, model, tokenizer, cache, args.batch_size)
    sample = train[quantization_ranges.calibration_sample(len(train), 1999)]
    rows, ablation = [], []
    for method, projection in maps.items():
        for k in DIMS:
            if (method == "raw model" and k != d) or (method == "truncation" and k == d):
                continue  # truncation at k = d is the raw model
            outputs = {name: tuple(quantization_ranges.outputs_at(projection, x, k) for x in (queries, docs))
                       for name, (queries, docs, *_rest) in sets.items()}
            fit_outputs = quantization_ranges.outputs_at(projection, sample, k)
            ranges = quantization_ranges.int8_ranges(fit_outputs)
            threshold = quantization_ranges.binary_threshold(fit_outputs)
            for precision, scores in evaluate(outputs, sets, ranges, threshold).items():
                rows.append({"method": method, "k": k, "precision": precision, **scores})
            for percentile in PERCENTILES:
                scores = evaluate(outputs, sets, quantization_ranges.int8_ranges(fit_outputs, percentile), threshold,
                                  ("int8",))["int8"]
                ablation.append({"method": method, "k": k, "statistic": f"int8 p{percentile:g}", **scores})
            scores = evaluate(outputs, sets, ranges, threshold, ("int8 codes · codes",))["int8 codes · codes"]
            ablation.append({"method": method, "k": k, "statistic": "int8 codes · codes", **scores})
            for rule in THRESHOLDS:
                rule_threshold = quantization_ranges.binary_threshold(fit_outputs, rule)
                for precision, scores in evaluate(outputs, sets, ranges, rule_threshold,
                                                  ("binary", "binary + rescore")).items():
                    ablation.append({"method": method, "k": k, "statistic": f"{precision} {rule}", **scores})
            at = {r["precision"]: r["mean"] for r in rows if r["method"] == method and r["k"] == k}
            say(f"{method} k={k}: " + ", ".join(f"{p} {v:.4f}" for p, v in at.items()))
    return {
        "model": "all-MiniLM-L6-v2 (DumpEmbed K=0, mean pooling)",
        "fit_texts": len(corpus.texts), "fit_sha256": corpus.sha256, "calibration_texts": len(sample),
        "defaults": {"int8_percentile": quantization_ranges.INT8_PERCENTILE,
                     "binary_threshold": quantization_ranges.BINARY_THRESHOLD},
        "auto_routes": {str(k): maps["SpecTemp auto"].route(k) for k in DIMS},
        "rows": rows, "ablation": ablation,
    }


def frontier_table(results: dict) -> Table:
    """Method × k rows; per precision the mean nDCG@10 over the three sets, bytes per vector in the header."""
    columns = ["method", "k", *(f"{p} ({_bytes_label(p)})" for p in PRECISIONS)]
    by = {(r["method"], r["k"], r["precision"]): r for r in results["rows"]}
    rows = []
    for method in METHODS:
        for k in DIMS:
            if (method, k, "fp32") not in by:
                continue
            cells = [f"{by[(method, k, p)]['mean']:.4f} · {_bytes(k, p)} B" for p in PRECISIONS]
            rows.append([method, k, *cells])
    return Table(columns=columns, rows=rows)


def _bytes(k: int, precision: str) -> int:
    return bytes_per_vector(k, {"fp32": "float32", "int8": "int8"}.get(precision, "ubinary"))


def _bytes_label(precision: str) -> str:
    return {"fp32": "4k B", "int8": "k B", "binary": "k/8 B", "binary + rescore": "k/8 B",
            "binary → fp32 docs": "k/8 B in memory + 4k B on disk"}[precision]


def pareto_table(results: dict) -> Table:
    """The configurations no other beats with fewer or equal bytes (in-memory bytes; fp32-document re-ranking
    left out: it reads 4k B per candidate from disk)."""
    candidates = [r for r in results["rows"] if r["precision"] != "binary → fp32 docs"]
    candidates.sort(key=lambda r: (_bytes(r["k"], r["precision"]), -r["mean"]))
    front, best = [], -1.0
    for row in candidates:
        if row["mean"] > best:
            front.append(row)
            best = row["mean"]
    return Table(columns=["bytes per vector", "method", "k", "precision", *quality.EVAL_SETS, "mean"],
                 rows=[[_bytes(r["k"], r["precision"]), r["method"], r["k"], r["precision"],
                        *(r[n] for n in quality.EVAL_SETS), r["mean"]] for r in front],
                 formats={n: 4 for n in (*quality.EVAL_SETS, "mean")})


def ablation_table(results: dict) -> Table:
    """Mean nDCG@10 under each calibration statistic (int8 range, binary threshold), method × k."""
    statistics = list(dict.fromkeys(r["statistic"] for r in results["ablation"]))
    by = {(r["method"], r["k"], r["statistic"]): r["mean"] for r in results["ablation"]}
    rows = [[method, k, *(by[(method, k, s)] for s in statistics)]
            for method in METHODS for k in DIMS if (method, k, statistics[0]) in by]
    labels = ["int8 min/max" if s == "int8 p0" else s for s in statistics]
    return Table(columns=["method", "k", *labels], rows=rows, formats={c: 4 for c in labels})


def write(results: dict, fresh: bool) -> None:
    section, order, title = SECTION
    tables = [frontier_table(results), pareto_table(results), ablation_table(results)]
    sets = ", ".join(quality.EVAL_SETS[:-1]) + " and " + quality.EVAL_SETS[-1]
    tables[0].caption = f"Mean nDCG@10 over {sets} · bytes per vector (one k-dimensional vector of the index):"
    tables[1].caption = "The frontier: each configuration that beats every smaller one (per-set nDCG@10):"
    tables[2].caption = ("Calibration statistics (mean nDCG@10), all measured on the fit corpus: int8 range = "
                         "min/max or the p-th to (100 − p)-th percentile; binary threshold = 0 or the median:")
    finish_run(section, tables, title=title, order=order, measured=fresh, result=results)


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    quality.add_fit_arguments(parser, quality.ROOT / "quant_frontier.json")


def run(args: argparse.Namespace) -> None:
    run_or_rerecord(args, measure, write)
