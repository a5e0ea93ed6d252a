"""onnxruntime-specific graphs of an exported model: transformer fusion, and the session options for CPU serving.

``fuse_for_onnxruntime`` runs onnxscript's onnxruntime fusions (``onnxscript.rewriter.ort_fusions``), the rewrite
rules written for graphs of the torch.onnx dynamo exporter: the decomposed attention becomes onnxruntime's
``Attention`` contrib op, residual + LayerNorm ``SkipLayerNormalization``, bias + erf-GELU ``BiasGelu``. (onnxruntime's
own ``onnxruntime.transformers.optimizer`` looks for the TorchScript exporter's patterns and fuses no attention in
a dynamo graph.) The result runs in onnxruntime only (CPU and CUDA), so the portable standard-op graph is kept too.

``attention_projections_apart`` stops the attention fusion at ``MultiHeadAttention``: the query/key/value projections
stay MatMul nodes (for the int8 graph, whose quantiser leaves the fused ``Attention`` op's projection in fp32; see
ort_int8.py); every other fusion is the same.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

logger = logging.getLogger(__name__)

# Largest single-file ONNX protobuf; bigger graphs keep their weights in a .data file next to it.
SINGLE_FILE_LIMIT = 1_800_000_000


def fuse_for_onnxruntime(source: Path, target: Path, attention_projections_apart: bool = False) -> dict[str, int]:
    """Write the onnxruntime-fused graph of ``source`` to ``target``; returns how often each fusion applied."""
    import onnx_ir
    from onnxscript.rewriter.ort_fusions import optimize_for_ort

    model = onnx_ir.load(str(source))
    with projection_fusion(enabled=not attention_projections_apart):
        model, counts = optimize_for_ort(model)
    size = sum(value.const_value.nbytes for value in model.graph.initializers.values()
               if value.const_value is not None)
    onnx_ir.save(model, str(target), external_data=f"{target.name}.data" if size > SINGLE_FILE_LIMIT else None)
    applied = {name: int(count) for name, count in counts.items() if count}
    logger.info("onnxruntime fusions applied: %s", applied or "none")
    return applied


@contextlib.contextmanager
def projection_fusion(enabled: bool) -> Iterator[None]:
    """With ``enabled=False``, onnxscript's fusion sequence skips its last attention step (``fuse_attention``:
    MultiHeadAttention plus its input projections into one ``Attention`` op) while the block runs."""
    if enabled:
        yield
        return
    from onnxscript.rewriter.ort_fusions import _core

    if not callable(getattr(_core, "fuse_attention", None)):
        raise RuntimeError("this onnxscript's onnxruntime fusions have no fuse_attention step (written against "
                           "onnxscript 0.7), so the attention projections cannot be kept apart; leave them fused "
                           "(drop --int8-attention-inputs) or install onnxscript 0.7.")
    original = _core.fuse_attention
    _core.fuse_attention = lambda model, debug=False: 0
    try:
        yield
    finally:
        _core.fuse_attention = original


def session_options(threads: int | None = None, spinning: bool = True):
    """onnxruntime SessionOptions for CPU serving: all graph optimisations, sequential execution, ``threads``
    intra-op threads (default: the CPUs this process may use); ``spinning=False`` stops idle worker threads from
    busy-waiting, which helps on CPUs shared with other processes."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.intra_op_num_threads = threads or len(os.sched_getaffinity(0))
    options.inter_op_num_threads = 1
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options
