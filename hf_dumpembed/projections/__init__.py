"""Post-hoc projections fitted on corpus embeddings: SpecTemp, EmbedFilter and the paper's baselines."""

from __future__ import annotations

from .._utils.lazy import lazy_attributes
from .auto import AutoSelection, select_auto
from .baselines import (
    gamma_map,
    oracle_gamma,
    pca_map,
    random_project_map,
    random_truncate_map,
    truncate_map,
    whiten_map,
)
from .embedfilter import band_size, embedfilter_map, gram_basis, svd_basis
from .linear import LinearMap
from .pseudo import PseudoQueries, build_pseudo_queries
from .spectemp import SpecTempCurve, SpecTempFit, SpecTempMode, fit_spectemp, spectemp_curve
from .stats import Spectrum, StreamingStats, eigendecompose

# The folder writer imports the model layer: load it on first use.
_LAZY = {"FitOptions": "fit", "fit_projection": "fit", "fit_projections": "fit"}
__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = [
    *_LAZY, "AutoSelection", "PseudoQueries", "build_pseudo_queries", "select_auto",
    "LinearMap", "SpecTempCurve", "SpecTempFit", "SpecTempMode", "Spectrum", "StreamingStats", "band_size",
    "eigendecompose", "embedfilter_map", "fit_spectemp", "gamma_map", "gram_basis", "oracle_gamma", "pca_map",
    "random_project_map", "random_truncate_map", "spectemp_curve", "svd_basis", "truncate_map", "whiten_map",
]
