"""Score the quickstart's models side by side: one encoding pass per backbone, each fitted head applied to it."""

from __future__ import annotations

import logging
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..data.beir import BeirData, load_beir
from ..evaluation.cached import (
    EncodedCollection,
    apply_head,
    check_unprojected,
    encode_collection,
    load_head,
    save_mteb_result,
)
from ..evaluation.fingerprint import beir_data_sha256
from ..evaluation.model_meta import content_revision
from ..export.verify import max_abs_diff

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Row:
    """One model of the table. ``encoder`` names the row whose encoding it reuses (itself when it has no fitted
    projection: then its output is its unit-length pooled embedding, which every fitted head takes as input)."""

    name: str
    label: str
    folder: Path
    encoder: str
    model_name: str

    @property
    def reuses_encoding(self) -> bool:
        return self.encoder != self.name


@dataclass
class RowResult:
    """The scores (task -> mteb score dict) of one row, its output dimension and measured encode speed."""

    row: Row
    dim: int
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    texts_per_second: float | None = None

    def ndcg(self, task: str) -> float | None:
        return self.scores.get(task, {}).get("ndcg_at_10")

    def mean_ndcg(self, tasks: list[str]) -> float | None:
        values = [self.ndcg(task) for task in tasks]
        return float(np.mean(values)) if values and all(v is not None for v in values) else None


def _sentence_transformer(folder: Path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), trust_remote_code=True)


def encode_tasks(folder: Path, tasks: dict[str, BeirData], cache_dir: Path, progress: bool = True,
                 batch_size: int = 32) -> dict[str, EncodedCollection]:
    """Each task's queries and documents encoded by ``folder``, stored under
    ``cache_dir/<model revision>/<task>-<data sha256>.safetensors`` and reused from there: the revision hashes the
    config and weights, the data hash every query and document, so a retrained model or edited data is encoded
    afresh."""
    check_unprojected(folder)
    revision = content_revision(folder)[:12]
    encoded: dict[str, EncodedCollection] = {}
    model = None
    for task, data in tasks.items():
        path = cache_dir / revision / f"{task}-{beir_data_sha256(data)[:16]}.safetensors"
        if path.exists():
            cached = EncodedCollection.load(path)
            if cached.query_ids == list(data.queries) and cached.document_ids == list(data.corpus):
                encoded[task] = cached
                continue
            logger.warning("%s does not match %s's data; encoding again", path, task)
        if model is None:
            model = _sentence_transformer(folder)
        logger.info("encoding %s with %s", task, folder)
        encoded[task] = encode_collection(model, data, batch_size, progress)
        encoded[task].save(path)
    return encoded


def score_rows(rows: list[Row], tasks: dict[str, Path], cache_root: Path, results_dir: Path,
               progress: bool = True) -> dict[str, RowResult]:
    """nDCG@10 (and mteb's other retrieval scores) of every row on every task, filed in mteb's results layout."""
    from ..evaluation.local_task import beir_task
    from ..evaluation.model_meta import SubmissionOptions, build_model_meta

    by_name = {row.name: row for row in rows}
    data = {task: load_beir(folder, "test") for task, folder in tasks.items()}
    mteb_tasks = {task: beir_task(folder, "test") for task, folder in tasks.items()}
    results: dict[str, RowResult] = {}
    encodings: dict[str, dict[str, EncodedCollection]] = {}
    for row in rows:
        source = by_name[row.encoder]
        if source.name not in encodings:
            encodings[source.name] = encode_tasks(source.folder, data, cache_root / source.name, progress)
        head = load_head(row.folder) if row.reuses_encoding else None
        meta = build_model_meta(row.folder, SubmissionOptions(name=row.model_name), strict=False, all_dims=False)
        result = None
        for task in tasks:
            encoded = encodings[source.name][task]
            if head is not None:
                encoded = encoded.with_vectors(apply_head(head, encoded.queries), apply_head(head, encoded.documents))
            started = time.perf_counter()
            scores = encoded.scores(data[task].qrels)
            save_mteb_result(results_dir, meta, mteb_tasks[task], "test", scores,
                             encoded.seconds + time.perf_counter() - started)
            result = result or RowResult(row, dim=int(encoded.queries.shape[1]))
            result.scores[task] = scores
        results[row.name] = result
    return results


def measure_speed(rows: list[Row], texts: list[str], repeats: int, progress: bool = True) -> dict[str, float]:
    """Documents per second of each row's folder through sentence-transformers on the same ``texts``: models
    interleaved in a rotating order, median over ``repeats`` (ratios between rows are what this machine can tell)."""
    models = {row.name: _sentence_transformer(row.folder) for row in rows}
    for model in models.values():  # warm-up: first-call allocations are not speed
        model.encode_document(texts[:8], batch_size=32)
    times: dict[str, list[float]] = {name: [] for name in models}
    names = list(models)
    with tqdm(total=repeats * len(names), desc="encode speed", unit="model", disable=not progress) as bar:
        for repeat in range(repeats):
            order = names[repeat % len(names):] + names[: repeat % len(names)]
            for name in order:
                started = time.perf_counter()
                models[name].encode_document(texts, batch_size=32)
                times[name].append(time.perf_counter() - started)
                bar.update(1)
    return {name: len(texts) / statistics.median(values) for name, values in times.items()}


def head_shortcut_error(encoder_folder: Path, fitted_folder: Path, texts: list[str]) -> float:
    """Largest |difference| between the fitted folder's own vectors and its head on the encoder folder's vectors
    (the shortcut `score_rows` takes); ~1e-7 when the fitted folder holds the same backbone."""
    direct = _sentence_transformer(fitted_folder).encode_document(texts, convert_to_numpy=True)
    pooled = _sentence_transformer(encoder_folder).encode_document(texts, convert_to_numpy=True)
    via_head = apply_head(load_head(fitted_folder), np.asarray(pooled, dtype=np.float32))
    return max_abs_diff(direct, via_head)
