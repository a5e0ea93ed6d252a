"""A folder is trusted only when it has exactly the shape hf_dumpembed's writers produce (`folder_deviations`).

What every writer produces passes (build for every family, fit with plots, train's record, export-st); each rule of
the schema refuses the first thing outside it, naming the file and the key. The command-level cases (a tampered file
writes a marker file when imported) check that nothing ran unless ``--trust-remote-code`` / ``trust_remote_code=True``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from hf_dumpembed.cli import main
from hf_dumpembed.model.folder_schema import (
    FolderShape,
    UntrustedRemoteCode,
    folder_code_may_run,
    folder_deviations,
    folder_shape,
)
from tests.support.card_fixtures import copy_model, hub_cache_snapshot


def _json(folder: Path, name: str, edit: Callable[[dict], object]) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    value = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps(edit(value)))


def _file(name: str, content: bytes = b"x") -> Callable[[Path], None]:
    def add(folder: Path) -> None:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(content)
    return add


@pytest.fixture(scope="module")
def stock_export(publishable: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hf_dumpembed.export.stock import export_stock_st

    return export_stock_st(publishable, tmp_path_factory.mktemp("stock") / "stock")


def test_what_the_writers_produce_is_exactly_the_shape(publishable: Path, llama_dump_model: Path,
                                                       stock_export: Path) -> None:
    """build (encoder, decoder), a folder with fit plots, train's record and a card, and its stock export."""
    assert (publishable / "plots").is_dir() and (publishable / "training").is_dir()
    for folder, shape in ((publishable, FolderShape.DUMPEMBED), (llama_dump_model, FolderShape.DUMPEMBED),
                          (stock_export, FolderShape.STOCK)):
        assert folder_shape(folder) is shape
        assert folder_deviations(folder) == [], folder
        assert folder_code_may_run(folder) is True


DUMPEMBED_DEVIATIONS = {
    "a stray .py in a sub-folder": (_file("sub/helper.py"), "sub/helper.py: is not a file hf_dumpembed writes"),
    "an __init__.py": (_file("__init__.py"), "__init__.py: is not a file"),
    "a .pyc": (_file("__pycache__/modeling_dumpembed.cpython-311.pyc"), "__pycache__/modeling_dumpembed"),
    "pickled weights": (_file("pytorch_model.bin"), "pytorch_model.bin: is not a file"),
    "a PEFT adapter": (_file("adapter_config.json", b"{}"), "adapter_config.json: is not a file"),
    "custom generate code": (_file("custom_generate/generate.py"), "custom_generate/generate.py: is not a file"),
    "a missing remote file": (lambda f: (f / "configuration_dumpembed.py").unlink(),
                              "configuration_dumpembed.py: is missing"),
    "an attention kernel in config.json": (
        lambda f: _json(f, "config.json", lambda c: {**c, "attn_implementation": "kernels-community/evil"}),
        "config.json [attn_implementation]: is not a setting of DumpEmbedConfig"),
    "an attention kernel in the backbone": (
        lambda f: _json(f, "config.json", lambda c: {**c, "text_config": {**c["text_config"],
                                                                           "attn_implementation": "x/evil"}}),
        "config.json [text_config.attn_implementation]: transformers picks the attention kernel from it"),
    "an auto_map in the backbone": (
        lambda f: _json(f, "config.json", lambda c: {**c, "text_config": {**c["text_config"],
                                                                           "auto_map": {"AutoModel": "evil.E"}}}),
        "config.json [text_config.auto_map]: names code to import"),
    "a backbone type transformers does not define": (
        lambda f: _json(f, "config.json", lambda c: {**c, "text_config": {**c["text_config"],
                                                                           "model_type": "evilbert"}}),
        "config.json [text_config.model_type]: model_type 'evilbert' is not a model type transformers defines"),
    "a third auto_map class": (
        lambda f: _json(f, "config.json", lambda c: {**c, "auto_map": {**c["auto_map"], "AutoTokenizer": "x.T"}}),
        "config.json [auto_map]: must be exactly"),
    "a tokenizer auto_map": (
        lambda f: _json(f, "tokenizer_config.json", lambda c: {**c, "auto_map": {"AutoTokenizer": [None, "t.T"]}}),
        "tokenizer_config.json [auto_map]: names code to import"),
    "another tokenizer class": (
        lambda f: _json(f, "tokenizer_config.json", lambda c: {**c, "tokenizer_class": "EvilTokenizer"}),
        "tokenizer_config.json [tokenizer_class]: must be 'PreTrainedTokenizerFast'"),
    "a tokenizer file from elsewhere": (
        lambda f: _json(f, "tokenizer_config.json", lambda c: {**c, "tokenizer_file": "/etc/other/tokenizer.json"}),
        "tokenizer_config.json [tokenizer_file]: names a file outside this folder"),
    "a second module": (
        lambda f: _json(f, "modules.json", lambda m: [*m, {"idx": 1, "name": "1", "path": "1_Normalize",
                                                           "type": "sentence_transformers.models.Normalize"}]),
        "modules.json: must list exactly one module, the stock Transformer"),
    "the Transformer in a sub-folder": (
        lambda f: _json(f, "modules.json", lambda m: [{**m[0], "path": "sub"}]),
        "modules.json [[0]]: module 0 must be"),
    "model_args": (
        lambda f: _json(f, "sentence_bert_config.json", lambda c: {**c, "model_args": {"trust_remote_code": True}}),
        "sentence_bert_config.json [model_args]: is not a key `hf-dumpembed build` writes"),
    "a tokenizer from another folder": (
        lambda f: _json(f, "sentence_bert_config.json", lambda c: {**c, "tokenizer_name_or_path": "/other"}),
        "sentence_bert_config.json [tokenizer_name_or_path]: is not a key `hf-dumpembed build` writes"),
    "an unknown sentence-transformers setting": (
        lambda f: _json(f, "config_sentence_transformers.json", lambda c: {**c, "model_card_data": {}}),
        "config_sentence_transformers.json [model_card_data]: is not a key the writers write"),
    "a similarity function by import path": (
        lambda f: _json(f, "config_sentence_transformers.json", lambda c: {**c, "similarity_fn_name": "os.system"}),
        "config_sentence_transformers.json [similarity_fn_name]: must be null or one of"),
    "a link to a folder": (lambda f: os.symlink("/", f / "plots" / "root"), "plots/root: is a link to a folder"),
}


