"""SpecTemp: tempered PCA whose exponent γ(k) follows the SNR knee of the corpus spectrum (reference and robust
modes), or, in auto mode, is chosen per k (with centring or prefix truncation) by pseudo-queries from the corpus."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import torch
from pydantic import Field, StrictInt, model_validator

from ..._utils.checked import checked_options
from ...model.projection_record import AutoRecord, ProjectionInfo
from ...remote.modeling_dumpembed import SPECTRAL_EPS, DumpProjection
from ..maths.auto_selection import DEFAULT_SATURATION, AutoSelection, select_auto
from ..maths.gamma_curve import SpecTempCurve, SpecTempMode, spectemp_curve
from ..maths.pseudo_queries import DEFAULT_MAX_PAIRS
from ..maths.spectrum import Spectrum, check_dim
from .base import (
    FitContext,
    FitOptions,
    FittedProjection,
    ProjectionMethod,
    PseudoSet,
    rank_warning,
    spectral_info,
    spectral_projection,
)

PSEUDO_QUERY_RULE = "first non-blank line (several lines) or first sentence vs the whole text"
AUTO_SCORE = "inverse-cloze nDCG@10 + nDCG@10 of the full-dimensional top-10 neighbours"


@dataclass(frozen=True)
class Mode:
    """One of SpecTemp's γ(k) rules: the card's words and ``--mode``'s."""

    name: str
    summary: str
    help: str


# The default is auto mode (BENCHMARKS.md, "SpecTemp auto mode"); ``mode="reference"`` keeps the paper's rule.
MODES = (
    Mode("reference", "SpecTemp, reference mode (the paper's rule): PCA with spectral tempering, eigenvalue exponent "
         "γ(k) set from the SNR knee of the spectrum", "the paper's rule"),
    Mode("robust", "SpecTemp, robust mode (ours): PCA with spectral tempering, eigenvalue exponent γ(k) set from the "
         "SNR knee of the spectrum, the knee taken as the argmax of Kneedle's difference curve",
         "knee = argmax of Kneedle's difference curve, zero eigenvalues dropped before the noise floor"),
    Mode("auto", "SpecTemp, auto mode (ours, `hf-dumpembed fit`'s default): PCA with spectral tempering, the "
         "eigenvalue exponent γ(k), centring or prefix truncation chosen for every k by a label-free pseudo-query "
         "score on the fit corpus, starting from the paper's SNR-knee rule (kept where the pseudo-queries are "
         "saturated)",
         "γ(k) or prefix truncation chosen per k by pseudo-query nDCG@10 on the corpus, the paper's rule where the "
         f"unprojected model scores >= {DEFAULT_SATURATION:g} on them; needs texts with a first line or sentence to "
         "split off"),
)
MODE_NAMES = tuple(mode.name for mode in MODES)
DEFAULT_MODE = "auto"
PSEUDO_QUERY_MODES = ("auto",)


def _mode_help() -> str:
    """``--mode``'s help: the modes, the default first."""
    modes = sorted(MODES, key=lambda mode: mode.name != DEFAULT_MODE)
    return "SpecTemp's γ(k): " + "; ".join(
        f"{mode.name} ({'default: ' if mode.name == DEFAULT_MODE else ''}{mode.help})" for mode in modes)


@checked_options({"mode": f"mode must be one of {MODE_NAMES}; got {{value!r}}."})
class SpecTempOptions:
    """SpecTemp's options: the γ(k) rule and auto mode's pseudo-queries."""

    mode: Annotated[str | None, Field(description=_mode_help(), json_schema_extra={"choices": MODE_NAMES})] = None
    robust: Annotated[bool, Field(description="alias of --mode robust")] = False
    pseudo_queries: Annotated[StrictInt, Field(ge=1, description="--mode auto: score at most N pseudo-queries, a "
                                               "seeded sample (default: 1000)",
                                               json_schema_extra={"metavar": "N"})] = DEFAULT_MAX_PAIRS

    @model_validator(mode="after")
    def _resolve_mode(self) -> SpecTempOptions:
        """The default mode and the ``robust`` alias, resolved to one mode name."""
        if self.mode is not None and self.mode not in MODE_NAMES:
            raise ValueError(f"mode must be one of {MODE_NAMES}; got {self.mode!r}.")
        if self.robust and self.mode not in (None, "robust"):
            raise ValueError(f"robust (--robust) is the alias of mode 'robust'; it contradicts mode {self.mode!r}.")
        object.__setattr__(self, "mode", self.mode or ("robust" if self.robust else DEFAULT_MODE))
        object.__setattr__(self, "robust", self.mode == "robust")
        return self


def auto_reference_curve(spectrum: Spectrum) -> SpecTempCurve:
    """The rule auto mode corrects: the reference curve, or the robust one when there are no more texts than
    dimensions (n ≤ d: the covariance is rank-deficient and the reference noise floor is zero or round-off)."""
    mode = SpecTempMode.ROBUST if spectrum.count <= spectrum.dim else SpecTempMode.REFERENCE
    return spectemp_curve(spectrum.eigenvalues, mode, spectrum.count)


