"""EmbedFilter: the middle band of the unembedding matrix's spectrum (zero-shot: no corpus)."""

from __future__ import annotations

from typing import Annotated

import numpy as np
import torch
from pydantic import Field, StrictInt

from ..._utils.checked import checked_options
from ...model.projection_record import ProjectionInfo
from ...remote.modeling_dumpembed import DumpProjection, band_matrix, band_start
from ..maths.band_basis import band_size, gram_basis
from ..unembedding import find_unembedding
from .base import FitContext, FitOptions, FittedProjection, ProjectionMethod

DEFAULT_RATIO = 2


@checked_options({})
class EmbedFilterOptions:
    """EmbedFilter's option (``--dim`` gives the band width directly)."""

    ratio: Annotated[StrictInt | None, Field(ge=1, description="EmbedFilter filter ratio τ: keep m = d // τ middle "
                                             "directions (default 2)", json_schema_extra={"metavar": "T"})] = None


class EmbedFilter(ProjectionMethod):
    name = "embedfilter"
    summary = "EmbedFilter: the middle band of the unembedding matrix's spectrum (edge directions removed)"
    help = "middle band of the causal LM's unembedding spectrum: m = d // --ratio (default 2) or --dim"
    any_k = True
    needs_dim = False
    paper = "embedfilter_2026"
    order = 20
    Options = EmbedFilterOptions

    @classmethod
    def fit(cls, context: FitContext, options: FitOptions) -> FittedProjection:
        """The band of width m = d // ratio (or ``options.dim``) of the model's unembedding spectrum."""
        model = context.model
        if model.config.dense_layers:
            raise ValueError("EmbedFilter filters the backbone's hidden space by the unembedding spectrum, but this "
                             "model maps its pooled state through the source's Dense layers first; fit spectemp or "
                             "pca instead.")
        unembedding = find_unembedding(model, options.lm_head)
        d = model.config.hidden_size
        ratio = options.params.ratio
        if options.dim is not None:
            ratio = None
        elif ratio is None:
            ratio = DEFAULT_RATIO
        m = band_size(d, dim=options.dim, ratio=ratio)
        singular_values, basis = gram_basis(unembedding.weight, unembedding.exclude_rows, progress=options.progress)
        projection = DumpProjection(d, m, selection="band")
        projection.basis = torch.from_numpy(np.ascontiguousarray(basis)).float()
        projection.matrix = band_matrix(projection.basis, m)
        info = ProjectionInfo(dim=m, selection="band", params={
            "ratio": ratio, "band_start": band_start(d, m), "unembedding": unembedding.source,
            "excluded_rows": len(unembedding.exclude_rows)})
        return FittedProjection(projection, info, singular_values=singular_values)
