"""The folder's mteb ModelMeta: what it serves (dimensions, K, pooling, projection, runtimes) and mteb's own API
(`mteb.get_model`, `mteb.get_model_meta`, `ModelMeta.load_model`, `mteb.evaluate`) on a local folder, offline."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from hf_dumpembed.evaluation.model_meta import build_model_meta, content_revision, model_identity, register_folder
from hf_dumpembed.projections.fit import FitOptions, fit_projection
from tests.support.eval_fixtures import KNOWN_NDCG_AT_10, write_known_task
from tests.support.fit_fixtures import write_corpus

TEXTS = ["A man is eating food.", "Open the file, read every line.", "A monkey plays drums."]


@pytest.fixture(scope="module")
def fitted(bert_dump_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny K=4 BERT (d = 32) with SpecTemp (the paper's rule) fitted at k = 8: it serves every k in 1..32."""
    base = tmp_path_factory.mktemp("meta")
    corpus = write_corpus(base / "corpus.txt")
    return fit_projection(bert_dump_model, base / "spectemp8",
                          FitOptions(method="spectemp", mode="reference", dim=8, progress=False, plots=False),
                          corpus=corpus)


@pytest.fixture
def registry():
    """mteb's model registry, left as it was after the test (register_folder adds to it)."""
    from mteb.models.model_implementations import MODEL_REGISTRY

    before = dict(MODEL_REGISTRY)
    yield MODEL_REGISTRY
    MODEL_REGISTRY.clear()
    MODEL_REGISTRY.update(before)


def _st_vectors(folder: Path, **kwargs) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), trust_remote_code=True, **kwargs).encode(TEXTS, convert_to_numpy=True)


def test_model_meta_lists_the_dims_k_pooling_projection_and_runtimes(fitted: Path, bert_dump_model: Path,
                                                                     tmp_path: Path) -> None:
    from mteb.models.model_meta import ModelMeta

    config = json.loads((fitted / "config.json").read_text())
    meta = build_model_meta(fitted, strict=False)
    assert meta.embed_dim == list(range(1, 33))  # any k in 1..d through projection_dim
    assert meta.loader_kwargs["dumpembed"] == {
        "num_dump_tokens": 4, "pooling": config["pooling"],
        "projection": {"method": "spectemp", "mode": "reference", "dim": 8}}
    assert meta.experiment_kwargs is None  # fixed by the folder, not arguments of an experiment
    assert meta.framework == ["Sentence Transformers", "PyTorch", "Transformers"]
    assert "dump_tokens_2026" in meta.citation and "spectemp_2026" in meta.citation
    assert "embedfilter_2026" not in meta.citation
    assert meta.output_dtypes is None  # float32 only, until quantized outputs are declared
    # the folder without a fit: one dimension, no projection, no SpecTemp to cite
    plain = build_model_meta(bert_dump_model, strict=False)
    assert plain.embed_dim == 32 and plain.loader_kwargs["dumpembed"]["projection"] is None
    assert "spectemp_2026" not in plain.citation
    # results are filed under the dimension the folder outputs (mteb writes max(embed_dim) into model_meta.json)
    assert build_model_meta(fitted, strict=False, all_dims=False).embed_dim == 8
    # an ONNX / OpenVINO export in the folder adds its runtime
    exported = shutil.copytree(fitted, tmp_path / "exported")
    (exported / "onnx").mkdir()
    (exported / "onnx" / "model.onnx").write_bytes(b"onnx")
    (exported / "openvino").mkdir()
    (exported / "openvino" / "openvino_model.xml").write_text("<net/>")
    assert build_model_meta(exported, strict=False).framework[-2:] == ["ONNX", "OpenVINO"]
    # mteb's own validation of the JSON it writes next to results
    restored = ModelMeta.model_validate_json_resolved(json.dumps(meta.to_dict(), default=str))
    assert restored.loader_kwargs == meta.loader_kwargs and restored.embed_dim == 32  # to_dict keeps max(list)


def test_mteb_get_model_and_load_model_load_a_local_folder_offline(fitted: Path, registry) -> None:
    import mteb

    with pytest.raises(NotImplementedError, match="No model implementation"):
        mteb.get_model(str(fitted))  # mteb alone: a path is neither in its registry nor on the Hub
    meta = register_folder(fitted)
    assert meta.name == f"local/{fitted.name}"
    assert mteb.get_model_meta(str(fitted)) is meta and mteb.get_model_meta(meta.name) is meta
    model = mteb.get_model(str(fitted))
    np.testing.assert_allclose(model.model.encode(TEXTS, convert_to_numpy=True), _st_vectors(fitted), atol=1e-6)
    assert model.mteb_model_meta.embed_dim == 8  # the loaded model's meta names the dimension it outputs
    # another k: the map recomposed for k, as projection_dim=k gives it (not the first k coordinates)
    small = meta.load_model(embed_dim=16)
    vectors = small.model.encode(TEXTS, convert_to_numpy=True)
    assert vectors.shape == (len(TEXTS), 16) and small.mteb_model_meta.embed_dim == 16
    np.testing.assert_allclose(vectors, _st_vectors(fitted, model_kwargs={"projection_dim": 16}), atol=1e-6)
    with pytest.raises(ValueError, match="not in the model's supported embedding dimensions"):
        mteb.get_model(str(fitted), embed_dim=33)



