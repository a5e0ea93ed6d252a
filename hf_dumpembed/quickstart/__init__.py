"""`hf-dumpembed quickstart`: the whole workflow on the embedded models (see `pipeline`)."""

from __future__ import annotations

import importlib
from typing import Any

from .options import DEFAULT_BUDGET, FAST_BUDGET, Budget, QuickstartOptions

_LAZY = {"Quickstart": "pipeline", "run_quickstart": "pipeline"}  # heavy imports: load on first use
__all__ = ["DEFAULT_BUDGET", "FAST_BUDGET", "Budget", "QuickstartOptions", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'hf_dumpembed.quickstart' has no attribute {name!r}")
