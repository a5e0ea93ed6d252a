"""Checksums and the ``manifest.json`` written next to every built collection."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._utils.hashing import sha256_file

MANIFEST_FILE = "manifest.json"


@dataclass(frozen=True)
class DatasetSummary:
    """What one builder wrote: counts and the checksum of each data file (and of them all together)."""

    name: str
    folder: Path
    split: str
    num_documents: int
    num_queries: int
    num_judgements: int
    files: dict[str, str] = field(default_factory=dict)

    @property
    def sha256(self) -> str:
        """One checksum over the data files (their names and sha256s, in name order)."""
        text = "\n".join(f"{name} {digest}" for name, digest in sorted(self.files.items()))
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> str:
        return (
            f"{self.name:<16} {self.split:<5} docs {self.num_documents:>6}  queries {self.num_queries:>5}  "
            f"qrels {self.num_judgements:>5}  sha256 {self.sha256}"
        )


def write_manifest(
    name: str,
    folder: Path,
    split: str,
    counts: Mapping[str, int],
    source: Mapping[str, Any],
) -> DatasetSummary:
    """Hash the data files of ``folder`` and write ``manifest.json``; returns the summary."""
    files = {
        str(path.relative_to(folder)): sha256_file(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != MANIFEST_FILE
    }
    summary = DatasetSummary(
        name=name,
        folder=folder,
        split=split,
        num_documents=counts["documents"],
        num_queries=counts["queries"],
        num_judgements=counts["judgements"],
        files=files,
    )
    manifest = {
        "name": name,
        "split": split,
        "counts": dict(counts),
        "source": dict(source),
        "files": files,
        "sha256": summary.sha256,
    }
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return summary
