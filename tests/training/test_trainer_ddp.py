"""Scale-out: a 2-process DDP run on CPU (gloo) through torchrun completes and writes one model (rank 0 only)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml
from safetensors.torch import load_file

from hf_dumpembed.training.config import config_from_dict
from hf_dumpembed.training.trainer import INITIAL_MODEL, train
from tests.support.training_fixtures import run_config, toy_rows, write_jsonl


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_process_gloo_run_writes_one_model(tiny_bert: Path, tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "toy.jsonl", toy_rows())
    out = tmp_path / "out"
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(
        run_config(tiny_bert, data, out, batch_size=2, mini_batch_size=1, save_steps=2)))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(_free_port()),
         "-m", "hf_dumpembed.cli", "train", str(tmp_path / "run.yaml")],
        capture_output=True, text=True, env=env, timeout=300, cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.count(f"Wrote {out}") == 1  # rank 0 only
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out.checkpoints", "run.yaml", "toy.jsonl"]
    info = json.loads((out / "config.json").read_text())["training_info"]
    hp = info["hyperparameters"]
    assert hp["world_size"] == 2 and hp["global_batch_size"] == 4 and hp["gather_across_devices"] is True
    assert info["steps"] == len(toy_rows()) // 4
    trained = load_file(out / "model.safetensors")
    initial = load_file(Path(f"{out}.checkpoints") / INITIAL_MODEL / "model.safetensors")
    assert any(not (trained[k] == initial[k]).all() for k in trained)


def _last_complete_step(checkpoints: Path) -> int:
    """The step of the newest checkpoint whose trainer_state.json (written last) parses; nothing is removed."""
    steps = []
    for folder in checkpoints.glob("checkpoint-*"):
        try:
            json.loads((folder / "trainer_state.json").read_text())
            steps.append(int(folder.name.split("-", 1)[1]))
        except (OSError, ValueError):
            continue
    return max(steps, default=0)


@pytest.mark.slow
def test_sigkill_then_resume_from_the_command_line(tiny_bert: Path, tmp_path: Path) -> None:
    """A real kill (SIGKILL of the CLI training process, still running, once checkpoint-4 is complete), then
    `train --resume`: the resumed process logs only the steps after the last complete checkpoint, and its weights
    equal those of an uninterrupted run of the same config."""
    data = write_jsonl(tmp_path / "toy.jsonl", toy_rows())
    raw = run_config(tiny_bert, data, tmp_path / "out", epochs=10, save_steps=2, save_total_limit=20)
    total = 10 * (len(toy_rows()) // 4)
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(raw))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "hf_dumpembed.cli", "train", str(tmp_path / "run.yaml")]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoints = tmp_path / "out.checkpoints"
    deadline = time.monotonic() + 240
    while _last_complete_step(checkpoints) < 4 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, f"the run ended (exit {process.returncode}) before it could be killed"
    assert _last_complete_step(checkpoints) >= 4, "checkpoint-4 was not written within 240 s"
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    assert not (tmp_path / "out").exists()
    start = _last_complete_step(checkpoints)
    assert 4 <= start < total
    resumed = subprocess.run([*command, "--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    logged = [int(step) for step in re.findall(rf"step (\d+)/{total} ", resumed.stderr)]
    assert logged == list(range(start + 1, total + 1)), logged  # only the steps after the checkpoint ran
    info = json.loads((tmp_path / "out" / "config.json").read_text())["training_info"]
    assert info["steps"] == total
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the CLI ran (OMP_NUM_THREADS=1): 30 Adam steps amplify a summation-order change
    try:
        whole = train(config_from_dict({**raw, "output": str(tmp_path / "whole")}))
    finally:
        torch.set_num_threads(threads)
    a, b = load_file(whole / "model.safetensors"), load_file(tmp_path / "out" / "model.safetensors")
    assert a.keys() == b.keys()
    difference = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert difference < 1e-5, difference
