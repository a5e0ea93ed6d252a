"""The one check every command that needs a DumpEmbed model folder makes first, with one clear message."""

from __future__ import annotations

import json
from pathlib import Path


def require_dumpembed_folder(folder: str | Path) -> Path:
    """``folder`` as a Path when it is a DumpEmbed model folder; ValueError saying what it is otherwise."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder: give a DumpEmbed model folder (`hf-dumpembed build`).")
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise ValueError(f"{folder} is not a DumpEmbed model folder (no config.json); build one with "
                         "`hf-dumpembed build`.")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{folder} is not a DumpEmbed model folder: its config.json is not valid JSON "
                         f"({error}).") from None
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if model_type != "dumpembed":
        what = " (a stock sentence-transformers folder)" if (folder / "modules.json").exists() else ""
        raise ValueError(f"{folder} is not a DumpEmbed model folder{what}: config.json model_type is {model_type!r}, "
                         "not 'dumpembed'. Build one with `hf-dumpembed build BACKBONE OUT`.")
    return folder
