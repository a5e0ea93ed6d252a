"""A model folder's Python runs only when it is hf_dumpembed's own remote code, or when the user says to trust it.

Each case fails on main, where verify, eval, analyze, fit, train and push passed ``trust_remote_code=True``
themselves and ran whatever a folder's ``auto_map`` named. A tampered file here writes a marker file when
imported: the tests check that it never ran unless ``--trust-remote-code`` / ``trust_remote_code=True`` was given.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hf_dumpembed._utils.hashing import sha256_file
from hf_dumpembed._utils.remote_trust import (
    REMOTE_FILES,
    UntrustedRemoteCode,
    foreign_code,
    known_remote_hashes,
    require_trusted_code,
)
from hf_dumpembed.cli import main
from tests.support.card_fixtures import copy_model


def _tamper(folder: Path, marker: Path) -> Path:
    """Add one line to the folder's modeling file that leaves ``marker`` behind when the file is imported."""
    modeling = folder / "modeling_dumpembed.py"
    modeling.write_text(modeling.read_text() + f"\nimport pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    return folder


def _add_evil_module(folder: Path, marker: Path) -> Path:
    """An extra ``evil.py`` that config.json's auto_map names for AutoModel."""
    (folder / "evil.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
                                    "from .modeling_dumpembed import DumpEmbedModel as EvilModel\n")
    config = json.loads((folder / "config.json").read_text())
    config["auto_map"]["AutoModel"] = "evil.EvilModel"
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


@pytest.fixture
def marker(tmp_path) -> Path:
    return tmp_path / "the-folder-code-ran"


def test_a_package_made_folder_is_ours(bert_dump_model):
    """A folder `build` wrote carries the package's own files byte for byte: nothing foreign, nothing refused."""
    assert foreign_code(bert_dump_model) == []
    require_trusted_code(bert_dump_model)
    known = known_remote_hashes()
    for name in REMOTE_FILES:
        assert sha256_file(bert_dump_model / name) in known[name]


def test_a_released_version_is_recognised_by_its_recorded_hash(bert_dump_model, tmp_path, monkeypatch):
    """An older release's file (recorded by sha256) is ours even after the installed copy changed."""
    from hf_dumpembed._utils import remote_trust

    folder = copy_model(bert_dump_model, tmp_path / "model")
    released = sha256_file(folder / "modeling_dumpembed.py")
    installed = tmp_path / "installed"
    installed.mkdir()
    for name in REMOTE_FILES:
        (installed / name).write_text((folder / name).read_text() + "\n# a newer version\n")
    monkeypatch.setattr(remote_trust, "REMOTE_DIR", installed)
    monkeypatch.setattr(remote_trust, "RELEASED_REMOTE_SHA256", {"modeling_dumpembed.py": frozenset({released})})
    digest = sha256_file(folder / REMOTE_FILES[0])[:12]
    assert foreign_code(folder) == ["configuration_dumpembed.py differs from every version of hf_dumpembed's "
                                    f"configuration_dumpembed.py (sha256 {digest}…)"]


def test_verify_refuses_an_edited_modeling_file_and_runs_nothing(bert_dump_model, tmp_path, marker):
    """Fails on main (verify ran the edited file): the error names the file and says how to go on."""
    folder = _tamper(copy_model(bert_dump_model, tmp_path / "model"), marker)
    with pytest.raises(SystemExit, match=r"modeling_dumpembed\.py differs from every version") as error:
        main(["verify", str(folder)])
    assert "--trust-remote-code" in str(error.value)
    assert not marker.exists()


def test_trust_remote_code_loads_it_when_the_user_asks(bert_dump_model, tmp_path, marker):
    """With --trust-remote-code the same folder loads (its code runs: the user said so)."""
    # A folder name no other test loads: transformers imports remote code as transformers_modules.<folder name>, and a
    # module of that name already imported in this process would be reused instead of the tampered file.
    folder = _tamper(copy_model(bert_dump_model, tmp_path / "trusted-tampered-model"), marker)
    main(["verify", str(folder), "--trust-remote-code"])
    assert marker.read_text() == "ran"


@pytest.mark.parametrize("how", ["eval", "analyze", "fit", "export-st", "export-onnx"])
def test_every_command_that_loads_a_folder_refuses_an_extra_module(bert_dump_model, tmp_path, marker, how):
    """Fails on main for eval and analyze (they ran evil.py): an auto_map naming a file of no hf_dumpembed
    version is refused before anything is loaded, by every command that loads the folder."""
    from tests.support.training_fixtures import write_beir_folder

    folder = _add_evil_module(copy_model(bert_dump_model, tmp_path / "model"), marker)
    texts = tmp_path / "texts.txt"
    texts.write_text("a text\nanother text\n")
    argv = {
        "eval": ["eval", str(folder), "--task", str(write_beir_folder(tmp_path / "beir")),
                 "--results-dir", str(tmp_path / "results")],
        "analyze": ["analyze", str(folder), "--texts", str(texts), "--out", str(tmp_path / "analysis")],
        "fit": ["fit", str(folder), str(tmp_path / "fitted"), "--method", "truncate", "--dim", "8"],
        "export-st": ["export-st", str(folder), str(tmp_path / "stock")],
        "export-onnx": ["export-onnx", str(folder), str(tmp_path / "onnx")],
    }[how]
    with pytest.raises(SystemExit, match=r"evil\.py \(named by config\.json auto_map\) is not a file of"):
        main(argv)
    assert not marker.exists()
    assert not (tmp_path / "results").exists() and not (tmp_path / "analysis").exists()


def test_the_library_functions_take_trust_remote_code(bert_dump_model, tmp_path, marker):
    """The API refuses too (UntrustedRemoteCode, a ValueError), with ``trust_remote_code=`` to override."""
    from hf_dumpembed.analysis import analyze
    from hf_dumpembed.evaluation import run_eval
    from hf_dumpembed.export.onnx import export_onnx
    from hf_dumpembed.export.verify import check_load_paths
    from hf_dumpembed.projections.fit import FitOptions, fit_projection

    folder = _tamper(copy_model(bert_dump_model, tmp_path / "model"), marker)
    calls = [
        lambda: check_load_paths(folder),
        lambda: run_eval(folder, ["unused"], results_dir=tmp_path / "results"),
        lambda: analyze([folder], ["a text"], tmp_path / "analysis"),
        lambda: fit_projection(folder, tmp_path / "fitted", FitOptions(method="truncate", dim=8)),
        lambda: export_onnx(folder, tmp_path / "onnx"),
    ]
    for call in calls:
        with pytest.raises(UntrustedRemoteCode, match="modeling_dumpembed.py differs"):
            call()
    assert not marker.exists()


def test_custom_tokenizer_or_module_code_is_foreign(bert_dump_model, tmp_path):
    """Code can also come in through tokenizer_config.json's auto_map or a non-stock modules.json class."""
    folder = copy_model(bert_dump_model, tmp_path / "model")
    tokenizer_config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**tokenizer_config,
                                                              "auto_map": {"AutoTokenizer": ["tok.T", None]}}))
    modules = json.loads((folder / "modules.json").read_text())
    modules[0]["type"] = "custom_module.Evil"
    (folder / "modules.json").write_text(json.dumps(modules))
    found = "\n".join(foreign_code(folder))
    assert "tokenizer_config.json has an auto_map" in found
    assert "modules.json names a module class that is not sentence-transformers' own: custom_module.Evil" in found


