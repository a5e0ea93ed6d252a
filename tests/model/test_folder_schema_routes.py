"""Adversarial folders: every route by which a hostile folder's author got code to run, on every command and Python
entry point that loads a folder.

Each route plants code that leaves a marker file behind when it is imported. On main before the folder schema
(`hf_dumpembed.model.folder_schema`), each of these folders was reported fine and its code ran (rc 0): the trust check
hashed only the files ``auto_map`` names and looked at the top-level ``modules.json`` types. Now each is refused
before anything is imported, and the marker never appears.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from hf_dumpembed.cli import main
from tests.support.card_fixtures import copy_model


def _marker_code(marker: Path, extra: str = "") -> str:
    return f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n{extra}"


def _edit_json(path: Path, edit: Callable[[object], object]) -> None:
    path.write_text(json.dumps(edit(json.loads(path.read_text())), indent=2))


def relative_import(folder: Path, marker: Path) -> None:
    """auto_map sends AutoConfig to the (unchanged) modeling file, whose relative import of the configuration file
    transformers copies from the folder too: the configuration file was edited."""
    def point(config):
        config["auto_map"]["AutoConfig"] = "modeling_dumpembed.DumpEmbedConfig"
        return config

    _edit_json(folder / "config.json", point)
    configuration = folder / "configuration_dumpembed.py"
    configuration.write_text(configuration.read_text() + "\n" + _marker_code(marker))


def sub_folder_config(folder: Path, marker: Path) -> None:
    """modules.json: one Transformer at "sub", whose config.json's auto_map names evil.py at the top level."""
    sub = folder / "sub"
    sub.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "sentence_bert_config.json", "configuration_dumpembed.py", "modeling_dumpembed.py"):
        shutil.copy(folder / name, sub / name)
    (folder / "evil.py").write_text(_marker_code(marker, "from .configuration_dumpembed import DumpEmbedConfig as "
                                                         "EvilConfig\n"))
    shutil.copy(folder / "evil.py", sub / "evil.py")

    def point(config):
        config["auto_map"]["AutoConfig"] = "evil.EvilConfig"
        return config

    _edit_json(sub / "config.json", point)
    _edit_json(folder / "modules.json", lambda modules: [{**modules[0], "path": "sub"}])


def stock_router(folder: Path, marker: Path) -> None:
    """A stock Router module (a sentence-transformers class) whose router_config.json names evil.Evil."""
    (folder / "evil.py").write_text(_marker_code(marker, "class Evil:\n    pass\n"))
    (folder / "router_config.json").write_text(json.dumps({"types": {"route": "evil.Evil"},
                                                           "structure": {"query": ["route"]}, "parameters": {}}))
    _edit_json(folder / "modules.json",
               lambda modules: [{**modules[0], "type": "sentence_transformers.base.modules.router.Router"}])


def foreign_tokenizer(folder: Path, marker: Path) -> None:
    """sentence_bert_config.json's tokenizer_name_or_path names another folder whose tokenizer has an auto_map."""
    other = folder.parent / f"{folder.name}-tokenizer"
    other.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(folder / name, other / name)
    (other / "tok.py").write_text(_marker_code(marker, "from transformers import PreTrainedTokenizerFast as Evil\n"))
    _edit_json(other / "tokenizer_config.json", lambda config: {**config, "auto_map": {"AutoTokenizer": [None,
                                                                                                        "tok.Evil"]}})
    _edit_json(folder / "sentence_bert_config.json", lambda config: {**config, "tokenizer_name_or_path": str(other)})


def stray_module(folder: Path, marker: Path) -> None:
    """The route the first trust check already caught: auto_map names an extra evil.py."""
    (folder / "evil.py").write_text(_marker_code(marker, "from .modeling_dumpembed import DumpEmbedModel as Evil\n"))
    _edit_json(folder / "config.json", lambda config: {**config, "auto_map": {**config["auto_map"],
                                                                             "AutoModel": "evil.Evil"}})


