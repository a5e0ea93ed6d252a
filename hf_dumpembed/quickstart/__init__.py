"""`hf-dumpembed quickstart`: the whole workflow on the embedded models (see `pipeline`)."""

from __future__ import annotations

from .._utils.lazy import lazy_attributes
from .options import DEFAULT_BUDGET, FAST_BUDGET, Budget, QuickstartOptions

_LAZY = {"Quickstart": "pipeline", "run_quickstart": "pipeline"}  # heavy imports: load on first use
__all__ = ["DEFAULT_BUDGET", "FAST_BUDGET", "Budget", "QuickstartOptions", *_LAZY]
__getattr__ = lazy_attributes(__name__, _LAZY)
