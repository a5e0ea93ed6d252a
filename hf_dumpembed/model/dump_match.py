"""Fit only the [DUMP] rows so that a K > 0 model reproduces its K = 0 source on unlabeled text ("match" init).

A fresh [DUMP] prefix takes attention from the text tokens and costs a finished embedding model a few percent before
any training (BENCHMARKS.md, "Untrained [DUMP] models"). Here the backbone is frozen and only the K rows, from
wherever the init put them, are fitted with Adam so that every text token's final-layer state equals the source's
(K = 0) state of the same token: mean squared error over the text tokens, the [DUMP] slots left out.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..remote.modeling_dumpembed import DumpEmbedModel

DEFAULT_MATCH_STEPS = 60
DEFAULT_MATCH_MAX_LENGTH = 128
MIN_MATCH_TEXTS = 16


@dataclass(frozen=True)
class MatchResult:
    """Loss (mean squared state difference per dimension) at the first and the last step."""

    first_loss: float
    last_loss: float
    steps: int


def dump_slots(model: DumpEmbedModel, attention_mask: torch.Tensor) -> torch.Tensor:
    """(B, L) bool: the K [DUMP] slots of every row, by the model's own position rule
    (`DumpEmbedModel.without_dump_positions`: first real token + ``dump_token_offset``, K slots)."""
    return attention_mask.bool() & ~model.without_dump_positions(attention_mask).bool()


def text_states_without_dump(states: torch.Tensor, slots: torch.Tensor) -> torch.Tensor:
    """(B, L − K, H) states with the K slots marked in ``slots`` removed from every row (each row holds exactly K)."""
    batch, length, hidden = states.shape
    count = int(slots[0].sum())
    return states[~slots].view(batch, length - count, hidden)


def match_dump_rows(
    model: DumpEmbedModel,
    tokenizer: PreTrainedTokenizerBase,
    source: PreTrainedModel,
    source_tokenizer: PreTrainedTokenizerBase,
    texts: Sequence[str],
    steps: int = DEFAULT_MATCH_STEPS,
    learning_rate: float = 1e-2,
    batch_size: int = 16,
    max_length: int = DEFAULT_MATCH_MAX_LENGTH,
    seed: int = 0,
) -> MatchResult:
    """Fit the K [DUMP] embedding rows of ``model`` (its tokenizer prepends them) so that its backbone's
    text-token states match ``source`` (the same backbone with K = 0) on batches sampled from ``texts``.

    ``max_length`` caps the text tokens (the [DUMP] tokens come on top). Only the K rows change (in place); every
    other parameter is left as it was.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1; got {steps}.")
    texts = [t for t in texts if t and t.strip()]
    if len(texts) < MIN_MATCH_TEXTS:
        raise ValueError(f"matching the [DUMP] rows needs at least {MIN_MATCH_TEXTS} non-empty texts; got "
                         f"{len(texts)}. Give more text (--match-texts) or --match-steps 0.")
    if tokenizer.padding_side != source_tokenizer.padding_side:
        raise ValueError("the model's and the source's tokenizers must pad on the same side.")
    backbone = model.backbone
    dump_ids = list(model.config.dump_token_ids)
    weight = backbone.get_input_embeddings().weight
    rows = weight[dump_ids].detach().clone().float().requires_grad_(True)
    optimizer = torch.optim.Adam([rows], lr=learning_rate)
    trainable = [p for p in backbone.parameters() if p.requires_grad]
    was_training = backbone.training, source.training
    backbone.eval()
    source.eval()
    rng = random.Random(seed)
    losses: list[float] = []
    device = weight.device
    try:
        for p in trainable:
            p.requires_grad_(False)
        for _ in tqdm(range(steps), desc="matching [DUMP] rows to K=0", unit="step"):
            batch = rng.sample(texts, min(batch_size, len(texts)))
            plain = source_tokenizer(batch, padding=True, truncation=True, max_length=max_length,
                                     return_tensors="pt").to(device)
            prefixed = tokenizer(batch, padding=True, truncation=True, max_length=max_length + len(dump_ids),
                                 return_tensors="pt").to(device)
            with torch.no_grad():
                target = source(**plain).last_hidden_state.float()
            slots = dump_slots(model, prefixed["attention_mask"])
            row_of = torch.cumsum(slots.long(), dim=1) - 1  # the j-th slot of each row takes rows[j]
            embeddings = backbone.get_input_embeddings()(prefixed["input_ids"])
            # A one-hot product, not rows[row_of]: the backward of advanced indexing accumulates with index_put_,
            # whose order over CPU threads varies run to run; a matrix product's backward does not.
            choose = torch.nn.functional.one_hot(row_of.clamp_min(0), len(dump_ids)).to(embeddings.dtype)
            embeddings = torch.where(slots[..., None], choose @ rows.to(embeddings.dtype), embeddings)
            states = backbone(inputs_embeds=embeddings, attention_mask=prefixed["attention_mask"]).last_hidden_state
            states = text_states_without_dump(states.float(), slots)
            mask = plain["attention_mask"][..., None].float()
            loss = (((states - target) ** 2) * mask).sum() / mask.sum() / target.shape[-1]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    finally:
        for p in trainable:
            p.requires_grad_(True)
        backbone.train(was_training[0])
        source.train(was_training[1])
    with torch.no_grad():
        weight[dump_ids] = rows.detach().to(weight.dtype)
    return MatchResult(first_loss=losses[0], last_loss=losses[-1], steps=steps)
