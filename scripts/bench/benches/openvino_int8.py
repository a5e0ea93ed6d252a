"""OpenVINO int8: what each NNCF choice does to speed and quality, one option at a time, beside f32 and bf16.

Model and export as in the onnx bench (--model, --onnx: an `export-onnx --openvino` folder; its f32 IR is quantised
here again for every variant). Variants (`hf_dumpembed.export.openvino_int8_static.Int8Options`,
`export-onnx --int8-...`):
NNCF's defaults for transformers (performance preset, SmoothQuant alpha 0.95, 300 calibration texts), then one
choice changed each: the mixed preset; SmoothQuant off / alpha 0.5; 100 / 1,000 calibration texts; each part kept in
float (the projection head, the first and last layers, every layer's attention inputs, every MLP down-projection, the
attention scores); with --accuracy-control, NNCF's accuracy-aware quantisation at a mean-cosine drop of 0.002 on 100
validation texts held back from the calibration ones. Besides NNCF's static int8: the dynamic int8 IR of
`export-onnx --int8-dynamic` (int8 weights, no calibration; OpenVINO quantises the activations at run time).
Calibration texts: a seeded sample of the training split's documents and queries (StdlibCodeTrain, never the
held-out sets). Each variant's IR is written under --work and reused by a later run with the same options (resume).

* quality: nDCG@10 on the held-out collections (mteb's metric code), relative change vs torch fp32, min cosine;
* speed: torch fp32, OpenVINO f32 and bf16, every variant compiled at f32 precision, and the defaults' IR, the
  mixed + float attention inputs IR and the dynamic int8 IR compiled at bf16 precision too (int8 products, bf16 for
  what stays float: only differs from f32 on CPUs with AVX512-BF16/AMX);
  same length-sorted batches, interleaved per batch, medians over --repeats, short and long texts apart.

    python scripts/bench/benchmarks.py openvino-int8 --model runs/qs/minilm-k4-spectemp128 --onnx runs/qs/onnx \
        --short 128 --long 64 --repeats 5 --max-queries 200 --max-documents 400 --output runs/bench_ov_int8.json

It writes the BENCHMARKS.md record of this CPU's class (openvino-int8-<class>: the speed ranking changes with the
instruction sets; the quality columns do not depend on them).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks import Table, add_output_arguments, say
from harness import Subparsers, bench_parser

from benches import _serving as serving
from hf_dumpembed.data.beir import load_beir
from hf_dumpembed.data.corpora import TRAIN_COLLECTION
from hf_dumpembed.export.artefacts import (
    OPENVINO_DIR,
    OPENVINO_FILE,
    OPENVINO_INT8_DYNAMIC_FILE,
    OPENVINO_INT8_FILE,
    OUTPUT_NAME,
)
from hf_dumpembed.export.openvino_int8_dynamic import COMPRESSION_MODE, compress_openvino_int8
from hf_dumpembed.export.openvino_int8_static import SMOOTH_QUANT_OFF, Int8Options, quantize_openvino_int8
from hf_dumpembed.export.openvino_ir import calibration_inputs, calibration_sample, openvino_runner
from hf_dumpembed.export.runtimes import available_runtimes
from hf_dumpembed.export.serve_bench import cpu_flags

SECTION, ORDER, TITLE = "openvino-int8", 17, "OpenVINO int8 options on {}: each NNCF choice, speed and quality"
BASELINES = ("torch fp32", "OpenVINO f32", "OpenVINO bf16")
DEFAULTS_BF16 = "int8 defaults, float parts bf16"
DYNAMIC = "dynamic int8 (int8 weights, activations at run time)"
# Variants also compiled at bf16 inference precision (what stays float runs in bf16: the int8 + bf16 mix that CPUs
# with VNNI and AVX512-BF16 / AMX have fast paths for), by the row name each gets.
BF16_COMPILED = {DEFAULTS_BF16: "defaults",
                 "mixed + float attention inputs, float parts bf16": "mixed + float attention inputs",
                 "dynamic int8, float parts bf16": DYNAMIC}
VARIANTS = {
    "defaults": Int8Options(),
    "preset mixed": Int8Options(preset="mixed"),
    "SmoothQuant off": Int8Options(smooth_quant_alpha=SMOOTH_QUANT_OFF),
    "SmoothQuant 0.5": Int8Options(smooth_quant_alpha=0.5),
    "100 calibration texts": Int8Options(calibration_size=100),
    "1000 calibration texts": Int8Options(calibration_size=1000),
    "float head": Int8Options(ignore=("head",)),
    "float first+last layer": Int8Options(ignore=("first-layer", "last-layer")),
    "float attention inputs": Int8Options(ignore=("attention-inputs",)),
    "float MLP down": Int8Options(ignore=("mlp-down",)),
    "float attention scores": Int8Options(ignore=("attention-scores",)),
    # the two best single choices for quality, together
    "mixed + float attention inputs": Int8Options(preset="mixed", ignore=("attention-inputs",)),
}
ACCURACY_CONTROL = {"accuracy control": Int8Options(max_cosine_drop=0.002)}



def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    serving.add_int8_arguments(parser, "runs/bench_ov_int8", list(VARIANTS),
                               onnx_help="its export-onnx --openvino folder")
    parser.add_argument("--accuracy-control", action="store_true",
                        help="add NNCF's accuracy-aware variant (slow: it re-validates after every quantiser it "
                             "returns to float)")
    serving.add_serving_arguments(parser, short=128, long=64)
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> None:
    serving.run_serving(args, measure, ORDER, SECTION, TITLE, variant_table)


def quantized_variants(xml: Path, work: Path, variants: dict[str, Int8Options], tokenizer, inputs: list[str],
                       texts: list[str]) -> dict[str, dict]:
    """Quantise the IR once per variant under ``work`` (kept when its options match: resume); their manifests."""
    def quantise(options: Int8Options, target: Path) -> dict:
        items = calibration_inputs(tokenizer, calibration_sample(texts, options.texts_needed), inputs)
        entry = quantize_openvino_int8(xml, target, items, options, OUTPUT_NAME)
        say(f"{entry['float_nodes']} nodes kept float")
        return entry

    return serving.cached_variants(work, variants, OPENVINO_INT8_FILE, quantise)


@dataclass(frozen=True)
class DynamicInt8:
    """The dynamic int8 IR as a cached variant: it has no choices of its own (the export picks the group size)."""

    def describe(self, group_size: int | str = "chosen by the export") -> str:
        return f"{COMPRESSION_MODE} weights (data-free), activations quantised in groups of {group_size}"


def dynamic_variant(xml: Path, work: Path) -> dict:
    """The dynamic int8 IR of ``xml`` under ``work`` (reused when there: resume), as a variant's manifest entry."""
    def compress(options: DynamicInt8, target: Path) -> dict:
        entry = compress_openvino_int8(xml, target)
        return {**entry, "options": asdict(options), "float_nodes": "-",
                "options_text": options.describe(entry["group_size"])}

    return serving.cached_variants(work / "dynamic", {DYNAMIC: DynamicInt8()}, OPENVINO_INT8_DYNAMIC_FILE,
                                   compress)[DYNAMIC]


