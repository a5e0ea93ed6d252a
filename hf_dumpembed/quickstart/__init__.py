"""`hf-dumpembed quickstart`: the whole workflow on the embedded models (see `pipeline`)."""

from .options import DEFAULT_BUDGET, FAST_BUDGET, Budget, QuickstartOptions
from .pipeline import Quickstart, run_quickstart

__all__ = ["DEFAULT_BUDGET", "FAST_BUDGET", "Budget", "Quickstart", "QuickstartOptions", "run_quickstart"]
