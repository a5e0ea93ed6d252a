"""Fit a projection on a DumpEmbed model and write a new model folder that carries it (with provenance).

The source folder is only read. The new folder holds the fitted map in the model's projection buffers, the
spectrum that recomposes it for any output dimension at load time (``from_pretrained(..., projection_dim=k)``),
``config.projection_info`` and plots under ``plots/``.
"""

from __future__ import annotations

import logging
import shutil
import time
import warnings
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from .._utils.atomic import output_lock
from .._utils.folders import check_output_dir, staged_output
from .._utils.public_paths import public_path
from .._utils.remote_trust import require_trusted_code
from ..model.folder_check import require_dumpembed_folder
from ..model.prompting import PROMPT_TEMPLATES, PromptMode, prompt_mode, set_prompt_mode  # noqa: F401 - re-exported
from ..model.quantization import CALIBRATION_FILE, Calibration, projection_fingerprint, write_calibration
from ..remote import DumpEmbedModel
from ..remote.modeling_dumpembed import (
    SPECTRAL_EPS,
    DumpProjection,
    band_matrix,
    band_start,
    check_finite,
    spectral_matrix,
)
from . import baselines
from .auto import AutoSelection, check_pseudo_queries, select_auto
from .calibration import calibrate, calibration_sample, pseudo_query_frontier
from .corpus import Corpus, read_corpus
from .embedfilter import band_size, gram_basis
from .encode import encode_corpus, encode_texts
from .linear import check_dim
from .pseudo import DEFAULT_MAX_PAIRS, PseudoQueries, build_pseudo_queries
from .spectemp import SpecTempCurve, SpecTempMode, spectemp_curve
from .stats import Spectrum, eigendecompose
from .unembedding import find_unembedding

logger = logging.getLogger(__name__)


class Method(str, Enum):
    SPECTEMP = "spectemp"
    EMBEDFILTER = "embedfilter"
    PCA = "pca"
    WHITEN = "whiten"
    GAMMA = "gamma"
    TRUNCATE = "truncate"
    RANDOM_TRUNCATE = "random-truncate"
    RANDOM_PROJECT = "random-project"


SPECTRAL_METHODS = (Method.SPECTEMP, Method.PCA, Method.WHITEN, Method.GAMMA)
SPECTEMP_MODES = ("reference", "robust", "auto")
# Auto mode was ahead of the paper's rule, PCA and truncation at every k measured on held-out text (BENCHMARKS.md,
# "SpecTemp auto mode"); ``mode="reference"`` keeps the paper's rule.
DEFAULT_SPECTEMP_MODE = "auto"
DEFAULT_GAMMA = 0.5
DEFAULT_RATIO = 2
# Files the fit writes itself; everything else in the source folder (tokenizer, sentence-transformers files,
# training/ side files) is copied unchanged.
REWRITTEN = ("config.json", "README.md", "model.safetensors", "model.safetensors.index.json", CALIBRATION_FILE)
# Dimensions listed in projection_info["selectable_dims"] (any k in 1..max_dim works).
SUGGESTED_DIMS = (32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)


