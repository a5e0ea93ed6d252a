"""hf_dumpembed/export/lancedb_prompts.py: LanceDB's sentence-transformers function calling `encode_query` /
`encode_document`.

LanceDB is not installed here (no extra the set-up installs brings it), so the default run checks only what the
wrapper imports (its client alone: it runs where hf_dumpembed's own dependencies are not installed), and ``-m slow``
runs it in the client's own environment (tests/support/client_wrappers.py): its vectors on the prompted and the
default folder of tests/repository/test_clients_doc.py and their stock exports, short and ~1,000-token texts,
against the folder's `encode_query` / `encode_document`, and a search of a table opened again.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.repository import test_clients_doc as clients_doc
from tests.support.client_wrappers import assert_imports_only, run_in_client_env

# the doc test's fixtures: the prompted and the default folder with their exports, and their encode_query /
# encode_document vectors
folders, expected = clients_doc.folders, clients_doc.expected


def test_it_imports_only_lancedb_and_light_package_modules() -> None:
    assert_imports_only("lancedb_prompts", "lancedb")


SCRIPT = """
import json, sys
from pathlib import Path

import lancedb
import numpy as np
from lancedb.embeddings import get_registry
from lancedb.pydantic import LanceModel, Vector

from hf_dumpembed.export.lancedb_prompts import REGISTRY_NAME, PromptedSentenceTransformers

model_dir, stock, work, queries, documents = sys.argv[1], sys.argv[2], Path(sys.argv[3]), *json.loads(sys.argv[4])
assert get_registry().get(REGISTRY_NAME) is PromptedSentenceTransformers
vectors = {}
for key, name in (("stock_", stock), ("", model_dir)):  # the folder's function (the last) makes the table
    function = get_registry().get(REGISTRY_NAME).create(name=name, trust_remote_code=True)
    vectors[key + "query"] = np.asarray(function.compute_query_embeddings(queries), dtype=np.float32)
    vectors[key + "document"] = np.asarray(function.compute_source_embeddings(documents), dtype=np.float32)
    vectors[key + "one_query"] = np.asarray(function.compute_query_embeddings(queries[0]), dtype=np.float32)


class Docs(LanceModel):
    text: str = function.SourceField()
    vector: Vector(function.ndims()) = function.VectorField()


lancedb.connect(str(work / "db")).create_table("docs", schema=Docs).add([{"text": text} for text in documents])
table = lancedb.connect(str(work / "db")).open_table("docs")  # a table opened again finds the function by its name
hit = table.search(queries[0]).limit(1).to_list()[0]
vectors["hit_distance"] = np.float32(hit["_distance"])
vectors["hit_vector"] = np.asarray(hit["vector"], dtype=np.float32)
np.savez(work / "vectors.npz", **vectors)
print(type(table.embedding_functions["vector"].function).__name__)
"""



@pytest.mark.slow
def test_lancedb_wrapper_gives_encode_query_and_encode_document(folders, expected, tmp_path: Path) -> None:
    result = run_in_client_env("LanceDB", SCRIPT, [str(folders["my-model"]), str(folders["my-model-stock"])],
                  tmp_path)
    assert result.stdout.strip().splitlines()[-1] == "PromptedSentenceTransformers"
    vectors = np.load(tmp_path / "vectors.npz")
    for prefix in ("", "stock_"):
        np.testing.assert_allclose(vectors[prefix + "query"], expected["query"], atol=1e-5)
        np.testing.assert_allclose(vectors[prefix + "document"], expected["document"], atol=1e-5)
        np.testing.assert_allclose(vectors[prefix + "one_query"], expected["query"][:1], atol=1e-5)
    # the table's search embedded the query with encode_query: its distance is the one from that vector
    distance = float(((expected["query"][0] - vectors["hit_vector"]) ** 2).sum())
    assert abs(float(vectors["hit_distance"]) - distance) < 1e-5
    assert np.abs(expected["document"] - vectors["hit_vector"]).max(axis=1).min() < 1e-5
