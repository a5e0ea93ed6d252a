"""What a sentence-transformers source does after its transformer: read its module stack, exactly or not at all.

A K = 0 DumpEmbed folder must give its source's own vectors, so every setting that changes them is read here:
the Pooling mode (both config formats: the legacy ``pooling_mode_*_tokens`` booleans and sentence-transformers 5+'s
``pooling_mode``) and ``include_prompt``, linear Dense layers (folded into one affine map by the builder), Normalize,
the prompts, ``default_prompt_name``, the similarity function and ``max_seq_length``. Anything the package cannot
reproduce exactly (a non-linear Dense, several pooling modes at once, an unknown module, pickled weights) is refused
with a message naming the module and what to do.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from sentence_transformers.sentence_transformer.modules import Pooling as StPooling
from sentence_transformers.util import load_file_path

from ..remote.configuration_dumpembed import ST_POOLING_MODES

# sentence-transformers Pooling mode -> DumpEmbed pooling name (the inverse of the remote config's table).
FROM_ST_POOLING = {st: ours for ours, st in ST_POOLING_MODES.items() if st is not None}
# Dense activations that are the identity (the only ones that fold into a linear map).
LINEAR_ACTIVATIONS = ("torch.nn.modules.linear.Identity", "torch.nn.Identity", "Identity")
# Transformer outputs that feed Pooling the token states (what the DumpEmbed backbone pools).
TOKEN_STATE_OUTPUTS = (None, "last_hidden_state")


@dataclass(frozen=True)
class DenseLayer:
    """One linear sentence-transformers Dense layer: ``y = x @ weight.T + bias``."""

    weight: torch.Tensor  # (out_features, in_features), float32
    bias: torch.Tensor | None

    @property
    def in_features(self) -> int:
        return int(self.weight.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.weight.shape[0])

    def describe(self) -> dict[str, Any]:
        """The layer's shape, for config.json and the model card."""
        return {"in_features": self.in_features, "out_features": self.out_features, "bias": self.bias is not None}


