"""Retrieval quality (nDCG@10) of every post-hoc projection on real text, from cached embeddings.

Encoder part (the embedded all-MiniLM-L6-v2 as a DumpEmbed K=0 folder with mean pooling, i.e. the vanilla
model): the corpus spectrum is fitted on data/StdlibCodeTrain (its corpus.jsonl: training text only) and the
maps are evaluated on data/ManPages, data/PyFAQ and data/StdlibCode (test qrels; disjoint from the fit text).
Methods at k = 384/256/128/64/32: full dimension (the baseline), SpecTemp reference and robust, the oracle γ*(k)
(grid 0..1 step 0.05, chosen on each test set itself — an upper bound, not a method), PCA, whitening,
γ-whitening (0.5), prefix truncation, random truncation and random projection (mean over seeds 1999, 5, 2026).

Decoder part (--decoder; the embedded SmolLM2-135M-Instruct, K=0, zero-shot): last-token pooling without a
prompt, PromptEOL and ECHO, each with EmbedFilter τ = 1 (identity), 2 and 4.

Embeddings are the model's L2-normalised pooled vectors (what a fitted folder's projection reads), cached under
runs/bench_projection/; scores use hf_dumpembed.evaluation.retrieval_metrics (mteb's metric code).

    python scripts/bench/benchmarks.py projection-quality                 # encoder part
    python scripts/bench/benchmarks.py projection-quality --decoder-only  # decoder part

Each part writes its BENCHMARKS.md section record (scripts/bench/results/projection.json, decoder-zero-shot.json)
when it finishes; --record-only rewrites both tables from an existing --output file without computing anything.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks import Table, add_output_arguments, finish_run, run_or_rerecord, say
from harness import Subparsers, add_threads, bench_parser

from hf_dumpembed.data.beir import document_text, load_beir
from hf_dumpembed.data.corpora import EVAL_COLLECTIONS, TRAIN_COLLECTION
from hf_dumpembed.evaluation import retrieval_metrics
from hf_dumpembed.projections.corpus import read_corpus
from hf_dumpembed.projections.encode import iter_pooled
from hf_dumpembed.projections.fit import load_for_fit, set_prompt_mode
from hf_dumpembed.projections.maths import reference_maps
from hf_dumpembed.projections.maths.auto_selection import ORACLE_GRID
from hf_dumpembed.projections.maths.band_basis import band_size, gram_basis
from hf_dumpembed.projections.maths.reference_maps import LinearMap, embedfilter_map, fit_spectemp
from hf_dumpembed.projections.maths.spectrum import eigendecompose
from hf_dumpembed.projections.maths.statistics import StreamingStats
from hf_dumpembed.remote.modeling_dumpembed import DumpProjection

EVAL_SETS = EVAL_COLLECTIONS
FIT_SET = TRAIN_COLLECTION
DIMS = (384, 256, 128, 64, 32)
SEEDS = (1999, 5, 2026)
RATIOS = (1, 2, 4)
# mteb needs k=1 among the cutoffs; 1000 would only slow the exact ranking down (nDCG@10 is unchanged).
K_VALUES = (1, 3, 5, 10, 20, 100)
ROOT = Path("runs/bench_projection")


def add_fit_arguments(parser: Any, output: Path) -> None:
    """--data, --batch-size, --threads, --output and --record-only, as the benches of this setting read them."""
    parser.add_argument("--data", type=Path, default=Path("data"), help="the built collections (default: data)")
    parser.add_argument("--batch-size", type=int, default=32)
    add_threads(parser)
    add_output_arguments(parser, default=output)


def encoder_model(folder: Path | None = None) -> tuple[Any, Any]:
    """``folder`` (default: all-MiniLM-L6-v2 built as K=0 with mean pooling) loaded as `fit` loads it: pooled vectors
    of unit length, no projection (the identity)."""
    if folder is None:
        from hf_dumpembed.data.assets import default_encoder_path

        folder = build_model(default_encoder_path(), ROOT / "minilm-k0-mean", "mean")
    model, tokenizer = load_for_fit(folder)
    model.config.normalize_pooled = True
    model.projection = DumpProjection(model.config.hidden_size, model.config.hidden_size)
    return model, tokenizer


def corpus_spectrum(train: np.ndarray) -> Any:
    """The spectrum of the fit corpus's vectors, as `fit` computes it."""
    return eigendecompose(StreamingStats(train.shape[1]).update(train))


def build_model(backbone: Path, out: Path, pooling: str) -> Path:
    from hf_dumpembed.model.builder import BuildOptions, build

    if not (out / "config.json").exists():
        build(backbone, out, BuildOptions(num_dump_tokens=0, pooling=pooling), overwrite=True)
    return out


def encode(model, tokenizer, texts: list[str], cache: Path, batch_size: int) -> np.ndarray:
    """Unit-length pooled embeddings in input order, cached as .npy."""
    if cache.exists():
        return np.load(cache)
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    chunks = list(iter_pooled(model, tokenizer, texts, batch_size, desc=cache.stem))
    sorted_vectors = np.concatenate(chunks)
    vectors = np.empty_like(sorted_vectors)
    vectors[order] = sorted_vectors
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    return vectors


