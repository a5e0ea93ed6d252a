"""CPU serving: the torch model vs its ONNX export in onnxruntime and OpenVINO, one run, short and long texts apart.

Model: DumpEmbed K=4 on the embedded all-MiniLM-L6-v2 (`hf-dumpembed build embedded:encoder`), exported with
`hf-dumpembed export-onnx --int8 --openvino --calibration data/StdlibCodeTrain` (OpenVINO int8 calibrated on the
training split, never on the held-out sets; or give --model / --onnx for other folders). Runtimes: torch; the
portable model.onnx and the fused model_optimized.onnx in onnxruntime (fp32); model_int8.onnx, and the int8 graph
with fp32 MLP down-projections (`--int8-mlp-fp32`, quantised here from the fused graph); the OpenVINO IR at f32
and bf16 precision, and NNCF's int8 IR. onnxruntime sessions: all graph optimisations, sequential, --threads
intra-op threads, no busy-waiting workers. Every runtime gets the same tokenized batches (texts sorted by length,
as sentence-transformers batches them, padded to the batch's longest; tokenization is not timed):

* speed, per length: short texts (first paragraphs of CPython stdlib docstrings, ~16-24 tokens) and long ones
  (stdlib function sources, truncated at --max-length), each interleaved per batch (every runtime encodes a
  batch, in an order rotated per batch and repeat, before the next batch); medians over repeats of each runtime's
  total time, texts/s (torch's own is printed, so an implausible baseline shows) and the ratio of torch's median
  to each runtime's (speed-up, same run); the CPU's vector instruction sets are recorded with the machine;
* quality: nDCG@10 (mteb's metric code) on the held-out collections (StdlibCode, PyFAQ, ManPages under
  --data-dir), for torch and the runtimes whose arithmetic differs (--quality-runtimes; the fp32 graphs give
  torch's vectors, which the export's parity check already holds them to): relative change and minimum cosine.

    python scripts/bench/bench_onnx.py --short 256 --long 128 --repeats 5 --output runs/bench_onnx.json

It writes its BENCHMARKS.md section record (scripts/bench/results/onnx.json) when it finishes; --record-only
rewrites that record's tables from an existing --output file without measuring anything.
"""

from __future__ import annotations

import argparse
import ast
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_encode import stdlib_docstrings, stdlib_functions  # noqa: E402
from benchmarks import Table, add_output_arguments, command_line, record_only, write_record  # noqa: E402

from hf_dumpembed._utils.machine import machine_info  # noqa: E402
from hf_dumpembed.data.assets import default_encoder_path  # noqa: E402
from hf_dumpembed.data.beir import load_beir  # noqa: E402
from hf_dumpembed.data.corpora import EVAL_COLLECTIONS, TRAIN_COLLECTION  # noqa: E402
from hf_dumpembed.evaluation.cached import subsample  # noqa: E402
from hf_dumpembed.evaluation.metrics import retrieval_metrics  # noqa: E402
from hf_dumpembed.export.onnx import INT8_FILE, ONNX_FILE, OPTIMIZED_FILE, OUTPUT_NAME, export_onnx  # noqa: E402
from hf_dumpembed.export.onnx_optimize import down_projections, quantize_int8, session_options  # noqa: E402
from hf_dumpembed.export.openvino import OPENVINO_DIR, OPENVINO_FILE, OPENVINO_INT8_FILE, openvino_runner  # noqa: E402
from hf_dumpembed.model.builder import BuildOptions, build  # noqa: E402
from hf_dumpembed.remote import DumpEmbedModel  # noqa: E402

SECTION, ORDER, TITLE = ("onnx", 15,
                         "CPU serving: torch vs onnxruntime (fp32, fused, int8) vs OpenVINO (f32, bf16, int8)")
QUALITY_RUNTIMES = ("onnxruntime int8", "OpenVINO bf16", "OpenVINO int8")
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
COLLECTIONS = EVAL_COLLECTIONS
Runner = Callable[[dict[str, np.ndarray]], np.ndarray]


