"""BEIR-style folders: round trip, and a clear error for every malformed input."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_dumpembed.data.beir import document_text, is_beir_folder, load_beir, write_beir

CORPUS = {"d1": {"title": "Paris", "text": "Capital of France."}, "d2": {"title": "", "text": "A river."}}
QUERIES = {"q1": "capital of france?", "q2": "what flows?"}
QRELS = {"q1": {"d1": 1}, "q2": {"d2": 1}}


def test_round_trip(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "task", CORPUS, QUERIES, QRELS)
    assert is_beir_folder(folder) and not is_beir_folder(tmp_path)
    data = load_beir(folder)
    assert data.corpus == CORPUS and data.queries == QUERIES and data.qrels == QRELS
    assert data.document_text("d1") == "Paris Capital of France."
    assert document_text(CORPUS["d2"]) == "A river."


def test_missing_qrels_names_the_file(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "task", CORPUS, QUERIES, QRELS)
    with pytest.raises(FileNotFoundError, match=r"qrels/dev\.tsv"):
        load_beir(folder, split="dev")


def test_qrels_document_absent_from_corpus(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "task", CORPUS, QUERIES, {"q1": {"d9": 1}})
    with pytest.raises(ValueError, match="'d9'.*not in the corpus"):
        load_beir(folder)


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "task", CORPUS, QUERIES, QRELS)
    with (folder / "corpus.jsonl").open("a") as handle:
        handle.write("{not json\n")
    with pytest.raises(ValueError, match=r"corpus\.jsonl:3: not valid JSON"):
        load_beir(folder)


def test_bad_score_and_duplicate_id(tmp_path: Path) -> None:
    folder = write_beir(tmp_path / "task", CORPUS, QUERIES, QRELS)
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\thigh\n")
    with pytest.raises(ValueError, match=r"test\.tsv:2: score 'high'"):
        load_beir(folder)
    folder = write_beir(tmp_path / "dup", CORPUS, QUERIES, QRELS)
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n')
    with pytest.raises(ValueError, match=r"corpus\.jsonl:2: duplicate document id 'd1'"):
        load_beir(folder)


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("queries.jsonl", '{"_id": "q1", "text": "capital of france?"}\n{"_id": "q2", "text": "what flows?"}\n'
                          '{"_id": "q1", "text": "capital of spain?"}\n',
         r"queries\.jsonl:3: duplicate query id 'q1' \(first on line 1\)"),
        ("qrels/test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq1\td1\t0\n",
         r"test\.tsv:4: the pair query 'q1', document 'd1' is judged again \(first on line 2, score 1; here 0\)"),
        ("queries.jsonl", '{"_id": "q1", "text": "capital of france?"}\n{"_id": "q2", "text": "  "}\n',
         r"queries\.jsonl:2: query 'q2' has an empty id or text"),
        ("corpus.jsonl",
         '{"_id": "d1", "title": "Paris", "text": "Capital."}\n{"_id": "d2", "title": "", "text": ""}\n',
         r"corpus\.jsonl:2: document 'd2' has an empty text and no title"),
    ],
)
def test_data_that_contradicts_itself_is_refused_naming_the_line(tmp_path: Path, file: str, content: str,
                                                                  message: str) -> None:
    """Fails on main (the last duplicate silently won: nDCG 0.876 -> 0.848; empty texts were scored): a duplicate
    query id, a pair judged twice and an empty text are errors naming the file and line."""
    folder = write_beir(tmp_path / "task", CORPUS, QUERIES, QRELS)
    (folder / file).write_text(content)
    with pytest.raises(ValueError, match=message):
        load_beir(folder)
