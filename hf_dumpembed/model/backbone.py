"""What kind of backbone a transformers config describes."""

from __future__ import annotations

from transformers import PretrainedConfig

_CAUSAL_ARCHITECTURE_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def is_decoder_backbone(config: PretrainedConfig) -> bool:
    """True for causal LMs (Llama, Qwen2, GPT-2, ...), judged by the architectures the checkpoint was saved as."""
    architectures = getattr(config, "architectures", None) or []
    if any(arch.endswith(_CAUSAL_ARCHITECTURE_SUFFIXES) for arch in architectures):
        return True
    return bool(getattr(config, "is_decoder", False))