def runners(model_dir: Path, onnx_dir: Path, threads: int, work: Path) -> dict[str, Runner]:
    """Each runtime as a function of one tokenized numpy batch -> vectors. The int8 graph with fp32 MLP
    down-projections (`export-onnx --int8-mlp-fp32`) is quantised here from the export's fused graph."""
    import onnxruntime

    model = DumpEmbedModel.from_pretrained(model_dir, dtype=torch.float32).eval()

    def run_torch(batch: dict[str, np.ndarray]) -> np.ndarray:
        with torch.inference_mode():
            return model(**{k: torch.from_numpy(v) for k, v in batch.items()}).sentence_embedding.numpy()

    def ort(path: Path) -> Runner:  # no busy-waiting workers: the CPU is shared with the other runtimes
        options = session_options(threads, spinning=False)
        session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return lambda batch: session.run([OUTPUT_NAME], batch)[0]

    mlp_fp32 = work / "model_int8_mlp_fp32.onnx"
    quantize_int8(onnx_dir / OPTIMIZED_FILE, mlp_fp32, down_projections(onnx_dir / OPTIMIZED_FILE))
    ir = onnx_dir / OPENVINO_DIR
    runs = {"torch fp32": run_torch, "onnxruntime fp32": ort(onnx_dir / ONNX_FILE),
            "onnxruntime fp32 fused": ort(onnx_dir / OPTIMIZED_FILE), "onnxruntime int8": ort(onnx_dir / INT8_FILE),
            "onnxruntime int8, MLP down fp32": ort(mlp_fp32),
            "OpenVINO f32": openvino_runner(ir / OPENVINO_FILE, "f32", OUTPUT_NAME, threads),
            "OpenVINO bf16": openvino_runner(ir / OPENVINO_FILE, "bf16", OUTPUT_NAME, threads)}
    if (ir / OPENVINO_INT8_FILE).exists():
        runs["OpenVINO int8"] = openvino_runner(ir / OPENVINO_INT8_FILE, "f32", OUTPUT_NAME, threads)
    return runs


def stdlib_sources(limit: int, min_chars: int = 800) -> list[str]:
    """Source of stdlib functions of at least ``min_chars`` characters (long texts), in sorted file order."""
    texts: list[str] = []
    for source, node in stdlib_functions():
        text = ast.get_source_segment(source, node) or ""
        if len(text) >= min_chars:
            texts.append(text)
            if len(texts) == limit:
                break
    return texts


def cpu_flags() -> list[str]:
    """The vector instruction sets among ISA_FLAGS this CPU reports (what int8 and bf16 speed depends on)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))
    return [flag for flag in ISA_FLAGS if flag in flags]


def batches(tokenizer, texts: list[str], batch_size: int, inputs: list[str], max_length: int
            ) -> tuple[list[dict[str, np.ndarray]], np.ndarray]:
    """Length-sorted tokenized batches, and the permutation that restores the input order."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    out = []
    for start in range(0, len(texts), batch_size):
        chunk = [texts[i] for i in order[start:start + batch_size]]
        encoded = tokenizer(chunk, padding=True, truncation=True, max_length=max_length, return_tensors="np")
        out.append({name: encoded[name].astype(np.int64) for name in inputs})
    return out, np.argsort(order)


def encode(run: Runner, prepared: tuple[list[dict[str, np.ndarray]], np.ndarray]) -> np.ndarray:
    chunks, restore = prepared
    return np.concatenate([run(batch) for batch in chunks])[restore]


def measure_speed(runs: dict[str, Runner], prepared, repeats: int) -> dict[str, list[float]]:
    """Seconds per runtime for all texts, per repeat. Interleaved per batch: every runtime encodes the same batch
    before the next batch starts, in an order rotated from batch to batch and repeat to repeat, so a load spike
    on the shared machine hits every runtime alike. One warm-up batch per runtime first."""
    for run in runs.values():
        run(prepared[0][0])
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for repeat in range(repeats):
        total = dict.fromkeys(names, 0.0)
        for index, batch in enumerate(prepared[0]):
            shift = (repeat + index) % len(names)
            for name in names[shift:] + names[:shift]:
                started = time.perf_counter()
                runs[name](batch)
                total[name] += time.perf_counter() - started
        for name in names:
            times[name].append(total[name])
        line = ", ".join(f"{n} {t[-1]:.2f}s" for n, t in times.items())
        print(f"repeat {repeat + 1}/{repeats}: {line}", flush=True)  # noqa: T201
    return times


