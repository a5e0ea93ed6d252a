"""The typed `ProjectionInfo` record of config.json: today's dicts key for key, old folders' records read."""

from __future__ import annotations

import pytest

from hf_dumpembed.model.card import selectable_dims
from hf_dumpembed.model.projection_record import AutoRecord, CorpusRecord, ProjectionInfo

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
    head = {"method": method, "description": f"{method}, in words", "mode": None, "dim": 8, "gamma": None,
            "knee": None, "ratio": None, "seed": None,
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
