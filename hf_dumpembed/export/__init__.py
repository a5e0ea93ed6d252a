"""Serving forms of a DumpEmbed folder: the stock sentence-transformers export (and its portable form for older
releases), ONNX and OpenVINO graphs, compiled torch, and the check that every load path gives the same vectors."""

from __future__ import annotations

from .._utils.lazy import lazy_attributes

_LAZY = {"export_stock_st": "stock", "export_onnx": "onnx", "check_load_paths": "verify",
         "compile_model": "torch_compiled"}
__all__ = list(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
