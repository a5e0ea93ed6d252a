"""BEIR-style retrieval folders: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

One reader and one writer shared by the dataset builders, the mteb tasks, training and the projection fit.
Every malformed line is an error naming the file and line; nothing is skipped silently. Kept rather than a
library loader (``beir``'s ``GenericDataLoader``, mteb's ``datasets``-based loading): the training data and the
projection fit read the same folders without mteb, and those loaders do not name the bad line.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .text_input import iter_utf8_lines

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_HEADER = ("query-id", "corpus-id", "score")


@dataclass(frozen=True)
class BeirData:
    """A retrieval split: documents (id -> title/text), queries (id -> text) and relevance (query -> doc -> score)."""

    corpus: dict[str, dict[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    def document_text(self, doc_id: str) -> str:
        """Title and text joined the way mteb joins them for retrieval."""
        return document_text(self.corpus[doc_id])


@dataclass
class PairCollection:
    """A collection built pair by pair: each document has one query (``q:<doc id>``) that it answers, and no two
    queries have the same text (case aside)."""

    corpus: dict[str, dict[str, str]] = field(default_factory=dict)
    queries: dict[str, str] = field(default_factory=dict)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)

    def add(self, doc_id: str, query: str, text: str) -> bool:
        """Add the pair unless a query with the same text (case aside) is there already; True when added."""
        if query.lower() in self.seen:
            return False
        self.seen.add(query.lower())
        self.corpus[doc_id] = {"title": "", "text": text}
        self.queries[f"q:{doc_id}"] = query
        self.qrels[f"q:{doc_id}"] = {doc_id: 1}
        return True

    def parts(self) -> tuple[dict[str, dict[str, str]], dict[str, str], dict[str, dict[str, int]]]:
        """(corpus, queries, qrels), as `write_beir` takes them."""
        return self.corpus, self.queries, self.qrels


def document_text(document: Mapping[str, str]) -> str:
    """``title + " " + text`` (just the text when there is no title)."""
    title = (document.get("title") or "").strip()
    return f"{title} {document['text']}".strip() if title else document["text"]


def is_beir_folder(path: str | Path) -> bool:
    """True when ``path`` is a folder holding ``corpus.jsonl``."""
    return (Path(path) / CORPUS_FILE).is_file()


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a clear error on invalid JSON or a non-object line."""
    for line_number, line in iter_utf8_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{line_number}: not valid JSON ({error.msg}).") from None
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{line_number}: expected a JSON object, got {type(row).__name__}.")
        yield line_number, row


def _require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: a BEIR-style folder needs {what}.")
    return path


def load_corpus(folder: str | Path) -> dict[str, dict[str, str]]:
    """``corpus.jsonl`` as id -> {"title", "text"}; each line needs ``_id`` and ``text``."""
    path = _require_file(Path(folder) / CORPUS_FILE, 'corpus.jsonl with one {"_id", "title", "text"} per line')
    corpus: dict[str, dict[str, str]] = {}
    for line_number, row in read_jsonl(path):
        if "_id" not in row or not isinstance(row.get("text"), str):
            raise ValueError(f'{path}:{line_number}: a document needs "_id" and a string "text".')
        doc_id = str(row["_id"])
        if doc_id in corpus:
            raise ValueError(f"{path}:{line_number}: duplicate document id {doc_id!r}.")
        if not doc_id.strip():
            raise ValueError(f"{path}:{line_number}: a document id is empty: give every document an \"_id\".")
        title = str(row.get("title") or "")
        if not row["text"].strip() and not title.strip():
            raise ValueError(f"{path}:{line_number}: document {doc_id!r} has an empty text and no title: there is "
                             "nothing to encode; remove it (and its judgements) or fill it in.")
        corpus[doc_id] = {"title": title, "text": row["text"]}
    if not corpus:
        raise ValueError(f"{path} holds no documents.")
    return corpus


def load_queries(folder: str | Path) -> dict[str, str]:
    """``queries.jsonl`` as id -> text; each line needs ``_id`` and ``text``."""
    path = _require_file(Path(folder) / QUERIES_FILE, 'queries.jsonl with one {"_id", "text"} per line')
    queries: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for line_number, row in read_jsonl(path):
        if "_id" not in row or not isinstance(row.get("text"), str):
            raise ValueError(f'{path}:{line_number}: a query needs "_id" and a string "text".')
        query_id = str(row["_id"])
        if query_id in queries:
            raise ValueError(f"{path}:{line_number}: duplicate query id {query_id!r} (first on line "
                             f"{first_line[query_id]}): each query id must appear once; remove or rename one.")
        if not query_id.strip() or not row["text"].strip():
            raise ValueError(f"{path}:{line_number}: query {query_id!r} has an empty id or text: fill it in or "
                             "remove the line (and its judgements).")
        queries[query_id], first_line[query_id] = row["text"], line_number
    return queries


