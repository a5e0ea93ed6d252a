"""Post-hoc projections fitted on corpus embeddings: SpecTemp, EmbedFilter and the paper's baselines.

The maths lives in ``maths/`` (statistics, spectrum, SpecTemp's γ curve, pseudo-queries, auto mode, EmbedFilter's
basis, the numpy reference maps), one `ProjectionMethod` class per method in ``methods/``; this package exports the
fit's entry points and the method registry.
"""

from __future__ import annotations

from .._utils.lazy import lazy_attributes

# The fit and the registry import the model layer and torch: load them on first use.
_LAZY = {"FitOptions": "options", "fit_projection": "fit", "fit_projections": "fit", "METHODS": "registry",
         "projection_method": "registry"}
__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [*_LAZY]
