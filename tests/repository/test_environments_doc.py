"""docs/environments.md: OpenVINO's own precision choice on this CPU, and (slow, from the package registry) the
upstream pins that keep sentence-transformers' optimum backends and fastembed out of hf_dumpembed's environment."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest


def _matmul_model(weights: np.ndarray):
    """A one-MatMul float32 OpenVINO model (no export needed): x (n, d) @ weights."""
    import openvino as ov
    import openvino.opset13 as ops

    x = ops.parameter([-1, weights.shape[0]], ov.Type.f32, name="x")
    return ov.Model([ops.matmul(x, ops.constant(weights), False, False)], [x], "matmul")


def test_openvino_runs_bf16_by_itself_on_a_bf16_cpu_unless_told_f32() -> None:
    openvino = pytest.importorskip("openvino", reason="pip install 'hf_dumpembed[openvino]'")
    core = openvino.Core()
    bf16_cpu = "BF16" in core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    rng = np.random.default_rng(0)
    weights, x = rng.standard_normal((64, 32)).astype(np.float32), rng.standard_normal((8, 64)).astype(np.float32)
    default = core.compile_model(_matmul_model(weights), "CPU")
    f32 = core.compile_model(_matmul_model(weights), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    assert str(f32.get_property("INFERENCE_PRECISION_HINT")) == "<Type: 'float32'>"
    exact = x @ weights
    np.testing.assert_allclose(f32(x)[0], exact, rtol=1e-5, atol=1e-4)
    if bf16_cpu:  # the doc's claim: without the hint, bf16 (here the error is far above float32 rounding)
        assert str(default.get_property("INFERENCE_PRECISION_HINT")) == "<Type: 'bfloat16'>"
        assert np.abs(default(x)[0] - exact).max() > 1e-2
    else:
        assert str(default.get_property("INFERENCE_PRECISION_HINT")) == "<Type: 'float32'>"


def _dry_run(*requirements: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q",
                           *requirements], capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_the_optimum_backends_cannot_share_hf_dumpembeds_transformers() -> None:
    """pip's resolver, from the package registry: sentence-transformers[onnx] with hf_dumpembed's transformers pin
    is impossible (optimum-onnx pins transformers < 4.58)."""
    result = _dry_run("sentence-transformers[onnx]>=6.2", "transformers>=5.24,<6")
    assert result.returncode != 0 and "ResolutionImpossible" in result.stderr, result.stderr[-2000:]
    assert "optimum-onnx" in result.stderr


@pytest.mark.slow
def test_fastembed_wants_an_older_huggingface_hub() -> None:
    result = _dry_run("fastembed==0.9.1", "huggingface-hub>=2")  # older fastembed releases resolve by other pins
    assert result.returncode != 0 and "ResolutionImpossible" in result.stderr, result.stderr[-2000:]
