"""`verify --texts`: an empty file is an error, not a check of the built-in samples."""

from __future__ import annotations

import pytest

from hf_dumpembed.cli import main


def test_verify_with_an_empty_texts_file_is_an_error(bert_dump_model, tmp_path):
    """An empty --texts file is an error naming it (the built-in samples are not checked instead)."""
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n")
    with pytest.raises(SystemExit, match="holds no text"):
        main(["verify", str(bert_dump_model), "--texts", str(empty)])