@pytest.mark.parametrize("knob", ["truncate_dim", "embed_dim", "model_kwargs", "revision"])
def test_every_get_model_knob_gives_the_projection_dim_vectors(fitted: Path, registry, knob: str) -> None:
    """mteb.get_model(path, ...) with each way of asking for k = 16 (and the folder's own revision) gives the
    vectors of projection_dim=16: the map recomposed for k, never the first k coordinates sliced."""
    import mteb

    meta = register_folder(fitted)
    kwargs = {"truncate_dim": {"truncate_dim": 16}, "embed_dim": {"embed_dim": 16},
              "model_kwargs": {"model_kwargs": {"projection_dim": 16}},
              "revision": {"revision": meta.revision, "embed_dim": 16}}[knob]
    model = mteb.get_model(str(fitted), **kwargs)
    vectors = model.model.encode(TEXTS, convert_to_numpy=True)
    assert vectors.shape == (len(TEXTS), 16) and model.mteb_model_meta.embed_dim == 16
    np.testing.assert_allclose(vectors, _st_vectors(fitted, model_kwargs={"projection_dim": 16}), atol=1e-6)


def test_get_model_refuses_knobs_that_disagree_and_a_foreign_revision(fitted: Path, registry) -> None:
    import mteb

    register_folder(fitted)
    with pytest.raises(ValueError, match="different output dimensions: embed_dim=16, truncate_dim=8"):
        mteb.get_model(str(fitted), embed_dim=16, truncate_dim=8)
    with pytest.raises(ValueError, match=r"truncate_dim=16, model_kwargs\[projection_dim\]=8"):
        mteb.get_model(str(fitted), truncate_dim=16, model_kwargs={"projection_dim": 8})
    with pytest.raises(ValueError, match="revision main not found"):
        mteb.get_model(str(fitted), revision="main")  # mteb's own check: a folder has its content revision

def test_mteb_evaluate_scores_the_registered_folder_on_a_local_task(fitted: Path, registry, tmp_path: Path) -> None:
    import mteb

    from hf_dumpembed.evaluation import beir_task

    register_folder(fitted)
    task = beir_task(write_known_task(tmp_path / "KnownTask"))
    result = mteb.evaluate(mteb.get_model(str(fitted)), task, cache=None, show_progress_bar=False)
    (task_result,) = result.task_results
    assert task_result.scores["test"][0]["ndcg_at_10"] == pytest.approx(KNOWN_NDCG_AT_10, abs=1e-5)


def test_the_loader_refuses_a_folder_that_no_longer_matches_its_meta(fitted: Path, tmp_path: Path) -> None:
    folder = shutil.copytree(fitted, tmp_path / "changed")
    meta = build_model_meta(folder, strict=False)
    config = json.loads((folder / "config.json").read_text())
    config["projection_info"]["params"]["mode"] = "robust"
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="no longer is the model its ModelMeta describes: projection"):
        meta.load_model()


def test_results_are_filed_under_local_name_and_a_content_hash_or_the_snapshot(bert_dump_model, tmp_path) -> None:
    """A Hub-cache snapshot is filed under its own id and commit; any other folder under `local/<folder>` and a sha1
    of config.json + weights (a card edit keeps it, one weight bit changes it); explicit name and revision win."""
    folder = tmp_path / "my-model"
    shutil.copytree(bert_dump_model, folder)
    name, revision = model_identity(folder)
    assert name == "local/my-model" and re.fullmatch(r"[0-9a-f]{40}", revision)
    digest = hashlib.sha1()
    for path in [folder / "config.json", *sorted(folder.glob("*.safetensors"))]:
        digest.update(path.name.encode() + path.read_bytes())
    assert revision == digest.hexdigest() == content_revision(folder)
    (folder / "README.md").write_text("a card edit does not change the revision")
    assert model_identity(folder)[1] == revision
    weights = bytearray((folder / "model.safetensors").read_bytes())
    weights[-1] ^= 1  # one bit of one weight
    (folder / "model.safetensors").write_bytes(bytes(weights))
    assert model_identity(folder)[1] != revision
    snapshot = tmp_path / "hub" / "models--acme--tiny" / "snapshots" / ("a" * 40)
    shutil.copytree(bert_dump_model, snapshot)
    assert model_identity(snapshot) == ("acme/tiny", "a" * 40)
    assert model_identity(snapshot, name="org/other", revision="b" * 40) == ("org/other", "b" * 40)
