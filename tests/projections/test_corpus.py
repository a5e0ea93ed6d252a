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


def test_the_fit_corpus_is_found_beside_the_folder_from_any_working_directory(bert_dump_model, tmp_path,
                                                                              monkeypatch):
    """A corpus outside the working directory is recorded by name only (no local path in config.json) and by its
    path from the fitted folder, so export-onnx's default calibration finds it from anywhere; once it is gone, the
    refusal says once what to pass."""
    import json

    from hf_dumpembed.projections.corpus import recorded_fit_corpus
    from hf_dumpembed.projections.fit import FitOptions, fit_projection
    from tests.support.fit_fixtures import write_corpus

    for name in ("project/data", "fitted-here", "elsewhere"):
        (tmp_path / name).mkdir(parents=True)
    corpus = write_corpus(tmp_path / "project" / "data" / "corpus.txt")
    monkeypatch.chdir(tmp_path / "fitted-here")
    folder = fit_projection(bert_dump_model, tmp_path / "project" / "runs" / "model",
                            FitOptions(method="pca", dim=8, progress=False, plots=False), corpus=corpus)
    record = json.loads((folder / "config.json").read_text())["projection_info"]["corpus"]
    assert record["path"] == "corpus.txt" and record["folder_path"] == "../../data/corpus.txt"
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert recorded_fit_corpus(folder).sha256 == record["sha256"]
    corpus.rename(tmp_path / "moved.txt")
    with pytest.raises(SystemExit) as refusal:
        main(["export-onnx", str(folder), str(tmp_path / "onnx"), "--int8", "--openvino"])
    message = str(refusal.value)
    assert "corpus.txt" in message and "which is not here" in message and message.count("--calibration PATH") == 1
    assert "--int8-dynamic" in message and not (tmp_path / "onnx").exists()
