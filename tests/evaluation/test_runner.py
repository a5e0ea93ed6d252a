"""Local mteb retrieval tasks, the eval runner and task-name resolution."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hf_dumpembed.cli import main
from hf_dumpembed.data.beir import write_beir
from hf_dumpembed.evaluation import beir_task, expand_task_names, retrieval_metrics
from tests.support.eval_fixtures import KNOWN_MRR_AT_10, KNOWN_NDCG_AT_10, MODEL_NAME, REVISION


def test_local_task_gives_hand_computed_scores(known_run) -> None:  # noqa: F811
    (row,) = known_run.rows
    assert row.task == "KnownTask" and row.split == "test"
    assert row.scores["ndcg_at_10"] == pytest.approx(KNOWN_NDCG_AT_10, abs=1e-5)
    assert row.scores["mrr_at_10"] == pytest.approx(KNOWN_MRR_AT_10, abs=1e-5)
    assert row.scores["recall_at_10"] == pytest.approx(1.0)
    assert "0.8155" in known_run.table()


def test_results_land_under_model_name_and_revision(known_run) -> None:  # noqa: F811
    folder = known_run.results_folder
    assert folder.parts[-3:] == ("results", "test-org__tiny-dump", REVISION)
    result = json.loads((folder / "KnownTask.json").read_text())
    assert result["task_name"] == "KnownTask"
    assert result["scores"]["test"][0]["ndcg_at_10"] == pytest.approx(KNOWN_NDCG_AT_10, abs=1e-5)
    meta = json.loads((folder / "model_meta.json").read_text())
    assert meta["name"] == MODEL_NAME and meta["revision"] == REVISION
    # the folder loader (it reads the folder, not the Hub name), the facts it checks, the dimension evaluated
    assert meta["loader"] == "load_dumpembed_folder" and meta["embed_dim"] == 32
    assert meta["loader_kwargs"]["dumpembed"]["num_dump_tokens"] == 4


def test_mteb_task_agrees_with_metrics_on_cached_embeddings(bert_dump_model: Path, tmp_path: Path) -> None:
    """The full mteb run and retrieval_metrics on the model's own vectors give the same scores."""
    import mteb
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper
    from sentence_transformers import SentenceTransformer

    rng = np.random.default_rng(0)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron".split()
    docs = {f"d{i}": {"title": "", "text": " ".join(rng.choice(words, 6))} for i in range(12)}
    queries = {f"q{i}": " ".join(rng.choice(words, 3)) for i in range(6)}
    qrels = {f"q{i}": {f"d{(2 * i) % 12}": 1, f"d{(2 * i + 5) % 12}": 2} for i in range(6)}
    folder = write_beir(tmp_path / "Random", docs, queries, qrels)
    wrapper = SentenceTransformerEncoderWrapper(str(bert_dump_model), trust_remote_code=True)
    result = mteb.evaluate(wrapper, beir_task(folder), cache=None, show_progress_bar=False)
    mteb_scores = result.task_results[0].scores["test"][0]
    model = SentenceTransformer(str(bert_dump_model), trust_remote_code=True)
    q_vectors = model.encode_query(list(queries.values()))
    d_vectors = model.encode_document([d["text"] for d in docs.values()])
    ours = retrieval_metrics(q_vectors, d_vectors, list(queries), list(docs), qrels)
    for key in ("ndcg_at_10", "recall_at_10", "mrr_at_10", "map_at_10"):
        assert ours[key] == pytest.approx(mteb_scores[key], abs=1e-4), key


def test_folder_missing_qrels_is_a_clear_error(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "NoQrels", {"d": {"text": "x"}}, {"q": "y"}, {"q": {"d": 1}})
    (folder / "qrels" / "test.tsv").unlink()
    with pytest.raises(FileNotFoundError, match=r"qrels/test\.tsv"):
        beir_task(folder)


def test_qrels_id_absent_from_corpus_is_a_clear_error(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "BadId", {"d": {"text": "x"}}, {"q": "y"}, {"q": {"ghost": 1}})
    with pytest.raises(ValueError, match="'ghost'.*not in the corpus"):
        beir_task(folder)


def test_unknown_task_name_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown task 'NoSuchTask'"):
        expand_task_names(["NoSuchTask"], data_dir=tmp_path)


def test_local_collection_not_built_says_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="build_datasets.py"):
        expand_task_names(["PyFAQ"], data_dir=tmp_path)


def test_official_task_offline_and_not_cached_is_a_clear_error(bert_dump_model: Path, tmp_path: Path) -> None:
    from hf_dumpembed.evaluation import run_eval

    with pytest.raises(FileNotFoundError, match="offline.*not in the local cache|not in the local cache.*offline"):
        run_eval(bert_dump_model, ["NQHardNegatives"], results_dir=tmp_path)
    assert not (tmp_path / "results").exists()  # nothing was run or written


def test_groups_expand_to_the_papers_tasks(tmp_path: Path) -> None:
    names = [t.name for t in expand_task_names(["dump-standard", "NQHardNegatives"], data_dir=tmp_path)]
    assert names == ["NQHardNegatives", "HotpotQAHardNegatives", "QuoraRetrievalHardNegatives",
                     "DBPediaHardNegatives", "MSMARCOHardNegatives", "WikipediaRetrievalMultilingual"]
    longembed = [t.name for t in expand_task_names(["dump-longembed"], data_dir=tmp_path)]
    assert all(name.startswith("LEMB") for name in longembed) and len(longembed) == 6


# Failures leave nothing half-written; inputs are checked before any work.


def test_a_failed_eval_leaves_no_results_folder(bert_dump_model, tmp_path):
    """A failed `eval` (`--batch-size 0`) leaves no results folder."""
    from tests.support.training_fixtures import write_beir_folder

    with pytest.raises(SystemExit, match="batch_size must be a positive integer"):
        main(["eval", str(bert_dump_model), "--task", str(write_beir_folder(tmp_path / "beir")),
              "--results-dir", str(tmp_path / "results"), "--batch-size", "0"])
    assert not (tmp_path / "results").exists()
