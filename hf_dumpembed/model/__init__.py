"""The DumpEmbed model folder: [DUMP] tokenizer and embeddings, prompts, the builder, sentence-transformers files,
the folder's records and its model card."""

from __future__ import annotations

from .._utils.lazy import lazy_attributes

_LAZY = {
    "BuildOptions": "builder", "build": "builder", "build_dump_model": "builder", "save_dump_model": "builder",
    "add_dump_tokens": "tokenizer", "is_decoder_backbone": "backbone", "set_prompt_mode": "prompting",
    "render_card": "card", "write_card": "card",
}
__all__ = list(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
