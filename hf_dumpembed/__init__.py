"""hf_dumpembed: text-embedding models with [DUMP] tokens and stored post-hoc projections."""

from __future__ import annotations

import importlib
from typing import Any

from .remote import DumpEmbedConfig, DumpEmbedModel

__version__ = "0.1.0"

# Every save_pretrained of these classes copies the remote-code files and writes auto_map into config.json.
DumpEmbedConfig.register_for_auto_class()
DumpEmbedModel.register_for_auto_class("AutoModel")

# Heavier entry points (they import sentence-transformers / mteb) load on first use.
_LAZY = {
    "BuildOptions": "builder",
    "build": "builder",
    "build_dump_model": "builder",
    "save_dump_model": "builder",
    "add_dump_tokens": "tokenizer",
    "export_stock_st": "export",
    "check_load_paths": "verify",
    "default_encoder_path": "assets",
    "default_decoder_path": "assets",
}
__all__ = ["DumpEmbedConfig", "DumpEmbedModel", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'hf_dumpembed' has no attribute {name!r}")
