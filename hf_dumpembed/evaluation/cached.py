"""Retrieval evaluation on stored embeddings: encode a collection once, score several heads on it.

A fitted projection changes only the model's head (pooled state -> output vector), so SpecTemp, PCA, EmbedFilter
and the plain model can be scored from one encoding pass: `apply_head` runs each folder's own `head` on the stored
vectors, exactly what its `forward` computes. Scores come from mteb's metric code (`retrieval_metrics`), and
`save_mteb_result` files them in mteb's results layout so `card --results` and `report` read them like any run.
(``mteb.evaluate`` encodes through every model it evaluates: it cannot score stored vectors.)
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..data.beir import BeirData
from .metrics import retrieval_metrics


@dataclass(frozen=True)
class EncodedCollection:
    """Query and document vectors of one retrieval collection (rows in id order) and the time encoding took."""

    query_ids: list[str]
    document_ids: list[str]
    queries: np.ndarray
    documents: np.ndarray
    seconds: float

    def with_vectors(self, queries: np.ndarray, documents: np.ndarray) -> EncodedCollection:
        """The same collection with other vectors (e.g. after a projection head)."""
        return EncodedCollection(self.query_ids, self.document_ids, queries, documents, self.seconds)

    def scores(self, qrels: dict[str, dict[str, int]]) -> dict[str, float]:
        """mteb's retrieval scores (ndcg_at_10, recall_at_10, mrr_at_10, ...) of ranking documents by cosine."""
        return retrieval_metrics(self.queries, self.documents, self.query_ids, self.document_ids, qrels)

    def save(self, path: str | Path) -> Path:
        """Write the vectors as safetensors (ids and timing in its metadata); atomic."""
        from safetensors.numpy import save_file

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        metadata = {"query_ids": json.dumps(self.query_ids), "document_ids": json.dumps(self.document_ids),
                    "seconds": repr(self.seconds)}
        partial = path.with_name(path.name + ".partial")
        save_file({"queries": np.ascontiguousarray(self.queries, dtype=np.float32),
                   "documents": np.ascontiguousarray(self.documents, dtype=np.float32)}, str(partial), metadata)
        partial.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> EncodedCollection:
        from safetensors import safe_open

        with safe_open(str(path), framework="numpy") as handle:
            metadata = handle.metadata() or {}
            try:
                return cls(json.loads(metadata["query_ids"]), json.loads(metadata["document_ids"]),
                           handle.get_tensor("queries"), handle.get_tensor("documents"), float(metadata["seconds"]))
            except KeyError as error:
                raise ValueError(f"{path} is not a stored collection encoding (no {error} entry); delete it and "
                                 "encode again.") from None


def encode_collection(model: Any, data: BeirData, batch_size: int = 32, progress: bool = True) -> EncodedCollection:
    """Encode queries with ``model.encode_query`` and documents (title + text) with ``model.encode_document``,
    the sentence-transformers calls mteb makes (so a model's query/document prompts apply)."""
    query_ids = list(data.queries)
    document_ids = list(data.corpus)
    started = time.perf_counter()
    queries = model.encode_query([data.queries[q] for q in query_ids], batch_size=batch_size,
                                 convert_to_numpy=True, show_progress_bar=progress)
    documents = model.encode_document([data.document_text(d) for d in document_ids], batch_size=batch_size,
                                      convert_to_numpy=True, show_progress_bar=progress)
    seconds = time.perf_counter() - started
    return EncodedCollection(query_ids, document_ids, np.asarray(queries, dtype=np.float32),
                             np.asarray(documents, dtype=np.float32), seconds)


def load_head(model_dir: str | Path) -> Any:
    """The DumpEmbed model of ``model_dir`` (its head maps stored pooled vectors to output vectors)."""
    import torch

    from ..remote import DumpEmbedModel

    return DumpEmbedModel.from_pretrained(str(model_dir), dtype=torch.float32).eval()


def apply_head(model: Any, vectors: np.ndarray, batch_size: int = 8192) -> np.ndarray:
    """``model.head`` on stored pooled (or unit-length pooled) vectors, in float32 batches."""
    import torch

    out = []
    with torch.inference_mode():
        for start in range(0, len(vectors), batch_size):
            chunk = torch.from_numpy(np.ascontiguousarray(vectors[start : start + batch_size], dtype=np.float32))
            out.append(model.head(chunk).float().numpy())
    return np.concatenate(out) if out else np.zeros((0, model.config.projection_dim or 0), dtype=np.float32)


def check_unprojected(model_dir: str | Path) -> None:
    """Refuse a folder whose output is not its unit-length pooled state (heads of fitted folders expect that)."""
    config = json.loads((Path(model_dir) / "config.json").read_text())
    dense = config.get("dense_layers") or []
    hidden = dense[-1]["out_features"] if dense else (config.get("text_config") or {}).get("hidden_size")
    if config.get("projection_info") or config.get("projection_dim") not in (None, hidden) or not config.get(
            "normalize", True):
        raise ValueError(f"{model_dir} already has a projection (or no L2 normalisation): encode with the folder the "
                         "projection was fitted on, whose output is its unit-length pooled embedding.")


def subsample(data: BeirData, max_queries: int | None, max_documents: int | None, seed: int = 0) -> BeirData:
    """A smaller collection: a seeded sample of judged queries, every document they judge relevant, and seeded
    distractors up to ``max_documents`` (never fewer documents than the kept queries need)."""
    rng = random.Random(seed)
    judged = sorted(q for q, docs in data.qrels.items() if any(s > 0 for s in docs.values()) and q in data.queries)
    kept = sorted(rng.sample(judged, max_queries)) if max_queries is not None and max_queries < len(judged) else judged
    qrels = {q: dict(data.qrels[q]) for q in kept}
    needed = sorted({d for docs in qrels.values() for d in docs})
    others = sorted(set(data.corpus) - set(needed))
    room = len(others) if max_documents is None else max(0, max_documents - len(needed))
    distractors = rng.sample(others, min(room, len(others)))
    documents = sorted(set(needed) | set(distractors))
    return BeirData(corpus={d: data.corpus[d] for d in documents}, queries={q: data.queries[q] for q in kept},
                    qrels=qrels)


def save_mteb_result(results_dir: str | Path, meta: Any, task: Any, split: str, scores: dict[str, float],
                     evaluation_time: float) -> Path:
    """File ``scores`` of mteb ``task`` (e.g. `beir_task`) for the model ``meta`` describes (its ModelMeta, e.g.
    `build_model_meta`) in mteb's results layout, as `hf-dumpembed eval` would; returns the result file."""
    from mteb.cache import ResultCache
    from mteb.results import TaskResult

    main = dict(scores, main_score=scores[task.metadata.main_score])
    result = TaskResult.from_task_results(task, {split: {"default": main}}, evaluation_time=evaluation_time)
    cache = ResultCache(results_dir)
    cache.save_to_cache(result, meta)
    return cache.get_task_result_path(task.metadata.name, meta)
