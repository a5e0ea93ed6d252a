"""Texts to analyse: a ``.txt`` file (one per line), a ``.jsonl`` file (``text`` field) or a BEIR folder (its
documents' text), first ``max_texts`` in file order."""

from __future__ import annotations

from pathlib import Path

from ..data.beir import document_text, is_beir_folder, load_corpus, read_jsonl
from ..data.text_input import read_text_lines


def read_texts(path: str | Path, max_texts: int | None = None) -> list[str]:
    """Non-empty texts from ``path``; a clear error when there are none or the format is unknown."""
    path = Path(path)
    if is_beir_folder(path):
        texts = [document_text(d) for d in load_corpus(path).values()]
    elif path.is_file() and path.suffix == ".jsonl":
        texts = []
        for line, row in read_jsonl(path):
            if not isinstance(row.get("text"), str):
                raise ValueError(f'{path}:{line}: expected a string "text" field.')
            texts.append(row["text"])
    elif path.is_file():
        texts = read_text_lines(path)
    else:
        raise FileNotFoundError(f"{path} is neither a text/.jsonl file nor a BEIR folder (with corpus.jsonl).")
    texts = [t.strip() for t in texts if t.strip()]
    if not texts:
        raise ValueError(f"{path} holds no non-empty texts.")
    return texts[:max_texts] if max_texts else texts
