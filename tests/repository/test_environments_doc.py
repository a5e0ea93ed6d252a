"""docs/environments.md: OpenVINO's own precision choice on this CPU, and (slow, from the package registry) the
upstream pins that keep sentence-transformers' optimum backends and fastembed out of hf_dumpembed's environment."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

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


ENVIRONMENTS_DOC = Path(__file__).resolve().parents[2] / "docs" / "environments.md"
PIP_LINE = re.compile(r"^~/venvs/([\w-]+)/bin/pip install (.+?)(?:\s+#.*)?$", re.M)


def install_lines() -> dict[str, list[str]]:
    """Environment -> the requirements its `pip install` lines in docs/environments.md name (options dropped)."""
    found: dict[str, list[str]] = {}
    for venv, arguments in PIP_LINE.findall(ENVIRONMENTS_DOC.read_text()):
        words = shlex.split(arguments)
        options = {i + 1 for i, word in enumerate(words) if word == "--index-url"}
        found.setdefault(venv, []).extend(w for i, w in enumerate(words) if not w.startswith("-") and i not in options)
    return found


def test_every_install_line_is_pinned() -> None:
    lines = install_lines()
    assert {"st-onnx", "st-openvino", "fastembed"} <= set(lines), lines
    unpinned = [requirement for requirements in lines.values() for requirement in requirements
                if "==" not in requirement]
    assert not unpinned, f"docs/environments.md installs unpinned requirements (pip may backtrack for long): {unpinned}"


@pytest.mark.slow
@pytest.mark.parametrize("venv", ["st-onnx", "st-openvino", "fastembed"])
def test_each_environments_pinned_lines_resolve_together_quickly(venv: str) -> None:
    """pip's resolver, from the package registry (torch there instead of its CPU index), within 5 minutes."""
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q",
                             *install_lines()[venv]], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
