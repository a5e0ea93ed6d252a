"""CPU serving: the torch model vs its ONNX export in onnxruntime and OpenVINO, one run, short and long texts apart.

Model: DumpEmbed K=4 on the embedded all-MiniLM-L6-v2 (`hf-dumpembed build embedded:encoder`), exported with
`hf-dumpembed export-onnx --int8 --openvino --calibration data/StdlibCodeTrain` (OpenVINO int8 calibrated on the
training split, never on the held-out sets; or give --model / --onnx for other folders, e.g. the quickstart's
trained K=4 + SpecTemp folder). Runtimes: those of `hf-dumpembed serve-bench` (hf_dumpembed/export/runtimes.py):
torch fp32 and torch bf16 (the folder loaded with dtype=torch.bfloat16); the portable model.onnx and the fused
model_optimized.onnx in onnxruntime (fp32); model_int8.onnx; the OpenVINO IR at f32 and bf16 precision and NNCF's
int8 IR; plus the int8 graph with fp32 MLP down-projections (`--int8-mlp-fp32`, quantised here from the fused
graph). onnxruntime sessions: all graph optimisations, sequential, --threads intra-op threads, no busy-waiting
workers. Every runtime gets the same tokenized batches (texts sorted by length, as sentence-transformers batches
them, padded to the batch's longest; tokenization is not timed):

* speed, per length: short texts (first paragraphs of CPython stdlib docstrings, ~16-24 tokens) and long ones
  (stdlib function sources, truncated at --max-length), each interleaved per batch (every runtime encodes a
  batch, in an order rotated per batch and repeat, before the next batch); medians over repeats of each runtime's
  total time, texts/s (torch's own is printed, so an implausible baseline shows) and the ratio of torch's median
  to each runtime's (speed-up, same run); the CPU's vector instruction sets are recorded with the machine;
* quality: nDCG@10 (mteb's metric code) on the held-out collections (StdlibCode, PyFAQ, ManPages under
  --data-dir), for torch fp32 and every runtime whose arithmetic differs (bf16, int8; the fp32 graphs give torch's
  vectors to 1e-4, which the export's parity check holds them to; --quality-runtimes to choose): relative change
  and minimum cosine.

    python scripts/bench/bench_onnx.py --model runs/qs/minilm-k4-spectemp128 --onnx runs/qs/onnx --short 128 \
        --long 64 --repeats 5 --max-queries 200 --max-documents 800 --output runs/bench_onnx.json

It writes the BENCHMARKS.md section record of this CPU's class (scripts/bench/results/onnx-<class>.json: onnx-avx2,
onnx-avx512-vnni, onnx-amx, ...; one per class, since the ranking changes with the instruction sets) when it
finishes; --record-only rewrites that record's tables from an existing --output file without measuring anything.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from datetime import date
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmarks import (  # noqa: E402
    Table,
    add_output_arguments,
    earlier_results,
    finish_run,
    record_only,
    this_machine,
)

from hf_dumpembed.data.assets import default_encoder_path  # noqa: E402
from hf_dumpembed.data.beir import load_beir  # noqa: E402
from hf_dumpembed.data.corpora import EVAL_COLLECTIONS, TRAIN_COLLECTION  # noqa: E402
from hf_dumpembed.data.sample_texts import stdlib_docstrings, stdlib_sources  # noqa: E402
from hf_dumpembed.evaluation.cached import subsample  # noqa: E402
from hf_dumpembed.evaluation.metrics import retrieval_metrics  # noqa: E402
from hf_dumpembed.export.artefacts import ONNX_FILE, OPTIMIZED_FILE  # noqa: E402
from hf_dumpembed.export.onnx import export_onnx  # noqa: E402
from hf_dumpembed.export.ort_int8 import OrtInt8Options, quantize_onnxruntime_int8  # noqa: E402
from hf_dumpembed.export.runtimes import (  # noqa: E402
    Runner,
    available_runtimes,
    onnxruntime_runner,
    row_cosines,
    spec_of,
)
from hf_dumpembed.export.serve_bench import (  # noqa: E402
    CPU_CLASSES,
    cpu_class,
    cpu_flags,
    encode_group,
    load_average,
    text_group,
    time_interleaved,
)
from hf_dumpembed.model.builder import BuildOptions, build  # noqa: E402

ORDER = 15


def class_order(base: int, flags: list[str]) -> float:
    """The render order of a per-class record: the bench's ``base`` plus the CPU class's rank / 10 (most capable
    first), so that the records of every class a bench files each have their own place, next to each other."""
    slugs = [slug for slug, _, _ in CPU_CLASSES] + ["other"]
    return base + slugs.index(cpu_class(flags)[0]) / 10


def section_and_title(flags: list[str]) -> tuple[str, str]:
    """One record per CPU class (the ranking of the runtimes changes with it): onnx-avx2, onnx-amx, ..."""
    slug, description = cpu_class(flags)
    return (f"onnx-{slug}", f"CPU serving on {description}: torch (fp32, bf16) vs onnxruntime (fp32, fused, int8) "
                            "vs OpenVINO (f32, bf16, int8)")
MLP_FP32 = "onnxruntime int8, MLP down fp32"
COLLECTIONS = EVAL_COLLECTIONS


def runners(model_dir: Path, onnx_dir: Path, threads: int, work: Path) -> dict[str, Runner]:
    """Every runtime serve-bench opens for this export, plus the int8 graph with fp32 MLP down-projections
    (`export-onnx --int8-mlp-fp32`), quantised here from the export's fused graph."""
    opened, skipped = available_runtimes(onnx_dir, model_dir, threads)
    for name, why in skipped.items():
        print(f"not measured: {name} ({why})", flush=True)  # noqa: T201
    runs = {runtime.name: runtime.run for runtime in opened}
    if (onnx_dir / OPTIMIZED_FILE).is_file():
        mlp_fp32 = work / "model_int8_mlp_fp32.onnx"
        quantize_onnxruntime_int8(onnx_dir / ONNX_FILE, onnx_dir / OPTIMIZED_FILE, mlp_fp32,
                                  OrtInt8Options(mlp_fp32=True))
        runs[MLP_FP32] = onnxruntime_runner(mlp_fp32, threads, spinning=False)
    return runs


