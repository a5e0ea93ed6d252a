"""What the CPU serving benches (onnx, openvino-int8, onnxruntime-int8) share: their options, the same tokenized
batches timed interleaved per batch, nDCG@10 on the held-out collections, each int8 variant quantised once under a
work folder (reused when its options are unchanged: resume), and one record per CPU class."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks import Table, finish_run, run_or_rerecord, say
from harness import load_recorded

from hf_dumpembed.data.beir import load_beir
from hf_dumpembed.data.corpora import EVAL_COLLECTIONS
from hf_dumpembed.data.sample_texts import stdlib_docstrings, stdlib_sources
from hf_dumpembed.evaluation.cached import subsample
from hf_dumpembed.evaluation.metrics import retrieval_metrics
from hf_dumpembed.export.runtimes import Runner, row_cosines
from hf_dumpembed.export.serve_bench import (
    CPU_CLASSES,
    cpu_class,
    cpu_flags,
    encode_group,
    text_group,
    time_interleaved,
)

COLLECTIONS = EVAL_COLLECTIONS
TORCH = "torch fp32"


def add_serving_arguments(parser: argparse.ArgumentParser, short: int, long: int) -> None:
    """The options of a CPU serving bench: its texts and their timing (what time_lengths reads), and the
    held-out collections and their subsampling (measure_quality)."""
    parser.add_argument("--short", type=int, default=short,
                        help=f"short texts (docstring paragraphs; default: {short})")
    parser.add_argument("--long", type=int, default=long, help=f"long texts (function sources; default: {long})")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per runtime (default: 5)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="threads of every runtime (default: 2)")
    parser.add_argument("--max-length", type=int, default=256, help="truncation in tokens (default: 256)")
    parser.add_argument("--data-dir", type=Path, default=Path("data"),
                        help="held-out collections and StdlibCodeTrain, the calibration texts "
                             "(scripts/build_datasets.py)")
    parser.add_argument("--max-queries", type=int, default=None, help="subsample each collection's queries")
    parser.add_argument("--max-documents", type=int, default=None,
                        help="subsample each collection's documents (judged ones are kept)")


def add_int8_arguments(parser: argparse.ArgumentParser, work: str, names: list[str], onnx_help: str) -> None:
    """--model, --onnx, --work, --reuse-quality and --variants, as every int8 bench reads them."""
    parser.add_argument("--model", type=Path, required=True, help="a DumpEmbed folder")
    parser.add_argument("--onnx", type=Path, required=True, help=onnx_help)
    parser.add_argument("--work", type=Path, default=Path(work),
                        help=f"where the variants' graphs are written (and reused; default: {work})")
    parser.add_argument("--reuse-quality", action="store_true",
                        help="keep the nDCG scores of the earlier --output for runtimes whose options are unchanged "
                             "(the scores do not depend on the load; re-time on a quiet machine without re-scoring)")
    parser.add_argument("--variants", nargs="+", default=None, metavar="NAME",
                        help=f"only these variants ('defaults' always runs; names: {', '.join(names)})")


def export_inputs(model_dir: Path, onnx_dir: Path) -> tuple[Any, list[str]]:
    """The folder's tokenizer and the input names its export's graphs take."""
    from transformers import AutoTokenizer

    inputs = json.loads((Path(onnx_dir) / "onnx_export.json").read_text())["inputs"]
    return AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=True), inputs


def new_result(args: argparse.Namespace, **fields: Any) -> dict[str, Any]:
    """A serving run's results: its settings and this CPU's instruction sets, then ``fields``."""
    return {"threads": args.threads, "repeats": args.repeats,
            "batch_size": args.batch_size, "max_length": args.max_length, "cpu_flags": cpu_flags(), **fields}


def measure_quality(runs: dict[str, Runner], tokenizer, inputs: list[str], data_dir: Path, batch_size: int,
                    max_length: int, max_queries: int | None, max_documents: int | None
                    ) -> dict[str, dict[str, dict[str, float]]]:
    """nDCG@10 of every runtime on each collection, and the min cosine of its vectors to torch's."""
    quality: dict[str, dict[str, dict[str, float]]] = {}
    for collection in COLLECTIONS:
        data = subsample(load_beir(data_dir / collection), max_queries, max_documents)
        query_ids, doc_ids = list(data.queries), list(data.corpus)
        queries = text_group("queries", collection, [data.queries[q] for q in query_ids], tokenizer, batch_size,
                             inputs, max_length)
        documents = text_group("documents", collection, [data.document_text(d) for d in doc_ids], tokenizer,
                               batch_size, inputs, max_length)
        vectors = {name: (encode_group(run, queries), encode_group(run, documents)) for name, run in runs.items()}
        reference = np.concatenate(vectors[TORCH])
        quality[collection] = {}
        for name, (q, d) in vectors.items():
            cosine = row_cosines(np.concatenate([q, d]), reference)
            ndcg = retrieval_metrics(q, d, query_ids, doc_ids, data.qrels)["ndcg_at_10"]
            quality[collection][name] = {"ndcg_at_10": ndcg, "min_cosine": float(cosine.min()),
                                         "mean_cosine": float(cosine.mean()),
                                         "queries": len(query_ids), "documents": len(doc_ids)}
        say(f"{collection} {({n: round(v['ndcg_at_10'], 4) for n, v in quality[collection].items()})}")
    return quality


