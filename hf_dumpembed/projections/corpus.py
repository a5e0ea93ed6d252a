"""Read the texts a projection is fitted on: a .jsonl or .txt file, a BEIR folder or a saved HF dataset.

Every reader returns the texts with provenance (path, sha256 of the bytes read, number of texts), which the
fit records in the model's ``projection_info["corpus"]``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .._utils.hashing import update_with_file
from .._utils.public_paths import public_path
from ..data.beir import document_text, is_beir_folder, read_jsonl
from ..data.text_input import read_text_lines
from ..model.projection_record import CorpusRecord, ProjectionInfo

JSONL_TEXT_FIELDS = ("text", "sentence", "content", "document", "passage")


@dataclass(frozen=True)
class Corpus:
    """Texts to fit on, and where they came from."""

    texts: list[str]
    path: str
    sha256: str
    kind: str
    num_source_texts: int

    def record(self) -> CorpusRecord:
        """``projection_info["corpus"]``: path, sha256 of the source, texts fitted on (and the sample, if any)."""
        sampled = self.num_source_texts if len(self.texts) < self.num_source_texts else None
        return CorpusRecord(path=public_path(self.path), name=Path(self.path).name, sha256=self.sha256,
                            num_texts=len(self.texts), sampled_from=sampled)

    def provenance(self) -> dict[str, object]:
        """`record` as a dict."""
        return self.record().to_dict()


def sha256_files(paths: list[Path], root: Path | None = None) -> str:
    """sha256 of one file's bytes; for several files, of their relative names and bytes in sorted order."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        if len(paths) > 1:
            digest.update(str(path.relative_to(root) if root else path.name).encode() + b"\0")
        update_with_file(digest, path)
    return digest.hexdigest()


def _jsonl_text(row: dict, path: Path, line: int) -> str:
    if "title" in row or ("text" in row and "_id" in row):
        return document_text(row)
    for name in JSONL_TEXT_FIELDS:
        if isinstance(row.get(name), str):
            return row[name]
    raise ValueError(f"{path}:{line}: no text field; expected one of {JSONL_TEXT_FIELDS} (or BEIR title/text).")


def _read_jsonl_file(path: Path) -> list[str]:
    return [_jsonl_text(row, path, line) for line, row in read_jsonl(path)]


def _read_hf_dataset(path: Path, text_column: str | None) -> list[str]:
    from datasets import DatasetDict, load_from_disk

    dataset = load_from_disk(str(path))
    if isinstance(dataset, DatasetDict):
        split = "train" if "train" in dataset else next(iter(dataset))
        dataset = dataset[split]
    columns = dataset.column_names
    column = text_column or next((c for c in JSONL_TEXT_FIELDS if c in columns), None)
    if column not in columns:
        raise ValueError(
            f"{path}: saved dataset has columns {columns}; none of {JSONL_TEXT_FIELDS} — pass text_column "
            "(--text-column) to name the text column."
        )
    return [str(t) for t in dataset[column]]


def is_hf_dataset_folder(path: Path) -> bool:
    return path.is_dir() and ((path / "dataset_info.json").exists() or (path / "dataset_dict.json").exists())


