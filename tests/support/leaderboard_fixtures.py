"""Small Hub repositories for two official mteb tasks, in the layout and at the revision their metadata names, built
from real text that every Python installation has (the standard library's docstrings).

- ``NQHardNegatives`` (``dump-standard``): a parquet dataset repo with the configs mteb's retrieval loader reads,
  ``corpus`` (``_id``, ``title``, ``text``), ``queries`` (``_id``, ``text``) and ``default`` (qrels: ``query-id``,
  ``corpus-id``, ``score``), split ``test``, files where ``datasets``' ``push_to_hub`` puts them
  (``<config>/test-00000-of-00001.parquet``, ``data/`` for ``default``) and a README declaring them.
  (The real repo's file listing was not available offline; the config names are those mteb's loader asks for.)
- ``LEMBPasskeyRetrieval`` (``dump-longembed``): ``mteb/LEMBPasskeyRetrieval``, the same parquet layout with the
  task's eight length splits (``test_256`` ... ``test_32768``); each document hides a five-digit pass key in
  standard-library prose and each query asks for one key.
- ``LEMBNarrativeQARetrieval``: ``dwzhu/LongEmbed`` as published, one folder per subset with
  ``corpus.jsonl`` (``doc_id``, ``text``), ``queries.jsonl`` (``qid``, ``text``), ``qrels.jsonl`` (``qid``,
  ``doc_id``), declared as config ``narrativeqa`` with splits ``corpus`` / ``queries`` / ``qrels``.

Queries are the first sentence of a function's docstring, the relevant document is the rest of that docstring
(with the function's qualified name as title); long documents are whole module docstrings.
"""

from __future__ import annotations

import importlib
import inspect
import io
import json

from tests.support.hub_download_fixtures import HubRepo

STANDARD_TASK = "NQHardNegatives"
LONGEMBED_TASK = "LEMBPasskeyRetrieval"
DWZHU_LONGEMBED_TASK = "LEMBNarrativeQARetrieval"
_FUNCTION_SOURCES = ("textwrap", "json", "shutil", "os.path", "base64", "difflib", "fnmatch", "glob", "heapq",
                     "bisect", "random", "statistics")
_LONG_SOURCES = ("argparse", "doctest", "json", "pickle", "subprocess", "threading", "tarfile", "zipfile")


def docstring_pairs(limit: int = 24) -> list[tuple[str, str, str]]:
    """(name, query, document) from standard-library functions whose docstring has a summary and a body."""
    pairs = []
    for module_name in _FUNCTION_SOURCES:
        module = importlib.import_module(module_name)
        for name, obj in sorted(vars(module).items()):
            if name.startswith("_") or not inspect.isfunction(obj) or obj.__module__ != module.__name__:
                continue
            doc = inspect.getdoc(obj) or ""
            summary, _, body = doc.partition("\n\n")
            summary, body = " ".join(summary.split()), " ".join(body.split())
            if len(summary) > 20 and len(body) > 60:
                pairs.append((f"{module_name}.{name}", summary, body))
    if len(pairs) < limit:
        raise RuntimeError(f"only {len(pairs)} documented stdlib functions found; need {limit}")
    return pairs[:limit]


def long_documents() -> list[tuple[str, str]]:
    """(module name, whole module docstring) for a few long standard-library docstrings."""
    docs = []
    for module_name in _LONG_SOURCES:
        doc = inspect.getdoc(importlib.import_module(module_name)) or ""
        if len(doc) > 300:
            docs.append((module_name, doc))
    return docs


def _parquet(rows: list[dict]) -> bytes:
    from datasets import Dataset

    buffer = io.BytesIO()
    Dataset.from_list(rows).to_parquet(buffer)
    return buffer.getvalue()


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def _card(configs: list[tuple[str, list[tuple[str, str]]]]) -> bytes:
    lines = ["---", "configs:"]
    for name, files in configs:
        lines += [f"- config_name: {name}", "  data_files:"]
        lines += [f"  - split: {split}\n    path: {path}" for split, path in files]
    return ("\n".join(lines) + "\n---\n\nA small stand-in built from Python standard-library docstrings.\n").encode()


def task_dataset(task_name: str) -> dict:
    """The ``dataset`` dict of an installed mteb task's metadata (path, revision, name)."""
    import mteb

    return dict(mteb.get_task(task_name).metadata.dataset)


