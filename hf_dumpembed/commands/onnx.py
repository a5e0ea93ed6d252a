"""``hf-dumpembed export-onnx``: the whole embedding model as one ONNX graph (plus int8 and OpenVINO variants)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .._utils.console import say
from ..export.onnx import OPENVINO_PRECISIONS
from . import add_trust_flag

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
--int8 adds model_int8.onnx (onnxruntime dynamic quantisation of the fused graph's matrix products; with
--int8-mlp-fp32 each layer's MLP down-projection stays fp32: closer vectors, slower). --openvino adds
openvino/openvino_model.xml (OpenVINO IR, f32 weights), checked at the inference precision --precision (f32, or bf16:
bfloat16 matrix products on CPUs with AVX512-BF16/AMX); the README shows how to compile it at that precision.
--int8 with --openvino also writes openvino/openvino_model_int8.xml: NNCF's static int8 quantisation (weights and
activations), calibrated on a seeded sample of 300 of --calibration's texts or, by default, of the folder's fit
corpus (read again from the path its projection_info records, checked against its sha256; a BEIR folder's queries
join its documents); checked like model_int8.onnx (min cosine >= 0.95). Calibrate on texts like the ones you will
embed (in one check, ranges from code alone left English sentences at min cosine 0.92, refused).
Needs pip install 'hf_dumpembed[onnx]' (and 'hf_dumpembed[openvino]', which brings nncf).
"""


def calibration_corpus(args: argparse.Namespace):
    """--calibration's texts, else the folder's fit corpus (read again and checked against its recorded sha256); a
    BEIR folder gives its queries too (the model embeds both, and int8 ranges from documents alone miss queries')."""
    import dataclasses

    from ..data.beir import is_beir_folder, load_queries
    from ..projections.corpus import read_corpus, recorded_fit_corpus

    try:
        corpus = read_corpus(args.calibration) if args.calibration is not None else recorded_fit_corpus(args.model)
    except ValueError as error:
        if args.calibration is not None:
            raise
        raise ValueError(f"OpenVINO int8 is calibrated on the texts the model will embed, by default its fit "
                         f"corpus. {error} (--calibration PATH)") from None
    if is_beir_folder(corpus.path) and (Path(corpus.path) / "queries.jsonl").exists():
        corpus = dataclasses.replace(corpus, texts=corpus.texts + list(load_queries(corpus.path).values()))
    return corpus


def _export_onnx(args: argparse.Namespace) -> None:
    from ..export.onnx import export_onnx

    if args.int8_mlp_fp32 and not args.int8:
        raise ValueError("--int8-mlp-fp32 chooses how the int8 graph is quantised; add --int8.")
    if args.precision is not None and not args.openvino:
        raise ValueError("--precision chooses the OpenVINO inference precision; add --openvino.")
    if args.calibration is not None and not (args.int8 and args.openvino):
        raise ValueError("--calibration gives the texts OpenVINO int8 is calibrated on; add --int8 --openvino.")
    calibration = calibration_corpus(args) if args.int8 and args.openvino else None
    result = export_onnx(args.model, args.out, int8=args.int8, openvino=args.openvino,
                         precision=args.precision or "f32", fuse=not args.no_fuse,
                         int8_mlp_fp32=args.int8_mlp_fp32, overwrite=args.overwrite,
                         calibration_texts=calibration.texts if calibration else None,
                         calibration_source=calibration.provenance()["path"] if calibration else None,
                         trust_remote_code=args.trust_remote_code)
    say(result.describe())
    say(f"Wrote {result.out_dir}: {', '.join(result.files)}")


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "export-onnx",
        help="export the whole model as one ONNX graph (optionally int8 and OpenVINO)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", help="a DumpEmbed model folder")
    parser.add_argument("out", help="output folder (must not exist or be empty, unless --overwrite)")
    parser.add_argument("--int8", action="store_true", help="also write model_int8.onnx (dynamic int8 quantisation)")
    parser.add_argument("--int8-mlp-fp32", action="store_true",
                        help="with --int8: keep each layer's MLP down-projection in fp32 (its input has outliers)")
    parser.add_argument("--openvino", action="store_true", help="also write the OpenVINO IR (openvino/)")
    parser.add_argument("--precision", choices=list(OPENVINO_PRECISIONS), default=None,
                        help="OpenVINO inference precision to check and document (default: f32)")
    parser.add_argument("--calibration", default=None, metavar="PATH",
                        help="with --int8 --openvino: texts to calibrate OpenVINO int8 on (.jsonl/.txt, BEIR folder, "
                             "saved HF dataset; default: the folder's fit corpus; a seeded sample of 300 is used)")
    parser.add_argument("--no-fuse", action="store_true",
                        help="skip model_optimized.onnx (onnxruntime's fused graph); int8 then quantises model.onnx")
    parser.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_trust_flag(parser)
    parser.set_defaults(func=_export_onnx)
