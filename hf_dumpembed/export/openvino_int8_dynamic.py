"""OpenVINO int8 without calibration: int8 weights, activations quantised at run time.

NNCF's data-free weight compression (``compress_weights``, ``INT8_SYM``: one scale per output channel) stores the
matrix products' weights in int8; OpenVINO's CPU plugin then quantises each product's activations to int8 as it runs
(dynamic quantisation, one scale per group of ``group_size`` input channels) and multiplies in int8 (VNNI /
AMX-INT8). Nothing is calibrated, so no texts are needed and no activation range is guessed: the vectors stay closer
to f32 than static int8's, and the speed lies between bf16 and static int8 (BENCHMARKS.md, "OpenVINO int8 options").

The group size is the largest of ``GROUP_SIZES`` that divides the input width of every compressed product (a group
that does not divide one turns dynamic quantisation off there: weight decompression only, no faster than f32). It is
stored in the IR's ``runtime_options`` (rt_info), which OpenVINO applies whenever the IR is compiled, so stock
loaders (sentence-transformers' OpenVINO backend, optimum-intel) get it too; a compile config may override it.
"""

from __future__ import annotations

import time
from pathlib import Path

GROUP_SIZES = (128, 64, 32, 16)
GROUP_SIZE_OPTION = "DYNAMIC_QUANTIZATION_GROUP_SIZE"
RUNTIME_OPTIONS = "runtime_options"  # the rt_info section OpenVINO reads compile options from
COMPRESSION_MODE = "int8_sym"


def weight_input_widths(model) -> list[int]:
    """The input width (channels reduced over) of every matrix product of the OpenVINO ``model`` whose second
    operand is a constant weight."""
    widths = []
    for node in model.get_ordered_ops():
        if node.get_type_name() != "MatMul":
            continue
        weight = node.input_value(1).get_node()
        if weight.get_type_name() != "Constant":
            continue
        shape = list(weight.get_output_partial_shape(0).to_shape())
        transposed = bool(node.get_attributes().get("transpose_b", False))
        widths.append(int(shape[-1] if transposed else shape[-2]))
    return widths


def dynamic_group_size(widths: list[int]) -> int:
    """The largest of GROUP_SIZES dividing every width in ``widths``; ValueError when none does (or no product has
    a constant weight), since dynamic quantisation would then run nowhere."""
    if not widths:
        raise ValueError("the IR has no matrix product with a constant weight: there is nothing to compress to int8.")
    for size in GROUP_SIZES:
        if all(width % size == 0 for width in widths):
            return size
    raise ValueError(f"no dynamic-quantisation group size of {GROUP_SIZES} divides the products' input widths "
                     f"{sorted(set(widths))}, so OpenVINO would not quantise the activations at run time; use "
                     "static int8 (--int8 --openvino) or bf16 (--precision bf16).")


def compress_openvino_int8(xml: Path, out_xml: Path) -> dict[str, object]:
    """Write ``out_xml``: the f32 IR ``xml`` with int8 weights (NNCF, data-free) and its dynamic-quantisation group
    size in rt_info; the manifest entry (file, mode, group size, products compressed, seconds)."""
    import nncf
    import openvino

    started = time.perf_counter()
    model = openvino.Core().read_model(str(xml))
    widths = weight_input_widths(model)
    group_size = dynamic_group_size(widths)
    compressed = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_SYM)
    compressed.set_rt_info(str(group_size), [RUNTIME_OPTIONS, GROUP_SIZE_OPTION])
    out_xml.parent.mkdir(parents=True, exist_ok=True)
    openvino.save_model(compressed, str(out_xml), compress_to_fp16=False)
    return {"file": out_xml.name, "mode": COMPRESSION_MODE, "group_size": group_size, "products": len(widths),
            "seconds": round(time.perf_counter() - started, 2)}
