"""``hf-dumpembed export-onnx``: the whole embedding model as one ONNX graph (plus int8 and OpenVINO variants)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .._utils.console import say
from ..export.onnx import OPENVINO_PRECISIONS
from ..export.openvino_int8_static import DEFAULT_PRESET, IGNORABLE, PRESETS, SMOOTH_QUANT_OFF
from ..export.openvino_ir import DEFAULT_CALIBRATION_SIZE
from ..export.ort_int8 import BLOCK_SIZES
from . import add_command, add_trust_flag
from .arguments import FiniteFloat

DESCRIPTION = """\
Export MODEL (a DumpEmbed folder) as OUT/model.onnx: one graph from the tokenizer's output to the final embedding
(backbone -> pooling -> projection -> L2), inputs input_ids, attention_mask (and token_type_ids when the backbone
uses them), output sentence_embedding, dynamic batch and sequence length, left or right padding. The tokenizer files
are saved next to it (they prepend the [DUMP] tokens), with a README showing onnxruntime, fastembed and OpenVINO use.

Every graph written is run on sample texts and compared with the torch model; the largest difference is printed
and a graph beyond tolerance is refused (nothing is written): fp32 max |Δ| <= 1e-4, int8 and bf16 min cosine >=
0.95 / 0.99. Models that compose a prompt inside the model (--prompt) cannot be exported. A decoder's graph computes
its constant prefix (BOS, [DUMP] tokens) on every input, as the tokenizer output carries it; the torch model's prefix
cache is not baked in (see hf_dumpembed/export/onnx.py), and the parity check holds the two to the same vectors.

