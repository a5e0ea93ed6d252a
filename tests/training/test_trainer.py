"""Training end to end on a tiny random BERT: learning, [DUMP] rows, saved folder, GradCache exactness, resume."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import yaml
from safetensors.torch import load_file
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed.cli import main as cli_main
from hf_dumpembed.training import trainer
from hf_dumpembed.training.config import TrainConfig, config_from_dict, save_config
from hf_dumpembed.training.data import DataReport
from hf_dumpembed.training.provenance import DATA_HASHES, check_data_unchanged
from hf_dumpembed.training.trainer import INITIAL_MODEL, RUN_CONFIG, check_resumable, last_complete_checkpoint, train
from tests.support.training_fixtures import TEXTS, KillAfterSave, StepsRan, run_config, toy_rows, write_jsonl

torch.set_num_threads(1)  # oversubscribed threads are ~20x slower on the shared 2 cores


def _toy_loss(model_dir: Path) -> float:
    """InfoNCE (scale 20, in-batch + hard negatives) of a saved model on the whole toy set as one batch."""
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    model = SentenceTransformer(str(model_dir), trust_remote_code=True, device="cpu").eval()
    rows = toy_rows()
    features = [model.tokenize([r[c] for r in rows]) for c in ("query", "positive", "negative")]
    with torch.no_grad():
        return float(MultipleNegativesRankingLoss(model, scale=20.0)(features, None))


def _dump_rows(model_dir: Path) -> torch.Tensor:
    config = json.loads((model_dir / "config.json").read_text())
    weights = load_file(model_dir / "model.safetensors")
    key = next(k for k in weights if k.endswith("word_embeddings.weight"))
    return weights[key][config["dump_token_ids"]]


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("toy") / "toy.jsonl", toy_rows())


@pytest.fixture(scope="module")
def trained(tiny_bert: Path, toy_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("trained") / "model"
    return train(config_from_dict(run_config(tiny_bert, toy_data, out, epochs=6)))


def test_training_lowers_the_loss_and_moves_the_dump_rows(trained: Path) -> None:
    initial = Path(f"{trained}.checkpoints") / INITIAL_MODEL
    before, after = _toy_loss(initial), _toy_loss(trained)
    assert after < before - 0.3, (before, after)
    moved = (_dump_rows(trained) - _dump_rows(initial)).norm(dim=1)
    assert bool((moved > 1e-4).all()), moved


def test_trained_folder_loads_everywhere_with_the_prefix(trained: Path) -> None:
    config = json.loads((trained / "config.json").read_text())
    assert config["auto_map"]["AutoModel"] == "modeling_dumpembed.DumpEmbedModel"
    assert (trained / "modeling_dumpembed.py").exists() and (trained / "configuration_dumpembed.py").exists()
    tokenizer = AutoTokenizer.from_pretrained(trained, trust_remote_code=True)
    ids = tokenizer(TEXTS[:3], padding=True, return_tensors="pt")
    assert ids["input_ids"][:, 1:5].tolist() == [config["dump_token_ids"]] * 3
    model = AutoModel.from_pretrained(trained, trust_remote_code=True).eval()
    with torch.no_grad():
        auto = model(**ids).sentence_embedding
    st = SentenceTransformer(str(trained), trust_remote_code=True, device="cpu")
    assert torch.allclose(auto, st.encode(TEXTS[:3], convert_to_tensor=True), atol=1e-5)
    assert st.max_seq_length == 32


def test_trained_folder_exports_to_stock_st_and_renders_its_card(trained: Path, tmp_path: Path) -> None:
    from hf_dumpembed.export.stock import export_stock_st
    from hf_dumpembed.export.verify import check_load_paths
    from hf_dumpembed.model.folder_schema import folder_deviations

    assert folder_deviations(trained) == []  # what `train` writes is exactly the trusted shape
    stock = export_stock_st(trained, tmp_path / "stock")
    report = check_load_paths(trained, stock_export_dir=stock, include_mteb=False)
    assert report.ok, report.describe()
    card = (trained / "README.md").read_text()
    assert "fine-tuned on `toy`" in card and "CachedMultipleNegativesRankingLoss" in card


def test_trained_folder_records_the_run(trained: Path) -> None:
    info = json.loads((trained / "config.json").read_text())["training_info"]
    assert set(info) == {"datasets", "loss", "hyperparameters", "seed", "steps", "trained_at"}
    assert info["loss"] == "CachedMultipleNegativesRankingLoss"
    assert info["steps"] == 6 * (len(TEXTS) // 4) and info["seed"] == 7
    assert info["hyperparameters"]["scale"] == 20.0 and info["hyperparameters"]["mini_batch_size"] == 2
    (dataset,) = info["datasets"]
    assert dataset["name"] == "toy" and dataset["num_rows"] == len(TEXTS) and len(dataset["sha256"]) == 64
    assert sorted(p.name for p in (trained / "training").iterdir()) == [
        "config.yaml", "data_files.json", "environment.json"]
    env = json.loads((trained / "training" / "environment.json").read_text())
    assert env["libraries"]["sentence-transformers"] and env["world_size"] == 1
    assert not any(p.name.startswith("checkpoint-") for p in trained.iterdir())
    assert any(p.name.startswith("checkpoint-") for p in Path(f"{trained}.checkpoints").iterdir())


def test_resolved_config_reproduces_the_run_config(trained: Path) -> None:
    text = (trained / "training" / "config.yaml").read_text()
    again = config_from_dict(yaml.safe_load(text))
    assert again.training.epochs == 6 and again.model.num_dump_tokens == 4
    # Published: local paths as relative paths or names (the trained folder lies outside the working directory).
    assert Path(again.output).name == trained.name and str(trained.parent) not in text


def test_cli_trains_k0_through_the_same_code(tiny_bert: Path, toy_data: Path, tmp_path: Path) -> None:
    raw = run_config(tiny_bert, toy_data, tmp_path / "k0", max_steps=2, gradient_checkpointing=True)
    raw["model"]["num_dump_tokens"] = 0
    config_file = tmp_path / "run.yaml"
    config_file.write_text(yaml.safe_dump(raw))
    cli_main(["train", str(config_file)])
    config = json.loads((tmp_path / "k0" / "config.json").read_text())
    assert config["num_dump_tokens"] == 0 and config["training_info"]["steps"] == 2
    assert config["training_info"]["hyperparameters"]["gradient_checkpointing"] is True
    st = SentenceTransformer(str(tmp_path / "k0"), trust_remote_code=True, device="cpu")
    assert st.encode(["hello"]).shape == (1, 32)
    with pytest.raises(SystemExit, match="already holds a trained model|already exists"):
        cli_main(["train", str(config_file)])


def test_cached_loss_equals_plain_loss(bert_dump_model: Path) -> None:
    """GradCache is exact: same loss and same gradients as the plain loss on one batch (dropout off)."""
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )

    model = SentenceTransformer(str(bert_dump_model), trust_remote_code=True, device="cpu")
    model.eval().double()  # dropout off; float64 so that summation order cannot hide a real difference
    torch.manual_seed(0)
    with torch.no_grad():  # move away from the near-constant random init so gradients are not ~0
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    rows = toy_rows()[:8]
    features = [model.tokenize([r[c] for r in rows]) for c in ("query", "positive", "negative")]
    results = []
    for loss_fn in (MultipleNegativesRankingLoss(model, scale=20.0),
                    CachedMultipleNegativesRankingLoss(model, scale=20.0, mini_batch_size=3)):
        model.zero_grad()
        loss = loss_fn([dict(f) for f in features], None)
        loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        results.append((float(loss.detach()), grads))
    (plain, plain_grads), (cached, cached_grads) = results
    assert plain == pytest.approx(cached, abs=1e-10)
    assert plain_grads.keys() == cached_grads.keys() and len(plain_grads) > 10
    scale = max(g.abs().max() for g in plain_grads.values())
    assert scale > 1e-6
    for name, grad in plain_grads.items():
        assert torch.allclose(grad, cached_grads[name], rtol=1e-7, atol=1e-10), name


def _weights(model_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(model_dir / "model.safetensors")


def _max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def _fork(config: TrainConfig, output: Path, edit: Callable[[Path], None]) -> TrainConfig:
    """A copy of an interrupted run's checkpoints for another output, with ``edit`` applied to its last checkpoint."""
    raw = yaml.safe_load((config.checkpoint_path / RUN_CONFIG).read_text())
    fork = config_from_dict(raw | {"output": str(output), "checkpoint_dir": None})
    shutil.copytree(config.checkpoint_path, fork.checkpoint_path)
    save_config(fork, fork.checkpoint_path / RUN_CONFIG)
    edit(Path(last_complete_checkpoint(fork.checkpoint_path)))
    return fork


