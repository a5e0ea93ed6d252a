"""Smaller guarantees of issue 26: the user's umask, `verify --texts` on an empty file, `build` of a path that
does not exist, no leftovers from a failed `eval`, `analyze` or `report --out`. Each fails on main."""

from __future__ import annotations

import pytest

from hf_dumpembed.cli import main


def test_verify_with_an_empty_texts_file_is_an_error(bert_dump_model, tmp_path):
    """Fails on main: an empty --texts silently checked the built-in samples."""
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(SystemExit, match="holds no text"):
        main(["verify", str(bert_dump_model), "--texts", str(empty)])
