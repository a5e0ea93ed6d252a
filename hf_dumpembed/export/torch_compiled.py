"""Compiled torch: a loaded DumpEmbed model's backbone compiled by inductor with its weights frozen, in place, so that
``st.encode_query`` / ``encode_document`` (or the AutoModel forward) run C++ kernels on CPU and give the same vectors.

```python
import torch
from sentence_transformers import SentenceTransformer
from hf_dumpembed import compile_model

st = SentenceTransformer("minilm-spectemp", trust_remote_code=True, model_kwargs={"dtype": torch.bfloat16})
compile_model(st)                               # dynamic shapes: one compile serves every batch and length
compile_model(st, buckets=True)                 # or: lengths padded up to 16, 32, ..., 512, one compile each
st.encode_query(["a question"])                 # the first call compiles (tens of seconds), later calls are fast
```

What is compiled is the backbone (embeddings and transformer layers, where the time goes); the DumpEmbed forward
around it (the [DUMP] prefix check, pooling, the stored projection, sentence-transformers' ``truncate_dim``) stays
eager, so every load path keeps its behaviour. Inductor's weight freezing folds the weights into the graph as
constants (bf16 weights: oneDNN's prepacked bf16 matrix products, AMX where the CPU has it). It is switched on by
``torch._inductor.config.freezing`` around each call: torch 2.13's dynamo reads that flag, not
``torch.compile(options={"freezing": True})``, when it decides whether weights are constants, so with the option alone
the weights stay graph inputs (and PT2E int8 graphs fail to compile). Frozen weights are copied into the compiled
code: change the weights after the first call and the compiled model keeps the old ones (compile again).

Shapes: with dynamic shapes (the default) the batch and sequence sizes are symbols, one compile for all; with length
buckets each batch is padded on the right (attention mask 0) up to the smallest bucket that holds it and the states of
the padding are cut off again, one compile per bucket (static lengths, batch still symbolic; dynamo's
``recompile_limit`` is raised to the buckets + 4 where it is lower, so that no bucket falls back to eager). Buckets need
right padding: a tokenizer that pads on the left (decoders) is refused. A batch of one text is run as two copies of it,
so that a lone text does not compile a graph of its own (dynamo specialises sizes of 1).

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

DEFAULT_BUCKETS = (16, 32, 64, 128, 256, 512)
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


def check_compiler(backend: str, models: Sequence[nn.Module]) -> None:
    """RuntimeError saying what to install when inductor would compile CPU kernels and no C++ compiler is found."""
    on_cpu = any(p.device.type == "cpu" for m in models for p in m.backbone.parameters())
    if backend == "inductor" and on_cpu and cpp_compiler() is None:
        raise RuntimeError("torch.compile's inductor backend builds C++ kernels for the CPU and found no C++ compiler "
                           "($CXX, g++, c++ or clang++ on PATH): install one (Debian/Ubuntu: apt-get install g++) "
                           "or serve the model uncompiled.")


def bucket_sizes(buckets: Sequence[int] | bool | None, limit: int | None) -> tuple[int, ...]:
    """The sorted bucket lengths: ``True`` gives DEFAULT_BUCKETS up to ``limit`` (the model's longest input, which
    is added as the last bucket); None or False: no buckets (dynamic shapes)."""
    if buckets is None or buckets is False:
        return ()
    if buckets is True:
        sizes = [size for size in DEFAULT_BUCKETS if limit is None or size < limit]
        return tuple(sizes + ([limit] if limit is not None else []))
    if isinstance(buckets, (str, bytes)) or not isinstance(buckets, Sequence) or not buckets or any(
            isinstance(size, bool) or not isinstance(size, int) or size < 1 for size in buckets):
        raise ValueError(f"buckets must be True, None or a non-empty list of positive integers (sequence lengths, "
                         f"e.g. {list(DEFAULT_BUCKETS)}); got {buckets!r}.")
    return tuple(sorted(set(buckets)))


def check_padding_side(model: object, buckets: tuple[int, ...]) -> None:
    """ValueError when length buckets are asked for and ``model``'s tokenizer (a SentenceTransformer's) pads left."""
    side = getattr(getattr(model, "tokenizer", None), "padding_side", None)
    if buckets and side is not None and side != "right":
        raise ValueError(f"length buckets pad each batch on the right up to its bucket, and this model's tokenizer "
                         f"pads on the {side} (as decoders do): compile it with dynamic shapes instead "
                         "(compile_model(model) without buckets).")


def cut(value: object, batch: int, length: int, padded_length: int) -> object:
    """An output of the padded call cut back to ``batch`` rows and, for token states, ``length`` positions."""
    if isinstance(value, torch.Tensor):
        value = value[:batch]
        return value[:, :length] if value.dim() >= 3 and value.shape[1] == padded_length else value
    if isinstance(value, tuple):
        return tuple(cut(item, batch, length, padded_length) for item in value)
    return value


def pad_inputs(kwargs: dict, buckets: tuple[int, ...], pad_id: int) -> tuple[dict, int, int, int]:
    """The tensor keywords with a lone row doubled and the length padded on the right up to its bucket (input ids
    with ``pad_id``, everything else with 0); with the original batch size, length and the padded length."""
    ids = kwargs["input_ids"]
    batch, length = ids.shape
    padded = next((size for size in buckets if size >= length), length) if buckets else length
    mask = kwargs.get("attention_mask")
    if buckets and mask is not None and bool((mask[:, 0] == 0).any()):
        raise ValueError("this batch is padded on the left, and length buckets pad on the right: tokenize with "
                         "padding_side='right', or compile the model with dynamic shapes (no buckets).")
    out = dict(kwargs)
    for name, value in kwargs.items():
        if isinstance(value, torch.Tensor) and value.dim() == 2 and tuple(value.shape) == (batch, length):
            if batch == 1:
                value = value.expand(2, length)
            if padded > length:
                value = nn.functional.pad(value, (0, padded - length), value=pad_id if name == "input_ids" else 0)
            out[name] = value.contiguous()
            if buckets:
                torch._dynamo.mark_dynamic(out[name], 0)
                torch._dynamo.mark_static(out[name], 1)
    return out, batch, length, padded


def compiled_forward(backbone: nn.Module, buckets: tuple[int, ...], backend: str, freezing: bool,
                     autocast: torch.dtype | None) -> Callable:
    """The backbone's forward as its compiled version (see the module docstring), with the original signature."""
    eager = backbone.forward
    compiled = torch.compile(eager, dynamic=None if buckets else True, backend=backend)
    pad_id = getattr(backbone.config, "pad_token_id", None)
    pad_id = 0 if pad_id is None else int(pad_id)
    device = next(backbone.parameters()).device.type

    @functools.wraps(eager)
    def forward(*args, **kwargs):
        if (args or backbone.training or torch.is_grad_enabled() or kwargs.get("input_ids") is None
                or any(kwargs.get(name) for name in EAGER_KEYWORDS)):
            return eager(*args, **kwargs)
        inputs, batch, length, padded = pad_inputs(kwargs, buckets, pad_id)
        with torch._inductor.config.patch(freezing=freezing), \
                torch.autocast(device, dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            outputs = compiled(**inputs)
        if (batch, length) == tuple(inputs["input_ids"].shape):
            return outputs
        for key in list(outputs.keys()):
            outputs[key] = cut(outputs[key], batch, length, padded)
        return outputs

    return forward


def turn_off_prefix_cache(model: nn.Module) -> None:
    """Run a decoder's whole input through the compiled backbone: the prefix cache (eager) is turned off, quietly."""
    reason = "the backbone is compiled (hf_dumpembed.compile_model), which runs the whole input."
    if hasattr(model, "_prefix_cache_notes"):
        model._prefix_cache_off = reason
        model._prefix_cache_notes.add(reason)


def compile_model(model, *, buckets: Sequence[int] | bool | None = None, autocast: torch.dtype | None = None,
                  freezing: bool = True, backend: str | None = None):
    """Compile the backbone of every DumpEmbed model in ``model`` (a SentenceTransformer of a DumpEmbed folder, its
    AutoModel or a DumpEmbedModel) in place, and return ``model``; see the module docstring.

    ``buckets``: None, dynamic shapes (one compile); True, DEFAULT_BUCKETS up to the model's longest input; or a
    list of sequence lengths (one compile each; right padding only). ``autocast``: e.g. ``torch.bfloat16`` runs the
    compiled backbone under CPU autocast (for a model loaded in fp32; load with ``dtype=torch.bfloat16`` instead to
    have bf16 weights). ``freezing``: fold the weights into the compiled graph (inductor only). ``backend``: the
    torch.compile backend (default inductor; ``"aot_eager"`` compiles nothing to C++, for checking). The first call
    per shape compiles; vectors equal the eager model's within the arithmetic's rounding.
    """
    targets = dumpembed_models(model)
    if not targets:
        raise TypeError(NOT_DUMPEMBED.format(what=type(model).__name__))
    backend = backend or BACKEND
    done = [m for m in targets if getattr(m, COMPILED_FLAG, False)]
    if done:
        raise ValueError("this model is compiled already (compile_model was called on it); load it again to compile "
                         "it with other options.")
    check_compiler(backend, targets)
    plans = [(target, bucket_sizes(buckets, getattr(target.config, "max_position_embeddings", None)))
             for target in targets]
    for _, sizes in plans:
        check_padding_side(model, sizes)
    for target, sizes in plans:
        # dynamo keeps at most recompile_limit graphs per model (8 by default), then runs it eagerly: room for
        # every bucket and a few other shapes (inputs longer than the last bucket).
        limit = torch._dynamo.config.recompile_limit
        torch._dynamo.config.recompile_limit = max(limit, len(sizes) + 4)
        target.backbone.forward = compiled_forward(target.backbone, sizes, backend, freezing, autocast)
        turn_off_prefix_cache(target)
        setattr(target, COMPILED_FLAG, True)
        logger.info("Compiling %s's backbone with %s (%s) on its first call.", type(target).__name__, backend,
                    f"length buckets {list(sizes)}" if sizes else "dynamic shapes")
    return model