def test_push_refuses_code_that_is_not_ours_and_never_imports_it(bert_dump_model, tmp_path, marker):
    """Fails on main (push --dry-run staged evil.py and said "ok remote code present"): refused, nothing run."""
    from hf_dumpembed.publishing.checks import PublishRefused
    from hf_dumpembed.publishing.hub import push_folder
    from tests.support.card_fixtures import add_training_metadata

    folder = _add_evil_module(copy_model(bert_dump_model, tmp_path / "model"), marker)
    add_training_metadata(folder)
    with pytest.raises(PublishRefused, match=r"evil\.py \(named by config\.json auto_map\) is not a file of") as error:
        push_folder(folder, "acme/tiny-dump", dry_run=True, staging_dir=tmp_path / "stage")
    assert "--trust-remote-code" in str(error.value)
    assert not marker.exists()
    assert not (tmp_path / "stage" / "evil.py").exists()


def test_train_refuses_a_mining_model_whose_code_is_not_ours(tiny_bert, bert_dump_model, tmp_path, marker):
    """Fails on main: the hard-negative mining model was loaded with trust_remote_code=True whatever it was, so a
    folder named as data.mining.model ran its code inside `train`."""
    from hf_dumpembed.training.config import config_from_dict
    from hf_dumpembed.training.trainer import train
    from tests.support.training_fixtures import run_config, write_beir_folder

    miner = _tamper(copy_model(bert_dump_model, tmp_path / "miner"), marker)
    data = {"path": str(write_beir_folder(tmp_path / "beir")), "format": "beir", "split": "train",
            "num_negatives": 1, "mining": {"model": str(miner)}}
    config = config_from_dict(run_config(tiny_bert, data, tmp_path / "out"))
    with pytest.raises(UntrustedRemoteCode, match="modeling_dumpembed.py differs"):
        train(config)
    assert not marker.exists() and not (tmp_path / "out").exists()