def load_qrels(folder: str | Path, split: str = "test") -> dict[str, dict[str, int]]:
    """``qrels/<split>.tsv`` (header ``query-id corpus-id score``) as query id -> document id -> score."""
    path = _require_file(Path(folder) / "qrels" / f"{split}.tsv", f"qrels/{split}.tsv (query-id, corpus-id, score)")
    qrels: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    lines = (line for _, line in iter_utf8_lines(path))
    for line_number, fields in enumerate(csv.reader(lines, delimiter="\t"), start=1):
        if not fields or (line_number == 1 and fields[0] == QRELS_HEADER[0]):
            continue
        if len(fields) != 3:
            raise ValueError(f"{path}:{line_number}: expected 3 tab-separated fields, got {len(fields)}.")
        try:
            score = int(fields[2])
        except ValueError:
            raise ValueError(f"{path}:{line_number}: score {fields[2]!r} is not an integer.") from None
        if fields[1] in qrels.get(fields[0], {}):
            raise ValueError(f"{path}:{line_number}: the pair query {fields[0]!r}, document {fields[1]!r} is judged "
                             f"again (first on line {first_line[fields[0], fields[1]]}, score "
                             f"{qrels[fields[0]][fields[1]]}; here {score}): keep one judgement per pair.")
        qrels.setdefault(fields[0], {})[fields[1]] = score
        first_line[fields[0], fields[1]] = line_number
    if not qrels:
        raise ValueError(f"{path} holds no relevance judgements.")
    if not any(score > 0 for judged in qrels.values() for score in judged.values()):
        raise ValueError(f"{path} has no positive judgement (every score is 0 or less), so every model would score "
                         "0: give each relevant query-document pair a score above 0.")
    return qrels


def unknown_judgement(qrels: Mapping[str, Mapping[str, Any]], query_ids: Container[str],
                      document_ids: Container[str]) -> tuple[str, str | None] | None:
    """The first judgement naming an id that is not there: (query, None) for a query, (query, document) for a
    document; None when every judged query and document exists."""
    for query_id, judged in qrels.items():
        if query_id not in query_ids:
            return query_id, None
        missing = next((doc_id for doc_id in judged if doc_id not in document_ids), None)
        if missing is not None:
            return query_id, missing
    return None


def load_beir(folder: str | Path, split: str = "test") -> BeirData:
    """Read and cross-check a split: every judged query and document must exist."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder; expected a BEIR-style folder (corpus.jsonl, ...).")
    corpus, queries, qrels = load_corpus(folder), load_queries(folder), load_qrels(folder, split)
    qrels_path = folder / "qrels" / f"{split}.tsv"
    unknown = unknown_judgement(qrels, queries, corpus)
    if unknown and unknown[1] is None:
        raise ValueError(f"{qrels_path}: query id {unknown[0]!r} is not in {folder / QUERIES_FILE}.")
    if unknown:
        raise ValueError(f"{qrels_path}: document id {unknown[1]!r} (query {unknown[0]!r}) is not in the corpus.")
    return BeirData(corpus=corpus, queries={q: queries[q] for q in qrels}, qrels=qrels)


def write_beir(
    folder: str | Path,
    corpus: Mapping[str, Mapping[str, str]],
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    split: str = "test",
) -> Path:
    """Write a BEIR-style folder (UTF-8, one JSON object per line, stable order); returns the folder."""
    folder = Path(folder)
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    _write_jsonl(
        folder / CORPUS_FILE,
        ({"_id": i, "title": d.get("title", ""), "text": d["text"]} for i, d in corpus.items()),
    )
    _write_jsonl(folder / QUERIES_FILE, ({"_id": i, "text": t} for i, t in queries.items()))
    with (folder / "qrels" / f"{split}.tsv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(QRELS_HEADER)
        for query_id, judged in qrels.items():
            for doc_id, score in judged.items():
                writer.writerow((query_id, doc_id, int(score)))
    return folder


def _write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
