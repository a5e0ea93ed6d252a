"""The file names of an ONNX export folder and the graph's output name, one place for the exporter, the runtimes,
the README writer and ``serve-bench`` (no heavy imports: the command line reads them to list its choices)."""

from __future__ import annotations

ONNX_FILE = "model.onnx"
OPTIMIZED_FILE = "model_optimized.onnx"
INT8_FILE = "model_int8.onnx"
MANIFEST_FILE = "onnx_export.json"
OUTPUT_NAME = "sentence_embedding"
OPENVINO_DIR = "openvino"
OPENVINO_FILE = "openvino_model.xml"
OPENVINO_INT8_FILE = "openvino_model_int8.xml"
OPENVINO_INT8_DYNAMIC_FILE = "openvino_model_int8_dynamic.xml"
