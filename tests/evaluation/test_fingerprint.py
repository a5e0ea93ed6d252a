"""Content-addressed caches: an edited data file under a cached result or encoding is evaluated again (the files
are hashed, a manifest is never trusted), and `train --resume` refuses training data that changed since the
checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_dumpembed.data.beir import load_beir
from hf_dumpembed.data.corpora.manifest import write_manifest
from hf_dumpembed.evaluation.local_task import beir_task
from hf_dumpembed.training.data import DataReport
from hf_dumpembed.training.provenance import check_data_unchanged
from tests.support.eval_fixtures import MODEL_NAME, REVISION, write_known_task


def _with_manifest(folder: Path) -> Path:
    write_known_task(folder)
    write_manifest("Known", folder, "test", {"documents": 2, "queries": 2, "judgements": 2}, {"source": "test"})
    return folder


def _edit_qrels(folder: Path) -> None:
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td1\t1\n")


def test_the_task_revision_is_the_files_hash_not_the_manifest(tmp_path):
    folder = _with_manifest(tmp_path / "Known")
    before = beir_task(folder).metadata.revision
    manifest = (folder / "manifest.json").read_text()
    _edit_qrels(folder)
    assert (folder / "manifest.json").read_text() == manifest  # the manifest still claims the old data
    assert beir_task(folder).metadata.revision != before


def test_eval_scores_edited_data_again(bert_dump_model, tmp_path):
    from hf_dumpembed.evaluation import run_eval

    folder = _with_manifest(tmp_path / "KnownTask")

    def mrr() -> float:
        run = run_eval(bert_dump_model, [str(folder)], results_dir=tmp_path / "results", model_name=MODEL_NAME,
                       revision=REVISION, batch_size=4)
        return run.rows[0].scores["mrr_at_10"]

    assert mrr() == pytest.approx(0.75)  # q2's relevant document ranks second
    _edit_qrels(folder)  # now both queries' relevant document ranks first
    assert mrr() == pytest.approx(1.0)


def test_cached_encodings_are_keyed_on_the_data(bert_dump_model, tmp_path, monkeypatch):
    from hf_dumpembed.quickstart import evaluate

    folder = write_known_task(tmp_path / "Known")
    encoded_sets = []
    real = evaluate.encode_collection

    def counting(model, data, *args, **kwargs):
        encoded_sets.append(sorted(data.queries.values()))
        return real(model, data, *args, **kwargs)

    monkeypatch.setattr(evaluate, "encode_collection", counting)
    cache = tmp_path / "cache"
    first = evaluate.encode_tasks(bert_dump_model, {"Known": load_beir(folder)}, cache, progress=False)
    evaluate.encode_tasks(bert_dump_model, {"Known": load_beir(folder)}, cache, progress=False)
    assert len(encoded_sets) == 1  # the same data: read from the cache
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "databases"}\n{"_id": "q2", "text": "a fox"}\n')
    again = evaluate.encode_tasks(bert_dump_model, {"Known": load_beir(folder)}, cache, progress=False)
    assert len(encoded_sets) == 2  # edited queries: encoded afresh, not the stale vectors
    assert not (again["Known"].queries == first["Known"].queries).all()


def _report(sha: str) -> DataReport:
    return DataReport(name="toy", path="toy.jsonl", format="jsonl", sha256=sha, num_rows=3, files=[])


def test_resume_refuses_changed_training_data(tmp_path):
    check_data_unchanged(tmp_path, [_report("a" * 64)], resuming=False)
    check_data_unchanged(tmp_path, [_report("a" * 64)], resuming=True)  # same data: fine
    with pytest.raises(ValueError, match="training data changed since the checkpoints"):
        check_data_unchanged(tmp_path, [_report("b" * 64)], resuming=True)


def test_train_resume_refuses_an_edited_data_file(tiny_bert, tmp_path):
    from transformers import TrainerCallback

    from hf_dumpembed.training import train
    from hf_dumpembed.training.config import config_from_dict
    from tests.support.training_fixtures import run_config, toy_rows, write_jsonl

    class Kill(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003
            raise KeyboardInterrupt("killed after the first checkpoint")

    data = write_jsonl(tmp_path / "toy.jsonl", toy_rows())
    config = config_from_dict(run_config(tiny_bert, data, tmp_path / "m", max_steps=3, save_steps=1))
    with pytest.raises(KeyboardInterrupt):
        train(config, callbacks=[Kill()])
    write_jsonl(data, list(reversed(toy_rows())))
    with pytest.raises(ValueError, match="training data changed"):
        train(config, resume=True)