@dataclass(frozen=True)
class FitOptions:
    """What `fit_projection` fits.

    Args:
        method: one of `Method`.
        dim: output dimension k (EmbedFilter: the band width m). Required except for EmbedFilter.
        ratio: EmbedFilter's filter ratio τ (m = d // τ); default 2 when neither dim nor ratio is given.
        gamma: exponent of the ``gamma`` method (default 0.5, the paper's γ-whitening baseline).
        mode: SpecTemp's γ(k): ``auto`` (ours, the default: γ(k), or prefix truncation, chosen per k with
            pseudo-queries from the corpus; see `auto.py`), ``reference`` (the authors' rule, the paper's) or
            ``robust`` (ours: knee = difference-curve argmax). The folder's ``projection_info["mode"]`` and its card
            name the mode that ran.
        robust: alias of ``mode="robust"``.
        pseudo_queries: auto mode: at most this many (first segment, text) pairs are scored.
        seed: seed of the random baselines and of the corpus sample (paper seeds 1999, 5, 2026).
        max_texts: fit on a seeded sample of at most this many texts (the authors' code: 1M).
        batch_size: encoding batch size.
        prompt: compose a zero-shot prompt inside the model (``prompteol`` or ``echo``; causal LMs).
        lm_head: the original causal-LM folder, for EmbedFilter on a backbone with an untied lm_head.
        text_column: text column of a saved HF dataset corpus.
        plots: write PNG plots under ``plots/`` (needs matplotlib: checked before anything is encoded).
        progress: show progress bars.
    """

    method: Method | str
    dim: int | None = None
    ratio: int | None = None
    gamma: float | None = None
    mode: str | None = None
    robust: bool = False
    pseudo_queries: int = DEFAULT_MAX_PAIRS
    seed: int = 1999
    max_texts: int | None = 1_000_000
    batch_size: int = 32
    prompt: PromptMode | str | None = None
    lm_head: str | None = None
    text_column: str | None = None
    plots: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", _choice(Method, self.method, "method"))
        for name in ("dim", "ratio", "seed", "max_texts", "batch_size"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{name} must be an integer; got {value!r} ({type(value).__name__}).")
        if self.gamma is not None and (isinstance(self.gamma, bool) or not isinstance(self.gamma, (int, float))):
            raise ValueError(f"gamma must be a number; got {self.gamma!r}.")
        if self.ratio is not None and self.ratio < 1:
            raise ValueError(f"ratio must be >= 1; got {self.ratio}.")
        if self.max_texts is not None and self.max_texts < 1:
            raise ValueError(f"max_texts must be >= 1; got {self.max_texts}.")
        if self.prompt is not None:
            object.__setattr__(self, "prompt", prompt_mode(self.prompt))
        method = self.method
        if self.ratio is not None and method is not Method.EMBEDFILTER:
            raise ValueError("ratio (τ) applies to --method embedfilter only.")
        if self.gamma is not None and method is not Method.GAMMA:
            raise ValueError("gamma applies to --method gamma only (whiten is γ=1, pca γ=0, spectemp picks γ(k)).")
        if self.gamma is not None and not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1]; got {self.gamma}.")
        if self.robust and method is not Method.SPECTEMP:
            raise ValueError("robust applies to --method spectemp only.")
        if self.mode is not None:
            if method is not Method.SPECTEMP:
                raise ValueError("mode (--mode) applies to --method spectemp only.")
            if self.mode not in SPECTEMP_MODES:
                raise ValueError(f"mode must be one of {SPECTEMP_MODES}; got {self.mode!r}.")
            if self.robust and self.mode != "robust":
                raise ValueError(f"robust (--robust) is the alias of mode 'robust'; it contradicts mode {self.mode!r}.")
        if method is Method.SPECTEMP:
            object.__setattr__(self, "mode", self.mode or ("robust" if self.robust else DEFAULT_SPECTEMP_MODE))
            object.__setattr__(self, "robust", self.mode == "robust")
        if self.pseudo_queries < 1:
            raise ValueError(f"pseudo_queries must be >= 1; got {self.pseudo_queries}.")
        if self.dim is None and method is not Method.EMBEDFILTER:
            raise ValueError(f"--method {method.value} needs --dim K (the output dimension).")
        if self.dim is not None and (isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim < 1):
            raise ValueError(f"dim must be a positive integer; got {self.dim!r}.")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1; got {self.batch_size}.")

    @property
    def needs_corpus(self) -> bool:
        return self.method in SPECTRAL_METHODS

    @property
    def is_auto(self) -> bool:
        return self.method is Method.SPECTEMP and self.mode == "auto"


def _choice(enum: type[Enum], value: object, name: str) -> Enum:
    try:
        return enum(value)
    except ValueError:
        raise ValueError(f"{name} must be one of {tuple(m.value for m in enum)}; got {value!r}.") from None


