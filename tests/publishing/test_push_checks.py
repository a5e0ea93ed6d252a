"""`push` refuses, before any request to the (fake) Hub, every folder a user could not load as published.

Each case breaks one thing in a copy of a publishable folder and pushes it through the real `huggingface_hub` client
against `tests/publish_fixtures.FakeHub`: the push must raise `PublishRefused` naming the problem and saying
"Nothing was uploaded", and the fake Hub must have seen no request at all. Static refusals (files) cost no
process; the load-path refusals start one fresh Python process each.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from hf_dumpembed.export.stock import export_stock_st
from hf_dumpembed.model.folder_schema import FolderShape
from hf_dumpembed.publishing.hub import push_folder
from hf_dumpembed.publishing.push_checks import FolderReport, PublishRefused, compare_load_paths
from tests.support.card_fixtures import copy_model


def _refused(folder: Path, fake_hub, message: str, **push_kwargs) -> str:
    with pytest.raises(PublishRefused, match=message) as refused:
        push_folder(folder, "acme/tiny-dump", **push_kwargs)
    assert "Nothing was uploaded" in str(refused.value)
    assert fake_hub.requests == [] and fake_hub.repos == {}
    return str(refused.value)


def _drop_tokenizer(folder: Path) -> None:
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).unlink()


def _index_naming_a_missing_shard(folder: Path) -> None:
    weight_map = {"a.weight": "model.safetensors", "b.weight": "model-00002-of-00002.safetensors"}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (_index_naming_a_missing_shard, "index.json names missing shards: model-00002-of-00002.safetensors"),
        (_drop_tokenizer, r"no tokenizer files \(tokenizer.json / tokenizer_config.json\)"),
        (lambda f: (f / "modules.json").unlink(), "sentence-transformers files missing: modules.json"),
        (lambda f: (f / "config_sentence_transformers.json").unlink(),
         "sentence-transformers files missing: config_sentence_transformers.json"),
        (lambda f: (f / "model.safetensors").unlink(), r"no \*.safetensors weights at the top of the folder"),
    ],
    ids=["missing-shard", "no-tokenizer", "no-modules-json", "no-st-config", "no-weights"],
)
def test_incomplete_folders_are_refused_before_any_request(publishable, hub, tmp_path, breakage, message):  # noqa: F811
    """A folder missing a shard, its tokenizer, its sentence-transformers files or its weights is refused, naming
    what is missing, before any request."""
    folder = copy_model(publishable, tmp_path / "broken")
    breakage(folder)
    _refused(folder, hub, message)


def test_a_hard_link_shared_with_a_file_outside_is_refused(publishable, hub, tmp_path):  # noqa: F811
    """A weight file hard-linked to a file outside the folder could be rewritten through the other name between
    the checks and the upload: refused (staging itself only hard-links into its own temporary folder)."""
    folder = copy_model(publishable, tmp_path / "linked")
    outside = tmp_path / "elsewhere.safetensors"
    os.link(folder / "model.safetensors", outside)
    _refused(folder, hub, "model.safetensors is a hard link shared with 1 file")


def test_remote_code_in_a_stock_export_is_refused(publishable, hub, tmp_path):  # noqa: F811
    """A stock export must load with trust_remote_code=False: a .py file or an auto_map in it is refused."""
    stock = export_stock_st(publishable, tmp_path / "stock")
    with_code = copy_model(stock, tmp_path / "with-code")
    (with_code / "modeling_dumpembed.py").write_bytes((publishable / "modeling_dumpembed.py").read_bytes())
    _refused(with_code, hub, "a stock export must not carry remote code: modeling_dumpembed.py",
             branch="stock", source=publishable)
    with_map = copy_model(stock, tmp_path / "with-map")
    config = json.loads((with_map / "config.json").read_text())
    config["auto_map"] = {"AutoModel": "modeling_dumpembed.DumpEmbedModel"}
    (with_map / "config.json").write_text(json.dumps(config))
    _refused(with_map, hub, "a stock export must not carry remote code: auto_map", branch="stock", source=publishable)


def test_remote_code_that_imports_hf_dumpembed_is_refused(publishable, hub, tmp_path):
    """Users do not have hf_dumpembed: remote code that imports it fails in the fresh process (where the package is
    blocked), and the push stops."""
    folder = copy_model(publishable, tmp_path / "leaky")
    code = folder / "modeling_dumpembed.py"
    code.write_text("import hf_dumpembed  # leaked: only on the developer's machine\n" + code.read_text())
    # not the package's own code any more: refused unless trusted; trusted, it runs only in the fresh process
    _refused(folder, hub, r"modeling_dumpembed\.py: differs from every version")
    text = _refused(folder, hub, r"fresh-process load \(trust_remote_code=True\) failed", trust_remote_code=True)
    assert "hf_dumpembed is not installed where users load the model" in text


def test_a_leak_that_slips_past_the_import_blocker_is_still_refused():
    """If hf_dumpembed ends up in sys.modules anyway (e.g. loaded by file path), the report fails."""
    vectors = np.eye(2, 4).tolist()
    out = {"leaked": True, "st_document": vectors, "st_query": vectors, "st_one_by_one": vectors,
           "automodel": vectors, "tokens": ["[CLS]", "[DUMP1]"], "automodel_class": "DumpEmbedModel"}
    report = FolderReport(folder=Path("x"), kind=FolderShape.DUMPEMBED)
    compare_load_paths(out, report)
    assert report.problems == ["the folder's code imported hf_dumpembed, which users do not have"]
    clean = FolderReport(folder=Path("x"), kind=FolderShape.DUMPEMBED)
    compare_load_paths(out | {"leaked": False}, clean)
    assert clean.ok


def test_load_paths_that_disagree_are_refused(publishable, hub, tmp_path):  # noqa: F811
    """A sentence-transformers config that truncates to 8 tokens makes SentenceTransformer's vectors differ from
    AutoModel's (which reads the whole text), and a query prompt makes encode_query differ from encode_document:
    both are refused in one fresh-process check."""
    folder = copy_model(publishable, tmp_path / "disagree")
    bert_config = folder / "sentence_bert_config.json"
    bert_config.write_text(json.dumps(json.loads(bert_config.read_text()) | {"max_seq_length": 8}))
    st_config = folder / "config_sentence_transformers.json"
    config = json.loads(st_config.read_text())
    config["prompts"] = {"query": "query: ", "document": ""}
    st_config.write_text(json.dumps(config))
    # max_seq_length is no key `build` writes: past the folder check only when trusted, then the vectors disagree
    _refused(folder, hub, r"sentence_bert_config\.json \[max_seq_length\]: is not a key")
    text = _refused(folder, hub, "vectors differ across load paths", trust_remote_code=True)
    assert "AutoModel vs SentenceTransformer" in text.split("vectors differ")[1]
    assert "encode_query vs encode_document" in text.split("vectors differ")[1]


# Boundary checks: a bad parameter is refused with a message that names it.


def test_push_refuses_a_file_that_names_a_private_path(bert_dump_model, tmp_path):
    from hf_dumpembed.publishing.push_checks import static_checks
    from tests.support.card_fixtures import add_training_metadata

    folder = copy_model(bert_dump_model, tmp_path / "model")
    add_training_metadata(folder)
    (folder / "training" / "data_files.json").write_text(json.dumps([{"path": str(Path.home() / "data" / "x")}]))
    report = FolderReport(folder=folder, kind=FolderShape.DUMPEMBED)
    static_checks(folder, report)
    assert any("training/data_files.json names a local absolute path" in p for p in report.problems)
