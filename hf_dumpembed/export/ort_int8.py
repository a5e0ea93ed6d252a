"""onnxruntime int8 of an exported graph, with the choices that decide its speed and quality.

The default (``OrtInt8Options()``) is onnxruntime's ``quantize_dynamic`` of the fused graph: int8 weights (one scale
per output channel), activations quantised per tensor at run time, for the MatMul/Gemm nodes. In the fused graph the
query/key/value projection sits inside the ``Attention`` contrib op, which ``quantize_dynamic`` leaves in fp32 (its
``QAttention`` takes neither the dynamo graph's additive attention bias nor ``qkv_hidden_sizes``), so about a quarter
of an encoder layer's weight products stay fp32. The choices:

* ``attention_inputs``: quantise those projections too. The int8 graph is then fused from the portable graph down to
  ``MultiHeadAttention`` only (every other onnxruntime fusion is the same), so the projections stay MatMul nodes;
* ``reduce_range``: 7-bit weights. Without VNNI, onnxruntime's u8 x s8 kernels (AVX2, AVX-512) add pairs of products
  in 16 bits (``vpmaddubsw``), which can saturate; 7-bit weights cannot;
* ``mlp_fp32``: each layer's MLP down-projection stays fp32 (its input, the activated MLP states, carries the
  outlier features that one scale per tensor rounds away);
* ``block_size``: instead of ``quantize_dynamic``, onnxruntime's ``MatMulNBits`` with 8-bit weights in blocks of
  ``block_size`` input features (one scale each) and int8 compute (accuracy level 4: activations quantised per
  block at run time too), far closer to fp32 than one scale per tensor; its speed depends on the CPU's kernels.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from .onnx_optimize import fuse_for_onnxruntime

logger = logging.getLogger(__name__)

BLOCK_SIZES = (16, 32, 64, 128, 256)
BLOCKWISE_ACCURACY_LEVEL = 4  # MatMulNBits: int8 compute (activations quantised per block)


@dataclass(frozen=True)
class OrtInt8Options:
    """How onnxruntime quantises the graph (see the module docstring); the defaults are today's model_int8.onnx."""

    attention_inputs: bool = False
    reduce_range: bool = False
    mlp_fp32: bool = False
    block_size: int | None = None

    def __post_init__(self) -> None:
        if self.block_size is not None and self.block_size not in BLOCK_SIZES:
            raise ValueError(f"the int8 block size must be one of {', '.join(map(str, BLOCK_SIZES))}, "
                             f"not {self.block_size}.")
        if self.block_size is not None and self.reduce_range:
            raise ValueError("reduce_range applies to per-channel int8 (quantize_dynamic); block-wise int8 "
                             "(MatMulNBits) has its own scales per block: choose one of the two.")

    def describe(self) -> str:
        """One line naming every choice that differs from the defaults ("defaults" when none does)."""
        parts = []
        if self.block_size is not None:
            parts.append(f"block-wise int8 (MatMulNBits, blocks of {self.block_size})")
        if self.attention_inputs:
            parts.append("attention inputs quantised")
        if self.reduce_range:
            parts.append("7-bit weights")
        if self.mlp_fp32:
            parts.append("MLP down-projections fp32")
        return "; ".join(parts) or "defaults"


def weight_products(path: Path) -> list[tuple[str, int, int, bool]]:
    """The graph's MatMul/Gemm nodes with a constant 2-D weight: (name, rows, columns, transposed)."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    shapes = {tensor.name: list(tensor.dims) for tensor in graph.initializer}
    found = []
    for node in graph.node:
        if node.op_type not in ("MatMul", "Gemm") or len(shapes.get(node.input[1], ())) != 2:
            continue
        rows, columns = shapes[node.input[1]]
        transposed = node.op_type == "Gemm" and any(a.name == "transB" and a.i for a in node.attribute)
        found.append((node.name, rows, columns, transposed))
    return found


def down_projections(path: Path) -> list[str]:
    """Names of the MatMul/Gemm nodes whose constant weight maps more features to fewer (rows > columns): the MLP
    output projection of every layer (and a reducing projection head). Their inputs, the activated MLP states,
    carry the outlier features that per-tensor int8 activations round away (Bondarenko et al. 2021, "Understanding
    and Overcoming the Challenges of Efficient Transformer Quantization"; Dettmers et al. 2022, "LLM.int8()")."""
    return [name for name, rows, columns, transposed in weight_products(path)
            if ((columns > rows) if transposed else (rows > columns))]


def quantize_dynamic_int8(source: Path, target: Path, exclude: Sequence[str] = (), reduce_range: bool = False
                          ) -> None:
    """onnxruntime dynamic quantisation of MatMul/Gemm: QInt8 weights with one scale per output channel (one per
    tensor lost too much: min cosine 0.88 vs 0.98 on all-MiniLM-L6-v2); ``exclude`` names nodes kept in fp32."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True,
                     reduce_range=reduce_range, op_types_to_quantize=["MatMul", "Gemm"],
                     nodes_to_exclude=list(exclude))


def quantize_blockwise_int8(source: Path, target: Path, block_size: int, exclude: Sequence[str] = ()) -> None:
    """onnxruntime's MatMulNBits: symmetric 8-bit weights in blocks of ``block_size`` input features, int8 compute
    (accuracy level 4); ``exclude`` names nodes kept in fp32."""
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(str(source), bits=8, block_size=block_size, is_symmetric=True,
                                     accuracy_level=BLOCKWISE_ACCURACY_LEVEL, nodes_to_exclude=list(exclude))
    quantizer.process()
    quantizer.model.save_model_to_file(str(target), use_external_data_format=False)


def int8_source(portable: Path, fused: Path | None, options: OrtInt8Options, work: Path) -> Path:
    """The graph to quantise: the fused graph (or, without one, the portable graph); with ``attention_inputs``, the
    portable graph fused down to MultiHeadAttention, written under ``work``."""
    if not options.attention_inputs:
        return fused or portable
    source = work / f"{portable.stem}_projections_apart.onnx"
    fuse_for_onnxruntime(portable, source, attention_projections_apart=True)
    return source


def quantize_onnxruntime_int8(portable: Path, fused: Path | None, target: Path,
                              options: OrtInt8Options | None = None) -> dict[str, object]:
    """Write ``target``, the onnxruntime int8 graph of the export (``portable``: model.onnx; ``fused``: its fused
    graph, or None) quantised with ``options``; returns what the manifest records."""
    options = options or OrtInt8Options()
    with tempfile.TemporaryDirectory(prefix="ort-int8-", dir=target.parent) as work:
        source = int8_source(portable, fused, options, Path(work))
        products = weight_products(source)
        exclude = down_projections(source) if options.mlp_fp32 else []
        logger.info("Quantising %s to int8 (%s) ...", source.name, options.describe())
        if options.block_size is None:
            quantize_dynamic_int8(source, target, exclude, options.reduce_range)
        else:
            quantize_blockwise_int8(source, target, options.block_size, exclude)
    # the file it was quantised from (with attention_inputs: the portable graph, fused again with the projections apart)
    return {"file": target.name, "source": (portable if options.attention_inputs else source).name,
            "options": asdict(options),
            "options_text": options.describe(), "fp32_nodes": exclude,
            "quantised_products": len(products) - len(exclude)}
