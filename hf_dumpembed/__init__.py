"""hf_dumpembed: text-embedding models with [DUMP] tokens and stored post-hoc projections."""

from __future__ import annotations

from ._utils.lazy import lazy_attributes

__version__ = "0.1.0"

# The public API, loaded on first use (it imports torch, transformers, sentence-transformers) so that the command
# line starts fast; importing `remote` registers the classes for AutoModel's remote code. Everything else is
# imported from its module (docs/architecture.md names them).
_LAZY = {
    "DumpEmbedModel": "remote",
    "DumpEmbedConfig": "remote",
    "build": "model.builder",
    "BuildOptions": "model.builder",
    "fit_projections": "projections.fit",
    "FitOptions": "projections.fit",
    "export_stock_st": "export.stock",
    "check_load_paths": "export.verify",
    "quantize": "model.quantization",
    "compile_model": "export.torch_compiled",
}
__all__ = ["__version__", *_LAZY]
__getattr__ = lazy_attributes(__name__, _LAZY)