def load_eval(data: Path, name: str):
    beir = load_beir(data / name, "test")
    doc_ids = list(beir.corpus)
    query_ids = [q for q in beir.queries if q in beir.qrels]
    return beir, doc_ids, query_ids


def encode_sets(model, tokenizer, data: Path, tag: str, batch_size: int, names: tuple[str, ...] = EVAL_SETS) -> dict:
    sets = {}
    for name in names:
        beir, doc_ids, query_ids = load_eval(data, name)
        docs = encode(model, tokenizer, [document_text(beir.corpus[d]) for d in doc_ids],
                      ROOT / "cache" / tag / f"{name}-corpus.npy", batch_size)
        queries = encode(model, tokenizer, [beir.queries[q] for q in query_ids],
                         ROOT / "cache" / tag / f"{name}-queries.npy", batch_size)
        sets[name] = (queries, docs, query_ids, doc_ids, beir.qrels)
    return sets


def ndcg(sets: dict, linear: LinearMap | None) -> dict[str, float]:
    scores = {}
    for name, (queries, docs, query_ids, doc_ids, qrels) in sets.items():
        q = queries if linear is None else linear.apply(queries)
        d = docs if linear is None else linear.apply(docs)
        scores[name] = retrieval_metrics(q, d, query_ids, doc_ids, qrels, k_values=K_VALUES)["ndcg_at_10"]
    scores["mean"] = float(np.mean([scores[n] for n in sets]))
    return scores


def encoder_part(args: argparse.Namespace) -> dict:
    model, tokenizer = encoder_model()
    corpus = read_corpus(args.data / FIT_SET)
    train = encode(model, tokenizer, corpus.texts, ROOT / "cache" / "minilm" / f"{FIT_SET}-corpus.npy",
                   args.batch_size)
    sets = encode_sets(model, tokenizer, args.data, "minilm", args.batch_size)
    spectrum = corpus_spectrum(train)
    d = spectrum.dim
    rows = [{"method": "full dimension (baseline)", "k": d, **ndcg(sets, None)}]
    for k in DIMS:
        for mode in ("reference", "robust"):
            fit = fit_spectemp(spectrum, k, mode)
            rows.append({"method": f"SpecTemp {mode}", "k": k, "gamma": fit.gamma, "knee": fit.knee,
                         **ndcg(sets, fit.map)})
        grid = {g: ndcg(sets, reference_maps.gamma_map(spectrum, k, g)) for g in ORACLE_GRID}
        for name in list(EVAL_SETS) + ["mean"]:
            best = max(grid, key=lambda g, n=name: (grid[g][n], -g))
            rows.append({"method": f"oracle γ* ({name})", "k": k, "gamma": best, name: grid[best][name]})
        rows.append({"method": "PCA (γ=0)", "k": k, **grid[0.0]})
        rows.append({"method": "whitening (γ=1)", "k": k, **grid[1.0]})
        rows.append({"method": "γ-whitening (γ=0.5)", "k": k, **grid[0.5]})
        rows.append({"method": "prefix truncation", "k": k, **ndcg(sets, reference_maps.truncate_map(d, k))})
        for label, make in (("random truncation", reference_maps.random_truncate_map),
                            ("random projection", reference_maps.random_project_map)):
            per_seed = [ndcg(sets, make(d, k, seed)) for seed in SEEDS]
            rows.append({"method": f"{label} (3 seeds)", "k": k,
                         **{n: float(np.mean([s[n] for s in per_seed])) for n in per_seed[0]}})
        say(f"k={k} done")
    return {"model": "all-MiniLM-L6-v2 (DumpEmbed K=0, mean pooling)", "fit_set": f"{FIT_SET}/corpus.jsonl",
            "fit_texts": len(corpus.texts), "fit_sha256": corpus.sha256, "spectrum_rank": spectrum.rank,
            "knee_reference": fit_spectemp(spectrum, 64, "reference").curve.knee,
            "knee_robust": fit_spectemp(spectrum, 64, "robust").curve.knee, "rows": rows}


def decoder_part(args: argparse.Namespace) -> dict:
    from hf_dumpembed.data.assets import default_decoder_path
    from hf_dumpembed.projections.unembedding import find_unembedding

    folder = build_model(default_decoder_path(), ROOT / "smollm2-k0-last", "last")
    rows = []
    basis = None
    for prompt in (None, "prompteol", "echo"):
        model, tokenizer = load_for_fit(folder)
        tokenizer.model_max_length = args.decoder_max_length
        model.projection = DumpProjection(model.config.hidden_size, model.config.hidden_size)
        if prompt is not None:
            set_prompt_mode(model, tokenizer, prompt)
        if basis is None:
            unembedding = find_unembedding(model)
            _, basis = gram_basis(unembedding.weight, unembedding.exclude_rows)
        sets = encode_sets(model, tokenizer, args.data, f"smollm2-{prompt or 'plain'}-{args.decoder_max_length}",
                           args.batch_size, tuple(args.decoder_sets))
        for ratio in RATIOS:
            m = band_size(basis.shape[0], ratio=ratio)
            rows.append({"method": f"{prompt or 'last token, no prompt'}", "tau": ratio, "k": m,
                         **ndcg(sets, embedfilter_map(basis, m))})
        say(f"decoder {prompt} done")
    return {"model": "SmolLM2-135M-Instruct (DumpEmbed K=0, last-token pooling, zero-shot)",
            "max_length": args.decoder_max_length, "sets": list(args.decoder_sets), "rows": rows}


