"""Rules several modules share, each held in one place: "is this a decoder" and "can stock modules export it"."""

from __future__ import annotations

from hf_dumpembed.model.exportable import stock_export_blocker


def test_stock_export_blocker_names_what_stock_modules_cannot_express() -> None:
    assert stock_export_blocker({"pooling": "cls"}) is None
    assert stock_export_blocker({"pooling": "last", "prompt_mode": None}) is None
    assert "mean over every token except the [DUMP] slots" in stock_export_blocker({"pooling": "mean_no_dump"})
    assert "'prompteol' prompt" in stock_export_blocker({"pooling": "last", "prompt_mode": "prompteol"})