def _scale_adam_second_moments(checkpoint: Path) -> None:
    state = torch.load(checkpoint / "optimizer.pt", weights_only=True)
    for moments in state["state"].values():
        moments["exp_avg_sq"].mul_(100.0)
    torch.save(state, checkpoint / "optimizer.pt")


def _rewind_scheduler(checkpoint: Path) -> None:
    state = torch.load(checkpoint / "scheduler.pt", weights_only=True)
    state["last_epoch"], state["_step_count"] = 0, 1
    torch.save(state, checkpoint / "scheduler.pt")


def test_kill_and_resume_equals_an_uninterrupted_run(tiny_bert: Path, toy_data: Path, tmp_path: Path) -> None:
    """A run stopped after checkpoint-4 (of 6 steps; 3 per epoch, so mid-epoch 2) and resumed runs steps 5 and 6
    only, and ends with the weights of the uninterrupted run; the optimizer and scheduler states of the checkpoint
    are what it continues from (perturbing either one in a copy of the checkpoint changes the weights)."""
    hp = {"epochs": 2, "save_steps": 2, "save_total_limit": 5}
    whole = train(config_from_dict(run_config(tiny_bert, toy_data, tmp_path / "whole", **hp)))
    config = config_from_dict(run_config(tiny_bert, toy_data, tmp_path / "resumed", **hp))
    before = StepsRan()
    with pytest.raises(KeyboardInterrupt):
        train(config, callbacks=[KillAfterSave(step=4), before])
    assert (before.started_at, before.steps) == (0, [1, 2, 3, 4])
    assert not (tmp_path / "resumed").exists()
    assert Path(last_complete_checkpoint(config.checkpoint_path)).name == "checkpoint-4"
    with pytest.raises(FileExistsError, match="--resume"):
        train(config)
    forks = {"optimizer": _fork(config, tmp_path / "adam", _scale_adam_second_moments),
             "scheduler": _fork(config, tmp_path / "lr", _rewind_scheduler)}
    after = StepsRan()
    resumed = train(config, resume=True, callbacks=[after])
    assert (after.started_at, after.steps) == (4, [5, 6])  # only the remaining steps ran in this process
    steps = [json.loads((m / "config.json").read_text())["training_info"]["steps"] for m in (whole, resumed)]
    assert steps == [6, 6]
    a, b = _weights(whole), _weights(resumed)
    assert _max_difference(a, b) < 1e-6
    assert _max_difference(a, _weights(config.checkpoint_path / INITIAL_MODEL)) > 1e-3
    assert _max_difference(a, _weights(config.checkpoint_path / "checkpoint-4")) > 1e-4  # steps 5-6 moved them
    for name, fork in forks.items():
        ran = StepsRan()
        perturbed = train(fork, resume=True, callbacks=[ran])
        assert (ran.started_at, ran.steps) == (4, [5, 6]), name
        assert _max_difference(a, _weights(perturbed)) > 1e-4, f"the checkpoint's {name} state was not used"


