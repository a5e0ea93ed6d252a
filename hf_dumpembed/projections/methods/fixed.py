"""Prefix truncation, random truncation and random projection (no corpus, no centring)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np
import torch

from ...model.projection_record import ProjectionInfo
from ...remote.modeling_dumpembed import DumpProjection
from ..maths.reference_maps import LinearMap, random_project_map, random_truncate_map, truncate_map
from ..maths.spectrum import check_dim
from .base import FitContext, FitOptions, FittedProjection, ProjectionMethod


class FixedMap(ProjectionMethod):
    """A map chosen without looking at any text: ``linear_map(d, k, seed)`` gives it for d → k."""

    selection: ClassVar[str | None] = None  # how the folder recomposes it for another k (None: fixed dimension)
    seeded: ClassVar[bool] = False
    linear_map: ClassVar[Callable[[int, int, int], LinearMap]]

    @classmethod
    def fit(cls, context: FitContext, options: FitOptions) -> FittedProjection:
        return cls.fit_dim(context.dim, options)

    @classmethod
    def fit_dim(cls, d: int, options: FitOptions) -> FittedProjection:
        """The map on d dimensions."""
        k = check_dim(options.dim, d)
        linear = cls.linear_map(d, k, options.seed)
        projection = DumpProjection(d, k, selection=cls.selection)
        projection.mean = torch.from_numpy(linear.mean).float()
        projection.matrix = torch.from_numpy(np.ascontiguousarray(linear.matrix)).float()
        info = ProjectionInfo(dim=k, seed=options.seed if cls.seeded else None, selection=cls.selection)
        return FittedProjection(projection, info)


class Truncate(FixedMap):
    name, order = "truncate", 60
    summary = "prefix truncation (first k dimensions)"
    help = "first k coordinates"
    any_k, selection = True, "prefix"
    linear_map = staticmethod(lambda d, k, seed: truncate_map(d, k))


class RandomTruncate(FixedMap):
    name, order, seeded = "random-truncate", 70, True
    summary = "random truncation (a seeded choice of k dimensions)"
    help = "seeded random coordinates (--seed)"
    linear_map = staticmethod(random_truncate_map)


class RandomProject(FixedMap):
    name, order, seeded = "random-project", 80, True
    summary = "random Gaussian projection (seeded)"
    help = "seeded Gaussian projection (--seed)"
    linear_map = staticmethod(random_project_map)
