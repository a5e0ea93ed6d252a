"""docs/clients.md: every client snippet gives the folder's `encode_query` / `encode_document` vectors.

Each ```python block under a `## heading` embeds `queries` and `documents` into `query_vectors` and
`document_vectors`. The test puts a prompted K = 4 folder (the e5-small-v2 replica: `query: ` / `passage: `, mean
pooling, a fitted projection so the stock export has a Dense module) and a default one (a source without prompts),
each with its stock export and its ONNX export, in place
of `my-model`, `my-model-stock` and `my-model-onnx`, the snippet's example texts by texts of ~1,000 tokens (far over
the model's limit) and short ones, and compares. The default run executes the snippets whose client is installed in
this environment, in-process; `-m slow` builds one environment per other client (outside the repository, torch's CPU
wheel first) and runs its snippets there in a fresh process that never imports hf_dumpembed (the Qdrant and
LanceDB snippets import only its client module, from the checkout).

On the main of 2026-12-03 langchain's embed_query, llama-index's get_query_embedding and chromadb's query embedding
dropped the query prompt (0.10-0.24 off encode_query on prompted folders) and no page said how to pass it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
EXAMPLE_QUERIES = 'queries = ["how do I read a file line by line?"]'
EXAMPLE_DOCUMENTS = 'documents = ["Open the file and iterate over it: each item is one line."]'
LONG = "the quick brown fox jumps over the lazy dog and reads a file line by line " * 70  # ~1,000 tokens
QUERIES = ["how do I read a file line by line?", LONG]
DOCUMENTS = ["Open the file and iterate over it: each item is one line.", "x", "the lazy dog " + LONG]
# heading -> (the module its client imports, the pip requirements of its own environment for -m slow)
CLIENTS = {
    "sentence-transformers": ("sentence_transformers", None),
    "sentence-transformers, stock export (no remote code)": ("sentence_transformers", None),
    "transformers": ("transformers", None),
    "LangChain": ("langchain_huggingface", ["sentence-transformers==6.3.0", "transformers==5.24.0",
                                            "langchain-huggingface==1.2.3"]),
    "LlamaIndex": ("llama_index.embeddings.huggingface", ["sentence-transformers==6.3.0", "transformers==5.24.0",
                                                          "llama-index-embeddings-huggingface==0.8.0"]),
    "Haystack": ("haystack_integrations", ["sentence-transformers==6.3.0", "transformers==5.24.0",
                                           "haystack-ai==3.4.1", "sentence-transformers-haystack==2.0.0"]),
    "Chroma": ("chromadb", ["sentence-transformers==6.3.0", "transformers==5.24.0", "chromadb==1.5.9"]),
    "txtai": ("txtai", ["sentence-transformers==6.3.0", "transformers==5.24.0", "txtai==9.14.0"]),
    "Qdrant (ONNX export)": ("fastembed", ["fastembed==0.9.1", "qdrant-client==1.20.0"]),
    "LanceDB": ("lancedb", ["sentence-transformers==6.3.0", "transformers==5.24.0", "lancedb==0.40.0"]),
    "Infinity (stock export)": ("infinity_emb", ["infinity-emb[torch]==0.0.78"]),
    "fastembed (ONNX export)": ("fastembed", ["fastembed==0.9.1"]),
    "onnxruntime + tokenizers (ONNX export)": ("onnxruntime", None),
    "OpenVINO (ONNX export)": ("openvino", None),
}
# Every client, the ONNX and OpenVINO graphs included, gives the folder's vectors to float32 rounding (at most 3e-7
# measured on both folders, short and long texts).
TOLERANCE = 1e-5


def snippets() -> dict[str, str]:
    """heading -> the ```python block under it."""
    found = {}
    for section in re.split(r"^## ", DOC.read_text(), flags=re.M)[1:]:
        heading, _, body = section.partition("\n")
        block = re.search(r"```python\n(.*?)```", body, re.S)
        if block:
            found[heading.strip()] = block.group(1)
    return found


def prepared(code: str, folders: dict[str, Path]) -> str:
    """The snippet with the test's folders and texts in place of the page's."""
    assert EXAMPLE_QUERIES in code and EXAMPLE_DOCUMENTS in code, "the snippet's example texts changed"
    code = code.replace(EXAMPLE_QUERIES, f"queries = {QUERIES!r}").replace(EXAMPLE_DOCUMENTS,
                                                                          f"documents = {DOCUMENTS!r}")
    for name in ("my-model-onnx", "my-model-stock", "my-model"):  # longest first: one is a prefix of the others
        code = code.replace(name, str(folders[name]))
    return code


# The folders every snippet runs on: prompted (the e5-small-v2 replica) and default (a source without prompts, the
# all-mpnet-base-v2 replica: its folder names empty query / document prompts in every file).
SOURCES = {"prompted": "e5-small-v2", "default": "all-mpnet-base-v2"}


@pytest.fixture(scope="module", params=list(SOURCES))
def folders(request: pytest.FixtureRequest, zoo_source, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from hf_dumpembed.export.onnx import export_onnx
    from hf_dumpembed.export.stock import export_stock_st
    from hf_dumpembed.model.builder import BuildOptions, build
    from hf_dumpembed.projections.fit import FitOptions, fit_projection
    from tests.support.fit_fixtures import write_corpus

    root = tmp_path_factory.mktemp(f"clients-{request.param}")
    built = build(zoo_source(SOURCES[request.param]), root / "built",
                  BuildOptions(num_dump_tokens=4, pooling="mean", match_steps=0))
    model = fit_projection(built, root / "model", FitOptions(method="pca", dim=16, progress=False, plots=False),
                           corpus=write_corpus(root / "corpus.txt"))
    stock = export_stock_st(model, root / "stock")
    onnx = export_onnx(model, root / "onnx", openvino=importlib.util.find_spec("openvino") is not None).out_dir
    return {"my-model": model, "my-model-stock": stock, "my-model-onnx": onnx, "kind": request.param}


@pytest.fixture(scope="module")
def expected(folders) -> dict[str, np.ndarray]:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folders["my-model"]), trust_remote_code=True)
    vectors = {"query": model.encode_query(QUERIES), "document": model.encode_document(DOCUMENTS)}
    if folders["kind"] == "prompted":  # the prompts matter: plain encode (what the clients call) gives other vectors
        assert np.abs(model.encode(QUERIES) - vectors["query"]).max() > 0.05
    else:  # every file of the folder names the same (empty) prompts
        prompts = [json.loads((folders[name] / file).read_text())["prompts"] for name, file in (
            ("my-model", "config.json"), ("my-model", "config_sentence_transformers.json"),
            ("my-model-onnx", "onnx_export.json"))]
        assert prompts == [{"query": "", "document": ""}] * 3, prompts
    assert len(model.tokenize([LONG])["input_ids"][0]) == model.max_seq_length  # the long texts are truncated
    return vectors


def check(heading: str, query_vectors, document_vectors, expected: dict[str, np.ndarray]) -> None:
    np.testing.assert_allclose(np.asarray(query_vectors, dtype=np.float32), expected["query"], atol=TOLERANCE,
                               err_msg=f"{heading}: query vectors")
    np.testing.assert_allclose(np.asarray(document_vectors, dtype=np.float32), expected["document"],
                               atol=TOLERANCE, err_msg=f"{heading}: document vectors")


def test_the_page_has_a_snippet_for_every_client() -> None:
    assert set(snippets()) == set(CLIENTS)
    text = DOC.read_text()
    for server in ("TEI", "vLLM", "text-embeddings-router", "prompt_name"):
        assert server in text


@pytest.mark.parametrize("heading", [h for h, (module, _) in CLIENTS.items()])
def test_each_snippet_gives_encode_query_and_encode_document(heading: str, folders, expected) -> None:
    module = CLIENTS[heading][0]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} is not installed here: `pytest -m slow` runs this snippet in its own environment")
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        exec(compile(prepared(snippets()[heading], folders), f"docs/clients.md ({heading})", "exec"), namespace)
    assert printed.getvalue().strip(), f"the {heading} snippet prints nothing"
    check(heading, namespace["query_vectors"], namespace["document_vectors"], expected)


def client_python(heading: str, requirements: list[str]) -> Path:
    """The python of the client's own environment under $HF_DUMPEMBED_CLIENT_VENVS (default: the temp folder),
    created on first use: torch's CPU wheel first (a plain torch pulls a CUDA build), then the client."""
    import tempfile

    root = Path(os.environ.get("HF_DUMPEMBED_CLIENT_VENVS", Path(tempfile.gettempdir()) / "hf_dumpembed-clients"))
    name = re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")
    folder, marker = root / name, root / f"{name}.pins.json"  # the pins it was made with, beside it
    python = folder / "bin" / "python"
    pins = ([] if requirements[0].startswith("fastembed") else ["torch==2.13.0"]) + requirements  # fastembed: no torch
    if not (marker.exists() and json.loads(marker.read_text()) == pins):
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True)
        for step in ((pins[:1], pins[1:]) if pins[0].startswith("torch") else (pins,)):
            subprocess.run([str(python), "-m", "pip", "install", "-q", *step], check=True)
        marker.write_text(json.dumps(pins))
    return python


@pytest.mark.slow
@pytest.mark.parametrize("heading", [h for h, (_, requirements) in CLIENTS.items() if requirements])
def test_each_client_snippet_in_its_own_environment(heading: str, folders, expected, tmp_path: Path) -> None:
    python = client_python(heading, CLIENTS[heading][1])
    out = tmp_path / "vectors.npz"
    code = prepared(snippets()[heading], folders) + (
        "\nimport numpy as _np\n"
        f"_np.savez({str(out)!r}, query=_np.asarray(query_vectors, dtype=_np.float32), "
        "document=_np.asarray(document_vectors, dtype=_np.float32))\n")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}  # the client sees no hf_dumpembed
    if "hf_dumpembed" in snippets()[heading]:  # but its client module, from the checkout, none of its dependencies
        env["PYTHONPATH"] = str(DOC.parents[1])
    env.update(HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False", INFINITY_ANONYMOUS_USAGE_STATS="0", DO_NOT_TRACK="1")
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                            timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip(), f"the {heading} snippet prints nothing"
    stored = np.load(out)
    check(heading, stored["query"], stored["document"], expected)


def test_the_onnx_exports_prompt_tokenizers_give_encode_query_and_encode_document(folders, expected) -> None:
    """tokenizer_query.json / tokenizer_document.json (WordPiece: the prompt tokenizes alone) put the prompt in
    themselves: onnxruntime on the unprompted texts gives the folder's encode_query / encode_document vectors."""
    import onnxruntime
    from tokenizers import Tokenizer

    onnx_dir = folders["my-model-onnx"]
    record = json.loads((onnx_dir / "onnx_export.json").read_text())
    session = onnxruntime.InferenceSession(str(onnx_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    fields = {"input_ids": "ids", "attention_mask": "attention_mask", "token_type_ids": "type_ids"}
    for side, texts in (("query", QUERIES), ("document", DOCUMENTS)):
        entry = record["prompt_tokenizers"][side]
        assert entry["file"] == f"tokenizer_{side}.json" and entry["prompt"] == record["prompts"][side], entry
        encodings = Tokenizer.from_file(str(onnx_dir / entry["file"])).encode_batch(texts)
        feed = {i.name: np.array([getattr(e, fields[i.name]) for e in encodings], dtype=np.int64)
                for i in session.get_inputs()}
        vectors = session.run(["sentence_embedding"], feed)[0]
        np.testing.assert_allclose(vectors, expected[side], atol=TOLERANCE, err_msg=side)
    readme = (onnx_dir / "README.md").read_text()
    if folders["kind"] == "prompted":  # the README names the prompt strings and the files that add them
        assert "- query: 'query: '" in readme and "`tokenizer_query.json` (query)" in readme
    else:
        assert "This model has no prompts" in readme
