"""Fast tests of training's resume decisions without training: which checkpoint a resumed run continues from,
what it refuses (mixing runs, a finished output, a changed config or changed data) and what it records. Written to
kill the mutants `scripts/mutation.py` finds (tests/MUTATION.md)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from hf_dumpembed.training.config import config_from_dict, save_config
from hf_dumpembed.training.data import DataReport
from hf_dumpembed.training.provenance import DATA_HASHES, check_data_unchanged
from hf_dumpembed.training.trainer import RUN_CONFIG, check_resumable, last_complete_checkpoint
from tests.training_fixtures import run_config, toy_rows, write_jsonl


def checkpoint(folder: Path, step: int, complete: bool = True) -> Path:
    path = folder / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "trainer_state.json").write_text(json.dumps({"global_step": step}) if complete else "{trunc")
    return path


def test_last_complete_checkpoint_is_the_highest_readable_step(tmp_path: Path) -> None:
    assert last_complete_checkpoint(tmp_path / "absent") is None
    assert last_complete_checkpoint(tmp_path) is None
    checkpoint(tmp_path, 9)
    checkpoint(tmp_path, 10)
    checkpoint(tmp_path, 2)
    checkpoint(tmp_path, 70).rename(tmp_path / "checkpoint-70-1")  # not a step number: ignored
    (tmp_path / "checkpoint-99").write_text("a file, not a folder")
    (tmp_path / "checkpoint-last").mkdir()
    (tmp_path / "checkpoint-50").mkdir()  # no trainer_state.json: killed while saving
    assert last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")  # 10 > 9 numerically
    assert not (tmp_path / "checkpoint-50").exists() and (tmp_path / "checkpoint-last").exists()


def test_a_partial_checkpoint_is_removed_only_by_rank_zero(tmp_path: Path, monkeypatch, caplog) -> None:
    checkpoint(tmp_path, 3)
    checkpoint(tmp_path, 4, complete=False)
    monkeypatch.setenv("RANK", "1")
    assert last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-3")
    assert (tmp_path / "checkpoint-4").exists()
    monkeypatch.setenv("RANK", "0")
    with caplog.at_level(logging.WARNING):
        assert last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-3")
    assert not (tmp_path / "checkpoint-4").exists() and "checkpoint-4 is incomplete" in caplog.text
    monkeypatch.delenv("RANK")
    checkpoint(tmp_path, 5, complete=False)
    assert last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-3")
    assert not (tmp_path / "checkpoint-5").exists()
    (tmp_path / "checkpoint-3" / "trainer_state.json").unlink()
    assert last_complete_checkpoint(tmp_path) is None


def make_config(tmp_path: Path, **top: object):
    backbone = tmp_path / "backbone"
    backbone.mkdir(exist_ok=True)
    data = write_jsonl(tmp_path / "train.jsonl", toy_rows())
    raw = run_config(backbone, data, tmp_path / "out")
    raw.update(top)
    return config_from_dict(raw)


def test_check_resumable_decisions(tmp_path: Path, caplog) -> None:
    config = make_config(tmp_path)
    assert check_resumable(config, resume=False) is None
    with caplog.at_level(logging.WARNING):
        assert check_resumable(config, resume=True) is None
    assert "no checkpoint in" in caplog.text
    checkpoints = config.checkpoint_path
    checkpoints.mkdir()
    save_config(config, checkpoints / RUN_CONFIG)
    assert check_resumable(config, resume=True) is None
    checkpoint(checkpoints, 4)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        assert check_resumable(config, resume=True) == str(checkpoints / "checkpoint-4")
    assert "no checkpoint in" not in caplog.text
    with pytest.raises(FileExistsError, match=r"holds checkpoints of an earlier run \(checkpoint-4\)"):
        check_resumable(config, resume=False)


def test_resume_refuses_another_config_and_a_finished_output(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    config.checkpoint_path.mkdir()
    checkpoint(config.checkpoint_path, 2)
    save_config(config, config.checkpoint_path / RUN_CONFIG)
    other = make_config(tmp_path, seed=8)
    with pytest.raises(ValueError, match="--resume: the config differs"):
        check_resumable(other, resume=True)
    # overwrite alone may differ
    assert check_resumable(make_config(tmp_path, overwrite=True), resume=True) == str(config.checkpoint_path /
                                                                                      "checkpoint-2")
    out = Path(config.output)
    out.mkdir()
    (out / "model.safetensors").write_text("x")
    with pytest.raises(FileExistsError, match="already holds a trained model: this run finished"):
        check_resumable(config, resume=True)
    assert check_resumable(make_config(tmp_path, overwrite=True), resume=True) is not None
    with pytest.raises(FileExistsError, match="already exists and is not empty"):
        check_resumable(config, resume=False)
    shutil.rmtree(config.checkpoint_path)
    assert check_resumable(make_config(tmp_path, overwrite=True), resume=False) is None  # overwrite is passed on
    (out / "model.safetensors").unlink()
    assert check_resumable(config, resume=True) is None


def test_resume_refuses_an_output_inside_its_inputs(tmp_path: Path) -> None:
    config = make_config(tmp_path, output=str(tmp_path))
    with pytest.raises(ValueError, match="lies inside the output"):
        check_resumable(config, resume=True)
    config = make_config(tmp_path, checkpoint_dir=str(tmp_path))
    with pytest.raises(ValueError, match="lies inside the output"):
        check_resumable(config, resume=False)


def report(name: str, sha: str) -> DataReport:
    return DataReport(name=name, path=f"/data/{name}", format="pairs", sha256=sha, num_rows=1, files=[])


def test_check_data_unchanged_records_and_compares(tmp_path: Path, caplog) -> None:
    nested = tmp_path / "not" / "yet" / "there"
    check_data_unchanged(nested, [report("z", "9" * 64), report("b", "8" * 64)], resuming=False)
    assert (nested / DATA_HASHES).read_text() == json.dumps({"b": "8" * 64, "z": "9" * 64}, indent=2) + "\n"
    folder = tmp_path / "ckpt"
    check_data_unchanged(folder, [report("a", "1" * 64)], resuming=False)
    path = folder / DATA_HASHES
    assert json.loads(path.read_text()) == {"a": "1" * 64} and path.read_text().endswith("}\n")
    assert not (folder / (DATA_HASHES + ".partial")).exists()
    check_data_unchanged(folder, [report("a", "1" * 64)], resuming=True)
    with pytest.raises(ValueError, match=r"data changed .*a: sha256 111111111111 then, 222222222222 now"):
        check_data_unchanged(folder, [report("a", "2" * 64)], resuming=True)
    with pytest.raises(ValueError, match=r"b: sha256 None then, 333333333333 now"):
        check_data_unchanged(folder, [report("a", "1" * 64), report("b", "3" * 64)], resuming=True)
    assert json.loads(path.read_text()) == {"a": "1" * 64}
    check_data_unchanged(folder, [report("b", "3" * 64)], resuming=False)  # a fresh run records its own data
    assert json.loads(path.read_text()) == {"b": "3" * 64}
    path.unlink()
    with caplog.at_level(logging.WARNING):
        check_data_unchanged(folder, [report("c", "4" * 64)], resuming=True)
    assert "has no record of the data hashes" in caplog.text and json.loads(path.read_text()) == {"c": "4" * 64}
