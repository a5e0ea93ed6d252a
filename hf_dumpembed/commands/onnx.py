"""``hf-dumpembed export-onnx``: the whole embedding model as one ONNX graph (plus int8 and OpenVINO variants)."""

from __future__ import annotations

import argparse

from .._utils.console import say
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
cache is not baked in (see hf_dumpembed/model/onnx_export.py), and the parity check holds the two to the same vectors.

model.onnx uses standard ONNX operators only. model_optimized.onnx (unless --no-fuse) is the same graph with
onnxruntime's transformer fusions (fused attention, skip-LayerNorm, bias-GELU, RMSNorm, rotary embedding): it runs
in onnxruntime only and is the faster one there; it is checked like the others and left out if it disagrees.
--int8 adds model_int8.onnx (onnxruntime dynamic quantisation of the fused graph's matrix products; with
--int8-mlp-fp32 each layer's MLP down-projection stays fp32: closer vectors, slower). --openvino adds
openvino/openvino_model.xml (OpenVINO IR, f32 weights), checked at the inference precision --precision (f32, or bf16:
bfloat16 matrix products on CPUs with AVX512-BF16/AMX); the README shows how to compile it at that precision.
Needs pip install 'hf_dumpembed[onnx]' (and 'hf_dumpembed[openvino]').
"""


def _export_onnx(args: argparse.Namespace) -> None:
    from ..model.onnx_export import export_onnx

    if args.int8_mlp_fp32 and not args.int8:
        raise ValueError("--int8-mlp-fp32 chooses how the int8 graph is quantised; add --int8.")
    if args.precision is not None and not args.openvino:
        raise ValueError("--precision chooses the OpenVINO inference precision; add --openvino.")
    result = export_onnx(args.model, args.out, int8=args.int8, openvino=args.openvino,
                         precision=args.precision or "f32", fuse=not args.no_fuse,
                         int8_mlp_fp32=args.int8_mlp_fp32, overwrite=args.overwrite,
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
    parser.add_argument("--precision", choices=["f32", "bf16"], default=None,
                        help="OpenVINO inference precision to check and document (default: f32)")
    parser.add_argument("--no-fuse", action="store_true",
                        help="skip model_optimized.onnx (onnxruntime's fused graph); int8 then quantises model.onnx")
    parser.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_trust_flag(parser)
    parser.set_defaults(func=_export_onnx)