def arithmetic_differs(name: str) -> bool:
    """Whether a runtime computes in other than fp32 (bf16, int8), so its nDCG can move."""
    return name == MLP_FP32 or spec_of(name).arithmetic != "fp32"


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
        reference = np.concatenate(vectors["torch fp32"])
        quality[collection] = {}
        for name, (q, d) in vectors.items():
            both = np.concatenate([q, d])
            cosine = row_cosines(both, reference)
            ndcg = retrieval_metrics(q, d, query_ids, doc_ids, data.qrels)["ndcg_at_10"]
            quality[collection][name] = {"ndcg_at_10": ndcg, "min_cosine": float(cosine.min()),
                                         "mean_cosine": float(cosine.mean()),
                                         "queries": len(query_ids), "documents": len(doc_ids)}
        print(collection, {n: round(v["ndcg_at_10"], 4) for n, v in quality[collection].items()}, flush=True)  # noqa: T201
    return quality


def speed_table(length: str, run: dict, result: dict) -> Table:
    """One length's speed table: median seconds, texts/s and the speed-up against torch in the same run."""
    torch_median = run["speed"]["torch fp32"]["median_s"]
    rows = [[name, row["median_s"], run["texts"] / row["median_s"], torch_median / row["median_s"]]
            for name, row in run["speed"].items()]
    return Table(columns=["runtime", "median s", "texts/s", "speed-up vs torch"], rows=rows,
                 caption=f"{length} texts: {run['texts']} {run['source']} (mean {run['mean_tokens']:.1f} tokens with "
                         f"the [DUMP] prefix, at most {result['max_length']}), batch {result['batch_size']}, "
                         f"{result['threads']} threads, {result['repeats']} repeats interleaved per batch",
                 formats={"median s": 2, "texts/s": 0, "speed-up vs torch": 2})


def record_tables(result: dict) -> list[Table]:
    tables = [speed_table(length, run, result) for length, run in result["lengths"].items()]
    quality = result.get("quality")
    if quality:
        names = list(next(iter(quality.values())))
        rows = []
        for name in names:
            row = [name]
            for collection in quality:
                row.append(quality[collection][name]["ndcg_at_10"])
            base = [quality[c]["torch fp32"]["ndcg_at_10"] for c in quality]
            mine = [quality[c][name]["ndcg_at_10"] for c in quality]
            row.append(statistics.mean(mine) / statistics.mean(base) - 1)
            row.append(min(quality[c][name]["min_cosine"] for c in quality))
            rows.append(row)
        columns = ["runtime", *[f"{c} nDCG@10" for c in quality], "mean nDCG@10 change vs torch", "min cosine"]
        sizes = ", ".join(f"{c} {next(iter(v.values())).get('queries', '?')} queries / "
                          f"{next(iter(v.values())).get('documents', '?')} documents" for c, v in quality.items())
        tables.append(Table(columns=columns, rows=rows, caption=f"Held-out collections ({sizes})",
                            formats={**{f"{c} nDCG@10": 4 for c in quality}, "mean nDCG@10 change vs torch": "+.2%",
                                     "min cosine": 4}))
    return tables


