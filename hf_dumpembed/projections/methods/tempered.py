"""PCA (γ = 0), whitening (γ = 1) and γ-whitening (``--gamma``): one exponent for every k, from the corpus spectrum."""

from __future__ import annotations

import numpy as np

from ..maths.spectrum import Spectrum, check_dim
from ..options import FitOptions
from .common import FitContext, FittedProjection, spectral_info, spectral_projection

DEFAULT_GAMMA = 0.5
FIXED_GAMMA = {"pca": 0.0, "whiten": 1.0}


def fit_tempered_spectrum(spectrum: Spectrum, options: FitOptions) -> FittedProjection:
    """The map of ``options`` (pca, whiten or gamma) from a corpus spectrum."""
    k = check_dim(options.dim, spectrum.dim)
    gamma = FIXED_GAMMA.get(options.method.value, options.gamma)
    gammas = np.full(spectrum.dim, DEFAULT_GAMMA if gamma is None else gamma)
    projection = spectral_projection(spectrum, gammas, k)
    return FittedProjection(projection, spectral_info(projection, spectrum, k), spectrum=spectrum)


def fit(context: FitContext, options: FitOptions) -> FittedProjection:
    """The registry's fitter of pca, whiten and gamma."""
    return fit_tempered_spectrum(context.spectrum, options)