ROUTES = {"relative-import": relative_import, "sub-folder-config": sub_folder_config, "stock-router": stock_router,
          "foreign-tokenizer": foreign_tokenizer, "stray-module": stray_module}


def _cli(*argv: str) -> Callable[[Path, Path], object]:
    def run(folder: Path, tmp: Path) -> object:
        return main([arg.format(folder=folder, tmp=tmp) for arg in argv])
    return run


def _beir(tmp: Path) -> str:
    """A tiny BEIR folder with a test split (so that eval would go on to load the model)."""
    from hf_dumpembed.data.beir import write_beir

    corpus = {"d0": {"title": "", "text": "a document"}, "d1": {"title": "", "text": "another one"}}
    return str(write_beir(tmp / "beir", corpus, {"q0": "a query"}, {"q0": {"d0": 1}}, split="test"))


def _texts(tmp: Path) -> Path:
    (tmp / "texts.txt").write_text("a text\nanother text\n")
    return tmp / "texts.txt"


def _train(folder: Path, tmp: Path, cli: bool) -> object:
    from hf_dumpembed.training.config import config_from_dict
    from hf_dumpembed.training.trainer import train
    from tests.support.training_fixtures import run_config, toy_rows, write_jsonl

    raw = run_config(folder, write_jsonl(tmp / "toy.jsonl", toy_rows()), tmp / "trained")
    raw["model"]["init_from"] = str(raw["model"].pop("backbone"))
    if not cli:
        return train(config_from_dict(raw))
    import yaml

    (tmp / "run.yaml").write_text(yaml.safe_dump(raw))
    return main(["train", str(tmp / "run.yaml")])


def _export(tmp: Path, source: Path | None = None) -> str:
    """An export-onnx folder's manifest (all serve-bench reads before it loads the model), naming ``source``."""
    import json

    (tmp / "export").mkdir(exist_ok=True)
    manifest = {"inputs": ["input_ids", "attention_mask"], "source": str(source) if source else None}
    (tmp / "export" / "onnx_export.json").write_text(json.dumps(manifest))
    return str(tmp / "export")


def _check_folder(folder: Path, tmp: Path) -> object:
    from hf_dumpembed.publishing.push_checks import check_folder

    report, _ = check_folder(folder)
    if not report.ok:
        raise ValueError(report.describe())
    return report


def _python(name: str) -> Callable[[Path, Path], object]:
    def run(folder: Path, tmp: Path) -> object:
        from hf_dumpembed.analysis import analyze
        from hf_dumpembed.evaluation import run_eval
        from hf_dumpembed.evaluation.model_meta import load_dumpembed_folder
        from hf_dumpembed.export.onnx import export_onnx
        from hf_dumpembed.export.serve_bench import serve_bench
        from hf_dumpembed.export.stock import export_stock_st
        from hf_dumpembed.export.verify import check_load_paths
        from hf_dumpembed.projections.fit import FitOptions, fit_projection

        return {
            "check_load_paths": lambda: check_load_paths(folder),
            "run_eval": lambda: run_eval(folder, [_beir(tmp)], results_dir=tmp / "results"),
            "analyze": lambda: analyze([folder], ["a text"], tmp / "analysis"),
            "fit_projection": lambda: fit_projection(folder, tmp / "fitted", FitOptions(method="truncate", dim=8)),
            "export_onnx": lambda: export_onnx(folder, tmp / "onnx"),
            "export_stock_st": lambda: export_stock_st(folder, tmp / "stock"),
            "load_dumpembed_folder": lambda: load_dumpembed_folder("me/model", folder=str(folder)),
            "check_folder": lambda: _check_folder(folder, tmp),
            "train": lambda: _train(folder, tmp, cli=False),
            "serve_bench": lambda: serve_bench(_export(tmp), folder),
        }[name]()
    return run


