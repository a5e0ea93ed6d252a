"""Find a DumpEmbed model's unembedding matrix W_U (the causal LM's lm_head) for EmbedFilter."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open

from ..model.backbone import is_decoder_backbone

LM_HEAD_KEYS = ("lm_head.weight", "model.lm_head.weight", "output.weight")


@dataclass(frozen=True)
class Unembedding:
    """W_U (|V| × d), the rows to leave out, and where it came from."""

    weight: torch.Tensor
    exclude_rows: tuple[int, ...]
    source: str


def _lm_head_from_folder(folder: Path) -> torch.Tensor | None:
    files = sorted(folder.glob("*.safetensors"))
    index = folder / "model.safetensors.index.json"
    if index.exists():
        weight_map = json.loads(index.read_text()).get("weight_map", {})
        files = [folder / weight_map[key] for key in LM_HEAD_KEYS if key in weight_map] or files
    for file in files:
        with safe_open(str(file), framework="pt") as handle:
            for key in LM_HEAD_KEYS:
                if key in handle.keys():
                    return handle.get_tensor(key)
    return None


def find_unembedding(model: torch.nn.Module, lm_head: str | Path | None = None) -> Unembedding:
    """W_U of a DumpEmbed model built from a causal LM.

    Tied LMs (e.g. SmolLM2, Qwen3-0.6B): the input embedding matrix, minus the rows of the [DUMP] tokens (added by
    the build, they never were unembedding rows). Untied LMs: ``lm_head.weight`` read from ``lm_head`` (the original
    causal-LM folder) or, when it is a local folder, from the model's recorded ``base_model``.
    """
    config = model.config
    text_config = config.text_config
    if not is_decoder_backbone(text_config):
        raise ValueError(
            f"EmbedFilter needs a causal LM's unembedding matrix (lm_head); this model's backbone "
            f"({text_config.model_type}, {getattr(text_config, 'architectures', None)}) is not a causal LM."
        )
    if lm_head is None and getattr(text_config, "tie_word_embeddings", False):
        weight = model.get_input_embeddings().weight.detach()
        return Unembedding(weight, tuple(config.dump_token_ids), "tied input embeddings")
    candidates = [Path(lm_head)] if lm_head is not None else []
    if lm_head is None and config.base_model and Path(config.base_model).is_dir():
        candidates.append(Path(config.base_model))
    for folder in candidates:
        if not folder.is_dir():
            raise FileNotFoundError(f"lm_head folder {folder} does not exist; give the original causal-LM folder.")
        weight = _lm_head_from_folder(folder)
        if weight is not None:
            if weight.shape[1] != config.hidden_size:
                raise ValueError(f"{folder}: lm_head has width {weight.shape[1]}, the model {config.hidden_size}.")
            return Unembedding(weight, (), f"lm_head.weight of {folder}")
    raise ValueError(
        "this model's backbone does not tie its lm_head to the input embeddings, and no lm_head was found "
        f"(looked in: {[str(c) for c in candidates] or 'nothing'}). Pass the original causal-LM folder with "
        "--lm-head PATH (lm_head= in Python)."
    )
