"""Scale-out equals one process: a 2-process gloo group (spawned on CPU, no torchrun) runs the distributed fit and
the cross-process training loss; both must give what one process gives on the whole corpus / the whole batch."""

from __future__ import annotations

import json
import socket
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp
from safetensors.torch import load_file

from hf_dumpembed.projections.fit import FitOptions, fit_projections
from hf_dumpembed.training.config import config_from_dict
from tests.support import distributed_worker
from tests.support.fit_fixtures import corpus_texts
from tests.support.training_fixtures import run_config, toy_rows

WORLD = 2
FITS = {"auto": {"method": "spectemp", "dim": 8, "mode": "auto"}, "pca": {"method": "pca", "dim": 8}}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _paragraphs() -> list[str]:
    """Two-sentence texts (the auto mode splits each into a pseudo-query and the rest)."""
    sentences = corpus_texts()
    return [f"{a} {b}" for a, b in zip(sentences, sentences[7:] + sentences[:7], strict=True)]


def _targets(root: Path) -> dict[Path, FitOptions]:
    return {root / name: FitOptions(**options, progress=False, plots=False) for name, options in FITS.items()}


@pytest.fixture(scope="module")
def spawned(llama_dump_model: Path, bert_dump_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One 2-process run of `distributed_worker.worker` (both jobs: starting processes costs more than the jobs)."""
    root = tmp_path_factory.mktemp("distributed")
    corpus = root / "paragraphs.txt"
    corpus.write_text("\n".join(_paragraphs()) + "\n")
    configs = {loss: config_from_dict(run_config(bert_dump_model, root / "unused.jsonl", root / loss, loss=loss,
                                                 batch_size=4, mini_batch_size=3))
               for loss in ("mnrl", "cached_mnrl")}
    job = {"model": llama_dump_model, "corpus": corpus, "targets": _targets(root / "ranks"),
           "dump_model": bert_dump_model, "configs": configs, "rows": toy_rows()[: 4 * WORLD], "out": root}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mp.start_processes(distributed_worker.worker, args=(WORLD, _free_port(), job), nprocs=WORLD,
                           start_method="spawn")
    return {"root": root, "corpus": corpus, "job": job,
            "fit": [json.loads((root / f"fit.{rank}.json").read_text()) for rank in range(WORLD)],
            "loss": [torch.load(root / f"loss.{rank}.pt", weights_only=True) for rank in range(WORLD)]}


def _projection_info(folder: Path) -> dict[str, Any]:
    """The record's fields and the method's params, less the fit's date and auto mode's timings."""
    info = json.loads((folder / "config.json").read_text())["projection_info"]
    params = {key: value for key, value in info["params"].items() if key != "auto"}
    return {key: value for key, value in info.items() if key not in ("fitted_at", "params")} | params


def test_two_process_fit_shards_the_texts_and_writes_what_one_process_writes(spawned, llama_dump_model) -> None:
    """Each rank encodes its own half of the corpus, only rank 0 writes, and the folders (files, projection matrices,
    the SpecTemp auto choice, provenance) equal those of a one-process fit of the same corpus."""
    root, texts = spawned["root"], _paragraphs()
    shards = [set(rank["corpus_encoded"]) for rank in spawned["fit"]]
    assert not shards[0] & shards[1] and shards[0] | shards[1] == set(texts)
    assert abs(len(shards[0]) - len(shards[1])) <= 1
    assert [rank["written"] for rank in spawned["fit"]] == [[str(root / "ranks" / name) for name in FITS], []]
    single = fit_projections(llama_dump_model, _targets(root / "single"), corpus=spawned["corpus"])
    for folder in single:
        twin = root / "ranks" / folder.name
        assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == \
               sorted(p.relative_to(twin) for p in twin.rglob("*"))
        one, two = _projection_info(folder), _projection_info(twin)
        assert one.keys() == two.keys()
        for key, value in one.items():
            assert two[key] == (pytest.approx(value, rel=1e-5) if isinstance(value, float) else value), key
        a, b = load_file(folder / "model.safetensors"), load_file(twin / "model.safetensors")
        projection = [key for key in a if key.startswith("projection.")]
        assert projection and a.keys() == b.keys()
        for key in projection:
            assert torch.allclose(a[key], b[key], rtol=1e-4, atol=1e-5), (folder.name, key)
    auto = [json.loads((root / tree / "auto" / "config.json").read_text())["projection_info"]["params"]["auto"]
            for tree in ("single", "ranks")]
    assert auto[0]["pseudo_queries"] == auto[1]["pseudo_queries"] > 0
    for key in ("ks", "chosen", "route", "gamma"):
        assert auto[0][key] == auto[1][key], key


@pytest.mark.parametrize("loss", ["mnrl", "cached_mnrl"])
def test_cross_process_negatives_equal_one_process_on_the_whole_batch(spawned, loss) -> None:
    """Training's loss under 2 processes (each with 4 of the 8 rows; `make_loss` gathers embeddings across them),
    averaged as DDP averages: the loss and every gradient equal one process's loss on the 8 rows (float64). That
    reference is computed by a spawned process too (after the group is gone), so it shares the ranks' thread count
    and fresh imports rather than whatever state earlier tests left in this pytest worker."""
    reference = spawned["loss"][0]["whole_batch"]
    expected, expected_grads = reference["loss"], reference["grads"]
    for rank in spawned["loss"]:
        got = rank[loss]
        assert got["loss"] == pytest.approx(expected, rel=1e-10, abs=1e-12)
        assert got["grads"].keys() == expected_grads.keys() and len(expected_grads) > 10
        assert max(float(g.abs().max()) for g in expected_grads.values()) > 1e-6
        for name, grad in expected_grads.items():
            assert torch.allclose(got["grads"][name], grad, rtol=1e-7, atol=1e-10), name
        assert got["gather"] is True
    local = [rank[loss]["local_loss"] for rank in spawned["loss"]]
    assert not np.isclose(local[0], local[1])  # each process's own loss is over its own rows
