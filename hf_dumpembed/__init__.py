"""hf_dumpembed: text-embedding models with [DUMP] tokens and stored post-hoc projections."""

from __future__ import annotations

from ._utils.lazy import lazy_attributes

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
    "export_stock_st": "export.stock",
    "check_load_paths": "export.verify",
    "quantize": "model.quantization",
    "default_encoder_path": "data.assets",
    "default_decoder_path": "data.assets",
}
__all__ = ["__version__", *_LAZY]
__getattr__ = lazy_attributes(__name__, _LAZY)
