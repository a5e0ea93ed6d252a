"""Rules several modules share, each held in one place: "is this a decoder" and "can stock modules export it"."""

from __future__ import annotations

from hf_dumpembed.model.exportable import stock_export_blocker


def _build_pooling_choices() -> tuple[str, ...]:
    """The choices of `hf-dumpembed build --pooling`, read from the parser."""
    import argparse

    from hf_dumpembed.cli import build_parser

    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return tuple(next(a for a in commands.choices["build"]._actions if a.dest == "pooling").choices)


def test_every_pooling_list_derives_from_the_remote_config() -> None:
    import typing

    from hf_dumpembed.export.stock_compat import LEGACY_POOLING_FLAGS
    from hf_dumpembed.model.builder import Pooling
    from hf_dumpembed.model.exportable import ST_POOLING
    from hf_dumpembed.model.source_stack import FROM_ST_POOLING
    from hf_dumpembed.remote.configuration_dumpembed import POOLING_DESCRIPTIONS, POOLING_MODES, ST_POOLING_MODES
    from hf_dumpembed.training.config import PoolingChoice

    assert _build_pooling_choices() == ("auto", *POOLING_MODES)
    assert typing.get_args(PoolingChoice) == ("auto", *POOLING_MODES)
    assert tuple(mode.value for mode in Pooling) == POOLING_MODES
    assert set(POOLING_DESCRIPTIONS) == set(POOLING_MODES)
    stock = {st for st in ST_POOLING_MODES.values() if st is not None}
    assert set(ST_POOLING.values()) == stock and set(FROM_ST_POOLING) == stock
    # Every mode stock Pooling computes has a legacy (sentence-transformers 3.x) flag, so every such export ports.
    assert set(LEGACY_POOLING_FLAGS) == stock


def test_a_pooling_mode_without_a_stock_equivalent_is_refused_by_its_own_description(monkeypatch) -> None:
    from hf_dumpembed.remote.configuration_dumpembed import POOLING_DESCRIPTIONS

    monkeypatch.setitem(POOLING_DESCRIPTIONS, "min", "per-dimension minimum")
    assert stock_export_blocker({"pooling": "min"}) == "pools with the per-dimension minimum"
    assert stock_export_blocker({"pooling": "mean_no_dump"}) == (
        "pools with the mean over every token except the [DUMP] slots")


def test_build_help_lists_the_stock_pooling_modes() -> None:
    from hf_dumpembed.commands.model import stock_pooling_modes

    assert stock_pooling_modes() == "cls, last (= lasttoken), mean, max, mean_sqrt_len_tokens and weightedmean"
