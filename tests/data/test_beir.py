"""BEIR-style folders: round trip, and a clear error for every malformed input."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_dumpembed.data.beir import (
    document_text,
    is_beir_folder,
    load_beir,
    load_qrels,
    write_beir,
)

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
    """A duplicate query id, a pair judged twice and an empty text are errors naming the file and line."""
    folder = write_beir(tmp_path / "task", CORPUS, QUERIES, QRELS)
    (folder / file).write_text(content)
    with pytest.raises(ValueError, match=message):
        load_beir(folder)


@pytest.mark.parametrize("scores", [(0, 0), (0, -1), (-2, -3)])
def test_qrels_without_a_positive_judgement_are_refused_naming_the_file(tmp_path: Path, scores) -> None:
    """Qrels whose every score is 0 or less judge nothing relevant and are refused, naming the file."""
    qrels = {"q1": {"d1": scores[0]}, "q2": {"d2": scores[1]}}
    folder = write_beir(tmp_path / "task", CORPUS, QUERIES, qrels)
    with pytest.raises(ValueError, match=r"qrels/test\.tsv has no positive judgement \(every score is 0 or less\)"):
        load_qrels(folder)
    with pytest.raises(ValueError, match="give each relevant query-document pair a score above 0"):
        load_beir(folder)
    write_beir(folder, CORPUS, QUERIES, {"q1": {"d1": 0}, "q2": {"d2": 2}})
    assert load_qrels(folder) == {"q1": {"d1": 0}, "q2": {"d2": 2}}  # one positive is enough


# Boundary checks: a bad parameter is refused with a message that names it.


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)

_FILLED = _TEXT.filter(str.strip)  # BEIR texts must not be empty (an empty one is refused, naming the line)

_ID = st.text(alphabet=string.ascii_letters + string.digits + "-_.", min_size=1, max_size=8)


def test_non_utf8_beir_files_name_file_and_line(tmp_path):
    folder = write_beir(tmp_path / "b", {"d": {"title": "", "text": "x"}}, {"q": "x"}, {"q": {"d": 1}})
    with (folder / "corpus.jsonl").open("ab") as handle:
        handle.write(b'{"_id": "e", "text": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=r"corpus.jsonl:2: not UTF-8 \(byte 0xe9"):
        load_beir(folder)
    (folder / "qrels" / "test.tsv").write_bytes(b"query-id\tcorpus-id\tscore\nq\td\t1\n\xff\td\t1\n")
    with pytest.raises(ValueError, match="test.tsv:3: not UTF-8"):
        load_qrels(folder)


@PROPERTY
@given(corpus=st.dictionaries(_ID, st.fixed_dictionaries({"title": _TEXT, "text": _FILLED}), min_size=1, max_size=5),
       queries=st.dictionaries(_ID, _FILLED, min_size=1, max_size=4), data=st.data())
def test_beir_round_trip(tmp_path_factory, corpus, queries, data):
    qrels = {q: {data.draw(st.sampled_from(sorted(corpus))): data.draw(st.integers(-2, 3))} for q in queries}
    folder = write_beir(tmp_path_factory.mktemp("beir"), corpus, queries, qrels)
    if not any(score > 0 for judged in qrels.values() for score in judged.values()):
        with pytest.raises(ValueError, match="has no positive judgement"):
            load_beir(folder)
        return
    loaded = load_beir(folder)
    assert loaded.corpus == corpus and loaded.queries == queries and loaded.qrels == qrels
    lines = len((folder / "queries.jsonl").read_bytes().splitlines())
    with (folder / "queries.jsonl").open("ab") as handle:
        handle.write(data.draw(st.sampled_from([b"\xff\n", b'{"_id": "x", "text": "\xc3("}\n', b"\x80abc"])))
    with pytest.raises(ValueError, match=f"queries.jsonl:{lines + 1}: not UTF-8"):
        load_beir(folder)
