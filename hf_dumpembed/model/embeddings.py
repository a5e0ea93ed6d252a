"""Grow a backbone's input embedding matrix for the [DUMP] tokens and initialise their rows."""

from __future__ import annotations

from enum import Enum

import torch
from transformers import PreTrainedModel


class DumpInit(str, Enum):
    """How the [DUMP] rows start: vocabulary mean + small noise (default), a copy of [CLS]/BOS, or N(0, 0.02)."""

    MEAN = "mean"
    CLS = "cls"
    NORMAL = "normal"


MEAN_NOISE_SCALE = 0.01  # noise std, relative to the per-dimension std of the vocabulary rows


def grow_embeddings(backbone: PreTrainedModel, num_tokens: int) -> int:
    """Make the input embedding matrix at least ``num_tokens`` rows; never shrink it. Returns the old row count."""
    old_rows = backbone.get_input_embeddings().weight.shape[0]
    if num_tokens > old_rows:
        backbone.resize_token_embeddings(num_tokens, mean_resizing=False)
    return old_rows


@torch.no_grad()
def init_dump_rows(
    backbone: PreTrainedModel,
    dump_ids: list[int],
    init: DumpInit | str = DumpInit.MEAN,
    first_token_id: int | None = None,
    seed: int = 0,
) -> None:
    """Set the embedding rows of ``dump_ids`` in place.

    ``mean``: mean of the other vocabulary rows plus Gaussian noise (std = 1% of the per-dimension std of the
    vocabulary), so the K rows start close to an average token yet distinct from each other.
    ``cls``: copy of the row of ``first_token_id`` ([CLS] or BOS) plus the same small noise.
    ``normal``: N(0, 0.02).
    """
    init = DumpInit(init)
    if not dump_ids:
        return
    weight = backbone.get_input_embeddings().weight
    generator = torch.Generator().manual_seed(seed)
    keep = torch.ones(weight.shape[0], dtype=torch.bool)
    keep[dump_ids] = False
    vocab_rows = weight[keep].double()
    noise_std = MEAN_NOISE_SCALE * vocab_rows.std(dim=0)
    noise = torch.randn(len(dump_ids), weight.shape[1], generator=generator, dtype=torch.float64) * noise_std
    if init is DumpInit.MEAN:
        rows = vocab_rows.mean(dim=0, keepdim=True) + noise
    elif init is DumpInit.CLS:
        if first_token_id is None:
            raise ValueError(
                "init='cls' copies the [CLS]/BOS row, but this tokenizer adds no leading special token; "
                "use init='mean' or init='normal'."
            )
        rows = weight[first_token_id].double()[None, :] + noise
    else:
        rows = torch.randn(len(dump_ids), weight.shape[1], generator=generator, dtype=torch.float64) * 0.02
    weight[dump_ids] = rows.to(weight.dtype)
