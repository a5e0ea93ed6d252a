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
    require_readable_weights(folder)
    return folder


class DamagedWeightsError(ValueError):
    """A safetensors file whose header does not describe its bytes (truncated, overwritten, not safetensors)."""


def require_readable_safetensors(path: Path) -> None:
    """DamagedWeightsError naming ``path`` when safetensors cannot read its header (nothing is loaded)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), "numpy"):
            pass
    except (SafetensorError, OSError) as error:
        raise DamagedWeightsError(f"{path} is damaged ({error}): rebuild or re-download it.") from None


def require_readable_weights(folder: Path) -> None:
    """`require_readable_safetensors` for each top-level safetensors file of ``folder``, before anything loads."""
    for weights in sorted(folder.glob("*.safetensors")):
        require_readable_safetensors(weights)
