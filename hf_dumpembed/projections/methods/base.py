"""What every fitter takes and returns: the shared fit context (model, corpus statistics, pseudo-queries) and the
fitted projection, plus the projection builders several fitters share."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np
import torch

from ...model.projection_record import ProjectionInfo
from ...remote import DumpEmbedModel
from ...remote.modeling_dumpembed import SPECTRAL_EPS, DumpProjection, spectral_matrix
from ..maths.auto_selection import AutoSelection
from ..maths.gamma_curve import SpecTempCurve
from ..maths.pseudo_queries import PseudoQueries
from ..maths.spectrum import Spectrum, eigendecompose
from ..maths.statistics import StreamingStats
from ..options import FitOptions


@dataclass
class FittedProjection:
    """The buffers of a fitted `DumpProjection`, the method's part of its record and what the plots need."""

    projection: DumpProjection
    info: ProjectionInfo
    curve: SpecTempCurve | None = None
    spectrum: Spectrum | None = None
    singular_values: np.ndarray | None = None
    auto: AutoSelection | None = None


@dataclass(frozen=True)
class PseudoSet:
    """Auto mode's pseudo-queries: their vectors, their texts' vectors from the corpus pass, and the cost."""

    pairs: PseudoQueries
    queries: np.ndarray
    documents: np.ndarray
    encode_seconds: float


@dataclass
class FitContext:
    """What one encoding pass gives every fit of a `fit_projections` call."""

    model: DumpEmbedModel | None = None
    stats: StreamingStats | None = None  # the corpus statistics (a corpus-fitted method's input)
    pseudo: PseudoSet | None = None  # pseudo-query vectors, when a fit scores them
    encode_seconds: float | None = None  # the corpus pass

    @classmethod
    def from_spectrum(cls, spectrum: Spectrum, pseudo: PseudoSet | None = None) -> FitContext:
        """A context holding a corpus spectrum already computed (scripts that encode the corpus themselves)."""
        context = cls(pseudo=pseudo)
        context.__dict__["spectrum"] = spectrum  # the cached_property's value
        return context

    @property
    def dim(self) -> int:
        """d, the dimension of the vectors a projection maps."""
        return self.model.config.embedding_size if self.model is not None else self.spectrum.dim

    @cached_property
    def spectrum(self) -> Spectrum:
        """The corpus covariance's eigendecomposition, computed once for all the fits that use it."""
        if self.stats is None:
            raise ValueError("this method is fitted on corpus embeddings: pass --corpus PATH.")
        return eigendecompose(self.stats)


class Fitter(Protocol):
    """A method's fitter: the fitted map and the method's fields of `ProjectionInfo`."""

    def __call__(self, context: FitContext, options: FitOptions) -> FittedProjection: ...


def spectral_projection(spectrum: Spectrum, gammas: np.ndarray, k: int) -> DumpProjection:
    """Tempered PCA with exponent ``gammas[k - 1]`` at k, storing the spectrum that recomposes it for any k."""
    d = spectrum.dim
    projection = DumpProjection(d, k, selection="spectral", eps=SPECTRAL_EPS)
    projection.mean = torch.from_numpy(spectrum.mean).float()
    projection.basis = torch.from_numpy(np.ascontiguousarray(spectrum.eigenvectors)).float()
    projection.eigenvalues = torch.from_numpy(spectrum.eigenvalues).float()
    projection.gammas = torch.from_numpy(np.asarray(gammas, dtype=np.float64)).float()
    projection.matrix = spectral_matrix(projection.basis, projection.eigenvalues, projection.gammas[k - 1], k)
    return projection


def spectral_info(projection: DumpProjection, spectrum: Spectrum, k: int, **fields) -> ProjectionInfo:
    """The record of a spectral fit at k (``fields``: the method's own, e.g. SpecTemp's knee)."""
    return ProjectionInfo(dim=k, gamma=float(projection.gammas[k - 1]), selection="spectral", eps=SPECTRAL_EPS,
                          spectrum_rank=spectrum.rank, **fields)


def rank_warning(k: int, spectrum: Spectrum, stacklevel: int) -> None:
    """Warn that k exceeds the corpus covariance's numerical rank."""
    import warnings

    warnings.warn(f"k={k} exceeds the numerical rank {spectrum.rank} of the corpus covariance: the extra directions "
                  "carry no corpus variance. Fit on more texts or choose a smaller k.", stacklevel=stacklevel + 1)
