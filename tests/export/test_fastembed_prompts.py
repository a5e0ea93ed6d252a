"""hf_dumpembed/export/fastembed_prompts.py: an ONNX export as a fastembed model that puts its prompts first.

fastembed does not share this environment (it wants huggingface_hub < 2), so the default run checks only what the
wrapper imports (its client alone: it runs where hf_dumpembed's own dependencies are not installed), and ``-m slow``
runs it in the client's own environment (tests/support/client_wrappers.py): its vectors on the prompted and the
default folder of tests/repository/test_clients_doc.py, short and ~1,000-token texts, against the folder's
`encode_query` / `encode_document`, and its refusals.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.repository import test_clients_doc as clients_doc
from tests.support.client_wrappers import assert_imports_only, run_in_client_env

# the doc test's fixtures: the prompted and the default folder with their exports, and their encode_query /
# encode_document vectors
folders, expected = clients_doc.folders, clients_doc.expected


def test_it_imports_only_fastembed_and_light_package_modules() -> None:
    assert_imports_only("fastembed_prompts", "fastembed")


SCRIPT = """
import json, shutil, sys
from pathlib import Path

import numpy as np
from fastembed import TextEmbedding

from hf_dumpembed.export.fastembed_prompts import PromptedTextEmbedding, add_export

onnx, model_dir, work, queries, documents = sys.argv[1], sys.argv[2], Path(sys.argv[3]), *json.loads(sys.argv[4])
name = add_export(onnx)
assert add_export(onnx) == name  # the same export again: the same name
model = TextEmbedding(name)
vectors = {
    "query": np.stack(list(model.query_embed(queries))),
    "document": np.stack(list(model.embed(documents))),
    "passage": np.stack(list(model.passage_embed(documents))),
    "one_query": np.stack(list(model.query_embed(queries[0]))),
    "parallel": np.stack(list(model.embed(iter(documents), batch_size=1, parallel=2))),
}
np.savez(work / "vectors.npz", **vectors)

errors = {}
def refused(key, call):
    try:
        call()
    except (TypeError, ValueError) as error:
        errors[key] = f"{type(error).__name__}: {error}"

unprompted = work / "unprompted"
shutil.copytree(onnx, unprompted)
record = json.loads((unprompted / "onnx_export.json").read_text())
record["prompts"].pop("query")
(unprompted / "onnx_export.json").write_text(json.dumps(record))
refused("model folder", lambda: add_export(model_dir))
refused("no query prompt", lambda: add_export(unprompted))
refused("no graph", lambda: add_export(onnx, model_file="nope.onnx"))
refused("name taken", lambda: add_export(shutil.copytree(onnx, work / "copy"), model=name))
refused("name of fastembed's", lambda: add_export(onnx, model="BAAI/bge-small-en-v1.5"))
refused("not text", lambda: list(model.embed(["a", 3])))
refused("unknown", lambda: PromptedTextEmbedding("local/nothing"))
(work / "errors.json").write_text(json.dumps(errors))
print(name, sorted(errors))
"""


@pytest.mark.slow
def test_fastembed_wrapper_gives_encode_query_and_encode_document(folders, expected, tmp_path: Path) -> None:
    run_in_client_env("Qdrant (ONNX export)", SCRIPT, [str(folders["my-model-onnx"]), str(folders["my-model"])],
                      tmp_path)
    vectors = np.load(tmp_path / "vectors.npz")
    for key, side in (("query", "query"), ("document", "document"), ("passage", "document"),
                      ("parallel", "document")):
        np.testing.assert_allclose(vectors[key], expected[side], atol=1e-5, err_msg=key)
    np.testing.assert_allclose(vectors["one_query"], expected["query"][:1], atol=1e-5)
    errors = json.loads((tmp_path / "errors.json").read_text())
    assert errors["model folder"].startswith("ValueError") and "has no onnx_export.json" in errors["model folder"]
    assert "names no query prompt" in errors["no query prompt"] and "export-onnx" in errors["no query prompt"]
    assert "has no nope.onnx" in errors["no graph"] and "model.onnx" in errors["no graph"]
    assert "already has a model named" in errors["name taken"]
    assert "already has a model named" in errors["name of fastembed's"]
    assert errors["not text"].startswith("TypeError") and "got int 3" in errors["not text"]
    assert "'local/nothing' is not an export registered" in errors["unknown"]
