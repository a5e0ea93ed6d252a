"""`FitOptions`: the shared settings and the method's own options, each refused with a sentence naming the fix."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from hf_dumpembed.projections.options import FitOptions


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "pca", "dim": 4, "ratio": 2}, r"^ratio \(--ratio\) applies to --method embedfilter only\.$"),
    ({"method": "whiten", "dim": 4, "gamma": 0.0}, r"^gamma \(--gamma\) applies to --method gamma only\.$"),
    ({"method": "truncate", "dim": 4, "mode": "auto"}, r"^mode \(--mode\) applies to --method spectemp only\.$"),
    ({"method": "pca", "dim": 4, "robust": True}, r"^robust \(--robust\) applies to --method spectemp only\.$"),
    ({"method": "gamma", "dim": 4, "gamma": 1.5}, r"gamma must be in \[0, 1\]"),
    ({"method": "spectemp", "dim": 4, "mode": "fast"}, r"mode must be one of \('reference', 'robust', 'auto'\)"),
    ({"method": "spectemp", "dim": 4, "mode": "auto", "robust": True}, "contradicts mode 'auto'"),
    ({"method": "spectemp", "dim": 4, "pseudo_queries": 0}, r"pseudo_queries must be >= 1; got 0"),
    ({"method": "random-project"}, r"^--method random-project needs --dim K"),
    ({"method": "pca", "dim": 0}, r"^dim must be a positive integer; got 0\.$"),
    ({"method": "pca", "dim": 4, "shrinkage": 0.1}, r"^unknown option\(s\) \['shrinkage'\]; allowed options: "),
    ({"method": "ica", "dim": 4}, r"^method must be one of \("),
])
def test_bad_options_are_refused_naming_the_fix(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FitOptions(**kwargs)


def test_defaults_and_the_robust_alias() -> None:
    assert FitOptions(method="spectemp", dim=4).params.mode == "auto"
    assert FitOptions(method="spectemp", dim=4, robust=True).params.mode == "robust"
    assert FitOptions(method="spectemp", dim=4).uses_pseudo_queries
    assert not FitOptions(method="spectemp", dim=4, mode="reference").uses_pseudo_queries
    assert FitOptions(method="embedfilter").dim is None and FitOptions(method="embedfilter").params.ratio is None
    assert FitOptions(method="gamma", dim=4).params.gamma == 0.5
    assert FitOptions(method="pca", dim=4, ratio=None, robust=False).method == "pca"  # unset options are no options


def test_settings_read_as_attributes_and_options_compare_by_value() -> None:
    options = FitOptions(method="pca", dim=4, seed=5, lm_head=Path("lm"))
    assert (options.dim, options.seed, options.lm_head, options.method_class.name) == (4, 5, "lm", "pca")
    assert options == FitOptions(method="pca", dim=4, seed=5, lm_head="lm") and hash(options)
    assert options != FitOptions(method="pca", dim=4, seed=6)
    assert pickle.loads(pickle.dumps(options)) == options  # torch.multiprocessing hands options to each rank
    with pytest.raises(AttributeError):
        options.dim = 8
    with pytest.raises(AttributeError):
        options.nothing  # noqa: B018
