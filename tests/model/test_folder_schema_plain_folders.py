"""Folders hf_dumpembed did not write: a plain sentence-transformers model loads with its libraries' own code only.

The folder schema answers "is this exactly ours?" (then our remote code runs). Any other folder is loaded with
``trust_remote_code=False``: evaluated, mined with and exported without a flag, while transformers and
sentence-transformers refuse whatever code it names themselves. The embedded all-MiniLM-L6-v2 is used as published
(``data_config.json``, ``vocab.txt``, a BertTokenizer config), with no ``--trust-remote-code``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hf_dumpembed.cli import main
from hf_dumpembed.data.assets import default_encoder_path
from hf_dumpembed.data.beir import write_beir
from hf_dumpembed.model.folder_schema import folder_code_may_run, folder_deviations
from tests.support.card_fixtures import hub_cache_snapshot


@pytest.fixture(scope="module")
def minilm() -> Path:
    return Path(default_encoder_path())


@pytest.fixture()
def beir(tmp_path: Path) -> Path:
    corpus = {"d0": {"title": "", "text": "how to open a file in python"},
              "d1": {"title": "", "text": "the weather in spring is mild"}}
    return write_beir(tmp_path / "beir", corpus, {"q0": "read a file"}, {"q0": {"d0": 1}}, split="test")


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def _eval(folder: Path, beir: Path, results: Path) -> dict:
    main(["eval", str(folder), "--task", str(beir), "--results-dir", str(results)])
    found = sorted(results.rglob("beir.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


def test_the_published_minilm_is_not_ours_and_runs_no_code(minilm: Path) -> None:
    assert folder_deviations(minilm)  # data_config.json, vocab.txt, BertTokenizer: not a shape we write
    assert folder_code_may_run(minilm) is False
    assert folder_code_may_run(minilm, trust_remote_code=True) is True


def test_eval_takes_a_plain_sentence_transformers_folder_without_a_flag(minilm: Path, beir: Path,
                                                                        tmp_path: Path) -> None:
    result = _eval(minilm, beir, tmp_path / "results")
    assert result["scores"]["test"][0]["ndcg_at_10"] == pytest.approx(1.0)
    assert (tmp_path / "results" / "results" / "local__model").is_dir()


def test_eval_takes_a_hub_cache_snapshot_of_links(minilm: Path, beir: Path, tmp_path: Path) -> None:
    """A Hub-cache snapshot (files are links to blobs) is filed under its Hub id and commit."""
    repo = tmp_path / "hub" / "models--acme--minilm"
    _eval(hub_cache_snapshot(minilm, repo / "snapshots" / "0123abc", repo / "blobs"), beir, tmp_path / "results")
    assert (tmp_path / "results" / "results" / "acme__minilm" / "0123abc").is_dir()


def _with_code(minilm: Path, folder: Path, marker: Path, definition: str) -> Path:
    """A copy of ``minilm`` with an ``evil.py`` that leaves ``marker`` behind when it is imported."""
    _copy(minilm, folder)
    (folder / "evil.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n{definition}")
    return folder


def test_a_plain_folder_naming_code_of_its_own_is_refused_by_sentence_transformers(minilm: Path, beir: Path,
                                                                                    tmp_path: Path) -> None:
    marker = tmp_path / "the-folder-code-ran"
    folder = _with_code(minilm, tmp_path / "with-code", marker,
                        "import torch\nclass Evil(torch.nn.Module):\n    pass\n")
    modules = json.loads((folder / "modules.json").read_text())
    modules[1]["type"] = "evil.Evil"
    (folder / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(SystemExit, match=r"(?s)hf-dumpembed eval: error: .*evil\.Evil.*trust_remote_code"):
        main(["eval", str(folder), "--task", str(beir), "--results-dir", str(tmp_path / "results")])
    assert not marker.exists()
    assert not (tmp_path / "results").exists()


def test_a_plain_folder_whose_config_maps_code_loads_the_stock_class(minilm: Path, beir: Path,
                                                                    tmp_path: Path) -> None:
    """config.json's auto_map beside a model type transformers defines: the stock class loads, the file never runs."""
    marker = tmp_path / "the-folder-code-ran"
    folder = _with_code(minilm, tmp_path / "with-auto-map", marker, "from transformers import BertModel as EvilModel\n")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModel": "evil.EvilModel"}}))
    _eval(folder, beir, tmp_path / "results")
    assert not marker.exists()


def test_train_mines_with_a_plain_sentence_transformers_folder(minilm: Path, tiny_bert: Path, tmp_path: Path) -> None:
    """The hard-negative miner of the dump-recipe bench's decoder variants: the published MiniLM."""
    from hf_dumpembed.training.config import config_from_dict
    from hf_dumpembed.training.trainer import train
    from tests.support.training_fixtures import run_config, write_beir_folder

    data = {"path": str(write_beir_folder(tmp_path / "beir")), "format": "beir", "split": "train",
            "num_negatives": 1, "mining": {"model": str(minilm), "cache_dir": str(tmp_path / "mined")}}
    out = train(config_from_dict(run_config(tiny_bert, data, tmp_path / "out")))
    assert json.loads((out / "config.json").read_text())["training_info"]["steps"] >= 1
    mined = [json.loads(line) for line in next((tmp_path / "mined").rglob("*.jsonl")).read_text().splitlines()]
    assert mined and all(len(row) == 3 for row in mined)


COMMANDS_THAT_NEED_OURS = {
    "fit": ["fit", "{folder}", "{tmp}/fitted", "--method", "truncate", "--dim", "8"],
    "verify": ["verify", "{folder}"],
    "analyze": ["analyze", "{folder}", "--texts", "{tmp}/texts.txt", "--out", "{tmp}/analysis"],
    "export-st": ["export-st", "{folder}", "{tmp}/stock"],
    "export-onnx": ["export-onnx", "{folder}", "{tmp}/onnx"],
}


@pytest.mark.parametrize("command", COMMANDS_THAT_NEED_OURS)
def test_commands_that_need_a_dumpembed_folder_say_build_one_not_trust_it(command: str, minilm: Path,
                                                                          tmp_path: Path) -> None:
    (tmp_path / "texts.txt").write_text("a text\n")
    argv = [arg.format(folder=minilm, tmp=tmp_path) for arg in COMMANDS_THAT_NEED_OURS[command]]
    with pytest.raises(SystemExit) as refused:
        main(argv)
    message = str(refused.value)
    assert "is not a DumpEmbed model folder (a stock sentence-transformers folder)" in message, message
    assert "hf-dumpembed build" in message and "trust" not in message, message


def test_train_init_from_a_plain_folder_says_build_one(minilm: Path, tmp_path: Path) -> None:
    from hf_dumpembed.training.config import config_from_dict
    from hf_dumpembed.training.trainer import train
    from tests.support.training_fixtures import run_config, toy_rows, write_jsonl

    raw = run_config(minilm, write_jsonl(tmp_path / "toy.jsonl", toy_rows()), tmp_path / "out")
    raw["model"]["init_from"] = str(raw["model"].pop("backbone"))
    with pytest.raises(ValueError, match="is not a DumpEmbed model folder") as refused:
        train(config_from_dict(raw))
    assert "trust" not in str(refused.value)