@dataclass
class FittedProjection:
    """The buffers of a fitted `DumpProjection`, its provenance and what the plots need."""

    projection: DumpProjection
    info: dict[str, Any]
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


def _spectral_projection(spectrum: Spectrum, gammas: np.ndarray, k: int) -> DumpProjection:
    d = spectrum.dim
    projection = DumpProjection(d, k, selection="spectral", eps=SPECTRAL_EPS)
    projection.mean = torch.from_numpy(spectrum.mean).float()
    projection.basis = torch.from_numpy(np.ascontiguousarray(spectrum.eigenvectors)).float()
    projection.eigenvalues = torch.from_numpy(spectrum.eigenvalues).float()
    projection.gammas = torch.from_numpy(np.asarray(gammas, dtype=np.float64)).float()
    projection.matrix = spectral_matrix(projection.basis, projection.eigenvalues, projection.gammas[k - 1], k)
    return projection


def _auto_projection(spectrum: Spectrum, selection: AutoSelection, k: int) -> DumpProjection:
    projection = DumpProjection(spectrum.dim, k, selection="auto", eps=SPECTRAL_EPS)
    projection.basis = torch.from_numpy(np.ascontiguousarray(spectrum.eigenvectors)).float()
    projection.eigenvalues = torch.from_numpy(spectrum.eigenvalues).float()
    projection.gammas = torch.from_numpy(np.asarray(selection.gamma, dtype=np.float64)).float()
    projection.centre = torch.from_numpy(spectrum.mean).float()
    projection.routes = torch.from_numpy(selection.routes.astype(np.float32))
    projection.select(k)
    return projection


def auto_reference_curve(spectrum: Spectrum) -> SpecTempCurve:
    """The rule auto mode corrects: the reference curve, or the robust one when there are no more texts than
    dimensions (n ≤ d: the covariance is rank-deficient and the reference noise floor is zero or round-off)."""
    mode = SpecTempMode.ROBUST if spectrum.count <= spectrum.dim else SpecTempMode.REFERENCE
    return spectemp_curve(spectrum.eigenvalues, mode, spectrum.count)


def _plain_projection(mean: np.ndarray, matrix: np.ndarray, selection: str | None) -> DumpProjection:
    projection = DumpProjection(matrix.shape[0], matrix.shape[1], selection=selection)
    projection.mean = torch.from_numpy(mean).float()
    projection.matrix = torch.from_numpy(np.ascontiguousarray(matrix)).float()
    return projection


def fit_spectral(spectrum: Spectrum, options: FitOptions, pseudo: PseudoSet | None = None) -> FittedProjection:
    """SpecTemp (reference/robust/auto), PCA, whitening or γ-whitening from a corpus spectrum; auto mode also
    needs the pseudo-query vectors (`encode_pseudo_queries`)."""
    d = spectrum.dim
    k = check_dim(options.dim, d)
    info: dict[str, Any] = {"mode": None, "knee": None}
    curve = None
    if options.is_auto:
        if pseudo is None:
            raise ValueError("SpecTemp auto mode needs pseudo-query vectors (encode_pseudo_queries).")
        return _fit_auto(spectrum, options, pseudo, k)
    if options.method is Method.SPECTEMP:
        curve = spectemp_curve(spectrum.eigenvalues, options.mode, spectrum.count)
        gammas = curve.gamma
        info.update(mode=curve.mode.value, knee=curve.knee_at(k), knee_fallback=curve.knee is None,
                    noise_floor=curve.noise_floor, t0=curve.t0, used_rank=curve.used_rank)
        if k > spectrum.rank:
            warnings.warn(f"k={k} exceeds the numerical rank {spectrum.rank} of the corpus covariance: the extra "
                          "directions carry no corpus variance. Fit on more texts or choose a smaller k.",
                          stacklevel=2)
    else:
        gamma = {Method.PCA: 0.0, Method.WHITEN: 1.0}.get(options.method, options.gamma)
        gamma = DEFAULT_GAMMA if gamma is None else gamma
        gammas = np.full(d, gamma)
    projection = _spectral_projection(spectrum, gammas, k)
    info.update(dim=k, gamma=float(projection.gammas[k - 1]), selection="spectral", eps=SPECTRAL_EPS,
                spectrum_rank=spectrum.rank)
    return FittedProjection(projection, info, curve=curve, spectrum=spectrum)


