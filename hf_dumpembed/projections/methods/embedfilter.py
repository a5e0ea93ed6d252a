"""EmbedFilter: the middle band of the unembedding matrix's spectrum (zero-shot: no corpus)."""

from __future__ import annotations

import numpy as np
import torch

from ...model.projection_record import ProjectionInfo
from ...remote import DumpEmbedModel
from ...remote.modeling_dumpembed import DumpProjection, band_matrix, band_start
from ..maths.band_basis import band_size, gram_basis
from ..options import FitOptions
from ..unembedding import find_unembedding
from .common import FitContext, FittedProjection

DEFAULT_RATIO = 2


def fit_embedfilter(model: DumpEmbedModel, options: FitOptions) -> FittedProjection:
    """The band of width m = d // ratio (or ``options.dim``) of ``model``'s unembedding spectrum."""
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
    info = ProjectionInfo(dim=m, ratio=ratio, selection="band", band_start=band_start(d, m),
                          unembedding=unembedding.source, excluded_rows=len(unembedding.exclude_rows))
    return FittedProjection(projection, info, singular_values=singular_values)


def fit(context: FitContext, options: FitOptions) -> FittedProjection:
    """The registry's fitter of embedfilter."""
    return fit_embedfilter(context.model, options)
