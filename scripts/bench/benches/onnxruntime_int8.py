"""onnxruntime int8: what each quantisation choice does to speed and quality, beside the fp32 graphs and OpenVINO.

Model and export as in the onnx bench (--model, --onnx: an `export-onnx` folder; its model.onnx and fused graph are
quantised here again for every variant). Variants (`hf_dumpembed.export.ort_int8.OrtInt8Options`,
`export-onnx --int8-...`): today's model_int8.onnx (dynamic int8 of the fused graph, whose Attention op keeps the
query/key/value projection in fp32), then: the attention inputs quantised too; 7-bit weights; the MLP
down-projections kept in fp32; two of these together; block-wise int8 (MatMulNBits, 8-bit weights with a scale per
block of 32 or 128 input features, activations quantised per block). Each variant's graph is written under --work
and reused by a later run with the same options (resume).

* quality: nDCG@10 on the held-out collections (mteb's metric code; all of each collection unless --max-queries /
  --max-documents), relative change vs torch fp32, mean and min cosine of the vectors to torch's;
* speed: torch fp32, onnxruntime fp32 fused, OpenVINO bf16 (where the export has it) and every variant; the same
  length-sorted batches, interleaved per batch, medians over --repeats, short and long texts apart.

    python scripts/bench/benchmarks.py onnxruntime-int8 --model runs/qs/minilm-k4-spectemp128 --onnx runs/qs/onnx \
        --short 128 --long 64 --repeats 5 --output runs/bench_ort_int8.json

It writes the BENCHMARKS.md record of this CPU's class (onnxruntime-int8-<class>: the speed ranking changes with the
instruction sets; the quality columns do not depend on them).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from benchmarks import Table, add_output_arguments
from harness import Subparsers, bench_parser

from benches import _serving as serving
from hf_dumpembed.export.artefacts import INT8_FILE, ONNX_FILE, OPTIMIZED_FILE
from hf_dumpembed.export.ort_int8 import OrtInt8Options, quantize_onnxruntime_int8
from hf_dumpembed.export.runtimes import available_runtimes, onnxruntime_runner

SECTION, ORDER, TITLE = ("onnxruntime-int8", 18,
                         "onnxruntime int8 options on {}: each quantisation choice, speed and quality")
BASELINES = ("torch fp32", "onnxruntime fp32 fused", "OpenVINO bf16")
VARIANTS = {
    "defaults": OrtInt8Options(),
    "attention inputs": OrtInt8Options(attention_inputs=True),
    "7-bit weights": OrtInt8Options(reduce_range=True),
    "MLP down fp32": OrtInt8Options(mlp_fp32=True),
    "attention inputs + 7-bit weights": OrtInt8Options(attention_inputs=True, reduce_range=True),
    "attention inputs + MLP down fp32": OrtInt8Options(attention_inputs=True, mlp_fp32=True),
    "block-wise 32": OrtInt8Options(block_size=32),
    "block-wise 128": OrtInt8Options(block_size=128),
    "block-wise 32 + attention inputs": OrtInt8Options(block_size=32, attention_inputs=True),
}



def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    serving.add_int8_arguments(parser, "runs/bench_ort_int8", list(VARIANTS),
                               onnx_help="its export-onnx folder (with model_optimized.onnx)")
    serving.add_serving_arguments(parser, short=128, long=64)
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> None:
    serving.run_serving(args, measure, ORDER, SECTION, TITLE, variant_table)


def variant_table(result: dict) -> Table:
    """One row per variant: its options, products quantised, nDCG change, mean / min cosine, speed-ups."""
    quality, lengths = result.get("quality", {}), result["lengths"]
    rows = []
    for name, entry in {**{n: None for n in BASELINES if n in next(iter(lengths.values()))["speed"]},
                        **result["variants"]}.items():
        row = [name, entry["options_text"] if entry else "-", entry["quantised_products"] if entry else "-"]
        if quality and name in next(iter(quality.values())):
            row += [serving.ndcg_change(quality, name),
                    statistics.mean(quality[c][name]["mean_cosine"] for c in quality),
                    min(quality[c][name]["min_cosine"] for c in quality)]
        else:
            row += ["-", "-", "-"]
        rows.append(row + serving.speedups(lengths, name, (serving.TORCH, "onnxruntime fp32 fused")))
    speed_columns = [c for length in lengths for c in (f"{length} vs torch fp32", f"{length} vs ORT fp32 fused")]
    columns = ["runtime / variant", "options", "int8 products", "mean nDCG@10 change vs torch", "mean cosine",
               "min cosine", *speed_columns]
    return Table(columns=columns, rows=rows,
                 caption="Each variant changes a choice from today's model_int8.onnx; int8 products: weight products "
                         "quantised (the rest run in fp32, the fused Attention's projection included); speed-ups "
                         "are ratios of medians in the same interleaved run (the speed tables below); quality on the "
                         "held-out collections (the nDCG table below; mean cosine averaged over them)",
                 formats={"mean nDCG@10 change vs torch": "+.2%", "mean cosine": 5, "min cosine": 4,
                          **{c: 2 for c in speed_columns}})


def measure(args: argparse.Namespace) -> dict:
    """Every variant quantised (or reused), scored on the held-out sets, then timed beside the baselines."""
    fused = args.onnx / OPTIMIZED_FILE
    if not fused.is_file():
        raise SystemExit(f"{args.onnx} has no {OPTIMIZED_FILE}; export it without --no-fuse.")
    tokenizer, inputs = serving.export_inputs(args.model, args.onnx)
    variants = serving.chosen_variants(VARIANTS, args.variants)
    entries = serving.cached_variants(args.work, variants, INT8_FILE, lambda options, target: quantize_onnxruntime_int8(
        args.onnx / ONNX_FILE, fused, target, options))
    opened, _ = available_runtimes(args.onnx, args.model, args.threads, names=list(BASELINES))
    runs = {runtime.name: runtime.run for runtime in opened}
    for name, entry in entries.items():
        runs[name] = onnxruntime_runner(Path(entry["path"]), args.threads, spinning=False)
    scored = {name: run for name, run in runs.items() if name == serving.TORCH or name in entries}
    return serving.variants_result(args, entries, runs, scored, tokenizer, inputs)
