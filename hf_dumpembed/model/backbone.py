"""What kind of backbone a transformers config describes (the one rule for "is this a decoder"), and the dtypes its
weights can be stored in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from transformers import PretrainedConfig

from ..remote.prefix_cache_dumpembed import _CAUSAL_ARCHITECTURE_SUFFIXES  # the remote code's (self-contained) one

# The dtypes a backbone's weights can be stored in (`build --dtype`, `BuildOptions.dtype`; None: the source's own).
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def is_decoder_backbone(config: PretrainedConfig | Mapping[str, Any]) -> bool:
    """True for causal LMs (Llama, Qwen2, GPT-2, ...), judged by the architectures the checkpoint was saved as.

    ``config`` is the backbone's config object, or its dict as saved (a DumpEmbed folder's ``text_config``).
    """
    def get(key: str) -> Any:
        return config.get(key) if isinstance(config, Mapping) else getattr(config, key, None)

    if any(arch.endswith(_CAUSAL_ARCHITECTURE_SUFFIXES) for arch in get("architectures") or []) or get("is_decoder"):
        return True
    # A causal LM saved as its bare base class (sentence-transformers re-saves Qwen3ForCausalLM as Qwen3Model;
    # e5-mistral ships MistralModel): a model type with a causal-LM head and no masked-LM head, unless its config makes
    # the attention bidirectional (EmbeddingGemma's Gemma3TextModel).
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    model_type = get("model_type")
    return bool(model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
                and not get("use_bidirectional_attention"))


def is_decoder_folder(config: Mapping[str, Any]) -> bool:
    """True when a DumpEmbed folder's ``config.json`` (as a dict) wraps a causal-LM backbone."""
    return is_decoder_backbone(config.get("text_config") or {})
