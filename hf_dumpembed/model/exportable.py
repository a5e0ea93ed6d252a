"""Which DumpEmbed folders stock sentence-transformers modules can reproduce exactly: the rule the export, the
card and the quickstart share."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..remote.configuration_dumpembed import POOLING_DESCRIPTIONS, ST_POOLING_MODES

# DumpEmbed pooling -> sentence-transformers Pooling mode, for the modes stock Pooling computes exactly.
ST_POOLING = {ours: st for ours, st in ST_POOLING_MODES.items() if st is not None}


def stock_export_blocker(config: Mapping[str, Any]) -> str | None:
    """What in a folder's ``config.json`` stock modules cannot express, as the end of a sentence starting with
    "This model"; None when the folder exports."""
    if config.get("prompt_mode") is not None:
        return (f"composes a {config['prompt_mode']!r} prompt inside the model (a data-dependent rewrite of the token "
                "ids)")
    pooling = config.get("pooling", "cls")
    if pooling not in ST_POOLING:
        return f"pools with the {POOLING_DESCRIPTIONS[pooling]}"
    return None


def stock_exportable(model_dir: str | Path) -> bool:
    """Whether stock sentence-transformers modules can reproduce this folder exactly (see `export_stock_st`)."""
    return stock_export_blocker(json.loads((Path(model_dir) / "config.json").read_text())) is None
