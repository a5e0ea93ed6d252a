"""Fit projections on a DumpEmbed model and write new model folders that carry them (with provenance).

The source folder is only read. One encoding pass of the corpus serves every fit of a `fit_projections` call; each
method is its class (`methods/`, found by `registry.py`), the folder from the writer (`writer.py`). A new folder
holds the fitted map in the model's projection buffers, the spectrum that recomposes it for any output dimension at
load time (``from_pretrained(..., projection_dim=k)``), ``config.projection_info`` and plots under ``plots/``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import numpy as np
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from .._utils.atomic import output_lock
from .._utils.folders import check_output_dir
from ..model.dumpembed_folder import require_dumpembed_folder
from ..model.folder_schema import folder_code_may_run
from ..model.projection_record import ProjectionInfo
from ..model.prompting import set_prompt_mode
from ..model.quantization import CALIBRATION_FILE, Calibration
from ..remote import DumpEmbedModel
from ..remote.modeling_dumpembed import DumpProjection, check_finite
from .corpus import Corpus, read_corpus, with_folder_path
from .encode import encode_corpus, encode_texts, rank_and_world
from .maths.pseudo_queries import PseudoQueries, build_pseudo_queries, check_pseudo_queries
from .methods.base import FitContext, FittedProjection, PseudoSet
from .options import FitOptions
from .quantization_ranges import calibrate, calibration_sample, pseudo_query_frontier
from .writer import provenance, write_folder

logger = logging.getLogger(__name__)

# FitOptions settings that decide which texts are encoded and how: fits sharing one encoding pass must agree on them
# (and the fits that score pseudo-queries on how many).
_ENCODING_FIELDS = ("seed", "max_texts", "batch_size", "prompt", "text_column")


def encode_pseudo_queries(model: DumpEmbedModel, tokenizer: PreTrainedTokenizerBase, pairs: PseudoQueries,
                          documents: np.ndarray, options: FitOptions) -> PseudoSet:
    """Encode the pseudo-query texts (short; the documents come from the corpus pass)."""
    started = time.perf_counter()
    queries = encode_texts(model, tokenizer, pairs.queries, options.batch_size, options.progress,
                           desc="pseudo-queries")
    return PseudoSet(pairs, queries.astype(np.float64), documents.astype(np.float64),
                     time.perf_counter() - started)


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


def fit_projections(model_dir: str | Path, targets: Mapping[str | Path, FitOptions],
                    corpus: str | Path | None = None, overwrite: bool = False,
                    trust_remote_code: bool = False) -> list[Path]:
    """Fit several projections of one model into their own folders, encoding ``corpus`` once for all of them
    (e.g. SpecTemp and PCA at the same k: the same spectrum, two maps). Returns the folders in ``targets`` order.
    The folder's code must be hf_dumpembed's own (it is copied into every output) unless ``trust_remote_code``."""
    model_dir = require_dumpembed_folder(model_dir)
    folder_code_may_run(model_dir, trust_remote_code)
    items = [(Path(out), options) for out, options in targets.items()]
    check_fit_dependencies([options for _, options in items])  # before any lock, read or encoding pass
    writer = rank_and_world()[0] == 0
    with ExitStack() as locks:
        if writer:  # one writer per output, from the start: a second run fails now, not after encoding
            for out_dir, _ in items:
                check_output_dir(out_dir, overwrite, inputs=[model_dir, corpus, items[0][1].lm_head])
                locks.enter_context(output_lock(out_dir))
        return _fit_locked(model_dir, items, corpus, overwrite)


def _load_model(model_dir: Path, first: FitOptions) -> tuple[DumpEmbedModel, PreTrainedTokenizerBase]:
    """The source model, set to give the fits their input: the unit-length pooled embedding (the paper's)."""
    model, tokenizer = load_for_fit(model_dir)
    if first.prompt is not None:
        set_prompt_mode(model, tokenizer, first.prompt)
    model.config.normalize_pooled = True
    d = model.config.embedding_size
    model.projection = DumpProjection(d, d)
    return model, tokenizer


def _encode_pass(model: DumpEmbedModel, tokenizer: PreTrainedTokenizerBase, texts: Corpus,
                 items: list[tuple[Path, FitOptions]], context: FitContext) -> np.ndarray:
    """Encode the corpus once: its statistics and, when an auto fit scores them, the pseudo-queries go into
    ``context``; returns the calibration sample's vectors."""
    first = items[0][1]
    pairs = None
    scoring = [options for _, options in items if options.uses_pseudo_queries]
    if scoring:
        pairs = build_pseudo_queries(texts.texts, scoring[0].params.pseudo_queries, first.seed)
        check_pseudo_queries(len(pairs))
    sample = calibration_sample(len(texts.texts), first.seed)
    keep = sample if pairs is None else np.union1d(sample, pairs.indices)
    started = time.perf_counter()
    stats, kept = encode_corpus(model, tokenizer, texts.texts, first.batch_size, first.progress, keep=keep)
    context.encode_seconds = time.perf_counter() - started
    context.stats = stats
    if pairs is not None:
        context.pseudo = encode_pseudo_queries(model, tokenizer, pairs, kept[np.searchsorted(keep, pairs.indices)],
                                               first)
    return kept[np.searchsorted(keep, sample)]


def _fit_locked(model_dir: Path, items: list[tuple[Path, FitOptions]], corpus: str | Path | None,
                overwrite: bool) -> list[Path]:
    _check_targets(model_dir, items, corpus, overwrite)
    first = items[0][1]
    texts: Corpus | None = None
    if corpus is not None:
        texts = read_corpus(corpus, first.text_column, first.max_texts, first.seed)
        if not any(options.needs_corpus for _, options in items):
            logger.info("--method %s fits no corpus statistics: %s only calibrates the quantized outputs "
                        "(%s)", first.method, corpus, CALIBRATION_FILE)
    model, tokenizer = _load_model(model_dir, first)
    context = FitContext(model)
    calibration_vectors = None if texts is None else _encode_pass(model, tokenizer, texts, items, context)
    written = []
    for out_dir, options in items:
        fitted = options.method_class.fit(context, options)
        if rank_and_world()[0] != 0:
            written.append(out_dir)  # one rank writes
            continue
        info = provenance(fitted, options, model, model_dir, texts if options.needs_corpus else None)
        if info.corpus is not None:  # found again from any working directory (export-onnx's calibration)
            info = replace(info, corpus=with_folder_path(info.corpus, texts.path, out_dir))
        check_finite(fitted.projection, prefix="projection.")  # never write a map that gives NaN vectors
        model.projection = fitted.projection
        model.config.projection_dim = info.dim
        calibration = None
        if calibration_vectors is not None and len(calibration_vectors) >= 2:
            calibration = _calibration(model, fitted, info, calibration_vectors, texts, first.seed,
                                       context.pseudo if options.uses_pseudo_queries else None)
        written.append(write_folder(model, model_dir, out_dir, fitted, info, options, overwrite, calibration))
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
            raise ValueError(f"--method {options.method} is fitted on corpus embeddings: pass --corpus PATH.")
        differing = [f for f in _ENCODING_FIELDS if getattr(options, f) != getattr(first, f)]
        scoring = [other for _, other in items if other.uses_pseudo_queries]
        if options.uses_pseudo_queries and options.params.pseudo_queries != scoring[0].params.pseudo_queries:
            differing.append("pseudo_queries")
        if differing:
            raise ValueError(f"fits sharing one encoding pass must agree on {', '.join(differing)}; fit them "
                             "separately.")


def _calibration(model: DumpEmbedModel, fitted: FittedProjection, info: ProjectionInfo, vectors: np.ndarray,
                 texts: Corpus, seed: int, pseudo: PseudoSet | None) -> Calibration:
    """The quantized outputs' calibration of one fitted map (``pseudo``: an auto fit's pseudo-queries, scored per
    k and precision for the card)."""
    calibration = calibrate(fitted.projection, vectors, info.selectable_dims, normalize=model.config.normalize,
                            info={"corpus": texts.provenance(), "seed": seed if len(vectors) < len(texts.texts)
                                  else None})
    if pseudo is not None:  # a label-free frontier for the card
        calibration.info["pseudo_query_ndcg"] = {
            "queries": len(pseudo.pairs), "dims": pseudo_query_frontier(
                fitted.projection, pseudo.queries, pseudo.documents, calibration, model.config.normalize)}
    return calibration
