"""Inputs on disk: BEIR-style retrieval folders, the builders of the real-text collections, the embedded backbones."""

from __future__ import annotations

from .._utils.lazy import lazy_attributes

_LAZY = {
    "BeirData": "beir", "load_beir": "beir", "write_beir": "beir", "is_beir_folder": "beir",
    "build_datasets": "corpora", "default_encoder_path": "assets", "default_decoder_path": "assets",
    "resolve_backbone": "assets",
}
__all__ = list(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
