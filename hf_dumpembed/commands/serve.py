"""``hf-dumpembed serve-bench``: which runtime of an ONNX export is fastest on this machine, within tolerance."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from .._utils.console import say
from . import add_command, add_trust_flag
from .arguments import FiniteFloat

DESCRIPTION = """\
Time every runtime EXPORT (an `hf-dumpembed export-onnx` folder) can be served with, on this machine: torch fp32 and
bf16 (the model folder it was exported from: --model, default the source the export recorded), eager and compiled
(inductor, frozen weights, dynamic shapes), onnxruntime (model.onnx, the fused model_optimized.onnx,
model_int8.onnx) and OpenVINO (the IR at f32 and bf16 precision, the NNCF static int8 IR and the dynamic int8 IR,
each at f32 and bf16 precision for what stays float), whichever the export carries and this environment has
installed. Every runtime gets the same length-sorted batches of short texts (stdlib docstring paragraphs) and long
ones (stdlib function sources), or of --texts; timing is interleaved per batch and each time is a median over
repeats (at least 3, until every runtime has --seconds per length). Each runtime's vectors are compared with torch
fp32's (the export's tolerances: fp32 max |Δ| <= 1e-4, bf16 / int8 min cosine >= 0.99 / 0.95). The first pass over
the texts (untimed; where compiled runtimes compile) and opening each runtime are recorded in seconds beside the
speeds.

Prints the table and the recommendation (the fastest runtime within tolerance, geometric mean over the lengths,
naming those within 10% of it, which one run does not order: rerun to see whether the order holds) and records
both with the CPU's instruction sets (AVX2, AVX-512 VNNI, AVX512-BF16, AMX) in EXPORT/onnx_export.json
("serve_bench") and a section of EXPORT/README.md, replacing an earlier measurement (--no-record: print only).
Run it on the machine that will serve: the ranking changes with the CPU and the text length. Parity bounds how
far the vectors move, not nDCG: before serving an int8 graph, measure retrieval quality on held-out data.
Needs pip install 'hf_dumpembed[onnx]' (and '[openvino]' for the OpenVINO runtimes; a C++ compiler for the
compiled torch runtimes).
"""


def _serve_bench(args: argparse.Namespace) -> None:
    from ..export.serve_bench import MeasureOptions, record_in_export, serve_bench

    texts = None
    if args.texts is not None:
        from ..projections.corpus import read_corpus

        texts = read_corpus(args.texts, max_texts=args.max_texts).texts
    options = MeasureOptions(**{name: getattr(args, name) for name in MeasureOptions.__dataclass_fields__})
    bench = serve_bench(args.export, args.model, options, texts=texts, runtimes=args.runtime,
                        trust_remote_code=args.trust_remote_code, progress=say)
    say(bench.describe().rstrip())
    if args.output:
        Path(args.output).write_text(json.dumps(bench.to_json(), indent=2) + "\n")
        say(f"Wrote {args.output}")
    if not args.no_record:
        record_in_export(args.export, bench, recorded_command(args))
        say(f"Recorded in {args.export}/onnx_export.json (serve_bench) and {args.export}/README.md")


def recorded_command(args: argparse.Namespace) -> str:
    """The command as the export records it: the folder as ``EXPORT`` and the model as ``MODEL`` (this machine's
    paths mean nothing elsewhere), with the flags that change what is measured."""
    from ..export.serve_bench import MeasureOptions

    parts = ["hf-dumpembed", "serve-bench", "EXPORT"] + (["--model", "MODEL"] if args.model else [])
    defaults = MeasureOptions()
    for name in MeasureOptions.__dataclass_fields__:
        value = getattr(args, name)
        if value is not None and value != getattr(defaults, name):
            parts += [f"--{name.replace('_', '-')}", str(value)]
    if args.texts is not None:
        parts += ["--texts", "TEXTS"]
    for name in args.runtime or []:
        parts += ["--runtime", name]
    return shlex.join(parts)


def add_measuring_arguments(parser: argparse.ArgumentParser) -> None:
    """What is timed, on what, how long (defaults: ``MeasureOptions``)."""
    from ..export.runtimes import RUNTIME_NAMES
    from ..export.serve_bench import MeasureOptions

    defaults = MeasureOptions()
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of every runtime (default: the CPUs this process may use)")
    parser.add_argument("--seconds", type=FiniteFloat(minimum=0), default=defaults.seconds,
                        help=f"timing per runtime and length, at least (default: {defaults.seconds:g}; at least 3 "
                             "repeats, so 0 times the 3 repeats only)")
    parser.add_argument("--short", type=int, default=defaults.short,
                        help=f"short texts to time (default: {defaults.short})")
    parser.add_argument("--long", type=int, default=defaults.long,
                        help=f"long texts to time (default: {defaults.long})")
    parser.add_argument("--texts", default=None, metavar="PATH", help="time on these texts instead (.jsonl/.txt, "
                        "BEIR folder, saved HF dataset), as one group")
    parser.add_argument("--max-texts", type=int, default=256, help="with --texts: a seeded sample of at most this "
                        "many (default: 256)")
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size,
                        help=f"texts per batch (default: {defaults.batch_size})")
    parser.add_argument("--max-length", type=int, default=defaults.max_length,
                        help="truncation in tokens (default: the tokenizer's limit, which also caps it)")
    parser.add_argument("--runtime", action="append", default=None, choices=RUNTIME_NAMES, metavar="NAME",
                        help=f"measure only these (repeatable; default: all the export carries): "
                             f"{', '.join(RUNTIME_NAMES)}")


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "serve-bench",
                         "time an ONNX export's runtimes on this machine and record the fastest within tolerance",
                         DESCRIPTION)
    parser.add_argument("export", help="an `hf-dumpembed export-onnx` folder")
    parser.add_argument("--model", default=None, help="the DumpEmbed folder it was exported from (default: the "
                        "source onnx_export.json records, when it is still there; without one, torch is not timed "
                        "and model.onnx is the reference)")
    add_measuring_arguments(parser)
    parser.add_argument("--output", default=None, metavar="FILE", help="also write the measurement as JSON here")
    parser.add_argument("--no-record", action="store_true", help="print only; leave the export's files unchanged")
    add_trust_flag(parser)
    parser.set_defaults(func=_serve_bench)
