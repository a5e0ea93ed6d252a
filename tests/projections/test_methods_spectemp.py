"""SpecTemp's fitter: the stored auto-mode projection recomposes every k bit for bit, through all three routes."""

from __future__ import annotations

import numpy as np
import torch

from hf_dumpembed.projections.maths.auto_selection import select_auto
from hf_dumpembed.projections.maths.gamma_curve import spectemp_curve
from hf_dumpembed.projections.methods.spectemp import auto_projection
from hf_dumpembed.remote.modeling_dumpembed import DumpProjection
from tests.support.spectra import pseudo_query_pairs


def test_stored_auto_projection_recomposes_every_k_bit_for_bit() -> None:
    spectrum, queries, docs = pseudo_query_pairs(d=24)
    reference = spectemp_curve(spectrum.eigenvalues, "reference", spectrum.count).gamma
    selection = select_auto(spectrum, queries, docs, reference)
    routes = np.zeros(24, dtype=np.int64)
    routes[8:12] = 1  # uncentred
    routes[18:] = 2  # prefix truncation: all three routes in one stored form
    selection = type(selection)(**{**selection.__dict__, "routes": routes})
    stored = auto_projection(spectrum, selection, 20)
    assert torch.equal(stored.mean, torch.zeros(24)) and torch.equal(stored.matrix, torch.eye(24, 20))
    loaded = DumpProjection(24, 20, selection="auto")
    loaded.load_state_dict(stored.state_dict())
    for k in (1, 5, 9, 12, 13, 18, 19, 24):
        loaded.select(k)
        fitted = auto_projection(spectrum, selection, k)
        assert torch.equal(loaded.matrix, fitted.matrix) and torch.equal(loaded.mean, fitted.mean), k
    loaded.select(13)
    assert loaded.route(13) == "centred" and torch.equal(loaded.mean, torch.from_numpy(spectrum.mean).float())
    loaded.select(9)
    assert loaded.route(9) == "uncentred" and not loaded.mean.any() and loaded.matrix.shape == (24, 9)
    assert not torch.equal(loaded.matrix, torch.eye(24, 9))
