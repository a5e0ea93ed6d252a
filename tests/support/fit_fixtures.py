"""Fixtures of the projection-fit tests: a small varied text corpus and fitted folders on the tiny Llama."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

from tests.support import tiny_models

SUBJECTS = ["A man", "The girl", "A monkey", "Two men", "The model", "Someone", "A woman", "The dog"]
VERBS = ["is eating", "is riding", "reads", "opens", "ranks", "carries", "plays"]
OBJECTS = ["food.", "a horse.", "the file.", "passages by cosine.", "a baby.", "the violin.", "drums."]


def corpus_texts() -> list[str]:
    """168 distinct short sentences (more than the tiny models' 32 dimensions) plus the tiny-model corpus."""
    made = [f"{s} {v} {o}" for s, v, o in itertools.product(SUBJECTS, VERBS, OBJECTS)][::2]
    return made + sorted(set(tiny_models.CORPUS))


def write_corpus(path: Path) -> Path:
    path.write_text("\n".join(corpus_texts()) + "\n")
    return path


def folder_digest(folder: Path) -> str:
    """sha256 over every file's relative path and bytes: proves a folder was not modified."""
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(file.relative_to(folder).as_posix().encode() + b"\0" + file.read_bytes())
    return digest.hexdigest()
