"""SpecTemp: tempered PCA whose exponent γ(k) follows the SNR knee of the corpus spectrum (reference and robust
modes), or, in auto mode, is chosen per k (with centring or prefix truncation) by pseudo-queries from the corpus."""

from __future__ import annotations

import time

import numpy as np
import torch

from ...model.projection_record import AutoRecord, ProjectionInfo
from ...remote.modeling_dumpembed import SPECTRAL_EPS, DumpProjection
from ..maths.auto_selection import AutoSelection, select_auto
from ..maths.gamma_curve import SpecTempCurve, SpecTempMode, spectemp_curve
from ..maths.spectrum import Spectrum, check_dim
from ..options import FitOptions
from .common import FitContext, FittedProjection, PseudoSet, rank_warning, spectral_info, spectral_projection

PSEUDO_QUERY_RULE = "first non-blank line (several lines) or first sentence vs the whole text"
AUTO_SCORE = "inverse-cloze nDCG@10 + nDCG@10 of the full-dimensional top-10 neighbours"


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
    curve = spectemp_curve(spectrum.eigenvalues, options.mode, spectrum.count)
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
    info = ProjectionInfo(
        mode="auto", dim=k, **_knee_fields(curve, k), route=route,
        gamma=None if route == "prefix" else float(projection.gammas[k - 1]),
        reference_gamma=float(curve.gamma[k - 1]), selection="auto", eps=SPECTRAL_EPS, spectrum_rank=spectrum.rank,
        auto=summary)
    return FittedProjection(projection, info, curve=curve, spectrum=spectrum, auto=selection)


def fit(context: FitContext, options: FitOptions) -> FittedProjection:
    """The registry's fitter of spectemp (every mode)."""
    if not options.is_auto:
        return fit_rule(context.spectrum, options)
    if context.pseudo is None:
        raise ValueError("SpecTemp auto mode needs pseudo-query vectors (encode_pseudo_queries).")
    return fit_auto(context.spectrum, options, context.pseudo, context.encode_seconds)