def auto_projection(spectrum: Spectrum, selection: AutoSelection, k: int) -> DumpProjection:
    """Auto mode's map at k, storing the per-k γ and routes that recompose it for any k."""
    projection = DumpProjection(spectrum.dim, k, selection="auto", eps=SPECTRAL_EPS)
    projection.basis = torch.from_numpy(np.ascontiguousarray(spectrum.eigenvectors)).float()
    projection.eigenvalues = torch.from_numpy(spectrum.eigenvalues).float()
    projection.gammas = torch.from_numpy(np.asarray(selection.gamma, dtype=np.float64)).float()
    projection.centre = torch.from_numpy(spectrum.mean).float()
    projection.routes = torch.from_numpy(selection.routes.astype(np.float32))
    projection.select(k)
    return projection


def _knee_fields(curve: SpecTempCurve, k: int) -> dict:
    return {"knee": curve.knee_at(k), "knee_fallback": curve.knee is None, "noise_floor": curve.noise_floor,
            "t0": curve.t0, "used_rank": curve.used_rank}


def fit_rule(spectrum: Spectrum, options: FitOptions) -> FittedProjection:
    """Reference or robust mode: γ(k) from the SNR knee."""
    k = check_dim(options.dim, spectrum.dim)
    curve = spectemp_curve(spectrum.eigenvalues, options.params.mode, spectrum.count)
    if k > spectrum.rank:
        rank_warning(k, spectrum, stacklevel=2)
    projection = spectral_projection(spectrum, curve.gamma, k)
    info = spectral_info(projection, spectrum, k, mode=curve.mode.value, **_knee_fields(curve, k))
    return FittedProjection(projection, info, curve=curve, spectrum=spectrum)


def fit_auto(spectrum: Spectrum, options: FitOptions, pseudo: PseudoSet,
             corpus_encode_seconds: float | None = None) -> FittedProjection:
    """Auto mode: γ(k), centring or prefix truncation chosen per k by the pseudo-queries' score."""
    k = check_dim(options.dim, spectrum.dim)
    curve = auto_reference_curve(spectrum)
    started = time.perf_counter()
    selection = select_auto(spectrum, pseudo.queries, pseudo.documents, curve.gamma)
    select_seconds = time.perf_counter() - started
    projection = auto_projection(spectrum, selection, k)
    route = selection.route_at(k)
    if k > spectrum.rank and route != "prefix":
        rank_warning(k, spectrum, stacklevel=2)
    summary = AutoRecord.from_dict({
        **selection.summary(), "base_mode": curve.mode.value, "pseudo_query_candidates": pseudo.pairs.candidates,
        "pseudo_query_rule": PSEUDO_QUERY_RULE, "score": AUTO_SCORE,
        "pseudo_query_encode_seconds": round(pseudo.encode_seconds, 2), "selection_seconds": round(select_seconds, 2),
        "corpus_encode_seconds": None if corpus_encode_seconds is None else round(corpus_encode_seconds, 2)})
    info = ProjectionInfo(dim=k, selection="auto", params={
        "mode": "auto", **_knee_fields(curve, k), "route": route,
        "gamma": None if route == "prefix" else float(projection.gammas[k - 1]),
        "reference_gamma": float(curve.gamma[k - 1]), "eps": SPECTRAL_EPS, "spectrum_rank": spectrum.rank,
        "auto": summary.to_dict()})
    return FittedProjection(projection, info, curve=curve, spectrum=spectrum, auto=selection)


class SpecTemp(ProjectionMethod):
    name = "spectemp"
    summary = ("SpecTemp: PCA with spectral tempering, eigenvalue exponent γ(k) set from the SNR knee of the "
               "spectrum")
    help = ("PCA with spectral tempering. --mode auto (ours, the default) chooses γ(k), or prefix truncation, for "
            "every k with pseudo-queries from the corpus itself (a text's first line or sentence against the whole "
            "text; no labels; --pseudo-queries N of them), and keeps the paper's rule where the model already finds "
            f"the texts from their first lines almost perfectly (pseudo-query nDCG@10 >= {DEFAULT_SATURATION:g}, e.g. "
            "a model fine-tuned "
            "on this corpus); --mode reference: the paper's rule, γ(k) from the SNR "
            "knee of the spectrum; --mode robust (ours): the same rule with a steadier knee. OUT's "
            'config.projection_info["params"]["mode"] and its card name the mode')
    needs_corpus = True
    any_k = True
    paper = "spectemp_2026"
    order = 10
    Options = SpecTempOptions

    @classmethod
    def describe(cls, info: ProjectionInfo) -> str:
        return next((mode.summary for mode in MODES if mode.name == info.mode), cls.summary)

    @classmethod
    def uses_pseudo_queries(cls, params: Any) -> bool:
        return params.mode in PSEUDO_QUERY_MODES

    @classmethod
    def fit(cls, context: FitContext, options: FitOptions) -> FittedProjection:
        """Every mode: the rule's γ(k), or auto mode's choice per k."""
        if not cls.uses_pseudo_queries(options.params):
            return fit_rule(context.spectrum, options)
        if context.pseudo is None:
            raise ValueError("SpecTemp auto mode needs pseudo-query vectors (encode_pseudo_queries).")
        return fit_auto(context.spectrum, options, context.pseudo, context.encode_seconds)