@pytest.mark.parametrize("case", DUMPEMBED_DEVIATIONS)
def test_each_rule_names_the_file_and_the_key(case: str, publishable: Path, tmp_path: Path) -> None:
    """Each way a folder leaves the schema is refused with an error naming the file and the key."""
    folder = copy_model(publishable, tmp_path / "model")
    change, expected = DUMPEMBED_DEVIATIONS[case]
    change(folder)
    found = [str(item) for item in folder_deviations(folder)]
    assert any(line.startswith(expected) for line in found), found
    with pytest.raises(UntrustedRemoteCode, match="--trust-remote-code") as refused:
        folder_code_may_run(folder)
    assert expected in str(refused.value)


STOCK_DEVIATIONS = {
    "a Dense activation imported by name": (
        lambda f: _json(f, "3_Dense/config.json", lambda c: {**c, "activation_function": "os.system"}),
        "3_Dense/config.json [activation_function]: must be 'torch.nn.modules.linear.Identity'"),
    "an unknown Pooling setting": (
        lambda f: _json(f, "1_Pooling/config.json", lambda c: {**c, "pooling_mode": "evil"}),
        "1_Pooling/config.json [pooling_mode]: is not a key `export-st` writes for Pooling"),
    "a module folder modules.json does not name": (_file("5_Dense/config.json", b"{}"),
                                                   "5_Dense/: is a module folder modules.json does not name"),
    "remote code in a stock export": (_file("modeling_dumpembed.py"), "modeling_dumpembed.py: is not a file"),
    "an auto_map in its config": (
        lambda f: _json(f, "config.json", lambda c: {**c, "auto_map": {"AutoModel": "evil.E"}}),
        "config.json [auto_map]: names code to import"),
    "a Router": (lambda f: _json(f, "modules.json", lambda m: [
        {**m[0], "type": "sentence_transformers.base.modules.router.Router"}, *m[1:]]),
        "modules.json: must list the stock export's modules"),
}


@pytest.mark.parametrize("case", STOCK_DEVIATIONS)
def test_a_stock_export_is_checked_module_by_module(case: str, stock_export: Path, tmp_path: Path) -> None:
    folder = copy_model(stock_export, tmp_path / "stock")
    change, expected = STOCK_DEVIATIONS[case]
    change(folder)
    found = [str(item) for item in folder_deviations(folder)]
    assert any(line.startswith(expected) for line in found), found
    assert folder_code_may_run(folder) is False  # not ours: it loads with trust_remote_code=False, never refused