SOURCES = {"short": "stdlib docstring paragraphs", "long": "stdlib function sources"}


def length_texts(args: argparse.Namespace) -> dict[str, list[str]]:
    """The short (--short docstring paragraphs) and long (--long function sources) texts a serving bench times."""
    return {"short": stdlib_docstrings(args.short), "long": stdlib_sources(args.long)}


def time_lengths(result: dict[str, Any], runs: dict[str, Runner], tokenizer, inputs: list[str],
                 args: argparse.Namespace) -> None:
    """Speed per runtime on short and long texts into ``result["lengths"]`` (a warm-up batch each, then --repeats
    repeats interleaved per batch), with the load averages around it."""
    sources = {length: (texts, SOURCES[length]) for length, texts in length_texts(args).items()}
    result["lengths"] = {}
    with load_recorded(result):
        for length, (texts, source) in sources.items():
            prepared = text_group(length, source, texts, tokenizer, args.batch_size, inputs, args.max_length)
            say(f"{length}: {len(texts)} texts")
            for run in runs.values():
                run(prepared.batches[0])

            def report(repeat: int, times: dict[str, list[float]]) -> None:
                line = ", ".join(f"{name} {t[-1]:.2f}s" for name, t in times.items())
                say(f"repeat {repeat + 1}/{args.repeats}: {line}")

            times = time_interleaved(runs, prepared.batches, min_repeats=args.repeats, max_repeats=args.repeats,
                                     report=report)
            result["lengths"][length] = {
                "texts": prepared.texts, "source": source, "mean_tokens": prepared.mean_tokens,
                "speed": {name: {"median_s": statistics.median(t), "times": t} for name, t in times.items()}}
            say(f"{TORCH}: {len(texts) / statistics.median(times[TORCH]):.1f} texts/s")


def class_order(base: int, flags: list[str]) -> float:
    """The render order of a per-class record: the bench's ``base`` plus the CPU class's rank / 10 (most capable
    first), so that the records of every class a bench files each have their own place, next to each other."""
    slugs = [slug for slug, _, _ in CPU_CLASSES] + ["other"]
    return base + slugs.index(cpu_class(flags)[0]) / 10


def run_serving(args: argparse.Namespace, measure: Callable[[argparse.Namespace], dict], base_order: int,
                section: str, title: str, variant_table: Callable[[dict], Table] | None = None) -> None:
    """A serving bench's run (``run_or_rerecord``): one record per CPU class, ``SECTION-<class>`` of the class its
    results' ``cpu_flags`` name (``title`` with the class's description for ``{}``), filed at that class's place after
    ``base_order`` (``class_order``); its tables: ``variant_table`` (where given), then ``serving_tables``."""
    def record(result: dict, fresh: bool) -> None:
        flags = result["cpu_flags"]
        slug, description = cpu_class(flags)
        tables = ([variant_table(result)] if variant_table else []) + serving_tables(result)
        finish_run(f"{section}-{slug}", tables, title=title.format(description), measured=fresh, result=result,
                   order=class_order(base_order, flags), show=True,
                   summary=f"CPU flags: {', '.join(flags) or 'none of the listed'}")

    run_or_rerecord(args, measure, record)


def variants_result(args: argparse.Namespace, entries: dict[str, dict], runs: dict[str, Runner],
                    scored: dict[str, Runner], tokenizer, inputs: list[str]) -> dict:
    """An int8 bench's results: its variants' ``entries``, nDCG@10 of the ``scored`` runtimes (``scored_quality``),
    then the speed of all ``runs`` (``time_lengths``)."""
    result = new_result(args, variants=entries)
    result["quality"] = scored_quality(args, scored, entries, tokenizer, inputs)
    time_lengths(result, runs, tokenizer, inputs, args)
    return result


def speed_table(length: str, run: dict, result: dict) -> Table:
    """One length's speed table: median seconds, texts/s and the speed-up against torch in the same run."""
    torch_median = run["speed"][TORCH]["median_s"]
    rows = [[name, row["median_s"], run["texts"] / row["median_s"], torch_median / row["median_s"]]
            for name, row in run["speed"].items()]
    return Table(columns=["runtime", "median s", "texts/s", "speed-up vs torch"], rows=rows,
                 caption=f"{length} texts: {run['texts']} {run['source']} (mean {run['mean_tokens']:.1f} tokens with "
                         f"the [DUMP] prefix, at most {result['max_length']}), batch {result['batch_size']}, "
                         f"{result['threads']} threads, {result['repeats']} repeats interleaved per batch",
                 formats={"median s": 2, "texts/s": 0, "speed-up vs torch": 2})


