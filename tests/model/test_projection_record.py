"""The projection methods' vocabulary, their registry and the typed `ProjectionInfo` record of config.json."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from hf_dumpembed.model.card import selectable_dims
from hf_dumpembed.model.projection_record import (
    METHOD_NAMES,
    METHODS,
    AutoRecord,
    CorpusRecord,
    ProjectionInfo,
    method_text,
)
from hf_dumpembed.projections.maths.spectrum import eigendecompose
from hf_dumpembed.projections.maths.statistics import StreamingStats
from hf_dumpembed.projections.methods.fixed import fit_fixed
from hf_dumpembed.projections.options import FitOptions
from hf_dumpembed.projections.registry import FITTERS, fit_spectral

CORPUS = {"path": "shared/texts.txt", "name": "texts.txt", "sha256": "4a44f7a8", "num_texts": 20, "sampled_from": 211}
TAIL = {"source_model": "shared/model", "input": "L2-normalised pooled embedding", "prompt": None, "max_dim": 32,
        "selectable_dims": [8, 32]}
AUTO = {"pseudo_queries": 208, "ks": [8, 16, 32], "chosen": ["u0.05", "reference", "prefix"],
        "route": ["uncentred", "centred", "prefix"], "gamma": [0.05, 0.0604, 0.0252],
        "reference_gamma": [1.0, 0.0708, 0.0004], "score_chosen": [1.3778, 1.4893, 1.5597],
        "score_reference": [1.2004, 1.4893, 1.3431], "cloze_chosen": [0.4243, 0.5707, 0.5795],
        "fidelity_chosen": [0.8669, 0.9804, 0.9845], "tolerance": 0.0, "rule_weight": 0.5, "base_mode": "reference",
        "pseudo_query_candidates": 208, "pseudo_query_rule": "first non-blank line (several lines) or first sentence "
        "vs the whole text", "score": "inverse-cloze nDCG@10 + nDCG@10 of the full-dimensional top-10 neighbours",
        "pseudo_query_encode_seconds": 2.48, "selection_seconds": 3.6, "corpus_encode_seconds": 4.75}
KNEE = {"knee_fallback": False, "noise_floor": 8.2e-08, "t0": 28, "used_rank": 32}
SPECTRAL = {"eps": 1e-06, "spectrum_rank": 32}


def _head(method: str, **values) -> dict:
    head = {"method": method, "mode": None, "dim": 8, "gamma": None, "knee": None, "ratio": None, "seed": None,
            "corpus": None, "fitted_at": "2026-12-02T11:42:08+00:00", "plots": []}
    return head | values


# The dicts the fit writes today, key for key in its order (checked against a fit with the previous code).
TODAY = {
    "spectemp-reference": {**_head("spectemp", mode="reference", gamma=1.0, knee=8, corpus=CORPUS, seed=5,
                                   plots=["plots/spectrum.png"]), **KNEE, "selection": "spectral", **SPECTRAL, **TAIL},
    "spectemp-auto": {**_head("spectemp", mode="auto", gamma=0.05, knee=8, corpus=CORPUS), **KNEE,
                      "route": "uncentred", "reference_gamma": 1.0, "selection": "auto", **SPECTRAL, "auto": AUTO,
                      **TAIL},
    "pca": {**_head("pca", gamma=0.0, corpus=CORPUS), "selection": "spectral", **SPECTRAL, **TAIL},
    "embedfilter": {**_head("embedfilter", dim=16, ratio=2), "selection": "band", "band_start": 8,
                    "unembedding": "tied input embeddings", "excluded_rows": 3, **TAIL},
    "truncate": {**_head("truncate"), "selection": "prefix", **TAIL},
    "random-project": {**_head("random-project", dim=5, seed=1999), "selection": None, **TAIL, "max_dim": 5,
                       "selectable_dims": [5]},
}


@pytest.mark.parametrize("name", sorted(TODAY))
def test_record_round_trips_todays_dict_key_for_key(name: str) -> None:
    stored = TODAY[name]
    info = ProjectionInfo.from_dict(stored)
    assert info.to_dict() == stored and list(info.to_dict()) == list(stored)
    if stored["corpus"] is not None:
        assert isinstance(info.corpus, CorpusRecord) and info.corpus.sampled_from == 211
        assert list(info.to_dict()["corpus"]) == list(CORPUS)
    if "auto" in stored:
        assert isinstance(info.auto, AutoRecord) and info.auto.ks == [8, 16, 32]
        assert list(info.to_dict()["auto"]) == list(AUTO)


def test_old_folders_records_read_and_unknown_keys_are_kept() -> None:
    old = {"method": "spectemp", "dim": 8, "corpus": {"path": "c.txt"}, "future_key": {"x": 1}}
    info = ProjectionInfo.from_config({"projection_info": old})
    assert info.mode is None and info.corpus.to_dict() == {"path": "c.txt"} and info.selectable_dims == []
    assert info.to_dict()["future_key"] == {"x": 1}
    assert ProjectionInfo.from_config({"projection_info": {}}) is None and ProjectionInfo.from_config({}) is None
    assert selectable_dims(ProjectionInfo.from_dict({"selectable_dims": [32, 8, 8]})) == [8, 32]


def test_method_text_names_the_mode() -> None:
    assert method_text(ProjectionInfo(method="spectemp", mode="robust")).startswith("SpecTemp, robust mode")
    assert method_text(ProjectionInfo(method="spectemp")) == METHODS["spectemp"].card_text
    assert method_text(ProjectionInfo(method="pca")) == "PCA (centred, γ = 0)"
    assert method_text(ProjectionInfo(method="ica")) == "ica"


def test_the_registry_binds_every_method_of_the_vocabulary() -> None:
    assert list(FITTERS) == list(METHOD_NAMES)
    assert all(callable(fit) for fit in FITTERS.values())


def test_cli_choices_come_from_the_vocabulary() -> None:
    from hf_dumpembed.commands import fit

    commands = argparse.ArgumentParser().add_subparsers()
    fit.register(commands)
    parser = commands.choices["fit"]
    actions = {a.dest: a for a in parser._actions}
    assert list(actions["method"].choices) == list(FITTERS) == list(METHOD_NAMES)
    assert list(actions["mode"].choices) == list(METHODS["spectemp"].mode_names)
    for method in METHOD_NAMES:
        assert f"\n  {method} " in fit.DESCRIPTION


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "pca", "dim": 4, "ratio": 2}, r"^ratio \(τ\) applies to --method embedfilter only\.$"),
    ({"method": "whiten", "dim": 4, "gamma": 0.0},
     r"^gamma applies to --method gamma only \(whiten is γ=1, pca γ=0, spectemp picks γ\(k\)\)\.$"),
    ({"method": "truncate", "dim": 4, "mode": "auto"}, r"^mode \(--mode\) applies to --method spectemp only\.$"),
    ({"method": "gamma", "dim": 4, "gamma": 1.5}, r"gamma must be in \[0, 1\]"),
    ({"method": "spectemp", "dim": 4, "mode": "fast"}, r"mode must be one of \('reference', 'robust', 'auto'\)"),
    ({"method": "spectemp", "dim": 4, "mode": "auto", "robust": True}, "contradicts mode 'auto'"),
    ({"method": "random-project"}, r"--method random-project needs --dim K"),
])
def test_fit_options_rules_follow_the_vocabulary(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        FitOptions(**kwargs)


def test_fit_options_defaults_from_the_vocabulary() -> None:
    assert FitOptions(method="spectemp", dim=4).mode == METHODS["spectemp"].default_mode == "auto"
    assert FitOptions(method="spectemp", dim=4, robust=True).mode == "robust"
    assert FitOptions(method="embedfilter").dim is None and FitOptions(method="pca", dim=4).mode is None
    assert FitOptions(method="spectemp", dim=4).is_auto and not FitOptions(method="spectemp", dim=4,
                                                                           mode="reference").is_auto


def test_any_k_in_the_vocabulary_matches_what_the_fitters_store() -> None:
    rng = np.random.default_rng(0)
    stats = StreamingStats(12)
    stats.update(rng.normal(size=(40, 12)))
    spectrum = eigendecompose(stats)
    for name, spec in METHODS.items():
        if spec.needs_corpus and not spec.modes:
            fitted = fit_spectral(spectrum, FitOptions(method=name, dim=4))
        elif not spec.needs_corpus and spec.needs_dim:
            fitted = fit_fixed(12, FitOptions(method=name, dim=4))
        else:
            continue  # SpecTemp (spectral, any k) and EmbedFilter (band): tests/projections/test_fit.py
        assert bool(fitted.info.selection) is spec.any_k, name