def _mteb_retrieval_repo(task_name: str, splits: dict[str, tuple[list[dict], list[dict], dict]]) -> HubRepo:
    """A parquet retrieval repo: per split (corpus rows, query rows, qrels) -> configs corpus, queries, default."""
    files: dict[str, bytes] = {}
    configs: dict[str, list[tuple[str, str]]] = {"corpus": [], "default": [], "queries": []}
    for split, (corpus, queries, qrels) in splits.items():
        qrel_rows = [{"query-id": q, "corpus-id": d, "score": s} for q, docs in qrels.items() for d, s in docs.items()]
        for config, folder, rows in (("corpus", "corpus", corpus), ("queries", "queries", queries),
                                     ("default", "data", qrel_rows)):
            files[f"{folder}/{split}-00000-of-00001.parquet"] = _parquet(rows)
            configs[config].append((split, f"{folder}/{split}-*"))
    files["README.md"] = _card(list(configs.items()))
    dataset = task_dataset(task_name)
    return HubRepo(dataset["path"], "dataset", dataset["revision"], files)


def standard_repo() -> tuple[HubRepo, dict[str, dict[str, int]]]:
    """The NQHardNegatives dataset repo and its qrels (query id -> {doc id: score})."""
    pairs = docstring_pairs()
    corpus = [{"_id": f"doc{i}", "title": name, "text": body} for i, (name, _, body) in enumerate(pairs)]
    queries = [{"_id": f"q{i}", "text": summary} for i, (_, summary, _) in enumerate(pairs) if i % 2 == 0]
    qrels = {q["_id"]: {f"doc{q['_id'][1:]}": 1} for q in queries}
    return _mteb_retrieval_repo(STANDARD_TASK, {"test": (corpus, queries, qrels)}), qrels


def passkey_repo(docs_per_split: int = 3) -> tuple[HubRepo, dict[str, dict[str, dict[str, int]]]]:
    """The LEMBPasskeyRetrieval repo (every split the task evaluates) and its qrels per split."""
    import mteb

    prose = " ".join(" ".join(text.split()) for _, text in long_documents()).split(" ")
    splits, all_qrels = {}, {}
    for split in mteb.get_task(LONGEMBED_TASK).metadata.eval_splits:
        length = int(split.rsplit("_", 1)[1])
        words = max(40, min(length // 8, 400))  # a few hundred words: the shape of the task, not its size
        corpus, queries, qrels = [], [], {}
        for i in range(docs_per_split):
            key = f"{(length * 7919 + i * 104729) % 90000 + 10000}"
            start = (i * 97 + length) % (len(prose) - words)
            filler = prose[start:start + words]
            middle = len(filler) // 2
            text = " ".join([*filler[:middle], f"The pass key is {key}. Remember it. {key} is the pass key.",
                             *filler[middle:]])
            corpus.append({"_id": f"{split}_doc{i}", "text": text})
            queries.append({"_id": f"{split}_q{i}", "text": f"What is the pass key? The pass key is {key}."})
            qrels[f"{split}_q{i}"] = {f"{split}_doc{i}": 1}
        splits[split] = (corpus, queries, qrels)
        all_qrels[split] = qrels
    return _mteb_retrieval_repo(LONGEMBED_TASK, splits), all_qrels


def dwzhu_longembed_repo() -> tuple[HubRepo, dict[str, dict[str, int]]]:
    """dwzhu/LongEmbed with the ``narrativeqa`` subset (long module docstrings; query = a later paragraph)."""
    dataset = task_dataset(DWZHU_LONGEMBED_TASK)
    subset = dataset["name"]
    docs = long_documents()
    corpus = [{"doc_id": f"doc_{i}", "text": text} for i, (_, text) in enumerate(docs)]
    queries, qrels = [], {}
    for i, (_, text) in enumerate(docs):
        paragraphs = [p for p in text.split("\n\n") if len(p) > 40]
        question = " ".join(paragraphs[len(paragraphs) // 2].split())[:200]
        queries.append({"qid": f"query_{i}", "text": question})
        qrels[f"query_{i}"] = {f"doc_{i}": 1}
    files = {
        f"{subset}/corpus.jsonl": _jsonl(corpus),
        f"{subset}/queries.jsonl": _jsonl(queries),
        f"{subset}/qrels.jsonl": _jsonl([{"qid": q, "doc_id": d} for q, docs_ in qrels.items() for d in docs_]),
    }
    files["README.md"] = _card([(subset, [(split, f"{subset}/{split}.jsonl")
                                          for split in ("corpus", "queries", "qrels")])])
    return HubRepo(dataset["path"], "dataset", dataset["revision"], files), qrels


def model_repo(model_dir, repo_id: str, revision: str) -> HubRepo:
    """A model folder as a Hub model repo at ``revision`` (every file, remote code included)."""
    from pathlib import Path

    root = Path(model_dir)
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    return HubRepo(repo_id, "model", revision, files)
