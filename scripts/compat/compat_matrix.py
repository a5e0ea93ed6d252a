"""Compatibility matrix: a fresh stock export (`hf-dumpembed export-st`) loaded by other client versions.

One virtual environment per client/version, installed from the package registry with the CPU wheel of torch 2.13
pinned first, then the client's pins (everything else as pip resolves it). In each, a fresh Python process loads
the export through the client's own API (no remote code, offline): `SentenceTransformer(path)` for the
sentence-transformers/transformers pairs; infinity-emb's AsyncEmbeddingEngine (torch engine); LangChain's
HuggingFaceEmbeddings; LlamaIndex's HuggingFaceEmbedding; Haystack's SentenceTransformersDocumentEmbedder (the
sentence-transformers-haystack integration); a chromadb collection with its SentenceTransformerEmbeddingFunction
(vectors read back from the collection). It reports its versions, the token ids it fed the model (where the client
exposes its SentenceTransformer) and the vectors. They are compared with the DumpEmbed folder's own vectors
(AutoModel, trust_remote_code=True, in this environment): max |Δ| must be <= 1e-5, and the tokenized input must
carry the [DUMP] prefix exactly as the DumpEmbed tokenizer does.

The model is DumpEmbed K=4 (`--pooling mean`, which stock Pooling expresses) on the embedded all-MiniLM-L6-v2 with
a random 128-d projection (`fit --method random-project`), so the export holds Transformer, Pooling, Normalize,
Dense and Normalize modules.

Slow (a few minutes per new environment; environments are reused): not part of the test run.

    python scripts/compat/compat_matrix.py --venv-root ../compat-venvs --output runs/compat.json

(--venv-root: anywhere outside the repository; --only NAME ... runs a subset without writing the record;
--record-only rewrites the record's table from an earlier --output file.)

It writes its BENCHMARKS.md section record (scripts/bench/results/compat.json) when it finishes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # the BENCHMARKS.md record tools
from benchmarks import Table, add_output_arguments, finish_run, record_only  # noqa: E402

SECTION, ORDER, TITLE = "compat", 16, "Compatibility: the stock export in other client versions"
TORCH = "torch==2.13.0"
TOLERANCE = 1e-5
# name -> (pins installed after torch, the client snippet that embeds TEXTS).
MATRIX: dict[str, tuple[list[str], str]] = {}
TEXTS = [
    "A man is eating food.",
    "How do I read a file line by line in Python?",
    "Retrieval models map queries and documents into one vector space, where nearness means relevance.",
    "x",
    "Open the file, read every line, and close it again. " * 12,
]
# Each snippet gets ``path`` (the export) and ``texts``, and sets ``vectors`` (one per text, in order) and ``st``
# (the SentenceTransformer the client built, or None where it keeps it out of reach); the runner reports the
# versions of ``DISTRIBUTIONS`` that are installed.
SENTENCE_TRANSFORMERS = """
from sentence_transformers import SentenceTransformer
st = SentenceTransformer(path)
vectors = st.encode(texts, convert_to_numpy=True, batch_size=2)
"""
INFINITY = """
import asyncio
from infinity_emb import AsyncEmbeddingEngine, EngineArgs
engine = AsyncEmbeddingEngine.from_args(EngineArgs(
    model_name_or_path=path, engine="torch", device="cpu", batch_size=2, bettertransformer=False,
    model_warmup=False, compile=False))
async def embed():
    async with engine:
        embeddings, _ = await engine.embed(sentences=texts)
    return embeddings