def measure_quality(runs: dict[str, Runner], tokenizer, inputs: list[str], data_dir: Path, batch_size: int,
                    max_length: int, max_queries: int | None, max_documents: int | None
                    ) -> dict[str, dict[str, dict[str, float]]]:
    """nDCG@10 of every runtime on each collection, and the min cosine of its vectors to torch's."""
    quality: dict[str, dict[str, dict[str, float]]] = {}
    for collection in COLLECTIONS:
        data = subsample(load_beir(data_dir / collection), max_queries, max_documents)
        query_ids, doc_ids = list(data.queries), list(data.corpus)
        queries = batches(tokenizer, [data.queries[q] for q in query_ids], batch_size, inputs, max_length)
        documents = batches(tokenizer, [data.document_text(d) for d in doc_ids], batch_size, inputs, max_length)
        vectors = {name: (encode(run, queries), encode(run, documents)) for name, run in runs.items()}
        reference = np.concatenate(vectors["torch fp32"])
        quality[collection] = {}
        for name, (q, d) in vectors.items():
            both = np.concatenate([q, d])
            cosine = (both * reference).sum(1) / (np.linalg.norm(both, axis=1) * np.linalg.norm(reference, axis=1))
            ndcg = retrieval_metrics(q, d, query_ids, doc_ids, data.qrels)["ndcg_at_10"]
            quality[collection][name] = {"ndcg_at_10": ndcg, "min_cosine": float(cosine.min()),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--short", type=int, default=256, help="short texts (docstring paragraphs; default: 256)")
    parser.add_argument("--long", type=int, default=128, help="long texts (function sources; default: 128)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per runtime (default: 5)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="threads of every runtime (default: 2)")
    parser.add_argument("--max-length", type=int, default=256, help="truncation in tokens (default: 256)")
    parser.add_argument("--model", type=Path, default=None, help="a DumpEmbed folder (default: build K=4 MiniLM)")
    parser.add_argument("--onnx", type=Path, default=None, help="its export-onnx --int8 --openvino folder")
    parser.add_argument("--data-dir", type=Path, default=Path("data"),
                        help="held-out collections and StdlibCodeTrain, the calibration texts "
                             "(scripts/build_datasets.py)")
    parser.add_argument("--no-quality", action="store_true", help="speed only")
    parser.add_argument("--quality-runtimes", nargs="+", default=list(QUALITY_RUNTIMES),
                        help="runtimes scored on the held-out sets besides torch (default: "
                             f"{', '.join(QUALITY_RUNTIMES)})")
    parser.add_argument("--max-queries", type=int, default=None, help="subsample each collection's queries")
    parser.add_argument("--max-documents", type=int, default=None,
                        help="subsample each collection's documents (judged ones are kept)")
    add_output_arguments(parser)
    args = parser.parse_args()
    if record_only(args, SECTION, record_tables, TITLE, ORDER):
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
              "batch_size": args.batch_size, "max_length": args.max_length, "cpu_flags": cpu_flags(), "lengths": {}}
    sources = {"short": (stdlib_docstrings(args.short), "stdlib docstring paragraphs"),
               "long": (stdlib_sources(args.long), "stdlib function sources")}
    for length, (texts, source) in sources.items():
        prepared = batches(tokenizer, texts, args.batch_size, inputs, args.max_length)
        print(f"{length}: {len(texts)} texts", flush=True)  # noqa: T201
        times = measure_speed(runs, prepared, args.repeats)
        result["lengths"][length] = {
            "texts": len(texts), "source": source,
            "mean_tokens": float(np.mean(np.concatenate([b["attention_mask"].sum(1) for b in prepared[0]]))),
            "speed": {name: {"median_s": statistics.median(t), "times": t} for name, t in times.items()}}
        print(f"torch fp32: {len(texts) / statistics.median(times['torch fp32']):.1f} texts/s", flush=True)  # noqa: T201
    if not args.no_quality:
        scored = {name: run for name, run in runs.items() if name == "torch fp32" or name in args.quality_runtimes}
        result["quality"] = measure_quality(scored, tokenizer, inputs, args.data_dir, args.batch_size, args.max_length,
                                            args.max_queries, args.max_documents)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(result, indent=2))
    write_record(SECTION, tables=record_tables(result), commands=[command_line()], machine=machine_info(),
                 date=result["date"], title=TITLE, order=ORDER)
    for table in record_tables(result):
        print(table.caption)  # noqa: T201
        for row in table.rows:
            print(" | ".join(f"{c:.4f}" if isinstance(c, float) else str(c) for c in row))  # noqa: T201


if __name__ == "__main__":
    main()
