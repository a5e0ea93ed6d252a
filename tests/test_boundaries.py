"""Every parameter checked at the boundary: K that leaves no room for text, commands given a folder that is not a
DumpEmbed model, non-UTF-8 input naming file and line, no absolute local paths in public artefacts, and property
tests (hypothesis) of the CLI's argument validation and the jsonl / BEIR readers."""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_dumpembed.cli import build_parser, main
from hf_dumpembed.data.beir import load_beir, load_corpus, load_qrels, read_jsonl, write_beir
from hf_dumpembed.model.builder import MAX_DUMP_TOKENS, BuildOptions, build
from hf_dumpembed.projections.fit import FitOptions
from tests.tiny_models import MAX_POSITIONS

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# --- K and the sequence length ---

def test_build_refuses_a_k_that_leaves_no_room_for_text(tiny_bert, tmp_path):
    with pytest.raises(ValueError, match="leave no room for text"):
        build(tiny_bert, tmp_path / "m", BuildOptions(num_dump_tokens=MAX_POSITIONS - 2))
    assert not (tmp_path / "m").exists()


def test_build_refuses_an_absurd_k_before_loading_anything(tiny_bert, tmp_path):
    with pytest.raises(SystemExit, match="num_dump_tokens must be an integer between 0 and"):
        main(["build", str(tiny_bert), str(tmp_path / "m"), "--dump-tokens", "100000"])
    assert not (tmp_path / "m").exists()


@PROPERTY
@given(k=st.one_of(st.integers(min_value=-10**9, max_value=10**9), st.booleans(), st.floats(), st.text(max_size=3)),
       length=st.one_of(st.none(), st.integers(min_value=-10**6, max_value=10**6)))
def test_build_options_accept_or_refuse_with_value_error(k, length):
    try:
        options = BuildOptions(num_dump_tokens=k, max_seq_length=length)
    except ValueError:
        return
    assert isinstance(options.num_dump_tokens, int) and not isinstance(options.num_dump_tokens, bool)
    assert 0 <= options.num_dump_tokens <= MAX_DUMP_TOKENS
    assert options.max_seq_length is None or options.max_seq_length > options.num_dump_tokens + 2


@PROPERTY
@given(dim=st.one_of(st.none(), st.integers(-5, 10**6), st.floats(), st.booleans()),
       gamma=st.one_of(st.none(), st.floats(allow_nan=True)),
       batch=st.one_of(st.integers(-5, 10**4), st.text(max_size=2)),
       method=st.sampled_from(["spectemp", "pca", "gamma", "truncate", "embedfilter", "bogus"]),
       ratio=st.one_of(st.none(), st.integers(-3, 8)))
def test_fit_options_accept_or_refuse_with_value_error(dim, gamma, batch, method, ratio):
    try:
        options = FitOptions(method=method, dim=dim, gamma=gamma, batch_size=batch, ratio=ratio)
    except ValueError:
        return
    assert options.batch_size >= 1
    assert options.dim is None or (isinstance(options.dim, int) and options.dim >= 1)
    assert options.gamma is None or 0.0 <= options.gamma <= 1.0


@PROPERTY
@given(args=st.lists(st.sampled_from(["--dump-tokens", "-1", "5", "100000", "x", "1e3", "--pooling", "cls", "bad",
                                      "--max-seq-length", "0", "--init", "mean", "--seed", "--overwrite"]),
                     max_size=6))
def test_build_command_line_parses_or_exits_cleanly(args, tmp_path):
    """Any mix of build options either parses into valid BuildOptions or ends in argparse's usage error / a
    ValueError, never in a traceback of another kind."""
    try:
        parsed = build_parser().parse_args(["build", "embedded:encoder", str(tmp_path / "m"), *args])
    except SystemExit as exit_:
        assert exit_.code == 2
        return
    try:
        options = BuildOptions(num_dump_tokens=parsed.dump_tokens, pooling=parsed.pooling, init=parsed.init,
                               max_seq_length=parsed.max_seq_length, seed=parsed.seed)
    except ValueError:
        return
    assert 0 <= options.num_dump_tokens <= MAX_DUMP_TOKENS and options.seed >= 0


# --- commands that need a DumpEmbed folder ---

@pytest.mark.parametrize(
    "argv",
    [
        ["fit", "{plain}", "{out}", "--method", "truncate", "--dim", "8"],
        ["export-st", "{plain}", "{out}"],
        ["verify", "{plain}"],
    ],
)
def test_every_command_says_not_a_dumpembed_model_folder(tiny_bert, tmp_path, argv):
    task = write_beir(tmp_path / "Task", {"d": {"title": "", "text": "x"}}, {"q": "x"}, {"q": {"d": 1}})
    argv = [a.format(plain=tiny_bert, out=tmp_path / "out", task=task) for a in argv]
    with pytest.raises(SystemExit, match="not a DumpEmbed model folder"):
        main(argv)
    assert not (tmp_path / "out").exists()


# --- non-UTF-8 input ---