vectors = asyncio.run(embed())
st = None
"""
LANGCHAIN = """
from langchain_huggingface import HuggingFaceEmbeddings
client = HuggingFaceEmbeddings(model_name=path, encode_kwargs={"batch_size": 2})
vectors = client.embed_documents(texts)
st = client._client
"""
LLAMA_INDEX = """
from llama_index.embeddings.huggingface import HuggingFaceEmbedding
client = HuggingFaceEmbedding(model_name=path, embed_batch_size=2, device="cpu")
vectors = client.get_text_embedding_batch(texts)
st = client._model
"""
HAYSTACK = """
from haystack import Document
from haystack_integrations.components.embedders.sentence_transformers import SentenceTransformersDocumentEmbedder
embedder = SentenceTransformersDocumentEmbedder(model=path, batch_size=2)
embedder.warm_up()
documents = embedder.run(documents=[Document(content=t) for t in texts])["documents"]
vectors = [d.embedding for d in documents]
st = embedder.embedding_backend.model
"""
CHROMADB = """
import chromadb
from chromadb.config import Settings
from chromadb.utils.embedding_functions import SentenceTransformerEmbeddingFunction
function = SentenceTransformerEmbeddingFunction(model_name=path, device="cpu")
collection = chromadb.EphemeralClient(Settings(anonymized_telemetry=False)).create_collection(
    "compat", embedding_function=function)
collection.add(ids=[str(i) for i in range(len(texts))], documents=texts)
stored = collection.get(ids=[str(i) for i in range(len(texts))], include=["embeddings"])
vectors = [stored["embeddings"][stored["ids"].index(str(i))] for i in range(len(texts))]
st = next(iter(function.models.values()), None) if hasattr(function, "models") else getattr(function, "_model", None)
"""
for st_version, tf_versions in (("3.4.1", ("4.57.6",)), ("5.7.0", ("4.57.6", "5.24.0")), ("6.2.0", ("5.24.0",))):
    for tf_version in tf_versions:
        MATRIX[f"sentence-transformers {st_version} + transformers {tf_version}"] = (
            [f"sentence-transformers=={st_version}", f"transformers=={tf_version}"], SENTENCE_TRANSFORMERS)
MATRIX.update({
    "infinity-emb 0.0.78 (torch engine)": (["infinity-emb[torch]==0.0.78"], INFINITY),
    "langchain-huggingface 1.2.3": (["langchain-huggingface==1.2.3", "sentence-transformers"], LANGCHAIN),
    "llama-index-embeddings-huggingface 0.8.0": (["llama-index-embeddings-huggingface==0.8.0"], LLAMA_INDEX),
    "haystack-ai 3.4.1 + sentence-transformers-haystack 2.0.0": (
        ["haystack-ai==3.4.1", "sentence-transformers-haystack==2.0.0"], HAYSTACK),
    "chromadb 1.5.9": (["chromadb==1.5.9", "sentence-transformers"], CHROMADB),
})
DISTRIBUTIONS = ("sentence-transformers", "transformers", "torch", "tokenizers", "infinity-emb",
                 "langchain-huggingface", "llama-index-embeddings-huggingface", "haystack-ai",
                 "sentence-transformers-haystack", "chromadb")
RUNNER = """
import json, sys
from importlib import metadata
path, texts = sys.argv[1], json.loads(sys.argv[2])
exec(sys.argv[3])
versions = {}
for name in json.loads(sys.argv[4]):
    try:
        versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
print("RESULT " + json.dumps({
    "versions": versions, "modules": [type(m).__name__ for m in st] if st is not None else None,
    "input_ids": st.tokenize(texts[:1])["input_ids"][0].tolist() if st is not None else None,
    "vectors": [[float(x) for x in v] for v in vectors]}))
"""


def ensure_venv(root: Path, name: str, pins: list[str]) -> Path:
    """The environment's python, created (torch first, then ``pins``) unless it exists with the same pins."""
    folder = root / name.replace(" + ", "__").replace(" ", "-")
    marker = folder / "compat-pins.json"
    python = folder / "bin" / "python"
    if marker.exists() and json.loads(marker.read_text()) == [TORCH, *pins]:
        return python
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True)
    for step in ([TORCH], pins):
        print(f"{name}: pip install {' '.join(step)}", flush=True)  # noqa: T201
        subprocess.run([str(python), "-m", "pip", "install", "-q", *step], check=True)
    marker.write_text(json.dumps([TORCH, *pins]))
    return python


def run_client(python: Path, export: Path, snippet: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env.pop("PYTHONPATH", None)  # the client never sees hf_dumpembed
    env.update({"ANONYMIZED_TELEMETRY": "False", "INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1"})
    command = [str(python), "-c", RUNNER, str(export), json.dumps(TEXTS), snippet, json.dumps(DISTRIBUTIONS)]
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir(), timeout=1800)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULT ")]
    if result.returncode != 0 or not lines:
        return {"error": "\n".join(result.stderr.strip().splitlines()[-3:])}
    return json.loads(lines[-1][len("RESULT "):])


