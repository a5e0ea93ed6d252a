"""PCA (γ = 0), whitening (γ = 1) and γ-whitening (``--gamma``): one exponent for every k, from the corpus spectrum."""

from __future__ import annotations

from typing import Annotated, ClassVar

import numpy as np
from pydantic import Field, StrictFloat

from ..._utils.checked import checked_options
from ..maths.spectrum import check_dim
from .base import FitContext, FitOptions, FittedProjection, ProjectionMethod, spectral_info, spectral_projection

DEFAULT_GAMMA = 0.5


@checked_options({})
class GammaOptions:
    """γ-whitening's option."""

    gamma: Annotated[StrictFloat, Field(ge=0, le=1, description="γ of --method gamma, in [0, 1] (default 0.5)",
                                        json_schema_extra={"metavar": "G"})] = DEFAULT_GAMMA


class TemperedPCA(ProjectionMethod):
    """Centred top-k eigenvectors of the corpus covariance, scaled by eigenvalue^(−γ/2) with one γ for every k."""

    needs_corpus = True
    any_k = True
    gamma: ClassVar[float]

    @classmethod
    def exponent(cls, options: FitOptions) -> float:
        return cls.gamma

    @classmethod
    def fit(cls, context: FitContext, options: FitOptions) -> FittedProjection:
        spectrum = context.spectrum
        k = check_dim(options.dim, spectrum.dim)
        projection = spectral_projection(spectrum, np.full(spectrum.dim, cls.exponent(options)), k)
        return FittedProjection(projection, spectral_info(projection, spectrum, k), spectrum=spectrum)


class PCA(TemperedPCA):
    name = "pca"
    summary = "PCA (centred, γ = 0)"
    help = "centred top-k eigenvectors, γ = 0"
    order = 30
    gamma = 0.0


class Whiten(TemperedPCA):
    name = "whiten"
    summary = "PCA whitening (γ = 1)"
    help = "centred top-k eigenvectors, γ = 1"
    order = 40
    gamma = 1.0


class GammaWhitening(TemperedPCA):
    name = "gamma"
    summary = "γ-whitening (eigenvalue exponent γ)"
    help = "γ-whitening with --gamma G (default 0.5)"
    order = 50
    Options = GammaOptions

    @classmethod
    def exponent(cls, options: FitOptions) -> float:
        return options.params.gamma
