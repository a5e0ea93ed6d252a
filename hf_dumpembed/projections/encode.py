"""Encode a corpus with a DumpEmbed model into streaming statistics (sharded across torch.distributed ranks)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerBase

from .maths.statistics import StreamingStats, as_float_array

logger = logging.getLogger(__name__)


def rank_and_world() -> tuple[int, int]:
    """This process's rank and the world size under ``torch.distributed``; (0, 1) outside it."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def iter_pooled(model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, texts: list[str], batch_size: int = 32,
                progress: bool = True, desc: str = "encoding") -> Iterator[np.ndarray]:
    """Yield the model's pooled (pre-projection) embeddings in batches, longest texts first (less padding)."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    model.eval()
    with torch.inference_mode(), tqdm(total=len(texts), desc=desc, unit="text", disable=not progress) as bar:
        for start in range(0, len(order), batch_size):
            chunk = [texts[i] for i in order[start : start + batch_size]]
            batch = tokenizer(chunk, padding=True, truncation=True, return_tensors="pt")
            batch = {key: value.to(model.device) for key, value in batch.items()}
            pooled = model(**batch).pooled_embedding.float().cpu().numpy()
            bar.update(len(chunk))
            yield pooled


def encode_corpus(model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, texts: list[str],
                  batch_size: int = 32, progress: bool = True,
                  keep: np.ndarray | None = None) -> tuple[StreamingStats, np.ndarray | None]:
    """n, Σx, Σxxᵀ of the model's pooled embeddings of ``texts``, and the pooled vectors of the texts at indices
    ``keep`` (rows in ``keep`` order; None when ``keep`` is None), from the same pass.

    Under ``torch.distributed`` (e.g. torchrun) each rank encodes every world-th text; the statistics are
    all-reduced and the kept vectors gathered, so every rank returns those of the whole corpus.
    """
    rank, world = rank_and_world()
    shard = texts[rank::world]
    stats = StreamingStats(model.config.embedding_size)
    wanted = {} if keep is None else {int(i) // world: int(i) for i in keep if int(i) % world == rank}
    kept: dict[int, np.ndarray] = {}
    order = sorted(range(len(shard)), key=lambda i: -len(shard[i]))  # iter_pooled's order
    position = 0
    for pooled in iter_pooled(model, tokenizer, shard, batch_size, progress and rank == 0):
        stats.update(as_float_array(pooled))
        for row, local in enumerate(order[position : position + len(pooled)]):
            if local in wanted:
                kept[wanted[local]] = pooled[row].astype(np.float32)
        position += len(pooled)
    if world > 1:
        stats.all_reduce()
        if keep is not None:
            import torch.distributed as dist

            gathered: list[dict[int, np.ndarray]] = [{} for _ in range(world)]
            dist.all_gather_object(gathered, kept)
            kept = {index: vector for part in gathered for index, vector in part.items()}
    if keep is None:
        return stats, None
    return stats, np.stack([kept[int(i)] for i in keep]) if len(keep) else np.zeros((0, stats.dim), np.float32)


def encode_texts(model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, texts: list[str],
                 batch_size: int = 32, progress: bool = True, desc: str = "encoding") -> np.ndarray:
    """The pooled vectors of ``texts`` in input order (every rank encodes all of them)."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    chunks = list(iter_pooled(model, tokenizer, texts, batch_size, progress, desc))
    if not chunks:
        return np.zeros((0, model.config.embedding_size), dtype=np.float32)
    in_order = np.concatenate(chunks)
    vectors = np.empty_like(in_order)
    vectors[order] = in_order
    return vectors