def measure_lengths(runs: dict[str, Runner], tokenizer, inputs: list[str], args: argparse.Namespace) -> dict:
    """Speed per runtime on short and long texts: warm-up batch each, then --repeats interleaved repeats."""
    lengths = {}
    sources = {"short": (stdlib_docstrings(args.short), "stdlib docstring paragraphs"),
               "long": (stdlib_sources(args.long), "stdlib function sources")}
    for length, (texts, source) in sources.items():
        prepared = text_group(length, source, texts, tokenizer, args.batch_size, inputs, args.max_length)
        print(f"{length}: {len(texts)} texts", flush=True)  # noqa: T201
        for run in runs.values():
            run(prepared.batches[0])

        def report(repeat: int, times: dict[str, list[float]]) -> None:
            line = ", ".join(f"{name} {t[-1]:.2f}s" for name, t in times.items())
            print(f"repeat {repeat + 1}/{args.repeats}: {line}", flush=True)  # noqa: T201

        times = time_interleaved(runs, prepared.batches, min_repeats=args.repeats, max_repeats=args.repeats,
                                 report=report)
        lengths[length] = {
            "texts": prepared.texts, "source": source, "mean_tokens": prepared.mean_tokens,
            "speed": {name: {"median_s": statistics.median(t), "times": t} for name, t in times.items()}}
        print(f"torch fp32: {len(texts) / statistics.median(times['torch fp32']):.1f} texts/s", flush=True)  # noqa: T201
    return lengths


def finish_cpu_run(section: str, title: str, base_order: int, tables: list[Table], output: Path | None,
                   result: dict) -> None:
    """The tail of a CPU serving bench: the record with this machine, its CPU flags and the load averages the
    result measured around its timing, filed at its CPU class's place after ``base_order`` (class_order)."""
    machine = {**this_machine(result["load_average_before"], result["load_average_after"]),
               "cpu_flags": result["cpu_flags"]}
    finish_run(section, tables, title=title, order=class_order(base_order, result["cpu_flags"]), output=output,
               result=result, machine=machine,
               load_average=result["load_average_before"], load_average_after=result["load_average_after"],
               summary=f"CPU flags: {', '.join(result['cpu_flags']) or 'none of the listed'}", show=True)


def class_record_only(args: argparse.Namespace, base_order: int, record_tables: Callable[[dict], list[Table]],
                      section_and_title: Callable[[list[str]], tuple[str, str]]) -> bool:
    """With ``--record-only``: rewrite the record of the CPU class that an earlier run's ``--output`` JSON names
    (its ``cpu_flags``), measuring nothing; True when done (``benchmarks.record_only`` at the class's place)."""
    result = earlier_results(args)
    if result is None:
        return False
    section, title = section_and_title(result["cpu_flags"])
    return record_only(args, section, record_tables, title, class_order(base_order, result["cpu_flags"]))


def add_serving_arguments(parser: argparse.ArgumentParser, short: int, long: int) -> None:
    """The options of a CPU serving bench: its texts and their timing (what measure_lengths reads), and the
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_serving_arguments(parser, short=256, long=128)
    parser.add_argument("--model", type=Path, default=None, help="a DumpEmbed folder (default: build K=4 MiniLM)")
    parser.add_argument("--onnx", type=Path, default=None, help="its export-onnx --int8 --openvino folder")
    parser.add_argument("--no-quality", action="store_true", help="speed only")
    parser.add_argument("--quality-runtimes", nargs="+", default=None,
                        help="runtimes scored on the held-out sets besides torch fp32 (default: every runtime "
                             "whose arithmetic is not fp32: bf16 and int8)")
    add_output_arguments(parser)
    args = parser.parse_args()
    if class_record_only(args, ORDER, record_tables, section_and_title):
        return
    torch.set_num_threads(args.threads)
    from transformers import AutoTokenizer

    work = Path(tempfile.mkdtemp(prefix="bench-onnx-"))
    model_dir = args.model or build(default_encoder_path(), work / "k4", BuildOptions(num_dump_tokens=4))
    train = load_beir(args.data_dir / TRAIN_COLLECTION, "train")  # calibration: the training split's both sides
    calibration = [train.document_text(d) for d in train.corpus] + list(train.queries.values())
    onnx_dir = args.onnx or export_onnx(model_dir, work / "k4-onnx", int8=True, openvino=True,
                                        calibration_texts=calibration,
                                        calibration_source=f"{TRAIN_COLLECTION} (documents and queries)").out_dir
    inputs = json.loads((onnx_dir / "onnx_export.json").read_text())["inputs"]
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=True)
    runs = runners(Path(model_dir), Path(onnx_dir), args.threads, work)
    result = {"date": date.today().isoformat(), "threads": args.threads, "repeats": args.repeats,
              "batch_size": args.batch_size, "max_length": args.max_length, "cpu_flags": cpu_flags()}
    result["load_average_before"] = load_average()
    result["lengths"] = measure_lengths(runs, tokenizer, inputs, args)
    result["load_average_after"] = load_average()
    if not args.no_quality:
        wanted = args.quality_runtimes or [name for name in runs if arithmetic_differs(name)]
        scored = {name: run for name, run in runs.items() if name == "torch fp32" or name in wanted}
        result["quality"] = measure_quality(scored, tokenizer, inputs, args.data_dir, args.batch_size, args.max_length,
                                            args.max_queries, args.max_documents)
    section, title = section_and_title(result["cpu_flags"])
    finish_cpu_run(section, title, ORDER, record_tables(result), args.output, result)


if __name__ == "__main__":
    main()
