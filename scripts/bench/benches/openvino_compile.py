"""OpenVINO compile options: what the performance hint and static shapes do to the best IRs' speed, beside torch.

Model and export as in the onnx bench (--model, --onnx: an `export-onnx --int8 --openvino` folder). The IRs timed:
the f32 IR at bf16 precision (`OpenVINO bf16`) and NNCF's static int8 IR with what stays float in bf16
(`OpenVINO int8 bf16`), each compiled as serve-bench compiles it (hf_dumpembed.export.openvino_ir.openvino_runner:
the thread count given, PERFORMANCE_HINT LATENCY) and then with one compile option changed:

* `no hint`: the thread count only, OpenVINO's default hint;
* `THROUGHPUT, one request`: PERFORMANCE_HINT THROUGHPUT (OpenVINO chooses the streams; one synchronous request
  per batch, as a caller that does not split its batches gets);
* `THROUGHPUT, batch split over streams`: the same compiled model, each batch cut into as many parts as OpenVINO
  made streams, run as concurrent infer requests (the `OpenVINO int8 bf16 streams` runtime's runner), the vectors
  put back in order;
* `static shapes per bucket`: the IR reshaped to a fixed [batch, length] per length bucket (16, 32, 64, 128, 256
  tokens: a batch is padded to the next bucket and to the full batch size), one compiled model per bucket, LATENCY.

Every variant is fed the same length-sorted batches of the stdlib texts (short: docstring paragraphs; long: function
sources), interleaved per batch with torch fp32 and torch bf16, a warm-up batch each (where the static buckets
compile), medians over --repeats; each variant's vectors are compared with its IR's serve-bench compile on every
batch (min cosine): the options change no arithmetic, so nDCG@10 is that of the serve-bench rows (the onnx bench's
record of the same class).

    python scripts/bench/benchmarks.py openvino-compile --model /tmp/serve/st --onnx /tmp/serve/onnx --short 128 \
        --long 64 --repeats 5 --output runs/bench_ov_compile.json

It writes the BENCHMARKS.md record of this CPU's class (openvino-compile-<class>).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np
from benchmarks import Table, add_output_arguments, say
from harness import Subparsers, bench_parser

from benches import _serving as serving
from hf_dumpembed.export.artefacts import OPENVINO_DIR, OPENVINO_FILE, OPENVINO_INT8_FILE, OUTPUT_NAME
from hf_dumpembed.export.openvino_ir import openvino_runner
from hf_dumpembed.export.runtimes import Runner, available_runtimes, row_cosines

SECTION, ORDER, TITLE = "openvino-compile", 17.5, ("OpenVINO compile options on {}: performance hint and static "
                                                   "shapes per bucket, against torch bf16")
IRS = {"OpenVINO bf16": OPENVINO_FILE, "OpenVINO int8 bf16": OPENVINO_INT8_FILE}
BUCKETS = (16, 32, 64, 128, 256)
BASELINES = ("torch fp32", "torch bf16")


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    serving.add_serving_arguments(parser, short=128, long=64)
    parser.add_argument("--model", type=Path, required=True, help="the DumpEmbed folder the export was made from")
    parser.add_argument("--onnx", type=Path, required=True, help="its export-onnx --int8 --openvino folder")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> None:
    serving.run_serving(args, measure, ORDER, SECTION, TITLE, variant_table=parity_table)


def _compiled(xml: Path, config: dict[str, object]):
    import openvino

    return openvino.Core().compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "bf16", **config})


def no_hint_runner(xml: Path, threads: int) -> Runner:
    """The IR at bf16 precision with the thread count only."""
    compiled = _compiled(xml, {"INFERENCE_NUM_THREADS": threads})
    output = compiled.output(OUTPUT_NAME)
    return lambda batch: compiled(batch)[output]


def throughput_runners(xml: Path, threads: int) -> tuple[Runner, Runner, int]:
    """The IR compiled with the THROUGHPUT hint: one synchronous request per batch, and each batch split over the
    streams as concurrent requests (the `OpenVINO int8 bf16 streams` runtime's runner, a compiled model of its own);
    and the number of streams OpenVINO chose."""
    compiled = _compiled(xml, {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "THROUGHPUT"})
    output = compiled.output(OUTPUT_NAME)
    split = openvino_runner(xml, "bf16", OUTPUT_NAME, threads, streams=True)
    return (lambda batch: compiled(batch)[output]), split, int(compiled.get_property("NUM_STREAMS"))


def static_bucket_runner(xml: Path, threads: int, batch_size: int) -> Runner:
    """One compile per length bucket of the IR reshaped to [batch_size, bucket]; each batch padded to its bucket
    (pad id 0, attention mask 0) and to batch_size rows, the padding rows dropped from the output."""
    import openvino

    core = openvino.Core()
    compiled: dict[int, Callable] = {}

    def runner(batch: dict[str, np.ndarray]) -> np.ndarray:
        rows, length = next(iter(batch.values())).shape
        bucket = next((b for b in BUCKETS if b >= length), length)
        if bucket not in compiled:
            model = core.read_model(str(xml))
            model.reshape({port.get_any_name(): [batch_size, bucket] for port in model.inputs})
            compiled[bucket] = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "bf16",
                                                                 "INFERENCE_NUM_THREADS": threads,
                                                                 "PERFORMANCE_HINT": "LATENCY"})
        padded = {name: np.pad(value, ((0, batch_size - rows), (0, bucket - length))) for name, value in batch.items()}
        padded["attention_mask"][rows:, 0] = 1  # padding rows: one token, so that pooling divides by a non-zero count
        return compiled[bucket](padded)[compiled[bucket].output(OUTPUT_NAME)][:rows]

    return runner


def variant_runners(onnx_dir: Path, threads: int, batch_size: int) -> tuple[dict[str, Runner], dict[str, str]]:
    """Every variant of both IRs, by name, and the IR serve-bench row each is compared with."""
    runs, reference_of = {}, {}
    for base, file in IRS.items():
        xml = onnx_dir / OPENVINO_DIR / file
        runs[base] = openvino_runner(xml, "bf16", OUTPUT_NAME, threads)
        sync, split, streams = throughput_runners(xml, threads)
        variants = {f"{base}, no hint": no_hint_runner(xml, threads),
                    f"{base}, THROUGHPUT, one request ({streams} streams)": sync,
                    f"{base}, THROUGHPUT, batch split over {streams} streams": split,
                    f"{base}, static shapes per bucket": static_bucket_runner(xml, threads, batch_size)}
        runs.update(variants)
        reference_of.update(dict.fromkeys(variants, base))
    return runs, reference_of


def measure(args: argparse.Namespace) -> dict:
    """Speed of torch fp32 / bf16, both IRs as serve-bench compiles them and every variant; the min cosine of each
    variant's vectors to its IR's on the short and long batches."""
    tokenizer, inputs = serving.export_inputs(args.model, args.onnx)
    opened, skipped = available_runtimes(args.onnx, args.model, args.threads, names=list(BASELINES))
    if skipped:
        raise SystemExit(f"cannot run {skipped}")
    runs = {runtime.name: runtime.run for runtime in opened}
    variants, reference_of = variant_runners(args.onnx, args.threads, args.batch_size)
    runs.update(variants)
    result = serving.new_result(args, references=reference_of)
    parity = {}
    for length, texts in serving.length_texts(args).items():
        group = serving.text_group(length, serving.SOURCES[length], texts, tokenizer, args.batch_size, inputs,
                                   args.max_length)
        for batch in group.batches:
            base_vectors = {base: runs[base](batch) for base in IRS}  # each IR's serve-bench compile, run once
            for name, base in reference_of.items():
                cosine = float(row_cosines(runs[name](batch), base_vectors[base]).min())
                parity[name] = min(parity.get(name, 1.0), cosine)
    result["parity"] = parity
    say(f"parity: {parity}")
    serving.time_lengths(result, runs, tokenizer, inputs, args)
    return result


def parity_table(result: dict) -> Table:
    """Per variant: its IR, min cosine to that IR's serve-bench compile, and its speed-ups per length against torch
    bf16 and against the IR as serve-bench compiles it (same run)."""
    lengths = result["lengths"]
    rows = []
    for name in next(iter(lengths.values()))["speed"]:
        if name in BASELINES:
            continue
        base = result["references"].get(name, name)
        cells = [s for length in lengths for s in serving.speedups({length: lengths[length]}, name,
                                                                   ["torch fp32", "torch bf16", base])]
        rows.append([name, result["parity"].get(name, 1.0), *cells])
    columns = ["runtime / compile option", "min cosine to the serve-bench compile"]
    references = ("torch fp32", "torch bf16", "serve-bench compile")
    columns += [f"{length} vs {reference}" for length in lengths for reference in references]
    return Table(columns=columns, rows=rows, formats={c: 2 for c in columns[2:]} | {columns[1]: 5},
                 caption="Speed-ups are ratios of medians in the same interleaved run (the speed tables below); the "
                         "serve-bench compile is the IR at bf16 precision with PERFORMANCE_HINT LATENCY")
