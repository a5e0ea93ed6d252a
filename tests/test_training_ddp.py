"""Scale-out: a 2-process DDP run on CPU (gloo) through torchrun completes and writes one model (rank 0 only)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file

from hf_dumpembed.training.trainer import INITIAL_MODEL
from tests.training_fixtures import run_config, toy_rows, write_jsonl


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
        capture_output=True, text=True, env=env, timeout=300, cwd=Path(__file__).resolve().parents[1],
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


@pytest.mark.slow
def test_sigkill_then_resume_from_the_command_line(tiny_bert: Path, tmp_path: Path) -> None:
    """A real kill (SIGKILL of the training process once checkpoint-2 exists), then `train --resume`."""
    data = write_jsonl(tmp_path / "toy.jsonl", toy_rows())
    raw = run_config(tiny_bert, data, tmp_path / "out", epochs=30, save_steps=2, save_total_limit=10)
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(raw))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "hf_dumpembed.cli", "train", str(tmp_path / "run.yaml")]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoints = tmp_path / "out.checkpoints"
    deadline = time.monotonic() + 240
    while not (checkpoints / "checkpoint-4").exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not (tmp_path / "out").exists()
    subprocess.run([*command, "--resume"], env=env, check=True, capture_output=True, timeout=300)
    info = json.loads((tmp_path / "out" / "config.json").read_text())["training_info"]
    assert info["steps"] == 30 * (len(toy_rows()) // 4)