def ndcg_change(quality: dict, name: str) -> float:
    """The relative change of ``name``'s mean nDCG@10 over the collections against torch fp32's."""
    return (statistics.mean(quality[c][name]["ndcg_at_10"] for c in quality)
            / statistics.mean(quality[c][TORCH]["ndcg_at_10"] for c in quality) - 1)


def speedups(lengths: dict, name: str, references: Sequence[str]) -> list[float]:
    """Per length and reference: the reference's median time over ``name``'s (same run)."""
    return [run["speed"][reference]["median_s"] / run["speed"][name]["median_s"]
            for run in lengths.values() for reference in references]


def serving_tables(result: dict) -> list[Table]:
    """A speed table per length, then nDCG@10 per collection with its change against torch and the min cosine."""
    tables = [speed_table(length, run, result) for length, run in result["lengths"].items()]
    quality = result.get("quality")
    if quality:
        rows = [[name, *(quality[c][name]["ndcg_at_10"] for c in quality), ndcg_change(quality, name),
                 min(quality[c][name]["min_cosine"] for c in quality)] for name in next(iter(quality.values()))]
        columns = ["runtime", *[f"{c} nDCG@10" for c in quality], "mean nDCG@10 change vs torch", "min cosine"]
        sizes = ", ".join(f"{c} {next(iter(v.values())).get('queries', '?')} queries / "
                          f"{next(iter(v.values())).get('documents', '?')} documents" for c, v in quality.items())
        tables.append(Table(columns=columns, rows=rows, caption=f"Held-out collections ({sizes})",
                            formats={**{f"{c} nDCG@10": 4 for c in quality}, "mean nDCG@10 change vs torch": "+.2%",
                                     "min cosine": 4}))
    return tables


def cached_variants(work: Path, variants: dict[str, Any], file_name: str,
                    quantise: Callable[[Any, Path], dict[str, Any]]) -> dict[str, dict]:
    """Each variant's manifest entry: ``quantise(options, target)`` writes ``work/variant_NN/file_name`` and returns
    its entry, unless an earlier run's entry there has the same options (then it is reused). Every entry gets
    ``quantise_seconds`` and ``path``."""
    entries = {}
    for index, (name, options) in enumerate(variants.items()):
        target = work / f"variant_{index:02d}" / file_name
        manifest = target.with_suffix(".json")
        earlier = json.loads(manifest.read_text()) if manifest.is_file() else {}
        if earlier.get("options") == json.loads(json.dumps(asdict(options))) and earlier.get("path") == str(target):
            entries[name] = earlier  # as JSON: tuples read back as lists
            say(f"{name}: reusing {target}")
            continue
        say(f"{name}: quantising ({options.describe()}) ...")
        target.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        entry = quantise(options, target)
        entry.update(quantise_seconds=time.perf_counter() - started, path=str(target))
        manifest.write_text(json.dumps(entry, indent=1, default=list))
        entries[name] = json.loads(manifest.read_text())  # as a later run reads it back
        say(f"{name}: {entry['quantise_seconds']:.0f} s")
    return entries


def scored_quality(args: argparse.Namespace, scored: dict, entries: dict[str, dict], tokenizer, inputs: list[str]
                   ) -> dict:
    """nDCG@10 of every scored runtime; with --reuse-quality, the earlier --output's scores of runtimes whose
    options are unchanged are kept and only the others are scored (torch fp32 again, as their reference)."""
    earlier: dict = {}
    if args.reuse_quality and args.output is not None and args.output.is_file():
        previous = json.loads(args.output.read_text())
        same = {name for name in scored if name not in entries or previous.get("variants", {}).get(
            name, {}).get("options") == entries[name]["options"]}
        earlier = {c: {n: v for n, v in rows.items() if n in same} for c, rows in previous.get("quality", {}).items()}
    missing = {name: run for name, run in scored.items()
               if not earlier or any(name not in rows for rows in earlier.values())}
    if not missing:
        return earlier
    fresh = measure_quality({TORCH: scored[TORCH], **missing}, tokenizer, inputs, args.data_dir,
                            args.batch_size, args.max_length, args.max_queries, args.max_documents)
    return {c: {**earlier.get(c, {}), **rows} for c, rows in fresh.items()}


def chosen_variants(variants: dict[str, Any], wanted: list[str] | None) -> dict[str, Any]:
    """``variants`` limited to ``wanted`` (and 'defaults'); SystemExit naming the unknown ones."""
    if not wanted:
        return variants
    unknown = sorted(set(wanted) - set(variants))
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; the variants are: {', '.join(variants)}.")
    return {name: options for name, options in variants.items() if name == "defaults" or name in wanted}
