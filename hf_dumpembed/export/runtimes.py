"""The runtimes an ONNX export can be served with, each as a function of one tokenized batch -> vectors.

One table (``RUNTIMES``) names them all: the torch model in fp32 and in bf16 (the model folder the export was made
from), eager and compiled; the graphs of the export folder in onnxruntime (portable, fused, int8) and in OpenVINO
(the IR compiled at f32 and at bf16 precision, NNCF's int8 IR at f32 and at bf16 precision for the parts left in
float, the latter also with each batch split over OpenVINO's THROUGHPUT streams, and the IR with int8 weights whose
activations OpenVINO quantises at run time, at both precisions). Each
runtime's *arithmetic* (fp32, bf16, int8) says which parity tolerance it is held to (``onnx.MIN_COSINE``,
``onnx.FP32_TOLERANCE``); ``available_runtimes`` opens those whose file and packages are present and says why the
others are left out.

torch bf16 loads the folder with ``dtype=torch.bfloat16``: the backbone's weights and matrix products are bfloat16
(native on CPUs with AVX512-BF16 or AMX and on CUDA; converted in software, and slower, on AVX2-only CPUs); pooling
sums accumulate in fp32 (the pooled vector is then rounded to bf16) and the stored projection (mean, matrix) stays
fp32 buffers.

The compiled torch runtimes (``compiled``) load the folder the same way, then compile its backbone with inductor and
frozen weights (torch_compiled.py, dynamic shapes); they compile on their first batches, which serve-bench's first
pass includes (its ``first_pass_s``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .artefacts import (
    INT8_FILE,
    ONNX_FILE,
    OPENVINO_DIR,
    OPENVINO_FILE,
    OPENVINO_INT8_DYNAMIC_FILE,
    OPENVINO_INT8_FILE,
    OPTIMIZED_FILE,
    OUTPUT_NAME,
)

Runner = Callable[[dict[str, np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class RuntimeSpec:
    """How one runtime is opened: its engine, the file it runs (None: the torch model folder) and its arithmetic."""

    name: str
    engine: str  # "torch", "onnxruntime" or "openvino"
    file: str | None
    arithmetic: str  # "fp32", "bf16" or "int8"
    precision: str | None = None  # torch dtype name, or the OpenVINO inference precision
    compiled: bool = False  # torch: the backbone compiled by inductor (torch_compiled.py)
    streams: bool = False  # OpenVINO: each batch split over the THROUGHPUT streams (openvino_ir.openvino_runner)


RUNTIMES = (
    RuntimeSpec("torch fp32", "torch", None, "fp32", "float32"),
    RuntimeSpec("torch bf16", "torch", None, "bf16", "bfloat16"),
    RuntimeSpec("torch fp32 compiled", "torch", None, "fp32", "float32", compiled=True),
    RuntimeSpec("torch bf16 compiled", "torch", None, "bf16", "bfloat16", compiled=True),
    RuntimeSpec("onnxruntime fp32", "onnxruntime", ONNX_FILE, "fp32"),
    RuntimeSpec("onnxruntime fp32 fused", "onnxruntime", OPTIMIZED_FILE, "fp32"),
    RuntimeSpec("onnxruntime int8", "onnxruntime", INT8_FILE, "int8"),
    RuntimeSpec("OpenVINO f32", "openvino", f"{OPENVINO_DIR}/{OPENVINO_FILE}", "fp32", "f32"),
    RuntimeSpec("OpenVINO bf16", "openvino", f"{OPENVINO_DIR}/{OPENVINO_FILE}", "bf16", "bf16"),
    RuntimeSpec("OpenVINO int8", "openvino", f"{OPENVINO_DIR}/{OPENVINO_INT8_FILE}", "int8", "f32"),
    # the int8 IR with what stays float in bf16 (runs as f32 on CPUs without AVX512-BF16 / AMX)
    RuntimeSpec("OpenVINO int8 bf16", "openvino", f"{OPENVINO_DIR}/{OPENVINO_INT8_FILE}", "int8", "bf16"),
    # the same, each batch split into concurrent requests over OpenVINO's THROUGHPUT streams (same vectors)
    RuntimeSpec("OpenVINO int8 bf16 streams", "openvino", f"{OPENVINO_DIR}/{OPENVINO_INT8_FILE}", "int8", "bf16",
                streams=True),
    # int8 weights, activations quantised at run time (openvino_int8_dynamic.py), at f32 and at bf16 precision
    RuntimeSpec("OpenVINO int8 dynamic", "openvino", f"{OPENVINO_DIR}/{OPENVINO_INT8_DYNAMIC_FILE}", "int8", "f32"),
    RuntimeSpec("OpenVINO int8 dynamic bf16", "openvino", f"{OPENVINO_DIR}/{OPENVINO_INT8_DYNAMIC_FILE}", "int8",
                "bf16"),
)
RUNTIME_NAMES = tuple(spec.name for spec in RUNTIMES)
# The runtimes that compile on their first batches (tens of seconds each): the default test run leaves them out.
COMPILED_RUNTIMES = tuple(spec.name for spec in RUNTIMES if spec.compiled)


def row_cosines(vectors: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """The cosine of each row of ``vectors`` to the same row of ``reference`` (how close a runtime's vectors are)."""
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1)
    return (vectors * reference).sum(axis=1) / np.maximum(norms, 1e-12)