ENTRY_POINTS = {
    "verify": _cli("verify", "{folder}"),
    "eval": lambda folder, tmp: main(["eval", str(folder), "--task", _beir(tmp), "--results-dir", str(tmp / "res")]),
    "analyze": lambda folder, tmp: main(["analyze", str(folder), "--texts", str(_texts(tmp)), "--out",
                                         str(tmp / "analysis")]),
    "fit": _cli("fit", "{folder}", "{tmp}/fitted", "--method", "truncate", "--dim", "8"),
    "export-st": _cli("export-st", "{folder}", "{tmp}/stock"),
    "export-st --no-check": _cli("export-st", "{folder}", "{tmp}/stock", "--no-check"),
    "export-onnx": _cli("export-onnx", "{folder}", "{tmp}/onnx"),
    "push --dry-run": _cli("push", "{folder}", "me/model", "--dry-run"),
    "train (init_from)": lambda folder, tmp: _train(folder, tmp, cli=True),
    "serve-bench --model": lambda folder, tmp: main(["serve-bench", _export(tmp), "--model", str(folder)]),
    "serve-bench (recorded source)": lambda folder, tmp: main(["serve-bench", _export(tmp, folder)]),
    **{f"python {name}": _python(name) for name in ("check_load_paths", "run_eval", "analyze", "fit_projection",
                                                    "export_onnx", "export_stock_st", "load_dumpembed_folder",
                                                    "check_folder", "train", "serve_bench")},
}


@pytest.mark.parametrize("entry", ENTRY_POINTS)
@pytest.mark.parametrize("route", ROUTES)
def test_every_code_route_is_refused_on_every_entry_point(route: str, entry: str, publishable: Path,
                                                          tmp_path: Path) -> None:
    """Every route to code that is not ours is refused by every entry point, naming --trust-remote-code; the code
    never runs and nothing is written."""
    folder = copy_model(publishable, tmp_path / f"hostile-{route}")
    marker = tmp_path / "the-folder-code-ran"
    ROUTES[route](folder, marker)
    with pytest.raises((SystemExit, ValueError)) as refused:
        ENTRY_POINTS[entry](folder, tmp_path)
    assert not marker.exists(), f"{route} ran its code through {entry}"
    message = str(refused.value)
    assert "--trust-remote-code" in message or "trust_remote_code" in message, message
    for output in ("fitted", "stock", "onnx", "analysis", "results", "res", "trained"):
        assert not (tmp_path / output).exists() or not any((tmp_path / output).rglob("*.json")), output


def test_push_never_calls_an_edited_configuration_file_byte_identical(publishable: Path, tmp_path: Path) -> None:
    """With an edited configuration file, `push` never reports the remote code as byte-identical."""
    from hf_dumpembed.publishing.push_checks import check_folder

    folder = copy_model(publishable, tmp_path / "hostile")
    relative_import(folder, tmp_path / "marker")
    report, _ = check_folder(folder)
    assert not report.ok
    assert not any("byte-identical" in line for line in report.passed), report.passed
    problems = "\n".join(report.problems)
    assert "configuration_dumpembed.py: differs from every version" in problems
    assert "config.json [auto_map]: must be exactly" in problems
    assert not (tmp_path / "marker").exists()


def test_with_trust_remote_code_the_folder_code_runs_and_the_command_says_so(publishable: Path, tmp_path: Path,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    """--trust-remote-code is the one way past the schema; the command then says once that the folder's own code runs
    (the folder name is new to this process: transformers reuses an imported transformers_modules.<name>)."""
    folder = copy_model(publishable, tmp_path / "trusted-stray-module-folder")
    marker = tmp_path / "ran"
    stray_module(folder, marker)
    with caplog.at_level("WARNING"):
        main(["verify", str(folder), "--trust-remote-code"])
    assert marker.read_text() == "ran"
    said = [record.getMessage() for record in caplog.records if "own code (--trust-remote-code)" in record.getMessage()]
    assert len(said) == 1 and "evil.py" in said[0], said