def build_export(work: Path) -> tuple[Path, Path]:
    from hf_dumpembed.cli import main as cli
    from hf_dumpembed.data.assets import default_encoder_path
    from hf_dumpembed.export.stock import export_stock_st
    from hf_dumpembed.model.builder import BuildOptions, build

    # mean over every token, [DUMP] slots included: what stock sentence-transformers Pooling computes
    model = build(default_encoder_path(), work / "k4", BuildOptions(num_dump_tokens=4, pooling="mean"))
    cli(["fit", str(model), str(work / "k4-rp128"), "--method", "random-project", "--dim", "128", "--no-plots"])
    return work / "k4-rp128", export_stock_st(work / "k4-rp128", work / "k4-rp128-stock")


def record_tables(result: dict) -> list[Table]:
    rows = []
    for name, row in result["clients"].items():
        if "error" in row:
            rows.append([name, None, None, None, f"fails: {row['error'][-200:]}"])
            continue
        versions = row["versions"]
        pinned = {pin.split("==")[0].split("[")[0] for pin in MATRIX.get(name, ([], ""))[0] if "==" in pin}
        installed = ", ".join(f"{package} {versions[package]}" for package in ("sentence-transformers", "transformers",
                                                                                "torch", "tokenizers")
                              if package in versions and package not in pinned)
        rows.append([name, installed, ", ".join(row["modules"]) if row["modules"] else "(not exposed)",
                     row["max_abs_diff"],
                     "ok" if row["ok"] else ("wrong [DUMP] prefix" if not row["prefix_ok"] else "vectors differ")])
    return [Table(columns=["client", "also installed", "modules loaded", "max abs diff vs DumpEmbed", "result"],
                  rows=rows, formats={"max abs diff vs DumpEmbed": ".1e"},
                  caption=f"{len(TEXTS)} texts (1 to ~130 tokens); tolerance {TOLERANCE:g}")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv-root", type=Path, default=Path("../compat-venvs"),
                        help="where the environments live (outside the repository; default: ../compat-venvs)")
    parser.add_argument("--only", nargs="*", default=None, help="run only these matrix entries (by name)")
    add_output_arguments(parser)
    args = parser.parse_args()
    if record_only(args, SECTION, record_tables, TITLE, ORDER):
        return
    from transformers import AutoTokenizer

    from hf_dumpembed.export.verify import encode_with_automodel

    work = Path(tempfile.mkdtemp(prefix="compat-"))
    model, export = build_export(work)
    reference = encode_with_automodel(model, TEXTS)
    reference_ids = AutoTokenizer.from_pretrained(str(model), trust_remote_code=True)(TEXTS[:1])["input_ids"][0]
    clients = {}
    for name, (pins, snippet) in MATRIX.items():
        if args.only and name not in args.only:
            continue
        row = run_client(ensure_venv(args.venv_root.resolve(), name, pins), export, snippet)
        if "error" not in row:
            vectors = np.asarray(row.pop("vectors"))
            diff = float(np.abs(vectors - reference).max()) if vectors.shape == reference.shape else float("inf")
            row["max_abs_diff"] = diff
            input_ids = row.pop("input_ids")  # None: the client keeps its SentenceTransformer out of reach
            row["prefix_ok"] = None if input_ids is None else input_ids == list(reference_ids)
            row["ok"] = bool(np.isfinite(diff) and diff <= TOLERANCE and row["prefix_ok"] is not False)
        clients[name] = row
        print(name, {k: v for k, v in row.items() if k != "versions"}, flush=True)  # noqa: T201
    result = {"date": date.today().isoformat(), "clients": clients}
    # A subset (--only) does not replace the whole table.
    finish_run(SECTION, record_tables(result), title=TITLE, order=ORDER, output=args.output, result=result,
               record=not args.only)
    if not all(row.get("ok") for row in clients.values()):
        raise SystemExit("Some clients failed (see above).")


if __name__ == "__main__":
    main()