def variant_table(result: dict) -> Table:
    """One row per variant: its options, nodes kept float, quantisation time, nDCG change, min cosine, speed-ups."""
    quality, lengths = result.get("quality", {}), result["lengths"]
    rows = []
    speed_names = next(iter(lengths.values()))["speed"]
    bf16_rows = {name: result["variants"][source] for name, source in BF16_COMPILED.items() if name in speed_names}
    baselines = {n: None for n in BASELINES if n != serving.TORCH}
    for name, entry in {**baselines, **result["variants"], **bf16_rows}.items():
        row = [name, entry["options_text"] if entry else "-", entry["float_nodes"] if entry else "-",
               entry["quantise_seconds"] if entry else "-"]
        if quality and name in next(iter(quality.values())):
            row += [serving.ndcg_change(quality, name), min(quality[c][name]["min_cosine"] for c in quality)]
        else:
            row += ["-", "-"]
        rows.append(row + serving.speedups(lengths, name, (serving.TORCH, "OpenVINO bf16")))
    speed_columns = [c for length in lengths for c in (f"{length} vs torch fp32", f"{length} vs OpenVINO bf16")]
    columns = ["runtime / variant", "options", "float nodes", "quantise s", "mean nDCG@10 change vs torch",
               "min cosine", *speed_columns]
    return Table(columns=columns, rows=rows,
                 caption="Each static variant changes one choice from NNCF's transformer defaults; the dynamic int8 "
                         "rows are the IR of export-onnx --int8-dynamic (no calibration); speed-ups are ratios of "
                         "medians in the same interleaved run (the speed tables below); quality on the held-out "
                         "collections (the nDCG table below)",
                 formats={"quantise s": 0, "mean nDCG@10 change vs torch": "+.2%", "min cosine": 4,
                          **{c: 2 for c in speed_columns}})


def measure(args: argparse.Namespace) -> dict:
    """Every variant quantised (or reused), scored on the held-out sets, then timed beside f32 and bf16."""
    tokenizer, inputs = serving.export_inputs(args.model, args.onnx)
    train = load_beir(args.data_dir / TRAIN_COLLECTION, "train")
    texts = [train.document_text(d) for d in train.corpus] + list(train.queries.values())
    variants = {**VARIANTS, **(ACCURACY_CONTROL if args.accuracy_control else {})}
    variants = serving.chosen_variants(variants, args.variants)
    xml = args.onnx / OPENVINO_DIR / OPENVINO_FILE
    entries = quantized_variants(xml, args.work, variants, tokenizer, inputs, texts)
    entries[DYNAMIC] = dynamic_variant(xml, args.work)
    opened, _ = available_runtimes(args.onnx, args.model, args.threads, names=list(BASELINES))
    runs = {runtime.name: runtime.run for runtime in opened if runtime.name in BASELINES}
    for name, entry in entries.items():
        runs[name] = openvino_runner(Path(entry["path"]), "f32", OUTPUT_NAME, args.threads)
    for name, source in BF16_COMPILED.items():
        if source in entries:
            runs[name] = openvino_runner(Path(entries[source]["path"]), "bf16", OUTPUT_NAME, args.threads)
    native_bf16 = any(flag in cpu_flags() for flag in ("avx512_bf16", "amx_bf16"))
    scored = {name: run for name, run in runs.items()  # the fp32 graphs match torch; bf16 runs as f32 without it
              if name not in ("OpenVINO f32", "OpenVINO bf16") and (native_bf16 or name not in BF16_COMPILED)}
    return serving.variants_result(args, entries, runs, scored, tokenizer, inputs)