def _fit_auto(spectrum: Spectrum, options: FitOptions, pseudo: PseudoSet, k: int) -> FittedProjection:
    curve = auto_reference_curve(spectrum)
    started = time.perf_counter()
    selection = select_auto(spectrum, pseudo.queries, pseudo.documents, curve.gamma)
    select_seconds = time.perf_counter() - started
    projection = _auto_projection(spectrum, selection, k)
    route = selection.route_at(k)
    if k > spectrum.rank and route != "prefix":
        warnings.warn(f"k={k} exceeds the numerical rank {spectrum.rank} of the corpus covariance: the extra "
                      "directions carry no corpus variance. Fit on more texts or choose a smaller k.", stacklevel=3)
    summary = selection.summary()
    summary.update(base_mode=curve.mode.value, pseudo_query_candidates=pseudo.pairs.candidates,
                   pseudo_query_rule="first non-blank line (several lines) or first sentence vs the whole text",
                   score="inverse-cloze nDCG@10 + nDCG@10 of the full-dimensional top-10 neighbours",
                   pseudo_query_encode_seconds=round(pseudo.encode_seconds, 2),
                   selection_seconds=round(select_seconds, 2))
    info: dict[str, Any] = {
        "mode": "auto", "dim": k, "knee": curve.knee_at(k), "knee_fallback": curve.knee is None,
        "noise_floor": curve.noise_floor, "t0": curve.t0, "used_rank": curve.used_rank,
        "route": route, "gamma": None if route == "prefix" else float(projection.gammas[k - 1]),
        "reference_gamma": float(curve.gamma[k - 1]), "selection": "auto", "eps": SPECTRAL_EPS,
        "spectrum_rank": spectrum.rank, "auto": summary,
    }
    return FittedProjection(projection, info, curve=curve, spectrum=spectrum, auto=selection)


def encode_pseudo_queries(model: DumpEmbedModel, tokenizer: PreTrainedTokenizerBase, pairs: PseudoQueries,
                          documents: np.ndarray, options: FitOptions) -> PseudoSet:
    """Encode the pseudo-query texts (short; the documents come from the corpus pass)."""
    started = time.perf_counter()
    queries = encode_texts(model, tokenizer, pairs.queries, options.batch_size, options.progress,
                           desc="pseudo-queries")
    return PseudoSet(pairs, queries.astype(np.float64), documents.astype(np.float64),
                     time.perf_counter() - started)


def fit_embedfilter(model: DumpEmbedModel, options: FitOptions) -> FittedProjection:
    """EmbedFilter's middle band of the unembedding spectrum (zero-shot: no corpus)."""
    if model.config.dense_layers:
        raise ValueError("EmbedFilter filters the backbone's hidden space by the unembedding spectrum, but this model "
                         "maps its pooled state through the source's Dense layers first; fit spectemp or pca instead.")
    unembedding = find_unembedding(model, options.lm_head)
    d = model.config.hidden_size
    ratio = options.ratio if options.dim is None and options.ratio is not None else None
    if options.dim is None and options.ratio is None:
        ratio = DEFAULT_RATIO
    m = band_size(d, dim=options.dim, ratio=ratio)
    singular_values, basis = gram_basis(unembedding.weight, unembedding.exclude_rows, progress=options.progress)
    projection = DumpProjection(d, m, selection="band")
    projection.basis = torch.from_numpy(np.ascontiguousarray(basis)).float()
    projection.matrix = band_matrix(projection.basis, m)
    info = {"mode": None, "dim": m, "gamma": None, "knee": None, "ratio": ratio, "selection": "band",
            "band_start": band_start(d, m), "unembedding": unembedding.source,
            "excluded_rows": len(unembedding.exclude_rows)}
    return FittedProjection(projection, info, singular_values=singular_values)