@dataclass(frozen=True)
class Runtime:
    """An opened runtime: its spec, the function that embeds one batch and the seconds opening it took."""

    spec: RuntimeSpec
    run: Runner
    open_s: float = 0.0

    @property
    def name(self) -> str:
        return self.spec.name


def spec_of(name: str) -> RuntimeSpec:
    """The runtime called ``name``; ValueError listing the known names otherwise."""
    for spec in RUNTIMES:
        if spec.name == name:
            return spec
    raise ValueError(f"unknown runtime {name!r}; the runtimes are: {', '.join(RUNTIME_NAMES)}.")


def torch_vectors(model, batch: dict[str, np.ndarray]) -> np.ndarray:
    """A DumpEmbed model's own forward (prefix check included) on ``batch``, as fp32 numpy."""
    import torch

    with torch.inference_mode():
        tensors = {name: torch.from_numpy(value) for name, value in batch.items()}
        return model(**tensors).sentence_embedding.float().numpy()


def torch_runner(model_dir: Path, dtype_name: str, threads: int | None, compiled: bool = False) -> Runner:
    """The DumpEmbed model of ``model_dir`` loaded in ``dtype_name`` (its fp32 head kept), eager or compiled
    (torch_compiled.py), vectors as fp32 numpy."""
    import torch

    from ..remote import DumpEmbedModel

    if threads is not None:
        torch.set_num_threads(threads)
    model = DumpEmbedModel.from_pretrained(model_dir, dtype=getattr(torch, dtype_name)).eval()
    if compiled:
        from .torch_compiled import compile_model

        compile_model(model)
    return lambda batch: torch_vectors(model, batch)


def onnxruntime_runner(path: Path, threads: int | None = None, spinning: bool = True) -> Runner:
    """An onnxruntime CPU session on ``path`` (all graph optimisations; ``spinning=False``: no busy-waiting
    workers, for timing on a CPU shared with other runtimes)."""
    import onnxruntime

    from .onnx_optimize import session_options

    session = onnxruntime.InferenceSession(str(path), session_options(threads, spinning=spinning),
                                           providers=["CPUExecutionProvider"])
    return lambda batch: session.run([OUTPUT_NAME], batch)[0]


def open_runtime(spec: RuntimeSpec, export_dir: Path, model_dir: Path | None, threads: int | None) -> Runner:
    """The runner of ``spec`` on this export (and model folder, for torch)."""
    from .openvino_ir import openvino_runner

    if spec.engine == "torch":
        return torch_runner(model_dir, spec.precision, threads, spec.compiled)
    if spec.engine == "onnxruntime":
        return onnxruntime_runner(export_dir / spec.file, threads, spinning=False)
    return openvino_runner(export_dir / spec.file, spec.precision, OUTPUT_NAME, threads, spec.streams)


def why_unavailable(spec: RuntimeSpec, export_dir: Path, model_dir: Path | None) -> str | None:
    """Why ``spec`` cannot run here (no model folder, file not in the export, package not installed), or None."""
    import importlib.util

    if spec.engine == "torch" and model_dir is None:
        return "no model folder (give --model)"
    if spec.file is not None and not (export_dir / spec.file).is_file():
        return f"{spec.file} is not in the export"
    if importlib.util.find_spec(spec.engine) is None:  # each engine is its package's name
        return f"{spec.engine} is not installed"
    if spec.compiled:
        from . import torch_compiled

        if torch_compiled.compiler_missing(torch_compiled.BACKEND):
            return "no C++ compiler for torch.compile (install g++)"
    return None


def available_runtimes(export_dir: str | Path, model_dir: str | Path | None = None, threads: int | None = None,
                       names: list[str] | None = None) -> tuple[list[Runtime], dict[str, str]]:
    """The runtimes (all of ``RUNTIMES``, or those in ``names``) that can run this export here, opened, in table
    order; and, for each left out, why."""
    export_dir = Path(export_dir)
    model_dir = Path(model_dir) if model_dir is not None else None
    wanted = [spec_of(name) for name in names] if names else list(RUNTIMES)
    opened, skipped = [], {}
    for spec in wanted:
        reason = why_unavailable(spec, export_dir, model_dir)
        if reason is None:
            started = time.perf_counter()
            run = open_runtime(spec, export_dir, model_dir, threads)
            opened.append(Runtime(spec, run, time.perf_counter() - started))
        else:
            skipped[spec.name] = reason
    return opened, skipped
