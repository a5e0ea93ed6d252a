"""Compiled torch: a loaded DumpEmbed model's backbone compiled by inductor with its weights frozen, in place, so that
``st.encode_query`` / ``encode_document`` (or the AutoModel forward) run C++ kernels on CPU and give the same vectors.

```python
import torch
from sentence_transformers import SentenceTransformer
from hf_dumpembed import compile_model

st = SentenceTransformer("minilm-spectemp", trust_remote_code=True, model_kwargs={"dtype": torch.bfloat16})
compile_model(st)                               # dynamic shapes: one compile serves every batch and length
st.encode_query(["a question"])                 # the first call compiles (tens of seconds), later calls are fast
```

What is compiled is the backbone (embeddings and transformer layers, where the time goes); the DumpEmbed forward
around it (the [DUMP] prefix check, pooling, the stored projection, sentence-transformers' ``truncate_dim``) stays
eager, so every load path keeps its behaviour. Inductor's weight freezing folds the weights into the graph as
constants (bf16 weights: oneDNN's prepacked bf16 matrix products, AMX where the CPU has it). It is switched on by
``torch._inductor.config.freezing`` around each call: torch 2.13's dynamo reads that flag, not
``torch.compile(options={"freezing": True})``, when it decides whether weights are constants, so with the option alone
the weights stay graph inputs. Frozen weights are copied into the compiled
code: change the weights after the first call and the compiled model keeps the old ones (compile again).

Shapes are dynamic: the batch and sequence sizes are symbols, one compile serves every batch and length (length
buckets, one static compile each, were measured slower on short texts: BENCHMARKS.md, compiled torch). A batch of one
text is run as two copies of it, so that a lone text does not compile a graph of its own (dynamo specialises sizes
of 1).

Inference only: training, gradients, attention maps and calls with a key/value cache run the eager backbone; the
prefix cache of decoders is turned off on a compiled model (the compiled backbone runs the whole input). Inductor
needs a C++ compiler on CPU (g++, clang++ or $CXX).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
from collections.abc import Callable, Sequence

import torch
from torch import nn

logger = logging.getLogger(__name__)

BACKEND = "inductor"
COMPILED_FLAG = "_hf_dumpembed_compiled"
# Backbone keywords whose calls run the eager forward (a key/value cache, attention maps).
EAGER_KEYWORDS = ("past_key_values", "use_cache", "cache_position", "output_attentions")
NOT_DUMPEMBED = ("compile_model takes a SentenceTransformer, AutoModel or DumpEmbedModel of a DumpEmbed folder (its "
                 "config.json has model_type 'dumpembed'); {what} holds none. A stock sentence-transformers model "
                 "(e.g. an `export-st` folder) compiles with torch itself: st[0].auto_model.compile().")


def is_dumpembed(module: object) -> bool:
    """Whether ``module`` is a DumpEmbed model (by its config's model type: a folder loaded with
    ``trust_remote_code`` has its own copy of the class, not ``hf_dumpembed.DumpEmbedModel``)."""
    config = getattr(module, "config", None)
    return getattr(config, "model_type", None) == "dumpembed" and isinstance(getattr(module, "backbone", None),
                                                                             nn.Module)


def dumpembed_models(model: object) -> list[nn.Module]:
    """The DumpEmbed models in ``model``: itself, or those inside it (a SentenceTransformer's Transformer module)."""
    if is_dumpembed(model):
        return [model]
    if isinstance(model, nn.Module):
        return [module for module in model.modules() if is_dumpembed(module)]
    return []


def cpp_compiler() -> str | None:
    """The C++ compiler inductor would build CPU kernels with ($CXX, else g++, c++, clang++ on PATH), or None."""
    candidates = [os.environ["CXX"]] if os.environ.get("CXX") else []
    return next((path for name in [*candidates, "g++", "c++", "clang++"] if (path := shutil.which(name))), None)


def compiler_missing(backend: str) -> bool:
    """Whether ``backend`` builds C++ kernels for the CPU (inductor) and no C++ compiler is found."""
    return backend == "inductor" and cpp_compiler() is None


def check_compiler(backend: str, models: Sequence[nn.Module]) -> None:
    """RuntimeError saying what to install when inductor would compile CPU kernels and no C++ compiler is found."""
    on_cpu = any(p.device.type == "cpu" for m in models for p in m.backbone.parameters())
    if on_cpu and compiler_missing(backend):
        raise RuntimeError("torch.compile's inductor backend builds C++ kernels for the CPU and found no C++ compiler "
                           "($CXX, g++, c++ or clang++ on PATH): install one (Debian/Ubuntu: apt-get install g++) "
                           "or serve the model uncompiled.")


def doubled_lone_row(kwargs: dict) -> dict:
    """The tensor keywords with a batch of one row run as two copies of it (dynamo specialises sizes of 1)."""
    ids = kwargs["input_ids"]
    if ids.shape[0] != 1:
        return kwargs
    return {name: value.expand(2, *value.shape[1:]).contiguous()
            if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == 1 else value
            for name, value in kwargs.items()}


def first_row(value: object) -> object:
    """An output of the doubled call cut back to its first row."""
    if isinstance(value, torch.Tensor):
        return value[:1]
    if isinstance(value, tuple):
        return tuple(first_row(item) for item in value)
    return value


def compiled_forward(backbone: nn.Module, backend: str, freezing: bool, autocast: torch.dtype | None) -> Callable:
    """The backbone's forward as its compiled version (see the module docstring), with the original signature."""
    eager = backbone.forward
    compiled = torch.compile(eager, dynamic=True, backend=backend)
    device = next(backbone.parameters()).device.type

    @functools.wraps(eager)
    def forward(*args, **kwargs):
        if (args or backbone.training or torch.is_grad_enabled() or kwargs.get("input_ids") is None
                or any(kwargs.get(name) for name in EAGER_KEYWORDS)):
            return eager(*args, **kwargs)
        inputs = doubled_lone_row(kwargs)
        with torch._inductor.config.patch(freezing=freezing), \
                torch.autocast(device, dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            outputs = compiled(**inputs)
        if inputs is not kwargs:  # a lone row was doubled: cut back to it
            for key in list(outputs.keys()):
                outputs[key] = first_row(outputs[key])
        return outputs

    return forward


def turn_off_prefix_cache(model: nn.Module) -> None:
    """Run a decoder's whole input through the compiled backbone: the prefix cache (eager) is turned off, quietly."""
    reason = "the backbone is compiled (hf_dumpembed.compile_model), which runs the whole input."
    if hasattr(model, "_prefix_cache_notes"):
        model._prefix_cache_off = reason
        model._prefix_cache_notes.add(reason)


def compile_model(model, *, autocast: torch.dtype | None = None, freezing: bool = True, backend: str | None = None):
    """Compile the backbone of every DumpEmbed model in ``model`` (a SentenceTransformer of a DumpEmbed folder, its
    AutoModel or a DumpEmbedModel) in place, and return ``model``; see the module docstring.

    ``autocast``: e.g. ``torch.bfloat16`` runs the compiled backbone under CPU autocast (for a model loaded in fp32;
    load with ``dtype=torch.bfloat16`` instead to have bf16 weights). ``freezing``: fold the weights into the compiled
    graph (inductor only). ``backend``: the torch.compile backend (default inductor; ``"aot_eager"`` compiles nothing
    to C++, for checking). The first calls compile; vectors equal the eager model's within the arithmetic's rounding.
    """
    targets = dumpembed_models(model)
    if not targets:
        raise TypeError(NOT_DUMPEMBED.format(what=type(model).__name__))
    backend = backend or BACKEND
    if any(getattr(m, COMPILED_FLAG, False) for m in targets):
        raise ValueError("this model is compiled already (compile_model was called on it); load it again to compile "
                         "it with other options.")
    check_compiler(backend, targets)
    for target in targets:
        target.backbone.forward = compiled_forward(target.backbone, backend, freezing, autocast)
        turn_off_prefix_cache(target)
        setattr(target, COMPILED_FLAG, True)
        logger.info("Compiling %s's backbone with %s (dynamic shapes) on its first call.", type(target).__name__,
                    backend)
    return model
