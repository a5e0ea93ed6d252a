"""Which DumpEmbed folder a stock export came from: a content hash written at export, checked before a card is
rendered from that folder (so that `card EXPORT --source OTHER` cannot describe another model)."""

from __future__ import annotations

import json
from pathlib import Path

from .._utils.hashing import files_sha256

EXPORT_RECORD = "dumpembed_export.json"
# What makes a DumpEmbed folder's vectors: its config, weights and tokenizer.
SOURCE_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                "special_tokens_map.json")


def source_sha256(folder: str | Path) -> str:
    """Content address of a DumpEmbed folder: sha256 over its config, weights (every shard) and tokenizer files."""
    folder = Path(folder)
    return files_sha256(folder, [*SOURCE_FILES, *sorted(p.name for p in folder.glob("model-*.safetensors"))])


def write_export_record(export_dir: str | Path, source_dir: str | Path) -> None:
    """Record ``source_dir`` (by name and content hash) in a stock export."""
    record = {"format": 1, "source": {"name": Path(source_dir).resolve().name,
                                      "sha256": source_sha256(source_dir)}}
    (Path(export_dir) / EXPORT_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def check_export_source(export_dir: str | Path, source_dir: str | Path) -> None:
    """Raise ValueError unless ``export_dir`` is a stock export recorded as made from ``source_dir``'s content."""
    export_dir, record_path = Path(export_dir), Path(export_dir) / EXPORT_RECORD
    try:
        recorded = json.loads(record_path.read_text(encoding="utf-8"))["source"]["sha256"]
    except FileNotFoundError:
        raise ValueError(
            f"{export_dir} has no {EXPORT_RECORD}, so it is not known to be a stock export of {source_dir} (a plain "
            "sentence-transformers folder, or an export made before exports recorded their source). Re-export it: "
            f"hf-dumpembed export-st {source_dir} {export_dir} --overwrite"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{record_path} is unreadable ({error}); re-export the folder with hf-dumpembed export-st."
                         ) from None
    actual = source_sha256(source_dir)
    if recorded != actual:
        raise ValueError(
            f"{export_dir} was not exported from {source_dir}: the export records a source with content sha256 "
            f"{recorded[:12]}…, {source_dir} has {actual[:12]}… (another model, or the folder changed since the "
            "export). Pass the folder it was exported from, or re-export."
        )
