"""The leaderboard kit: a ModelMeta mteb accepts, its snippet, and the results folder for the results repo."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hf_dumpembed.evaluation.submission import (
    SubmissionOptions,
    build_model_meta,
    model_meta_snippet,
    submission_meta,
    write_submission,
)
from tests.support.eval_fixtures import MODEL_NAME, REVISION

TRAINING_INFO = {
    "datasets": [{"name": "StdlibCodeTrain", "path": "data/StdlibCodeTrain", "sha256": "ab" * 32, "num_rows": 10}],
    "loss": "CachedMultipleNegativesRankingLoss",
    "hyperparameters": {"learning_rate": 1e-4},
    "seed": 1999,
    "steps": 3,
    "trained_at": "2026-11-29T10:00:00+00:00",
}


@pytest.fixture(scope="module")
def trained_folder(bert_dump_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the tiny K=4 model whose config says it was trained (training_info filled)."""
    folder = tmp_path_factory.mktemp("trained") / "model"
    shutil.copytree(bert_dump_model, folder)
    config = json.loads((folder / "config.json").read_text())
    config["training_info"] = TRAINING_INFO
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_model_meta_is_accepted_by_mteb(trained_folder: Path) -> None:
    from mteb.models.model_meta import ModelMeta
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper
    from safetensors.torch import load_file

    options = SubmissionOptions(name=MODEL_NAME, revision=REVISION, license="apache-2.0")
    meta = submission_meta(trained_folder, options)
    config = json.loads((trained_folder / "config.json").read_text())
    assert isinstance(meta, ModelMeta)
    assert meta.training_datasets == {"StdlibCodeTrain"}
    assert meta.adapted_from == config["base_model"] and meta.adapted_from
    assert meta.loader is SentenceTransformerEncoderWrapper and meta.loader_kwargs == {"trust_remote_code": True}
    assert meta.release_date == "2026-11-29" and meta.similarity_fn_name.value == "cosine"
    weights = load_file(str(trained_folder / "model.safetensors"))
    assert meta.n_parameters == sum(t.numel() for t in weights.values())
    assert meta.embed_dim == config["projection_dim"]
    # mteb's own validation round trip (pydantic, extra fields forbidden) and the PR snippet.
    assert ModelMeta.model_validate_json_resolved(json.dumps(meta.to_dict(), default=str)) == meta
    namespace: dict = {}
    exec(model_meta_snippet(meta), namespace)  # noqa: S102 - our own generated source
    (from_snippet,) = [v for v in namespace.values() if isinstance(v, ModelMeta)]
    assert from_snippet == meta


def test_licence_is_required_for_a_submission(trained_folder: Path) -> None:
    with pytest.raises(ValueError, match="--license"):
        build_model_meta(trained_folder, SubmissionOptions(name=MODEL_NAME, revision=REVISION))


def test_bad_model_name_is_refused(trained_folder: Path) -> None:
    with pytest.raises(ValueError, match="organization/model_name"):
        build_model_meta(trained_folder, SubmissionOptions(name="no-org", license="mit"))


def test_submission_refuses_local_tasks_and_says_how_to_run_official_ones(known_run, bert_dump_model: Path,  # noqa: F811
                                                                           tmp_path: Path) -> None:
    """KnownTask is a local BEIR folder: mteb does not know it, so it is no leaderboard result (the layout of an
    accepted kit is checked end to end in test_leaderboard_path.py)."""
    results_dir = known_run.results_folder.parents[2]
    options = SubmissionOptions(name=MODEL_NAME, revision=REVISION, license="apache-2.0")
    with pytest.raises(ValueError, match=r"tasks mteb does not know: KnownTask\.json \(KnownTask\)") as error:
        write_submission(bert_dump_model, results_dir, tmp_path / "kit", options)
    assert "--task dump-standard --task dump-longembed" in str(error.value)
    assert not (tmp_path / "kit").exists()  # nothing written
    other = SubmissionOptions(name=MODEL_NAME, revision="f" * 40, license="apache-2.0")
    with pytest.raises(FileNotFoundError, match="no mteb results"):
        write_submission(bert_dump_model, results_dir, tmp_path / "kit2", other)