def test_every_deviation_is_named_at_once(publishable: Path, tmp_path: Path) -> None:
    """A folder that fails the schema is refused naming every deviation, not only the first."""
    folder = copy_model(publishable, tmp_path / "model")
    _file("evil.py")(folder)
    _json(folder, "tokenizer_config.json", lambda c: {**c, "auto_map": {"AutoTokenizer": "t.T"}})
    with pytest.raises(UntrustedRemoteCode) as refused:
        folder_code_may_run(folder)
    assert "evil.py: is not a file" in str(refused.value) and "tokenizer_config.json [auto_map]" in str(refused.value)


def test_a_hub_cache_snapshot_of_links_to_files_passes(publishable: Path, tmp_path: Path) -> None:
    """A Hub cache snapshot is a folder of links to blobs: links to regular files count as those files."""
    snapshot = hub_cache_snapshot(publishable, tmp_path / "snapshot", tmp_path / "blobs")
    assert folder_deviations(snapshot) == []


def test_a_name_that_is_not_a_local_folder_loads_without_its_code_unless_trusted() -> None:
    """A Hub id cannot be checked before it is loaded: its code runs only when the user says to trust it."""
    assert folder_code_may_run("acme/not-here") is False
    assert folder_code_may_run("acme/not-here", trust_remote_code=True) is True


def test_a_folder_of_no_known_shape_is_refused(tiny_bert: Path) -> None:
    """A plain transformers folder is neither shape: refused as such (it is a backbone to build from)."""
    assert [str(item) for item in folder_deviations(tiny_bert)] == [
        ".: is neither a DumpEmbed folder (config.json model_type 'dumpembed') nor a stock export (config.json and "
        "modules.json)"]


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




def test_verify_refuses_an_edited_modeling_file_and_runs_nothing(bert_dump_model, tmp_path, marker):
    """`verify` refuses an edited modeling file without running it; the error names the file and how to go on."""
    folder = _tamper(copy_model(bert_dump_model, tmp_path / "model"), marker)
    with pytest.raises(SystemExit, match=r"modeling_dumpembed\.py: differs from every version") as error:
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
        with pytest.raises(UntrustedRemoteCode, match=r"modeling_dumpembed\.py: differs from every version"):
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
    found = "\n".join(str(item) for item in folder_deviations(folder))
    assert "tokenizer_config.json [auto_map]: names code to import" in found
    assert "modules.json: must list exactly one module, the stock Transformer" in found


def test_push_refuses_code_that_is_not_ours_and_never_imports_it(bert_dump_model, tmp_path, marker):
    """`push --dry-run` refuses a folder with code that is not ours and never imports it."""
    from hf_dumpembed.publishing.hub import push_folder
    from hf_dumpembed.publishing.push_checks import PublishRefused
    from tests.support.card_fixtures import add_training_metadata

    folder = _add_evil_module(copy_model(bert_dump_model, tmp_path / "model"), marker)
    add_training_metadata(folder)
    with pytest.raises(PublishRefused, match=r"evil\.py: is not a file hf_dumpembed writes") as error:
        push_folder(folder, "acme/tiny-dump", dry_run=True, staging_dir=tmp_path / "stage")
    assert "--trust-remote-code" in str(error.value)
    assert not marker.exists()
    assert not (tmp_path / "stage" / "evil.py").exists()


def test_train_refuses_a_mining_model_whose_code_is_not_ours(tiny_bert, bert_dump_model, tmp_path, marker):
    """`train` refuses a data.mining.model folder whose code is not ours, without running that code."""
    from hf_dumpembed.training.config import config_from_dict
    from hf_dumpembed.training.trainer import train
    from tests.support.training_fixtures import run_config, write_beir_folder

    miner = _tamper(copy_model(bert_dump_model, tmp_path / "miner"), marker)
    data = {"path": str(write_beir_folder(tmp_path / "beir")), "format": "beir", "split": "train",
            "num_negatives": 1, "mining": {"model": str(miner)}}
    config = config_from_dict(run_config(tiny_bert, data, tmp_path / "out"))
    with pytest.raises(UntrustedRemoteCode, match=r"modeling_dumpembed\.py: differs from every version"):
        train(config)
    assert not marker.exists() and not (tmp_path / "out").exists()