def fit_fixed(d: int, options: FitOptions) -> FittedProjection:
    """Prefix truncation, random truncation, random projection (no corpus, no centering)."""
    k = check_dim(options.dim, d)
    if options.method is Method.TRUNCATE:
        linear, selection, seed = baselines.truncate_map(d, k), "prefix", None
    elif options.method is Method.RANDOM_TRUNCATE:
        linear, selection, seed = baselines.random_truncate_map(d, k, options.seed), None, options.seed
    else:
        linear, selection, seed = baselines.random_project_map(d, k, options.seed), None, options.seed
    info = {"mode": None, "dim": k, "gamma": None, "knee": None, "seed": seed, "selection": selection}
    return FittedProjection(_plain_projection(linear.mean, linear.matrix, selection), info)


def _write_plots(fitted: FittedProjection, folder: Path) -> list[str]:
    from . import plots

    written = []
    k = fitted.info["dim"]
    if fitted.spectrum is not None:
        plots.plot_spectrum(fitted.spectrum.eigenvalues, folder / "plots/spectrum.png", fitted.curve, k)
        written.append("plots/spectrum.png")
    if fitted.curve is not None:
        plots.plot_snr(fitted.curve, folder / "plots/snr.png", k)
        plots.plot_gamma(fitted.curve, folder / "plots/gamma.png", k, auto=fitted.auto)
        written += ["plots/snr.png", "plots/gamma.png"]
    if fitted.auto is not None:
        plots.plot_pseudo_scores(fitted.auto, folder / "plots/pseudo_query_ndcg.png")
        written.append("plots/pseudo_query_ndcg.png")
    if fitted.singular_values is not None:
        plots.plot_band(fitted.singular_values, fitted.info["band_start"], k, folder / "plots/unembedding_spectrum.png")
        written.append("plots/unembedding_spectrum.png")
    return written


def load_for_fit(model_dir: Path) -> tuple[DumpEmbedModel, PreTrainedTokenizerBase]:
    if not (model_dir / "config.json").exists():
        raise FileNotFoundError(f"{model_dir} is not a model folder (no config.json).")
    # The folder's own dtype (a bf16 backbone stays bf16): the map is fitted on the vectors the folder gives.
    model = DumpEmbedModel.from_pretrained(model_dir, dtype="auto").eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=True)
    return model, tokenizer


def check_fit_dependencies(options: list[FitOptions]) -> None:
    """Fail fast when an optional dependency a fit needs is missing: matplotlib for the plots (the default), so a
    fit never encodes a whole corpus and then fails on it. ImportError names the fix."""
    if any(o.plots for o in options):
        from .plots import pyplot

        pyplot()


def fit_projection(model_dir: str | Path, out_dir: str | Path, options: FitOptions,
                   corpus: str | Path | None = None, overwrite: bool = False, trust_remote_code: bool = False) -> Path:
    """Fit ``options.method`` on ``model_dir`` (encoding ``corpus`` when the method needs one) into ``out_dir``."""
    return fit_projections(model_dir, {out_dir: options}, corpus, overwrite, trust_remote_code)[0]


# FitOptions fields that decide which texts are encoded and how: fits sharing one encoding pass must agree on them.
_ENCODING_FIELDS = ("seed", "max_texts", "batch_size", "prompt", "text_column", "pseudo_queries")


