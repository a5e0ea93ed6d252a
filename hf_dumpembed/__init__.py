"""hf_dumpembed: text-embedding models with [DUMP] tokens and stored post-hoc projections."""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Entry points load on first use (they import torch, transformers, sentence-transformers), so that the command
# line starts fast; importing `remote` registers the classes for AutoModel's remote code.
_LAZY = {
    "DumpEmbedConfig": "remote",
    "DumpEmbedModel": "remote",
    "BuildOptions": "model.builder",
    "build": "model.builder",
    "build_dump_model": "model.builder",
    "save_dump_model": "model.builder",
    "add_dump_tokens": "model.tokenizer",
    "export_stock_st": "model.export",
    "check_load_paths": "model.verify",
    "default_encoder_path": "data.assets",
    "default_decoder_path": "data.assets",
}
__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'hf_dumpembed' has no attribute {name!r}")