def read_corpus(path: str | Path, text_column: str | None = None, max_texts: int | None = None,
                seed: int = 0) -> Corpus:
    """Texts from ``path``; blank texts are dropped. ``max_texts`` keeps a seeded random sample (the authors'
    code samples up to 1M rows); the sha256 is always that of the whole source."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"corpus {path} does not exist; give a .jsonl/.txt file, a BEIR folder or a "
                                "dataset saved with datasets' save_to_disk.")
    if path.is_dir() and is_beir_folder(path):
        files, kind = [path / "corpus.jsonl"], "beir"
        texts = _read_jsonl_file(files[0])
    elif is_hf_dataset_folder(path):
        files, kind = sorted(p for p in path.rglob("*") if p.is_file()), "hf-dataset"
        texts = _read_hf_dataset(path, text_column)
    elif path.is_file() and path.suffix == ".jsonl":
        files, kind = [path], "jsonl"
        texts = _read_jsonl_file(path)
    elif path.is_file() and path.suffix == ".txt":
        files, kind = [path], "txt"
        texts = read_text_lines(path)
    else:
        raise ValueError(
            f"cannot read a corpus from {path}: expected a .jsonl file (one object with a 'text' field per line), "
            "a .txt file (one text per line), a BEIR folder (corpus.jsonl) or a saved HF dataset folder."
        )
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        raise ValueError(f"the corpus {path} holds no non-blank text; nothing to fit on.")
    num_source_texts = len(texts)
    if max_texts is not None:
        if max_texts < 1:
            raise ValueError(f"max_texts must be >= 1; got {max_texts}.")
        if len(texts) > max_texts:
            keep = np.sort(np.random.default_rng(seed).choice(len(texts), size=max_texts, replace=False))
            texts = [texts[i] for i in keep]
    return Corpus(texts=texts, path=str(path), sha256=sha256_files(files, root=path if path.is_dir() else None),
                  kind=kind, num_source_texts=num_source_texts)


# ``projection_info["corpus"]`` key of the corpus's path relative to the fitted folder (kept in the record's extra
# keys), so that a command run from any working directory finds the corpus beside the folder.
FOLDER_PATH_KEY = "folder_path"
TEXTS_HINT = "pass the texts to use explicitly (a .jsonl/.txt file, a BEIR folder or a saved HF dataset)"


def with_folder_path(record: CorpusRecord, corpus_path: str | Path, folder: str | Path) -> CorpusRecord:
    """``record`` with the corpus's path relative to ``folder`` (where the fit writes) under `FOLDER_PATH_KEY`; left
    out where the two share no folder two levels below the root (the path would climb through the machine's layout,
    e.g. from one home folder into another)."""
    corpus, target = Path(corpus_path).resolve(), Path(folder).resolve()
    common = Path(os.path.commonpath([corpus, target]))
    if len(common.parts) < 3:
        return record
    return replace(record, extra={**record.extra, FOLDER_PATH_KEY: Path(os.path.relpath(corpus, target)).as_posix()})


def recorded_fit_corpus(model_dir: str | Path, instead: str = TEXTS_HINT) -> Corpus:
    """The corpus the folder's projection was fitted on, read again and checked against the recorded sha256: found
    by its path relative to the folder (`FOLDER_PATH_KEY`, folders fitted since it is recorded), else by its
    recorded public path (relative to the working directory, then beside each folder above the model folder).

    Raises ValueError ending with ``instead`` (what to pass) when the folder records no corpus, or the file is gone
    or changed.
    """
    import json

    info = ProjectionInfo.from_config(json.loads((Path(model_dir) / "config.json").read_text()))
    recorded = (info.corpus if info is not None else None) or CorpusRecord()
    if not recorded.path:
        raise ValueError(f"{model_dir} records no fit corpus (its projection needs none, or it was never fitted): "
                         f"{instead}.")
    path = Path(recorded.path)
    beside = recorded.extra.get(FOLDER_PATH_KEY)
    candidates = ([Path(model_dir) / beside] if beside else []) + corpus_candidates(path, Path(model_dir))
    found = [candidate for candidate in candidates if candidate.exists()]
    if not found:
        where = f"{Path(model_dir) / beside} (its place beside the folder at fit time), " if beside else ""
        raise ValueError(f"{model_dir} was fitted on {recorded.name or path.name} (sha256 "
                         f"{(recorded.sha256 or '?')[:12]}...), which is not here (looked at {where}{path} from "
                         f"this working directory and beside each folder above {model_dir}): {instead}.")
    for candidate in found:  # the recorded sha256 decides which one it is
        corpus = read_corpus(candidate)
        if not recorded.sha256 or corpus.sha256 == recorded.sha256:
            return corpus
    raise ValueError(f"{found[0]} has changed since {model_dir} was fitted on it (sha256 {corpus.sha256[:12]}..., "
                     f"recorded {recorded.sha256[:12]}...): {instead}.")


def corpus_candidates(recorded: Path, model_dir: Path) -> list[Path]:
    """Where a recorded fit-corpus path may be: as recorded (relative to this working directory), then, for a
    relative path, under each folder above the model folder (the working directory the fit ran in usually holds
    both: ``data/...`` beside ``runs/.../model``)."""
    if recorded.is_absolute():
        return [recorded]
    return [recorded, *(parent / recorded for parent in model_dir.resolve().parents)]
