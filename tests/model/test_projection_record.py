"""The typed `ProjectionInfo` record of config.json: today's dicts key for key, old folders' records read."""

from __future__ import annotations

import pytest

from hf_dumpembed.model.card import selectable_dims
from hf_dumpembed.model.projection_record import METHOD_PARAM_NAMES, AutoRecord, CorpusRecord, ProjectionInfo

CORPUS = {"path": "shared/texts.txt", "name": "texts.txt", "sha256": "4a44f7a8", "num_texts": 20, "sampled_from": 211}
TAIL = {"source_model": "shared/model", "input": "L2-normalised pooled embedding", "prompt": None, "max_dim": 32,
        "selectable_dims": [8, 32]}
AUTO = {"pseudo_queries": 208, "ks": [8, 16, 32], "chosen": ["u0.05", "reference", "prefix"],
        "route": ["uncentred", "centred", "prefix"], "gamma": [0.05, 0.0604, 0.0252],
        "reference_gamma": [1.0, 0.0708, 0.0004], "score_chosen": [1.3778, 1.4893, 1.5597],
        "score_reference": [1.2004, 1.4893, 1.3431], "cloze_chosen": [0.4243, 0.5707, 0.5795],
        "fidelity_chosen": [0.8669, 0.9804, 0.9845], "tolerance": 0.0, "rule_weight": 0.5, "identity_cloze": 0.9024,
        "saturation": 0.95, "base_mode": "reference",
        "pseudo_query_candidates": 208, "pseudo_query_rule": "first non-blank line (several lines) or first sentence "
        "vs the whole text", "score": "inverse-cloze nDCG@10 + nDCG@10 of the full-dimensional top-10 neighbours",
        "pseudo_query_encode_seconds": 2.48, "selection_seconds": 3.6, "corpus_encode_seconds": 4.75}
KNEE = {"knee_fallback": False, "noise_floor": 8.2e-08, "t0": 28, "used_rank": 32}
SPECTRAL = {"eps": 1e-06, "spectrum_rank": 32}


def _record(method: str, params: dict, **values) -> dict:
    head = {"method": method, "description": f"{method}, in words", "params": params, "dim": 8, "seed": None,
            "corpus": None, "fitted_at": "2026-12-02T11:42:08+00:00", "plots": []}
    return head | values


# The dicts the fit writes today, key for key in its order.
TODAY = {
    "spectemp-reference": _record("spectemp", {"mode": "reference", "knee": 8, **KNEE, "gamma": 1.0, **SPECTRAL},
                                  corpus=CORPUS, seed=5, plots=["plots/spectrum.png"], selection="spectral", **TAIL),
    "spectemp-auto": _record("spectemp", {"mode": "auto", "knee": 8, **KNEE, "route": "uncentred", "gamma": 0.05,
                                          "reference_gamma": 1.0, **SPECTRAL, "auto": AUTO},
                             corpus=CORPUS, selection="auto", **TAIL),
    "pca": _record("pca", {"gamma": 0.0, **SPECTRAL}, corpus=CORPUS, selection="spectral", **TAIL),
    "embedfilter": _record("embedfilter", {"ratio": 2, "band_start": 8, "unembedding": "tied input embeddings",
                                           "excluded_rows": 3}, dim=16, selection="band", **TAIL),
    "truncate": _record("truncate", {}, selection="prefix", **TAIL),
    "random-project": _record("random-project", {}, dim=5, seed=1999, selection=None, **TAIL | {"max_dim": 5,
                                                                                              "selectable_dims": [5]}),
}
# The same fits as folders written before "params" stored them (one flat dict, the shared keys always present).
BEFORE_PARAMS = {
    "spectemp-auto": {"method": "spectemp", "description": "spectemp, in words", "mode": "auto", "dim": 8,
                      "gamma": 0.05, "knee": 8, "ratio": None, "seed": None, "corpus": CORPUS,
                      "fitted_at": "2026-12-02T11:42:08+00:00", "plots": [], **KNEE, "route": "uncentred",
                      "reference_gamma": 1.0, "selection": "auto", **SPECTRAL, "auto": AUTO, **TAIL},
    "embedfilter": {"method": "embedfilter", "description": "embedfilter, in words", "mode": None, "dim": 16,
                    "gamma": None, "knee": None, "ratio": 2, "seed": None, "corpus": None,
                    "fitted_at": "2026-12-02T11:42:08+00:00", "plots": [], "selection": "band", "band_start": 8,
                    "unembedding": "tied input embeddings", "excluded_rows": 3, **TAIL},
}


@pytest.mark.parametrize("name", sorted(TODAY))
def test_record_round_trips_todays_dict_key_for_key(name: str) -> None:
    stored = TODAY[name]
    info = ProjectionInfo.from_dict(stored)
    assert info.to_dict() == stored and list(info.to_dict()) == list(stored)
    if stored["corpus"] is not None:
        assert isinstance(info.corpus, CorpusRecord) and info.corpus.sampled_from == 211
        assert list(info.to_dict()["corpus"]) == list(CORPUS)
    if "auto" in stored["params"]:
        assert isinstance(info.auto, AutoRecord) and info.auto.ks == [8, 16, 32]
        assert list(info.to_dict()["params"]["auto"]) == list(AUTO)


@pytest.mark.parametrize("name", sorted(BEFORE_PARAMS))
def test_a_flat_record_from_before_params_reads_as_todays(name: str) -> None:
    old, today = ProjectionInfo.from_dict(BEFORE_PARAMS[name]), ProjectionInfo.from_dict(TODAY[name])
    for key in METHOD_PARAM_NAMES | {"method", "description", "dim", "seed", "corpus", "selection", "max_dim"}:
        assert getattr(old, key) == getattr(today, key), key
    assert old.extra == {} and old.to_dict()["params"]["band_start" if name == "embedfilter" else "route"]


def test_the_methods_params_read_by_name_and_unknown_names_are_refused() -> None:
    info = ProjectionInfo.from_dict(TODAY["spectemp-auto"])
    assert (info.mode, info.gamma, info.route, info.ratio, info.band_start) == ("auto", 0.05, "uncentred", None, None)
    assert ProjectionInfo(params={"shrinkage": 0.1}).shrinkage == 0.1  # a method's own name
    with pytest.raises(AttributeError, match="no field or recorded parameter 'gama'"):
        _ = info.gama


def test_old_folders_records_read_and_unknown_keys_are_kept() -> None:
    old = {"method": "spectemp", "dim": 8, "corpus": {"path": "c.txt"}, "future_key": {"x": 1}}
    info = ProjectionInfo.from_config({"projection_info": old})
    assert info.mode is None and info.corpus.to_dict() == {"path": "c.txt"} and info.selectable_dims == []
    assert info.to_dict()["params"]["future_key"] == {"x": 1}  # flat: a method's key or a later version's, kept
    later = ProjectionInfo.from_dict({**TODAY["pca"], "future_key": 1})
    assert later.to_dict()["future_key"] == 1 and "future_key" not in later.params
    assert ProjectionInfo.from_config({"projection_info": {}}) is None and ProjectionInfo.from_config({}) is None
    assert selectable_dims(ProjectionInfo.from_dict({"selectable_dims": [32, 8, 8]})) == [8, 32]
