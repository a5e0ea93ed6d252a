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

    python scripts/bench/benchmarks.py onnx --model runs/qs/minilm-k4-spectemp128 --onnx runs/qs/onnx --short 128 \
        --long 64 --repeats 5 --max-queries 200 --max-documents 800 --output runs/bench_onnx.json

It writes the BENCHMARKS.md section record of this CPU's class (scripts/bench/results/onnx-<class>.json: onnx-avx2,
onnx-avx512-vnni, onnx-amx, ...; one per class, since the ranking changes with the instruction sets) when it
finishes; --record-only rewrites that record's tables from an existing --output file without measuring anything.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from benchmarks import add_output_arguments, say
from harness import Subparsers, bench_parser

from benches import _serving as serving
from hf_dumpembed.data.assets import default_encoder_path
from hf_dumpembed.data.beir import load_beir
from hf_dumpembed.data.corpora import TRAIN_COLLECTION
from hf_dumpembed.export.artefacts import ONNX_FILE, OPTIMIZED_FILE
from hf_dumpembed.export.onnx import export_onnx
from hf_dumpembed.export.ort_int8 import OrtInt8Options, quantize_onnxruntime_int8
from hf_dumpembed.export.runtimes import Runner, available_runtimes, onnxruntime_runner, spec_of
from hf_dumpembed.model.builder import BuildOptions, build

# One record per CPU class, onnx-<class> ({} in the title: the class), since the runtimes rank differently on each.
SECTION, ORDER, TITLE = "onnx", 15, ("CPU serving on {}: torch (fp32, bf16) vs onnxruntime (fp32, fused, int8) vs "
                                     "OpenVINO (f32, bf16, int8)")
MLP_FP32 = "onnxruntime int8, MLP down fp32"


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    serving.add_serving_arguments(parser, short=256, long=128)
    parser.add_argument("--model", type=Path, default=None, help="a DumpEmbed folder (default: build K=4 MiniLM)")
    parser.add_argument("--onnx", type=Path, default=None, help="its export-onnx --int8 --openvino folder")
    parser.add_argument("--no-quality", action="store_true", help="speed only")
    parser.add_argument("--quality-runtimes", nargs="+", default=None,
                        help="runtimes scored on the held-out sets besides torch fp32 (default: every runtime "
                             "whose arithmetic is not fp32: bf16 and int8)")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> None:
    serving.run_serving(args, measure, ORDER, SECTION, TITLE)


def runners(model_dir: Path, onnx_dir: Path, threads: int, work: Path) -> dict[str, Runner]:
    """Every runtime serve-bench opens for this export, plus the int8 graph with fp32 MLP down-projections
    (`export-onnx --int8-mlp-fp32`), quantised here from the export's fused graph."""
    opened, skipped = available_runtimes(onnx_dir, model_dir, threads)
    for name, why in skipped.items():
        say(f"not measured: {name} ({why})")
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


def measure(args: argparse.Namespace) -> dict:
    """Speed on short and long texts, then nDCG@10 of the runtimes whose arithmetic differs."""
    work = Path(tempfile.mkdtemp(prefix="bench-onnx-"))
    model_dir = args.model or build(default_encoder_path(), work / "k4", BuildOptions(num_dump_tokens=4))
    train = load_beir(args.data_dir / TRAIN_COLLECTION, "train")  # calibration: the training split's both sides
    calibration = [train.document_text(d) for d in train.corpus] + list(train.queries.values())
    onnx_dir = args.onnx or export_onnx(model_dir, work / "k4-onnx", int8=True, openvino=True,
                                        calibration_texts=calibration,
                                        calibration_source=f"{TRAIN_COLLECTION} (documents and queries)").out_dir
    tokenizer, inputs = serving.export_inputs(model_dir, onnx_dir)
    runs = runners(Path(model_dir), Path(onnx_dir), args.threads, work)
    result = serving.new_result(args)
    serving.time_lengths(result, runs, tokenizer, inputs, args)
    if not args.no_quality:
        wanted = args.quality_runtimes or [name for name in runs if arithmetic_differs(name)]
        scored = {name: run for name, run in runs.items() if name == serving.TORCH or name in wanted}
        result["quality"] = serving.measure_quality(scored, tokenizer, inputs, args.data_dir, args.batch_size,
                                                    args.max_length, args.max_queries, args.max_documents)
    return result