@dataclass(frozen=True)
class SourceStack:
    """The sentence-transformers modules of a source, as DumpEmbed reproduces them."""

    pooling: str | None = None
    include_prompt: bool = True
    dense: tuple[DenseLayer, ...] = ()
    normalize: bool = False
    prompts: dict[str, str] = field(default_factory=dict)
    default_prompt_name: str | None = None
    similarity_fn_name: str | None = None
    max_seq_length: int | None = None
    transformer_path: str = ""

    def folded_dense(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The Dense layers as one affine map ``x @ weight + bias`` (weight (in, out)), composed in float64 and
        returned in float32; None without Dense layers."""
        if not self.dense:
            return None
        weight = torch.eye(self.dense[0].in_features, dtype=torch.float64)
        bias = torch.zeros(self.dense[0].in_features, dtype=torch.float64)
        for layer in self.dense:
            step = layer.weight.double().T
            weight, bias = weight @ step, bias @ step
            if layer.bias is not None:
                bias = bias + layer.bias.double()
        return weight.float(), bias.float()


def _read_json(source: str, name: str, revision: str | None, where: str | None = None) -> Any:
    """The JSON file ``name`` of ``source``; None when it is absent (ValueError naming ``where`` when given)."""
    path = load_file_path(source, name, revision=revision)
    if path is None and where is not None:
        raise ValueError(f"{where} has no {Path(name).name}; the source folder is incomplete.")
    return None if path is None else json.loads(Path(path).read_text(encoding="utf-8"))


def _module_file(module: dict[str, Any], name: str) -> str:
    return f"{module.get('path', '')}/{name}".lstrip("/")


def read_source_stack(source: str | Path, revision: str | None = None) -> SourceStack | None:
    """The module stack of a sentence-transformers folder/repo; None when ``source`` is not one (no modules.json)."""
    source = str(source)
    modules = _read_json(source, "modules.json", revision)
    if modules is None:
        return None
    if not isinstance(modules, list) or not modules:
        raise ValueError(f"{source}: modules.json lists no modules; it is not a sentence-transformers model.")
    settings: dict[str, Any] = {}
    dense: list[DenseLayer] = []
    seen_transformer = seen_pooling = normalized = False
    for module in modules:
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        where = f"{source}: module {module.get('idx', '?')} ({module.get('type')!r})"
        if normalized:
            raise ValueError(f"{where} comes after Normalize; DumpEmbed normalises last. Only Dense layers and one "
                             "final Normalize may follow Pooling.")
        if kind == "Transformer" and not seen_transformer:
            settings.update(_read_transformer(source, module, revision, where))
            seen_transformer = True
        elif kind == "Pooling" and seen_transformer and not seen_pooling:
            settings.update(_read_pooling(source, module, revision, where))
            seen_pooling = True
        elif kind == "Dense" and seen_pooling:
            dense.append(_read_dense(source, module, revision, where, dense))
        elif kind == "Normalize" and seen_pooling:
            normalized = True
        else:
            raise ValueError(
                f"{where} cannot be reproduced exactly by a DumpEmbed folder: it wraps one Transformer, one Pooling, "
                "linear Dense layers and a final Normalize. Remove or replace the module (or build from the bare "
                "transformers backbone with --pooling), rather than get vectors that differ from the source's."
            )
    if not seen_pooling:
        raise ValueError(f"{source}: modules.json has no Pooling module after its Transformer; pass --pooling "
                         "cls|last|mean|... to choose one explicitly.")
    config = _read_json(source, "config_sentence_transformers.json", revision) or {}
    prompts = {str(name): str(text) for name, text in (config.get("prompts") or {}).items()}
    return SourceStack(
        dense=tuple(dense), normalize=normalized, prompts=prompts,
        default_prompt_name=config.get("default_prompt_name") or None,
        similarity_fn_name=config.get("similarity_fn_name") or None, **settings,
    )


def _read_transformer(source: str, module: dict[str, Any], revision: str | None, where: str) -> dict[str, Any]:
    config = _read_json(source, _module_file(module, "sentence_bert_config.json"), revision) or {}
    if config.get("do_lower_case"):
        raise ValueError(f"{where} lowercases every text in Python (do_lower_case: true), which tokenizer.json "
                         "cannot express for the other load paths. Add a Lowercase normalizer to the tokenizer "
                         "instead and save the source without do_lower_case.")
    text = (config.get("modality_config") or {}).get("text") or {}
    if text.get("method_output_name") not in TOKEN_STATE_OUTPUTS or text.get("method", "forward") != "forward":
        raise ValueError(f"{where} reads {text} from the backbone; DumpEmbed pools the last hidden states only.")
    path = str(module.get("path", ""))
    if path and not Path(source).is_dir():
        raise ValueError(f"{where} keeps its backbone in the sub-folder {path!r} of a Hub repo; download the repo "
                         "and build from the local folder.")
    value = config.get("max_seq_length")
    return {"max_seq_length": int(value) if value else None, "transformer_path": path}


def _read_pooling(source: str, module: dict[str, Any], revision: str | None, where: str) -> dict[str, Any]:
    config = _read_json(source, _module_file(module, "config.json"), revision, where)
    with warnings.catch_warnings():  # the legacy boolean keys warn; sentence-transformers still reads them
        warnings.simplefilter("ignore", FutureWarning)
        try:
            pooling = StPooling(**config)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{where}: sentence-transformers cannot read this Pooling config ({error}).") from None
    modes = (pooling.pooling_mode,) if isinstance(pooling.pooling_mode, str) else tuple(pooling.pooling_mode)
    if len(modes) != 1:
        raise ValueError(f"{where} concatenates several pooling modes {list(modes)}; DumpEmbed pools with one. "
                         f"Pass --pooling {'|'.join(ST_POOLING_MODES)} to choose one (the vectors will differ from "
                         "the source's).")
    return {"pooling": FROM_ST_POOLING[modes[0]], "include_prompt": bool(pooling.include_prompt)}


def _read_dense(source: str, module: dict[str, Any], revision: str | None, where: str,
                previous: list[DenseLayer]) -> DenseLayer:
    config = _read_json(source, _module_file(module, "config.json"), revision, where)
    activation = str(config.get("activation_function", "torch.nn.modules.linear.Identity"))
    if activation not in LINEAR_ACTIVATIONS:
        raise ValueError(f"{where} applies the non-linear activation {activation!r}; only linear (Identity) Dense "
                         "layers fold exactly into DumpEmbed's stored projection. Build from the bare backbone with "
                         "--pooling to drop the layer (other vectors), or serve the source as it is.")
    weights_path = load_file_path(source, _module_file(module, "model.safetensors"), revision=revision)
    if weights_path is None:
        raise ValueError(f"{where} stores no model.safetensors (only pickled weights, e.g. pytorch_model.bin, "
                         "which this package never loads). Re-save the source with sentence-transformers >= 3 "
                         "(model.save(folder), safetensors by default) and build from that folder.")
    with safe_open(weights_path, "pt") as weights:
        names = set(weights.keys())
        if "linear.weight" not in names:
            raise ValueError(f"{where}: model.safetensors has no 'linear.weight' (found {sorted(names)}).")
        layer = DenseLayer(weight=weights.get_tensor("linear.weight").float(),
                           bias=weights.get_tensor("linear.bias").float() if "linear.bias" in names else None)
    expected_in = previous[-1].out_features if previous else None
    if expected_in is not None and layer.in_features != expected_in:
        raise ValueError(f"{where} reads {layer.in_features} features but the Dense before it gives {expected_in}.")
    return layer
