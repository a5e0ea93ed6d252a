"""The fitted folder: its `ProjectionInfo` (provenance), its plots and the folder itself (the source's files, the
model with the fitted projection, the quantized outputs' calibration and the card)."""

from __future__ import annotations

import logging
import shutil
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from .._utils.folders import staged_output
from .._utils.public_paths import public_path
from ..model.projection_record import ProjectionInfo
from ..model.quantization import CALIBRATION_FILE, Calibration, projection_fingerprint, write_calibration
from ..remote import DumpEmbedModel
from .corpus import Corpus
from .methods.base import FittedProjection
from .options import FitOptions

logger = logging.getLogger(__name__)

# Files the fit writes itself; everything else in the source folder (tokenizer, sentence-transformers files,
# training/ side files) is copied unchanged.
REWRITTEN = ("config.json", "README.md", "model.safetensors", "model.safetensors.index.json", CALIBRATION_FILE)
# Dimensions listed in projection_info["selectable_dims"] (any k in 1..max_dim works).
SUGGESTED_DIMS = (32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
INPUT = "L2-normalised pooled embedding"


def selectable(d: int, k: int) -> list[int]:
    """The dimensions a folder that serves any k in 1..d lists: the suggested ones below d, d and the fitted k."""
    return sorted({s for s in SUGGESTED_DIMS if s < d} | {d, int(k)})


def provenance(fitted: FittedProjection, options: FitOptions, model: DumpEmbedModel, model_dir: Path,
               corpus: Corpus | None) -> ProjectionInfo:
    """The folder's whole record: the fitter's fields, and what was fitted on what (``corpus``: the texts the map
    was fitted on, None when it needs none)."""
    info = fitted.info
    seed = info.seed
    if seed is None and corpus is not None and len(corpus.texts) < corpus.num_source_texts:
        seed = options.seed  # the seed of the corpus sample
    d = model.config.embedding_size
    return replace(info, method=options.method, description=options.method_class.describe(info),
                   seed=seed, corpus=None if corpus is None else corpus.record(),
                   fitted_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   source_model=public_path(model_dir), input=INPUT, prompt=model.config.prompt_mode,
                   max_dim=d if info.selection else info.dim,
                   selectable_dims=selectable(d, info.dim) if info.selection else [info.dim])


def write_plots(fitted: FittedProjection, folder: Path) -> list[str]:
    """The fit's PNG plots under ``folder/plots``; their relative paths."""
    from . import plots

    written = []
    k = fitted.info.dim
    if fitted.spectrum is not None:
        written.append(plots.plot_spectrum(fitted.spectrum.eigenvalues, folder / "plots/spectrum.png", fitted.curve, k))
    if fitted.curve is not None:
        written += [plots.plot_snr(fitted.curve, folder / "plots/snr.png", k),
                    plots.plot_gamma(fitted.curve, folder / "plots/gamma.png", k, auto=fitted.auto)]
    if fitted.auto is not None:
        written.append(plots.plot_pseudo_scores(fitted.auto, folder / "plots/pseudo_query_ndcg.png"))
    if fitted.singular_values is not None:
        written.append(plots.plot_band(fitted.singular_values, fitted.info.band_start, k,
                                       folder / "plots/unembedding_spectrum.png"))
    return [path.relative_to(folder).as_posix() for path in written]


def write_folder(model: DumpEmbedModel, model_dir: Path, out_dir: Path, fitted: FittedProjection,
                 info: ProjectionInfo, options: FitOptions, overwrite: bool,
                 calibration: Calibration | None = None) -> Path:
    """``out_dir``: the source folder's other files, ``model`` with its fitted projection and ``info``, the
    calibration and the card (staged: the folder appears whole or not at all)."""
    from ..model.card import write_card

    with staged_output(out_dir, overwrite=overwrite, inputs=[model_dir]) as staging:
        for item in model_dir.iterdir():
            if item.name in REWRITTEN or item.suffix == ".py" or item.name == "plots" or item.name.startswith("."):
                continue
            (shutil.copytree if item.is_dir() else shutil.copyfile)(item, staging / item.name)
        if options.plots:
            info = replace(info, plots=write_plots(fitted, staging))
        model.config.projection_info = info.to_dict()
        model.save_pretrained(staging, safe_serialization=True)
        if calibration is not None:  # named after the projection just written, so a later change is caught
            calibration.info["projection_sha256"] = projection_fingerprint(staging)
            write_calibration(staging, calibration)
        write_card(staging, model_id=public_path(out_dir))
    logger.info("Wrote %s: %s, dim %s", out_dir, info.method, info.dim)
    return out_dir