model.onnx uses standard ONNX operators only. model_optimized.onnx (unless --no-fuse) is the same graph with
onnxruntime's transformer fusions (fused attention, skip-LayerNorm, bias-GELU, RMSNorm, rotary embedding): it runs
in onnxruntime only and is the faster one there; it is checked like the others and left out if it disagrees.
--int8 adds model_int8.onnx (onnxruntime dynamic quantisation of the fused graph's matrix products, whose fused
attention keeps its query/key/value projection in fp32). Its choices: --int8-attention-inputs (quantise those
projections too: the int8 graph is fused with them apart), --int8-reduce-range (7-bit weights: no 16-bit saturation
in the u8 x s8 kernels of CPUs without VNNI), --int8-mlp-fp32 (each layer's MLP down-projection stays fp32: closer
vectors, slower), --int8-block-size N (MatMulNBits: 8-bit weights with a scale per block of N input features,
activations quantised per block: far closer vectors; its speed depends on the CPU). --openvino adds
openvino/openvino_model.xml (OpenVINO IR, f32 weights), checked at the inference precision --precision (f32, or bf16:
bfloat16 matrix products on CPUs with AVX512-BF16/AMX); the README shows how to compile it at that precision.
--int8 with --openvino also writes openvino/openvino_model_int8.xml: NNCF's static int8 quantisation (weights and
activations), calibrated on a seeded sample of --calibration-size (300) of --calibration's texts or, by default, of
the folder's fit corpus (read again from the path its projection_info records, checked against its sha256; a BEIR
folder's queries join its documents); checked like model_int8.onnx (min cosine >= 0.95). Calibrate on texts like the
ones you will embed (in one check, ranges from code alone left English sentences at min cosine 0.92, refused).
NNCF's choices: --int8-preset (performance: symmetric activations; mixed: asymmetric), --int8-smooth-quant
(SmoothQuant alpha of the matrix products, default NNCF's 0.95, or off), --int8-float (parts kept in float, found by
the graph's structure: head, first-layer, last-layer, attention-inputs, mlp-down, attention-scores) and
--int8-accuracy-control DROP (NNCF's accuracy-aware quantisation: quantisers go back to float until the mean cosine
to the f32 IR's vectors on 100 texts held back from the calibration sample is within DROP of 1; slow). What each did
on a trained MiniLM is in BENCHMARKS.md (OpenVINO int8 options); the options used are recorded in onnx_export.json
and the README. --int8-dynamic with --openvino writes openvino/openvino_model_int8_dynamic.xml: the IR's weights in
int8 (NNCF's data-free weight compression, no calibration texts) and OpenVINO quantising each product's activations
at run time on CPUs with VNNI / AMX (the group size stored in the IR, so stock loaders use it too): vectors closer
to f32 than static int8's; on a VNNI CPU at bf16 precision faster than bf16, a little slower than static int8.
Needs pip install 'hf_dumpembed[onnx]' (and 'hf_dumpembed[openvino]', which brings nncf).
"""


# What to pass when the fit corpus cannot be read again (the end of recorded_fit_corpus's refusal).
CALIBRATION_WAY_OUT = ("give texts like the ones the model will embed (the fit corpus, where you have it) with "
                       "--calibration PATH, or use --int8-dynamic without --int8, whose OpenVINO int8 needs no texts")


def calibration_corpus(args: argparse.Namespace):
    """--calibration's texts, else the folder's fit corpus (read again and checked against its recorded sha256); a
    BEIR folder gives its queries too (the model embeds both, and int8 ranges from documents alone miss queries')."""
    import dataclasses

    from ..data.beir import is_beir_folder, load_queries
    from ..projections.corpus import read_corpus, recorded_fit_corpus

    try:
        corpus = read_corpus(args.calibration) if args.calibration is not None else recorded_fit_corpus(
            args.model, instead=CALIBRATION_WAY_OUT)
    except ValueError as error:
        if args.calibration is not None:
            raise
        raise ValueError(f"OpenVINO int8 is calibrated on the texts the model will embed, by default its fit "
                         f"corpus. {error}") from None
    if is_beir_folder(corpus.path) and (Path(corpus.path) / "queries.jsonl").exists():
        corpus = dataclasses.replace(corpus, texts=corpus.texts + list(load_queries(corpus.path).values()))
    return corpus


# Each NNCF option's field (hf_dumpembed.export.openvino_int8_static.Int8Options) and the flag that sets it.
NNCF_FLAGS = {"preset": "--int8-preset", "smooth_quant_alpha": "--int8-smooth-quant",
              "calibration_size": "--calibration-size", "ignore": "--int8-float",
              "max_cosine_drop": "--int8-accuracy-control"}


# --int8-smooth-quant: an alpha in [0, 1] (Int8Options checks it too, for Python callers), or ``off``.
smooth_quant_alpha = FiniteFloat(0, 1, words={"off": SMOOTH_QUANT_OFF})


def flags_given(values: dict[str, object], defaults: object, flags: dict[str, str]) -> list[str]:
    """The flags (``flags``: field -> flag) whose value in ``values`` differs from the field's value in
    ``defaults``; found before the options are built, so a flag that cannot apply is named before the options
    check its value (a value outside the flag's range is refused earlier, by the parser)."""
    return [flag for field, flag in flags.items() if values[field] != getattr(defaults, field)]


def int8_options(args: argparse.Namespace):
    """The NNCF options of the command line; ValueError when one differs from its default without --int8
    --openvino (named first: without them none applies), or for a bad value."""
    from ..export.openvino_int8_static import Int8Options

    values = {field: getattr(args, flag[2:].replace("-", "_")) for field, flag in NNCF_FLAGS.items()}
    values["ignore"] = tuple(values["ignore"] or ())
    given = flags_given(values, Int8Options(), NNCF_FLAGS)
    if given and not (args.int8 and args.openvino):
        raise ValueError(f"{', '.join(given)} choose how OpenVINO int8 is quantised; add --int8 --openvino.")
    return Int8Options(**values)


# Each onnxruntime int8 option's field (hf_dumpembed.export.ort_int8.OrtInt8Options) and the flag that sets it.
ORT_INT8_FLAGS = {"attention_inputs": "--int8-attention-inputs", "reduce_range": "--int8-reduce-range",
                  "mlp_fp32": "--int8-mlp-fp32", "block_size": "--int8-block-size"}


def onnxruntime_int8_options(args: argparse.Namespace):
    """The onnxruntime int8 options of the command line; ValueError when one is given without --int8 (named
    first: without it none applies), or for a bad combination."""
    from ..export.ort_int8 import OrtInt8Options

    values = {field: getattr(args, flag[2:].replace("-", "_")) for field, flag in ORT_INT8_FLAGS.items()}
    given = flags_given(values, OrtInt8Options(), ORT_INT8_FLAGS)
    if given and not args.int8:
        raise ValueError(f"{', '.join(given)} choose how model_int8.onnx is quantised; add --int8.")
    return OrtInt8Options(**values)


def _export_onnx(args: argparse.Namespace) -> None:
    from ..export.onnx import export_onnx

    onnxruntime_int8 = onnxruntime_int8_options(args)
    if args.precision is not None and not args.openvino:
        raise ValueError("--precision chooses the OpenVINO inference precision; add --openvino.")
    if args.int8_dynamic and not args.openvino:
        raise ValueError("--int8-dynamic writes an OpenVINO IR (int8 weights, activations quantised at run time); "
                         "add --openvino.")
    if args.calibration is not None and not (args.int8 and args.openvino):
        raise ValueError("--calibration gives the texts OpenVINO int8 is calibrated on; add --int8 --openvino.")
    options = int8_options(args)
    calibration = calibration_corpus(args) if args.int8 and args.openvino else None
    result = export_onnx(args.model, args.out, int8=args.int8, openvino=args.openvino,
                         precision=args.precision or "f32", fuse=not args.no_fuse,
                         onnxruntime_int8=onnxruntime_int8, int8_options=options,
                         int8_dynamic=args.int8_dynamic, overwrite=args.overwrite,
                         calibration_texts=calibration.texts if calibration else None,
                         calibration_source=calibration.provenance()["path"] if calibration else None,
                         trust_remote_code=args.trust_remote_code)
    say(result.describe())
    say(f"Wrote {result.out_dir}: {', '.join(result.files)}")


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "export-onnx",
                         "export the whole model as one ONNX graph (optionally int8 and OpenVINO)", DESCRIPTION)
    parser.add_argument("model", help="a DumpEmbed model folder")
    parser.add_argument("out", help="output folder (must not exist or be empty, unless --overwrite)")
    parser.add_argument("--int8", action="store_true", help="also write model_int8.onnx (dynamic int8 quantisation)")
    parser.add_argument("--int8-attention-inputs", action="store_true",
                        help="with --int8: quantise the attention's query/key/value projections too (the fused "
                             "attention keeps them fp32)")
    parser.add_argument("--int8-reduce-range", action="store_true",
                        help="with --int8: 7-bit weights (no saturation in the u8 x s8 kernels of CPUs without VNNI)")
    parser.add_argument("--int8-mlp-fp32", action="store_true",
                        help="with --int8: keep each layer's MLP down-projection in fp32 (its input has outliers)")
    parser.add_argument("--int8-block-size", type=int, choices=list(BLOCK_SIZES), default=None, metavar="N",
                        help="with --int8: block-wise int8 (MatMulNBits: a scale per N input features, activations "
                             f"quantised per block; N in {', '.join(map(str, BLOCK_SIZES))})")
    parser.add_argument("--openvino", action="store_true", help="also write the OpenVINO IR (openvino/)")
    parser.add_argument("--precision", choices=list(OPENVINO_PRECISIONS), default=None,
                        help="OpenVINO inference precision to check and document (default: f32)")
    parser.add_argument("--calibration", default=None, metavar="PATH",
                        help="with --int8 --openvino: texts to calibrate OpenVINO int8 on (.jsonl/.txt, BEIR folder, "
                             "saved HF dataset; default: the folder's fit corpus; a seeded sample of "
                             "--calibration-size is used)")
    parser.add_argument("--calibration-size", type=int, default=DEFAULT_CALIBRATION_SIZE, metavar="N",
                        help=f"with --int8 --openvino: calibration texts NNCF measures ranges on "
                             f"(default: {DEFAULT_CALIBRATION_SIZE})")
    parser.add_argument("--int8-preset", choices=list(PRESETS), default=DEFAULT_PRESET,
                        help="with --int8 --openvino: NNCF preset (performance: symmetric int8 activations; mixed: "
                             "asymmetric ones; default: performance)")
    parser.add_argument("--int8-smooth-quant", type=smooth_quant_alpha, default=None, metavar="ALPHA|off",
                        help="with --int8 --openvino: SmoothQuant alpha in [0, 1] for the matrix products "
                             "(default: NNCF's 0.95), or off")
    parser.add_argument("--int8-float", nargs="+", choices=list(IGNORABLE), default=None, metavar="PART",
                        help=f"with --int8 --openvino: parts kept in float ({', '.join(IGNORABLE)})")
    parser.add_argument("--int8-accuracy-control", type=FiniteFloat(0, 1, min_inclusive=False, max_inclusive=False),
                        default=None, metavar="DROP",
                        help="with --int8 --openvino: NNCF accuracy-aware quantisation, allowing this drop in mean "
                             "cosine to the f32 vectors on 100 held-back calibration texts, 0 < DROP < 1 (e.g. "
                             "0.002; slow)")
    parser.add_argument("--int8-dynamic", action="store_true",
                        help="with --openvino: also write openvino/openvino_model_int8_dynamic.xml (int8 weights, "
                             "activations quantised by OpenVINO at run time; no calibration texts)")
    parser.add_argument("--no-fuse", action="store_true",
                        help="skip model_optimized.onnx (onnxruntime's fused graph); int8 then quantises model.onnx")
    parser.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_trust_flag(parser)
    parser.set_defaults(func=_export_onnx)
