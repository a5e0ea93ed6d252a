"""Evaluation on stored encodings: heads, subsamples, storage and mteb result files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from hf_dumpembed.data.beir import BeirData, load_beir
from hf_dumpembed.evaluation.cached import (
    EncodedCollection,
    apply_head,
    check_unprojected,
    load_head,
    save_mteb_result,
    subsample,
)
from hf_dumpembed.evaluation.results import read_task_result
from hf_dumpembed.projections.fit import FitOptions, fit_projection, fit_projections
from tests.support.eval_fixtures import write_known_task
from tests.support.fit_fixtures import folder_digest, write_corpus


@pytest.fixture(scope="module")
def fitted(bert_dump_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("cached-eval")
    corpus = write_corpus(base / "corpus.txt")
    outs = {"spectemp": base / "spectemp", "pca": base / "pca"}
    spectemp = FitOptions(method="spectemp", dim=8, mode="reference", progress=False)
    fit_projections(bert_dump_model, {outs["spectemp"]: spectemp, outs["pca"]: FitOptions(method="pca", dim=8,
                                                                                         progress=False)},
                    corpus=corpus)
    return {**outs, "corpus": corpus, "base": base}


def _forward(folder: Path, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(folder), trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True)
    with torch.inference_mode():
        out = model(**tokenizer(texts, padding=True, return_tensors="pt"))
    return out.pooled_embedding.numpy(), out.sentence_embedding.numpy()


def test_the_head_on_stored_vectors_equals_the_forward(bert_dump_model, fitted):
    texts = ["a man is eating food.", "the girl reads the file.", "two men play drums"]
    _, unit_pooled = _forward(bert_dump_model, texts)  # the unprojected model's output: its unit pooled vector
    _, direct = _forward(fitted["spectemp"], texts)
    via_head = apply_head(load_head(fitted["spectemp"]), unit_pooled)
    assert via_head.shape == (3, 8)
    np.testing.assert_allclose(via_head, direct, atol=1e-5)  # the parity tolerance of every load path


def test_two_fits_in_one_pass_equal_two_separate_fits(bert_dump_model, fitted, tmp_path):
    alone = fit_projection(bert_dump_model, tmp_path / "pca", FitOptions(method="pca", dim=8, progress=False),
                           corpus=fitted["corpus"])
    from safetensors.numpy import load_file

    together = load_file(str(fitted["pca"] / "model.safetensors"))
    separate = load_file(str(alone / "model.safetensors"))
    for name in ("projection.matrix", "projection.mean"):
        np.testing.assert_array_equal(together[name], separate[name])


def test_fits_sharing_a_pass_must_agree_on_the_corpus_sample(bert_dump_model, fitted, tmp_path):
    before = folder_digest(bert_dump_model)
    with pytest.raises(ValueError, match="must agree on max_texts"):
        fit_projections(bert_dump_model, {tmp_path / "a": FitOptions(method="pca", dim=4, max_texts=10),
                                          tmp_path / "b": FitOptions(method="pca", dim=4, max_texts=20)},
                        corpus=fitted["corpus"])
    assert not (tmp_path / "a").exists() and folder_digest(bert_dump_model) == before


def test_a_folder_with_a_projection_is_not_an_encoding_source(bert_dump_model, fitted):
    check_unprojected(bert_dump_model)
    with pytest.raises(ValueError, match="already has a projection"):
        check_unprojected(fitted["spectemp"])


def test_stored_encodings_round_trip(tmp_path):
    encoded = EncodedCollection(["q1", "q2"], ["d1", "d2", "d3"], np.eye(2, 4, dtype=np.float32),
                                np.arange(12, dtype=np.float32).reshape(3, 4), 1.25)
    loaded = EncodedCollection.load(encoded.save(tmp_path / "enc.safetensors"))
    assert (loaded.query_ids, loaded.document_ids, loaded.seconds) == (encoded.query_ids, encoded.document_ids, 1.25)
    np.testing.assert_array_equal(loaded.documents, encoded.documents)
    assert not list(tmp_path.glob("*.partial"))
    from safetensors.numpy import save_file

    save_file({"queries": np.zeros((1, 2), dtype=np.float32)}, str(tmp_path / "other.safetensors"))
    with pytest.raises(ValueError, match="not a stored collection encoding"):
        EncodedCollection.load(tmp_path / "other.safetensors")


def test_subsample_keeps_every_positive_of_the_kept_queries():
    corpus = {f"d{i}": {"title": "", "text": f"doc {i}"} for i in range(50)}
    queries = {f"q{i}": f"query {i}" for i in range(20)}
    qrels = {f"q{i}": {f"d{i}": 1, f"d{i + 20}": 1} for i in range(20)}
    data = BeirData(corpus=corpus, queries=queries, qrels=qrels)
    small = subsample(data, max_queries=5, max_documents=15, seed=3)
    assert len(small.queries) == 5 and len(small.corpus) == 15
    for query, judged in small.qrels.items():
        assert query in small.queries and all(doc in small.corpus for doc in judged)
    assert subsample(data, 5, 15, seed=3) == small  # deterministic
    assert subsample(data, 5, 15, seed=4).queries != small.queries
    tight = subsample(data, max_queries=5, max_documents=3, seed=3)  # never drops a positive to meet the limit
    assert len(tight.corpus) == 10


def test_saved_scores_read_back_as_an_mteb_result(bert_dump_model, tmp_path):
    task = write_known_task(tmp_path / "KnownTask")
    scores = {"ndcg_at_10": 0.75, "mrr_at_10": 0.5, "recall_at_10": 1.0}
    from hf_dumpembed.evaluation import beir_task
    from hf_dumpembed.evaluation.submission import SubmissionOptions, build_model_meta

    meta = build_model_meta(bert_dump_model, SubmissionOptions(name="test-org/cached"), strict=False)
    path = save_mteb_result(tmp_path / "results", meta, beir_task(task), "test", scores, 1.5)
    assert path.exists() and "test-org__cached" in str(path)
    result = read_task_result(path)
    assert result.task_name == "KnownTask" and result.get_score() == 0.75
    assert load_beir(task).qrels == {"q1": {"d1": 1}, "q2": {"d2": 1}}