def fit_projections(model_dir: str | Path, targets: Mapping[str | Path, FitOptions],
                    corpus: str | Path | None = None, overwrite: bool = False,
                    trust_remote_code: bool = False) -> list[Path]:
    """Fit several projections of one model into their own folders, encoding ``corpus`` once for all of them
    (e.g. SpecTemp and PCA at the same k: the same spectrum, two maps). Returns the folders in ``targets`` order.
    The folder's code must be hf_dumpembed's own (it is copied into every output) unless ``trust_remote_code``."""
    import torch.distributed as dist

    model_dir = require_dumpembed_folder(model_dir)
    require_trusted_code(model_dir, trust_remote_code)
    items = [(Path(out), options) for out, options in targets.items()]
    check_fit_dependencies([options for _, options in items])  # before any lock, read or encoding pass
    writer = not (dist.is_available() and dist.is_initialized() and dist.get_rank() != 0)
    with ExitStack() as locks:
        if writer:  # one writer per output, from the start: a second run fails now, not after encoding
            for out_dir, _ in items:
                check_output_dir(out_dir, overwrite, inputs=[model_dir, corpus, items[0][1].lm_head])
                locks.enter_context(output_lock(out_dir))
        return _fit_locked(model_dir, items, corpus, overwrite)


def _fit_locked(model_dir: Path, items: list[tuple[Path, FitOptions]], corpus: str | Path | None,
                overwrite: bool) -> list[Path]:
    import torch.distributed as dist

    _check_targets(model_dir, items, corpus, overwrite)
    first = items[0][1]
    needs_corpus = any(options.needs_corpus for _, options in items)
    texts: Corpus | None = None
    if corpus is not None:
        texts = read_corpus(corpus, first.text_column, first.max_texts, first.seed)
        if not needs_corpus:
            logger.info("--method %s fits no corpus statistics: %s only calibrates the quantized outputs "
                        "(%s)", first.method.value, corpus, CALIBRATION_FILE)
    model, tokenizer = load_for_fit(model_dir)
    if first.prompt is not None:
        set_prompt_mode(model, tokenizer, first.prompt)
    d = model.config.embedding_size
    # Fitted maps read the model's unit-length pooled embedding (the paper's input), not the raw pooled state.
    model.config.normalize_pooled = True
    model.projection = DumpProjection(d, d)
    spectrum = None
    pseudo = None
    encode_seconds = None
    calibration_vectors = None
    if texts is not None:
        pairs = None
        if any(options.is_auto for _, options in items):
            pairs = build_pseudo_queries(texts.texts, first.pseudo_queries, first.seed)
            check_pseudo_queries(len(pairs))
        sample = calibration_sample(len(texts.texts), first.seed)
        keep = sample if pairs is None else np.union1d(sample, pairs.indices)
        started = time.perf_counter()
        stats, kept = encode_corpus(model, tokenizer, texts.texts, first.batch_size, first.progress, keep=keep)
        encode_seconds = time.perf_counter() - started
        if needs_corpus:
            spectrum = eigendecompose(stats)
        calibration_vectors = kept[np.searchsorted(keep, sample)]
        if pairs is not None:
            pseudo = encode_pseudo_queries(model, tokenizer, pairs, kept[np.searchsorted(keep, pairs.indices)], first)
    written = []
    for out_dir, options in items:
        if options.needs_corpus:
            fitted = fit_spectral(spectrum, options, pseudo if options.is_auto else None)
            if fitted.auto is not None:
                fitted.info["auto"]["corpus_encode_seconds"] = round(encode_seconds, 2)
        elif options.method is Method.EMBEDFILTER:
            fitted = fit_embedfilter(model, options)
        else:
            fitted = fit_fixed(d, options)
        if dist.is_available() and dist.is_initialized() and dist.get_rank() != 0:
            written.append(out_dir)  # one rank writes
            continue
        used = texts if options.needs_corpus else None
        info = {"method": options.method.value, "mode": None, "dim": None, "gamma": None, "knee": None,
                "ratio": None, "seed": None, "corpus": used.provenance() if used is not None else None,
                "fitted_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "plots": []}
        if used is not None and len(used.texts) < used.num_source_texts:
            info["seed"] = options.seed  # the seed of the corpus sample
        info.update(fitted.info)
        info.update(source_model=public_path(model_dir), input="L2-normalised pooled embedding",
                    prompt=model.config.prompt_mode,
                    max_dim=d if fitted.info.get("selection") else info["dim"],
                    selectable_dims=_selectable(d, info) if fitted.info.get("selection") else [info["dim"]])
        check_finite(fitted.projection, prefix="projection.")  # never write a map that gives NaN vectors
        model.projection = fitted.projection
        model.config.projection_dim = info["dim"]
        calibration = None
        if calibration_vectors is not None and len(calibration_vectors) >= 2:
            calibration = _calibration(model, fitted, info, calibration_vectors, texts, first.seed,
                                       pseudo if options.is_auto else None)
        written.append(_write_folder(model, model_dir, out_dir, fitted, info, options, overwrite, calibration))
    return written


def _check_targets(model_dir: Path, items: list[tuple[Path, FitOptions]], corpus: str | Path | None,
                   overwrite: bool) -> None:
    """Refuse, before anything is read, targets that cannot be fitted together from one encoding pass."""
    if not items:
        raise ValueError("fit_projections needs at least one (output folder, options) target.")
    first = items[0][1]
    for out_dir, options in items:
        if out_dir.resolve() == model_dir.resolve():
            raise ValueError("the output folder must differ from the source model folder (the source is never "
                             "modified).")
        check_output_dir(out_dir, overwrite, inputs=[model_dir, corpus, options.lm_head])
        if options.needs_corpus and corpus is None:
            raise ValueError(f"--method {options.method.value} is fitted on corpus embeddings: pass --corpus PATH.")
        differing = [f for f in _ENCODING_FIELDS if getattr(options, f) != getattr(first, f)]
        if differing:
            raise ValueError(f"fits sharing one encoding pass must agree on {', '.join(differing)}; fit them "
                             "separately.")


def _calibration(model: DumpEmbedModel, fitted: FittedProjection, info: dict[str, Any], vectors: np.ndarray,
                 texts: Corpus, seed: int, pseudo: Any | None):
    """The quantized outputs' calibration of one fitted map (``pseudo``: an auto fit's pseudo-queries, scored per
    k and precision for the card)."""
    calibration = calibrate(fitted.projection, vectors, info["selectable_dims"], normalize=model.config.normalize,
                            info={"corpus": texts.provenance(), "seed": seed if len(vectors) < len(texts.texts)
                                  else None})
    if pseudo is not None:  # a label-free frontier for the card
        calibration.info["pseudo_query_ndcg"] = {
            "queries": len(pseudo.pairs), "dims": pseudo_query_frontier(
                fitted.projection, pseudo.queries, pseudo.documents, calibration, model.config.normalize)}
    return calibration


def _selectable(d: int, info: dict[str, Any]) -> list[int]:
    return sorted({k for k in SUGGESTED_DIMS if k < d} | {d, int(info["dim"])})


def _write_folder(model: DumpEmbedModel, model_dir: Path, out_dir: Path, fitted: FittedProjection,
                  info: dict[str, Any], options: FitOptions, overwrite: bool,
                  calibration: Calibration | None = None) -> Path:
    from ..model.card import write_card

    with staged_output(out_dir, overwrite=overwrite, inputs=[model_dir]) as staging:
        for item in model_dir.iterdir():
            if item.name in REWRITTEN or item.suffix == ".py" or item.name == "plots" or item.name.startswith("."):
                continue
            if item.is_dir():
                shutil.copytree(item, staging / item.name)
            else:
                shutil.copyfile(item, staging / item.name)
        if options.plots:
            info["plots"] = _write_plots(fitted, staging)
        model.config.projection_info = info
        model.save_pretrained(staging, safe_serialization=True)
        if calibration is not None:  # named after the projection just written, so a later change is caught
            calibration.info["projection_sha256"] = projection_fingerprint(staging)
            write_calibration(staging, calibration)
        write_card(staging, model_id=public_path(out_dir))
    logger.info("Wrote %s: %s, dim %s", out_dir, info["method"], info["dim"])
    return out_dir
