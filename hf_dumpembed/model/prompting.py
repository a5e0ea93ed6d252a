"""Zero-shot prompting of causal LMs (PromptEOL, ECHO), composed inside the model from token ids in its config."""

from __future__ import annotations

from enum import Enum
from typing import Any

from transformers import PreTrainedTokenizerBase

from ..remote.configuration_dumpembed import PROMPT_MODES
from .backbone import is_decoder_backbone

# The prompt modes, derived from their one definition in the remote config (the model composes them; its config
# validates ``prompt_mode`` against it): PromptMode.PROMPTEOL == "prompteol", PromptMode.ECHO == "echo".
PromptMode = Enum("PromptMode", {mode.upper(): mode for mode in PROMPT_MODES}, type=str)
PromptMode.__doc__ = "A zero-shot prompt the model composes around every text (DumpEmbedConfig's `prompt_mode`)."

# Zero-shot prompt templates the EmbedFilter authors' code composes with ({text} is the input); one per mode.
PROMPT_TEMPLATES = {
    PromptMode.PROMPTEOL: 'Summarize the sentence: "{text}" in one word:"',
    PromptMode.ECHO: "Rewrite the following paragraph: {text}. The rewritten paragraph: {text}",
}


def prompt_mode(value: object) -> PromptMode:
    """``value`` as a `PromptMode`, with an error listing the choices."""
    try:
        return PromptMode(value)
    except ValueError:
        raise ValueError(f"prompt must be one of {tuple(m.value for m in PromptMode)}; got {value!r}.") from None


def set_prompt_mode(model: Any, tokenizer: PreTrainedTokenizerBase, mode: PromptMode | str) -> None:
    """Store the PromptEOL / ECHO prompt pieces (token ids) in a DumpEmbed model's config; the model composes them."""
    mode = prompt_mode(mode)
    if not is_decoder_backbone(model.config.text_config):
        raise ValueError(f"prompt {mode.value!r} is a causal-LM prompting method; this backbone is an encoder.")
    template = PROMPT_TEMPLATES[mode]
    parts = template.split("{text}")

    def ids(piece: str) -> list[int]:
        # Pieces keep their spaces, so the composed tokens decode to the template's exact characters.
        return list(tokenizer(piece, add_special_tokens=False)["input_ids"]) if piece else []

    lead = model.config.dump_token_offset + model.config.num_dump_tokens
    trailing = len(tokenizer("x")["input_ids"]) - lead - len(tokenizer("x", add_special_tokens=False)["input_ids"])
    pieces = {"template": template, "prefix": ids(parts[0]), "suffix": ids(parts[-1]),
              "num_trailing_special": max(0, trailing)}
    if mode is PromptMode.ECHO:
        pieces["middle"] = ids(parts[1])
    model.config.prompt_mode = mode.value
    model.config.prompt_token_ids = pieces
    if mode is PromptMode.PROMPTEOL:
        model.config.pooling = "last"
