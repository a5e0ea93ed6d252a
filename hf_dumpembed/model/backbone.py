"""What kind of backbone a transformers config describes: the one rule for "is this a decoder"."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from transformers import PretrainedConfig

_CAUSAL_ARCHITECTURE_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def is_decoder_backbone(config: PretrainedConfig | Mapping[str, Any]) -> bool:
    """True for causal LMs (Llama, Qwen2, GPT-2, ...), judged by the architectures the checkpoint was saved as.

    ``config`` is the backbone's config object, or its dict as saved (a DumpEmbed folder's ``text_config``).
    """
    def get(key: str) -> Any:
        return config.get(key) if isinstance(config, Mapping) else getattr(config, key, None)

    architectures = get("architectures") or []
    if any(arch.endswith(_CAUSAL_ARCHITECTURE_SUFFIXES) for arch in architectures):
        return True
    return bool(get("is_decoder"))


def is_decoder_folder(config: Mapping[str, Any]) -> bool:
    """True when a DumpEmbed folder's ``config.json`` (as a dict) wraps a causal-LM backbone."""
    return is_decoder_backbone(config.get("text_config") or {})
