"""Prefix truncation, random truncation and random projection (no corpus, no centering)."""

from __future__ import annotations

import numpy as np
import torch

from ...model.projection_record import ProjectionInfo
from ...remote.modeling_dumpembed import DumpProjection
from ..maths.reference_maps import random_project_map, random_truncate_map, truncate_map
from ..maths.spectrum import check_dim
from ..options import FitOptions
from .common import FitContext, FittedProjection


def _plain_projection(mean: np.ndarray, matrix: np.ndarray, selection: str | None) -> DumpProjection:
    projection = DumpProjection(matrix.shape[0], matrix.shape[1], selection=selection)
    projection.mean = torch.from_numpy(mean).float()
    projection.matrix = torch.from_numpy(np.ascontiguousarray(matrix)).float()
    return projection


def fit_fixed(d: int, options: FitOptions) -> FittedProjection:
    """The map of ``options`` (truncate, random-truncate or random-project) on d dimensions."""
    k = check_dim(options.dim, d)
    if options.method.value == "truncate":
        linear, selection, seed = truncate_map(d, k), "prefix", None
    elif options.method.value == "random-truncate":
        linear, selection, seed = random_truncate_map(d, k, options.seed), None, options.seed
    else:
        linear, selection, seed = random_project_map(d, k, options.seed), None, options.seed
    info = ProjectionInfo(dim=k, seed=seed, selection=selection)
    return FittedProjection(_plain_projection(linear.mean, linear.matrix, selection), info)


def fit(context: FitContext, options: FitOptions) -> FittedProjection:
    """The registry's fitter of truncate, random-truncate and random-project."""
    return fit_fixed(context.dim, options)