ENCODER_SECTION = ("projection", 20, "Post-hoc projections: retrieval quality of every method on real text")
DECODER_SECTION = ("decoder-zero-shot", 80, "Zero-shot SmolLM2-135M-Instruct: PromptEOL / ECHO × EmbedFilter τ")
ORACLE_LABEL = "*oracle γ\\* (per set, chosen on the test set)*"
PROMPT_LABELS = {"last token, no prompt": "last token, no prompt", "prompteol": "PromptEOL (last token)",
                 "echo": "ECHO (mean over 2nd copy)"}


def encoder_table(part: dict) -> Table:
    """k × method rows (the oracle's per-set rows merged into one), nDCG@10 per set and the mean."""
    columns = ["k", "method", "γ", *EVAL_SETS, "mean"]
    rows = []
    for k in DIMS:
        at_k = [r for r in part["rows"] if r["k"] == k]
        oracle = [r for r in at_k if r["method"].startswith("oracle")]
        for row in at_k:
            if row["method"].startswith("oracle"):
                if row is oracle[0]:
                    gammas = "/".join(f"{r['gamma']:.2f}" for r in oracle)
                    rows.append([k, ORACLE_LABEL, gammas,
                                 *(next(r[n] for r in oracle if n in r) for n in (*EVAL_SETS, "mean"))])
                continue
            method = ("full dimension (baseline, no projection)" if row["method"] == "full dimension (baseline)"
                      else row["method"])
            gamma = f"{row['gamma']:.2f} (knee {row['knee']})" if "knee" in row else None
            rows.append([k, method, gamma, *(row[n] for n in (*EVAL_SETS, "mean"))])
    return Table(columns=columns, rows=rows, formats={n: 4 for n in (*EVAL_SETS, "mean")})


def decoder_table(part: dict) -> Table:
    """Prompt mode × EmbedFilter τ, nDCG@10 on the decoder's set(s) (their mean when several)."""
    ratios = sorted({r["tau"] for r in part["rows"]})
    dims = {r["tau"]: r["k"] for r in part["rows"]}
    columns = ["prompt", *(f"τ = {t} (identity, {dims[t]} dims)" if t == 1 else f"τ = {t} ({dims[t]} dims)"
                           for t in ratios)]
    rows = []
    for method in dict.fromkeys(r["method"] for r in part["rows"]):
        scores = {r["tau"]: r["mean"] for r in part["rows"] if r["method"] == method}
        rows.append([PROMPT_LABELS.get(method, method), *(scores[t] for t in ratios)])
    return Table(columns=columns, rows=rows, formats={c: 4 for c in columns[1:]})


def write_records(results: dict, parts: tuple[str, ...], fresh: bool) -> None:
    """The sections of the parts in ``results``; a fresh run also records its command and machine."""
    for part, (section, order, title), make in (("encoder", ENCODER_SECTION, encoder_table),
                                                ("decoder", DECODER_SECTION, decoder_table)):
        if part in parts and part in results:
            finish_run(section, [make(results[part])], title=title, order=order, measured=fresh,
                       date=results["date"])


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    add_fit_arguments(parser, ROOT / "results.json")
    parser.add_argument("--decoder-max-length", type=int, default=256,
                        help="token limit of the decoder inputs before the prompt is composed (default 256)")
    parser.add_argument("--decoder-sets", nargs="+", default=list(EVAL_SETS), choices=EVAL_SETS,
                        help="evaluation sets of the decoder part (default: all three)")
    parser.add_argument("--decoder", action="store_true", help="also run the decoder part")
    parser.add_argument("--decoder-only", action="store_true", help="only the decoder part")


def run(args: argparse.Namespace) -> None:
    parts = (() if args.decoder_only else ("encoder",)) + (("decoder",) if args.decoder or args.decoder_only else ())
    run_or_rerecord(args, measure, lambda results, fresh: write_records(
        results, parts if fresh else ("encoder", "decoder"), fresh))


def measure(args: argparse.Namespace) -> dict:
    """The parts asked for, added to the earlier --output's (a part not run keeps its earlier results)."""
    results = json.loads(args.output.read_text()) if args.output.exists() else {}
    if not args.decoder_only:
        results["encoder"] = encoder_part(args)
    if args.decoder or args.decoder_only:
        results["decoder"] = decoder_part(args)
    return results
