"""int8 torch through PT2E: the DumpEmbed graph exported by ``torch.export``, quantised statically by torchao's
``X86InductorQuantizer`` (calibrated on texts) and compiled by inductor with frozen weights, whose oneDNN int8 matrix
products use VNNI or AMX-INT8 where the CPU has them.

```python
from transformers import AutoTokenizer
from hf_dumpembed.remote import DumpEmbedModel
from hf_dumpembed.export.torch_pt2e import calibration_texts, quantize_pt2e

model = DumpEmbedModel.from_pretrained("minilm-spectemp")          # fp32: the quantizer starts from fp32 weights
tokenizer = AutoTokenizer.from_pretrained("minilm-spectemp")
texts, source = calibration_texts("minilm-spectemp")             # the fit corpus, else stdlib texts
int8 = quantize_pt2e(model, tokenizer, texts, bf16=True)         # bf16: what stays float runs in bf16 (autocast)
vectors = int8(tokenizer(["a text"], padding=True, return_tensors="np"))   # fp32 numpy, one row per text
```

The steps (torch 2.13 ships no ``torch.ao.quantization`` PT2E any more; it is ``torchao.quantization.pt2e``, the
``serve`` extra: ``pip install 'hf_dumpembed[serve]'``): the graph ONNX exports (``EmbeddingGraph``: backbone, pooling,
projection, L2; no prefix check) is exported with dynamic batch and sequence axes; dead nodes are dropped (BERT's
pooler: its dense + tanh feeds nothing, and a node without users leaves the quantizer's linear-tanh pattern a partition
without an output, an IndexError in torchao 0.18); ``prepare_pt2e`` inserts observers (the default x86 config: int8
activations per tensor, asymmetric; int8 weights per output channel), the calibration texts run through it one at a time
(unpadded, as OpenVINO's static int8 is calibrated), ``convert_pt2e`` folds the weights to int8 and leaves quantise /
dequantise pairs around each linear layer, and ``torch.compile`` with weight freezing (switched on through
``torch._inductor.config.freezing`` around each call, see torch_compiled.py: with the compile option alone the int8
weights stay graph inputs and inductor stops on ``onednn.qlinear_prepack``, which has no fake-tensor kernel) fuses each
pair and its linear layer into one oneDNN int8 matrix product (layer norms, softmax, GELU and the attention products
stay float: fp32, or bf16 with ``bf16=True``). Vectors are held to the int8 tolerance (min cosine 0.95 against fp32,
``onnx.MIN_COSINE``); serve-bench checks it on its texts. A batch of one text runs as two copies (the exported graph's
batch axis starts at 2).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import torch_compiled
from .embedding_graph import EmbeddingGraph, graph_inputs
from .openvino_ir import DEFAULT_CALIBRATION_SIZE, calibration_sample

PT2E_PACKAGE = "torchao"
INSTALL_HINT = "pip install 'hf_dumpembed[serve]' (torchao)"
STDLIB_CALIBRATION = "stdlib docstring paragraphs and function sources (no fit corpus found)"
# The batch the graph is exported on (its sizes are symbols afterwards): texts of several lengths.
EXAMPLE_TEXTS = ("A man is eating food.", "How do I read a file line by line in Python?", "x",
                 "Dense retrieval ranks passages by the cosine similarity of their embeddings, so long inputs matter.")


def require_torchao() -> None:
    """Import torchao's PT2E quantisation, quietly (a CPU install logs the CUDA kernels it cannot load), or raise
    ImportError saying how to install it."""
    quiet = logging.getLogger(PT2E_PACKAGE)
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        import torchao.quantization.pt2e.quantize_pt2e  # noqa: F401
    except ImportError as error:
        raise ImportError(f"torch int8 through PT2E needs torchao's quantizer: {INSTALL_HINT}. ({error})") from None
    finally:
        quiet.setLevel(level)


def calibration_texts(model_dir: str | Path, limit: int = DEFAULT_CALIBRATION_SIZE) -> tuple[list[str], str]:
    """A seeded sample of ``limit`` texts to calibrate on and where they come from: the folder's fit corpus (a BEIR
    folder's queries with it), found as ``export-onnx`` finds it; else stdlib docstring paragraphs and function
    sources from the end of the stdlib (serve-bench times the first ones)."""
    from ..data.beir import is_beir_folder, load_queries
    from ..data.sample_texts import stdlib_docstrings, stdlib_sources
    from ..projections.corpus import recorded_fit_corpus

    try:
        corpus = recorded_fit_corpus(model_dir)
    except ValueError:
        texts = stdlib_docstrings(4000)[-2 * limit // 3:] + stdlib_sources(2000)[-limit // 3:]
        return calibration_sample(texts, limit), STDLIB_CALIBRATION
    texts = list(corpus.texts)
    if is_beir_folder(corpus.path) and (Path(corpus.path) / "queries.jsonl").exists():
        texts += list(load_queries(corpus.path).values())
    return calibration_sample(texts, limit), f"the fit corpus ({Path(corpus.path).name})"


def as_tensors(batch: dict[str, Any], inputs: Sequence[str]) -> list[torch.Tensor]:
    """The graph's inputs of a tokenizer batch (numpy or torch) as int64 tensors, a lone row doubled."""
    tensors = [torch.as_tensor(np.asarray(batch[name]), dtype=torch.int64) for name in inputs]
    return [t.expand(2, -1).contiguous() if t.shape[0] == 1 else t for t in tensors]


