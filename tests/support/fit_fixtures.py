"""Fixtures of the projection-fit tests: a small varied text corpus and fitted folders on the tiny Llama."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

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


def unit_pooled_one_by_one(folder: Path, texts: list[str]) -> np.ndarray:
    """The folder's L2-normalised pooled vectors, each text encoded alone (float64, normalised in numpy)."""
    model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True)
    rows = []
    with torch.inference_mode():
        for text in texts:
            rows.append(model(**tokenizer([text], return_tensors="pt")).pooled_embedding[0].double().numpy())
    x = np.stack(rows)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def numpy_spectrum(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """mean, descending eigenvalues and eigenvectors of np.cov(x); each eigenvector's largest-magnitude entry made
    positive (the sign convention the folder documents, so that columns can be compared directly)."""
    values, vectors = np.linalg.eigh(np.cov(x, rowvar=False))
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    signs = np.sign(vectors[np.abs(vectors).argmax(axis=0), np.arange(vectors.shape[1])])
    return x.mean(axis=0), values, vectors * signs
