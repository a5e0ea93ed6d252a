"""Every parameter checked at the boundary: K that leaves no room for text, commands given a folder that is not a
DumpEmbed model, non-UTF-8 input naming file and line, no absolute local paths in public artefacts, and property
tests (hypothesis) of the CLI's argument validation and the jsonl / BEIR readers."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hf_dumpembed.data.beir import read_jsonl

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)


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