def test_resume_refuses_a_changed_config(tiny_bert: Path, toy_data: Path, tmp_path: Path) -> None:
    config = config_from_dict(run_config(tiny_bert, toy_data, tmp_path / "m", max_steps=3, save_steps=1))
    with pytest.raises(KeyboardInterrupt):
        train(config, callbacks=[KillAfterSave(step=1)])
    changed = config_from_dict(run_config(tiny_bert, toy_data, tmp_path / "m", max_steps=3, save_steps=1,
                                          learning_rate=1e-3))
    with pytest.raises(ValueError, match="config differs"):
        train(changed, resume=True)


def test_a_checkpoint_interrupted_while_saving_is_skipped(tmp_path: Path) -> None:
    from hf_dumpembed.training.trainer import last_complete_checkpoint

    for step in (2, 4, 10):
        (tmp_path / f"checkpoint-{step}").mkdir()
    (tmp_path / "checkpoint-2" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-4" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-10" / "model.safetensors").write_text("partial")
    assert last_complete_checkpoint(tmp_path) == str(tmp_path / "checkpoint-4")
    assert not (tmp_path / "checkpoint-10").exists() and (tmp_path / "checkpoint-2").exists()
    assert last_complete_checkpoint(tmp_path / "missing") is None


# Resume decisions without training (written to kill mutants: tests/MUTATION.md).


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


# Failures leave nothing half-written; inputs are checked before any work.


def test_a_train_that_fails_on_its_data_leaves_no_checkpoint_folder(tiny_bert, tmp_path):
    """A run that fails on its data leaves nothing behind (no OUT.checkpoints folder)."""
    from hf_dumpembed.training import train
    from hf_dumpembed.training.config import config_from_dict
    from tests.support.training_fixtures import run_config, write_jsonl

    data = write_jsonl(tmp_path / "bad.jsonl", [{"query": "q", "positive": ""}, "not an object"])
    config = config_from_dict(run_config(tiny_bert, data, tmp_path / "out"))
    with pytest.raises(ValueError):
        train(config)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_one_readable_log_line_per_logging_step(caplog, monkeypatch) -> None:
    """Each logging step logs one line (loss, lr, seconds per step, examples per second), on rank 0 only."""
    clock = iter([100.0, 102.0, 104.0])
    monkeypatch.setattr(trainer.time, "perf_counter", lambda: next(clock))
    log = trainer.StepLog(global_batch=64)
    state = SimpleNamespace(global_step=0, max_steps=10, is_world_process_zero=True)
    log.on_train_begin(None, state, None)
    state.global_step = 4
    with caplog.at_level(logging.INFO, logger=trainer.__name__):
        log.on_log(None, state, None, logs={"loss": 0.5, "learning_rate": 1e-4})
        log.on_log(None, SimpleNamespace(**{**vars(state), "is_world_process_zero": False}), None,
                   logs={"loss": 0.4, "learning_rate": 1e-4})
    lines = [r.getMessage() for r in caplog.records if r.name == trainer.__name__]
    assert lines == ["step 4/10  loss 0.5000  lr 1.00e-04  0.50 s/step  128.0 examples/s"]
