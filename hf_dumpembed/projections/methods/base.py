"""What a projection method is: one `ProjectionMethod` subclass in one module of this package, and what every fit
takes (`FitContext`: the model, the corpus statistics, pseudo-queries) and returns (`FittedProjection`), plus the
projection builders several methods share.

A method class carries its name, the card's and ``fit --help``'s words, whether it is fitted on a corpus, whether
its folder serves any output dimension at load time, its own options (a `checked_options` dataclass whose fields
become ``fit``'s flags) and its ``fit``. `hf_dumpembed.projections.registry` finds every subclass defined in this
package; nothing else needs to name a new method.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar, Protocol

import numpy as np
import torch

from ..._utils.checked import checked_options
from ...model.projection_record import ProjectionInfo
from ...remote import DumpEmbedModel
from ...remote.modeling_dumpembed import SPECTRAL_EPS, DumpProjection, spectral_matrix
from ..maths.auto_selection import AutoSelection
from ..maths.gamma_curve import SpecTempCurve
from ..maths.pseudo_queries import PseudoQueries
from ..maths.spectrum import Spectrum, eigendecompose
from ..maths.statistics import StreamingStats


class FitOptions(Protocol):
    """What a method's ``fit`` reads of `hf_dumpembed.projections.options.FitOptions`: the settings every method
    shares and ``params``, its own options (an instance of its class's ``Options``)."""

    method: str
    dim: int | None
    seed: int
    lm_head: str | None
    progress: bool
    params: Any


@checked_options({})
class NoOptions:
    """The options of a method that takes none of its own."""


class ProjectionMethod:
    """A post-hoc projection method. Subclasses set the class attributes and implement `fit`."""

    name: ClassVar[str]  # ``--method`` NAME and ``projection_info["method"]``
    summary: ClassVar[str]  # the card's words for the fitted map
    help: ClassVar[str]  # its entry in ``fit --help``
    needs_corpus: ClassVar[bool] = False  # fitted on corpus embeddings (``--corpus`` required)
    any_k: ClassVar[bool] = False  # the folder stores what recomposes the map for any k at load time
    needs_dim: ClassVar[bool] = True  # ``--dim K`` is required
    paper: ClassVar[str | None] = None  # key of `hf_dumpembed.model.papers.PAPERS` to cite
    order: ClassVar[int] = 100  # place in ``fit --help`` and in the list of methods
    Options: ClassVar[type] = NoOptions  # a `checked_options` dataclass of the method's own options

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return tuple(field.name for field in dataclasses.fields(cls.Options))

    @classmethod
    def describe(cls, info: ProjectionInfo) -> str:
        """The card's words for the map a fit recorded in ``info``."""
        return cls.summary

    @classmethod
    def uses_pseudo_queries(cls, params: Any) -> bool:
        """Whether a fit with ``params`` scores pseudo-queries from the corpus (encoded in the shared pass)."""
        return False

    @classmethod
    def fit(cls, context: FitContext, options: FitOptions) -> FittedProjection:
        """The fitted map and the method's fields of `ProjectionInfo`."""
        raise NotImplementedError(f"{cls.__name__} must implement fit(context, options).")


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
    return ProjectionInfo(dim=k, selection="spectral", params={
        **fields, "gamma": float(projection.gammas[k - 1]), "eps": SPECTRAL_EPS, "spectrum_rank": spectrum.rank})


def rank_warning(k: int, spectrum: Spectrum, stacklevel: int) -> None:
    """Warn that k exceeds the corpus covariance's numerical rank."""
    import warnings

    warnings.warn(f"k={k} exceeds the numerical rank {spectrum.rank} of the corpus covariance: the extra directions "
                  "carry no corpus variance. Fit on more texts or choose a smaller k.", stacklevel=stacklevel + 1)
