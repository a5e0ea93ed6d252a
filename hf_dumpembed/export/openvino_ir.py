"""OpenVINO artefacts of an ONNX export: the IR with f32 weights, its compiled runner, and the calibration inputs
of its int8 version (quantised by NNCF in openvino_int8_static.py).

The int8 IR (``openvino/openvino_model_int8.xml``) is NNCF's post-training quantisation of the f32 IR for
transformers, with activation ranges measured on calibration texts: the folder's fit corpus or the user's own
(``export-onnx --calibration``). Each calibration text is fed alone (no padding), truncated as the tokenizer
truncates, so the ranges are those of real tokens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

DEFAULT_CALIBRATION_SIZE = 300  # NNCF's default subset size; a seeded sample of the calibration texts when more
CALIBRATION_SEED = 0


def openvino_runner(xml: Path, precision: str, output_name: str, threads: int | None = None, streams: bool = False
                    ) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """Compile the IR for CPU at ``precision`` (explicit: OpenVINO picks bf16 by itself on CPUs that have it); the
    runner returns its output ``output_name``. ``streams``: compiled with PERFORMANCE_HINT THROUGHPUT and each batch
    split into one concurrent request per stream OpenVINO made (BENCHMARKS.md, "OpenVINO compile options"); otherwise
    one request per batch, PERFORMANCE_HINT LATENCY when ``threads`` is given."""
    import openvino

    config: dict[str, object] = {"INFERENCE_PRECISION_HINT": precision}
    if threads is not None:
        config.update({"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"})
    if streams:
        config["PERFORMANCE_HINT"] = "THROUGHPUT"
    compiled = openvino.Core().compile_model(str(xml), "CPU", config)
    if not streams:
        output = compiled.output(output_name)
        return lambda batch: compiled(batch)[output]
    # Plain requests, never the compiled model's own one beside them, and no Python callbacks: OpenVINO 2026.4
    # crashed on the first and hung on the second.
    requests = [compiled.create_infer_request() for _ in range(int(compiled.get_property("NUM_STREAMS")))]

    def split(batch: dict[str, np.ndarray]) -> np.ndarray:
        rows = len(next(iter(batch.values())))
        bounds = np.linspace(0, rows, min(len(requests), rows) + 1).astype(int)
        started = list(zip(requests, bounds[:-1], bounds[1:], strict=False))
        for request, start, stop in started:
            request.start_async({name: np.ascontiguousarray(value[start:stop]) for name, value in batch.items()})
        for request, _, _ in started:
            request.wait()
        return np.concatenate([request.get_tensor(output_name).data.copy() for request, _, _ in started])

    return split


def convert_openvino(onnx_path: Path, xml: Path) -> None:
    """OpenVINO IR with f32 weights (the inference precision is chosen when compiling it)."""
    import openvino

    model = openvino.convert_model(str(onnx_path))
    xml.parent.mkdir(parents=True, exist_ok=True)
    openvino.save_model(model, str(xml), compress_to_fp16=False)


def calibration_sample(texts: Sequence[str], limit: int = DEFAULT_CALIBRATION_SIZE) -> list[str]:
    """All non-blank ``texts`` up to ``limit``, else a seeded sample of ``limit`` of them (in their order)."""
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        raise ValueError("the calibration texts are empty (or blank); give the texts the model will embed, e.g. "
                         "its fit corpus: export-onnx --calibration PATH.")
    if len(texts) <= limit:
        return texts
    keep = np.sort(np.random.default_rng(CALIBRATION_SEED).choice(len(texts), size=limit, replace=False))
    return [texts[i] for i in keep]


def calibration_inputs(tokenizer, texts: Sequence[str], inputs: list[str]) -> list[dict[str, np.ndarray]]:
    """One graph input per text (batch of one, unpadded, truncated at the tokenizer's maximum length)."""
    items = []
    for text in texts:
        encoded = tokenizer([text], truncation=True, return_tensors="np")
        items.append({name: encoded[name].astype(np.int64) for name in inputs})
    return items
