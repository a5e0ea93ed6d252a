"""Every projection method is one class in one module of ``methods/``: the registry, ``fit``'s flags and help,
`FitOptions`' rules, the record and the card all come from the class, so a method defined anywhere (here, in this
test) fits, writes and loads with nothing else changed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Annotated

import numpy as np
import pytest
import torch
from pydantic import Field, StrictFloat

from hf_dumpembed._utils.checked import checked_options
from hf_dumpembed.commands import fit as fit_command
from hf_dumpembed.model.projection_record import ProjectionInfo
from hf_dumpembed.projections import registry
from hf_dumpembed.projections.fit import FitOptions, fit_projection
from hf_dumpembed.projections.maths.spectrum import check_dim, eigendecompose
from hf_dumpembed.projections.maths.statistics import StreamingStats
from hf_dumpembed.projections.methods.base import FitContext, FittedProjection, ProjectionMethod
from hf_dumpembed.projections.methods.fixed import FixedMap
from hf_dumpembed.remote.modeling_dumpembed import DumpProjection
from tests.support.fit_fixtures import corpus_texts, numpy_spectrum, unit_pooled_one_by_one, write_corpus


@checked_options({})
class ShrinkageOptions:
    shrinkage: Annotated[StrictFloat, Field(ge=0, description="shrinkage α toward the mean eigenvalue",
                                            json_schema_extra={"metavar": "A"})] = 0.1


class ShrinkageWhitening(ProjectionMethod):
    """Whitening with shrinkage: top-k eigenvectors scaled by (λ + α·mean λ)^(−1/2); a fixed k."""

    name = "shrinkage"
    summary = "whitening with shrinkage"
    help = "top-k eigenvectors scaled by (λ + α mean λ)^(-1/2), --shrinkage α"
    needs_corpus = True
    order = 90
    Options = ShrinkageOptions

    @classmethod
    def fit(cls, context: FitContext, options: FitOptions) -> FittedProjection:
        spectrum = context.spectrum
        k = check_dim(options.dim, spectrum.dim)
        values = spectrum.eigenvalues[:k] + options.params.shrinkage * spectrum.eigenvalues.mean()
        projection = DumpProjection(spectrum.dim, k)
        projection.mean = torch.from_numpy(spectrum.mean).float()
        projection.matrix = torch.from_numpy(spectrum.eigenvectors[:, :k] / np.sqrt(values)).float()
        info = ProjectionInfo(dim=k, params={"shrinkage": options.params.shrinkage})
        return FittedProjection(projection, info, spectrum=spectrum)


@pytest.fixture
def with_shrinkage(monkeypatch: pytest.MonkeyPatch) -> type[ProjectionMethod]:
    monkeypatch.setitem(registry.METHODS, ShrinkageWhitening.name, ShrinkageWhitening)
    return ShrinkageWhitening


def _fit_parser() -> argparse.ArgumentParser:
    commands = argparse.ArgumentParser().add_subparsers()
    fit_command.register(commands)
    return commands.choices["fit"]


def test_the_registry_finds_every_method_class_in_order() -> None:
    assert list(registry.METHODS) == ["spectemp", "embedfilter", "pca", "whiten", "gamma", "truncate",
                                      "random-truncate", "random-project"]
    for name, method in registry.METHODS.items():
        assert method.name == name and method.summary and method.help and issubclass(method, ProjectionMethod)
    assert FixedMap not in registry.METHODS.values()  # a shared base without a name is no method
    with pytest.raises(ValueError, match=r"method must be one of \('spectemp', "):
        registry.projection_method("ica")


def test_fit_flags_and_help_come_from_the_classes() -> None:
    parser = _fit_parser()
    actions = {action.dest: action for action in parser._actions}
    assert list(actions["method"].choices) == list(registry.METHODS)
    assert actions["mode"].choices == ["reference", "robust", "auto"]
    assert actions["robust"].default is None and actions["ratio"].type is int
    assert actions["gamma"].type("0.25") == 0.25
    with pytest.raises(argparse.ArgumentTypeError):
        actions["gamma"].type("1.5")
    for name in registry.option_owners():
        assert name in actions
    for name in registry.METHODS:
        assert f"\n  {name} " in parser.description


def test_any_k_matches_what_each_method_stores() -> None:
    rng = np.random.default_rng(0)
    stats = StreamingStats(12)
    stats.update(rng.normal(size=(40, 12)))
    context = FitContext.from_spectrum(eigendecompose(stats))
    for name, method in registry.METHODS.items():
        if name in ("spectemp", "embedfilter"):
            continue  # auto mode needs pseudo-queries, EmbedFilter an LM: tests/projections/test_fit.py
        fitted = method.fit(context, FitOptions(method=name, dim=4))
        assert bool(fitted.info.selection) is method.any_k, name


def test_a_method_defined_in_a_test_is_refused_until_registered() -> None:
    with pytest.raises(ValueError, match="method must be one of"):
        FitOptions(method="shrinkage", dim=4)


def test_a_new_method_gets_its_option_flag_and_rules(with_shrinkage) -> None:
    options = FitOptions(method="shrinkage", dim=4, shrinkage=0.5)
    assert options.params.shrinkage == 0.5 and options.needs_corpus and not options.uses_pseudo_queries
    assert FitOptions(method="shrinkage", dim=4).params.shrinkage == 0.1
    with pytest.raises(ValueError, match=r"^shrinkage \(--shrinkage\) applies to --method shrinkage only\.$"):
        FitOptions(method="pca", dim=4, shrinkage=0.5)
    with pytest.raises(ValueError, match=r"shrinkage must be >= 0"):
        FitOptions(method="shrinkage", dim=4, shrinkage=-1.0)
    args = _fit_parser().parse_args(["m", "o", "--method", "shrinkage", "--dim", "4", "--shrinkage", "0.5"])
    assert args.shrinkage == 0.5
    assert "  shrinkage " in _fit_parser().description


def test_a_new_method_fits_writes_and_loads(with_shrinkage, bert_dump_model: Path, tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "texts.txt")
    out = fit_projection(bert_dump_model, tmp_path / "shrunk", FitOptions(method="shrinkage", dim=4, shrinkage=0.5,
                                                                         progress=False, plots=False), corpus=corpus)
    info = json.loads((out / "config.json").read_text())["projection_info"]
    assert (info["method"], info["description"], info["params"]["shrinkage"], info["dim"]) == (
        "shrinkage", "whitening with shrinkage", 0.5, 4)
    assert "whitening with shrinkage" in (out / "README.md").read_text()
    texts = corpus_texts()
    mean, values, vectors = numpy_spectrum(unit_pooled_one_by_one(bert_dump_model, texts))
    expected = (unit_pooled_one_by_one(bert_dump_model, texts[:12]) - mean) @ (
        vectors[:, :4] / np.sqrt(values[:4] + 0.5 * values.mean()))
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    from hf_dumpembed.export.verify import encode_with_automodel

    got = encode_with_automodel(out, texts[:12]).astype(np.float64)
    assert got.shape == (12, 4)
    assert np.abs(got @ got.T - expected @ expected.T).max() < 1e-4  # Gram matrices: free of eigenvector signs