@dataclass
class Pt2eInt8:
    """A quantised, compiled DumpEmbed graph: call it on a tokenizer batch (the ``inputs`` it names) for fp32 numpy
    vectors. The first call compiles (freezing on; under bf16 autocast with ``bf16``)."""

    compiled: Any
    inputs: list[str]
    bf16: bool
    calibrated_on: int

    def __call__(self, batch: dict[str, Any]) -> np.ndarray:
        rows = int(np.asarray(batch[self.inputs[0]]).shape[0])
        with torch.no_grad(), torch._inductor.config.patch(freezing=True), \
                torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            vectors = self.compiled(*as_tensors(batch, self.inputs))
        return vectors[:rows].float().numpy()


def exported_graph(model, tokenizer, inputs: list[str]) -> torch.fx.GraphModule:
    """``EmbeddingGraph`` of ``model`` exported with dynamic batch and sequence axes, dead nodes dropped."""
    graph = EmbeddingGraph(model, "token_type_ids" in inputs).eval()
    example = tokenizer(list(EXAMPLE_TEXTS), padding=True, truncation=True, return_tensors="pt")
    args = tuple(example[name].to(torch.int64) for name in inputs)
    axes = tuple({0: torch.export.Dim.AUTO, 1: torch.export.Dim.AUTO} for _ in inputs)
    with torch.no_grad():
        module = torch.export.export(graph, args, dynamic_shapes=axes, strict=False).module()
    module.graph.eliminate_dead_code()
    module.recompile()
    return module


def quantize_pt2e(model, tokenizer, texts: Sequence[str], *, bf16: bool = False, backend: str | None = None
                  ) -> Pt2eInt8:
    """``model`` (a DumpEmbedModel in fp32) exported, quantised to static int8 with ranges from ``texts`` (each fed
    alone, truncated as ``tokenizer`` truncates) and compiled; see the module docstring. ValueError for a model that
    is not fp32 or a folder whose prompt is composed inside the model (no graph to export)."""
    require_torchao()
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer,
        get_default_x86_inductor_quantization_config,
    )

    dtype = next(model.backbone.parameters()).dtype
    if dtype != torch.float32:
        raise ValueError(f"PT2E quantises from fp32 weights; this model is loaded in {dtype}: load it without dtype "
                         "(bf16=True keeps what stays float in bf16).")
    if model.config.prompt_mode is not None:
        raise ValueError("this folder composes its prompt inside the model (prompt_mode), which has no exportable "
                         "graph; serve it with torch (compile_model) instead.")
    calibration = [t for t in texts if t and t.strip()]
    if not calibration:
        raise ValueError("the calibration texts are empty (or blank); give texts like the ones the model will embed.")
    inputs = graph_inputs(model, tokenizer)
    quantizer = X86InductorQuantizer()
    quantizer.set_global(get_default_x86_inductor_quantization_config())
    prepared = prepare_pt2e(exported_graph(model, tokenizer, inputs), quantizer)
    with torch.no_grad():
        for text in calibration:
            prepared(*as_tensors(tokenizer([text], truncation=True, return_tensors="pt"), inputs))
    converted = convert_pt2e(prepared)
    compiled = torch.compile(converted, dynamic=True, backend=backend or torch_compiled.BACKEND)
    return Pt2eInt8(compiled, inputs, bf16, len(calibration))