def test_non_utf8_beir_files_name_file_and_line(tmp_path):
    folder = write_beir(tmp_path / "b", {"d": {"title": "", "text": "x"}}, {"q": "x"}, {"q": {"d": 1}})
    with (folder / "corpus.jsonl").open("ab") as handle:
        handle.write(b'{"_id": "e", "text": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=r"corpus.jsonl:2: not UTF-8 \(byte 0xe9"):
        load_beir(folder)
    (folder / "qrels" / "test.tsv").write_bytes(b"query-id\tcorpus-id\tscore\nq\td\t1\n\xff\td\t1\n")
    with pytest.raises(ValueError, match="test.tsv:3: not UTF-8"):
        load_qrels(folder)


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


def test_non_utf8_training_data_names_file_and_line(tmp_path):
    from hf_dumpembed.training.data import _jsonl_objects

    data = tmp_path / "train.jsonl"
    data.write_bytes(b'{"anchor": "a", "positive": "b"}\n{"anchor": "\xc3(", "positive": "b"}\n')
    with pytest.raises(ValueError, match="train.jsonl:2: not UTF-8"):
        list(_jsonl_objects(data))


# --- jsonl / BEIR readers (properties) ---

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
_FILLED = _TEXT.filter(str.strip)  # BEIR texts must not be empty (an empty one is refused, naming the line)
_ID = st.text(alphabet=string.ascii_letters + string.digits + "-_.", min_size=1, max_size=8)


@PROPERTY
@given(corpus=st.dictionaries(_ID, st.fixed_dictionaries({"title": _TEXT, "text": _FILLED}), min_size=1, max_size=5),
       queries=st.dictionaries(_ID, _FILLED, min_size=1, max_size=4), data=st.data())
def test_beir_round_trip(tmp_path_factory, corpus, queries, data):
    qrels = {q: {data.draw(st.sampled_from(sorted(corpus))): data.draw(st.integers(-2, 3))} for q in queries}
    folder = write_beir(tmp_path_factory.mktemp("beir"), corpus, queries, qrels)
    loaded = load_beir(folder)
    assert loaded.corpus == corpus and loaded.queries == queries and loaded.qrels == qrels
    lines = len((folder / "queries.jsonl").read_bytes().splitlines())
    with (folder / "queries.jsonl").open("ab") as handle:
        handle.write(data.draw(st.sampled_from([b"\xff\n", b'{"_id": "x", "text": "\xc3("}\n', b"\x80abc"])))
    with pytest.raises(ValueError, match=f"queries.jsonl:{lines + 1}: not UTF-8"):
        load_beir(folder)


@PROPERTY
@given(lines=st.lists(st.one_of(st.binary(max_size=30), _TEXT.map(str.encode),
                                st.dictionaries(_TEXT, _TEXT, max_size=3).map(lambda d: json.dumps(d).encode())),
                      max_size=6))
def test_jsonl_reader_returns_objects_or_a_value_error_naming_the_line(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("jsonl") / "x.jsonl"
    path.write_bytes(b"\n".join(line.replace(b"\n", b" ") for line in lines))
    try:
        rows = list(read_jsonl(path))
    except ValueError as error:
        assert str(error).startswith(f"{path}:")
        return
    assert all(isinstance(row, dict) and isinstance(number, int) for number, row in rows)


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


# --- no absolute local paths in public artefacts ---

def test_a_built_folder_names_its_backbone_without_a_local_path(bert_dump_model, tiny_bert):
    text = (bert_dump_model / "config.json").read_text()
    assert str(tiny_bert) not in text
    config = json.loads(text)
    assert config["base_model"] == tiny_bert.name or not Path(config["base_model"]).is_absolute()


def test_push_refuses_a_file_that_names_a_private_path(bert_dump_model, tmp_path):
    from hf_dumpembed.publishing.checks import FolderKind, FolderReport, static_checks
    from tests.card_fixtures import add_training_metadata, copy_model

    folder = copy_model(bert_dump_model, tmp_path / "model")
    add_training_metadata(folder)
    (folder / "training" / "data_files.json").write_text(json.dumps([{"path": str(Path.home() / "data" / "x")}]))
    report = FolderReport(folder=folder, kind=FolderKind.DUMPEMBED)
    static_checks(folder, report)
    assert any("training/data_files.json names a local absolute path" in p for p in report.problems)


def test_the_published_run_config_names_no_absolute_path(tiny_bert, tmp_path):
    from hf_dumpembed.training.config import config_from_dict
    from hf_dumpembed.training.provenance import public_config
    from tests.training_fixtures import run_config, toy_rows, write_jsonl

    data = write_jsonl(tmp_path / "toy.jsonl", toy_rows())
    raw = run_config(tiny_bert, data, tmp_path / "m")
    raw["data"]["mining"] = {"cache_dir": str(tmp_path / "mined")}
    text = json.dumps(public_config(config_from_dict(raw)).to_dict())
    assert str(tmp_path) not in text and str(tiny_bert) not in text
    assert '"cache_dir": "mined"' in text and '"path": "toy.jsonl"' in text
