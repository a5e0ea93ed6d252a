"""Fit only the [DUMP] rows so that a K > 0 model reproduces its K = 0 source on unlabeled text ("match" init).

A fresh [DUMP] prefix takes attention from the text tokens, so even the least harmful copy-init costs a finished
embedding model a few percent before any training (BENCHMARKS.md, "Untrained [DUMP] models"). Here the backbone is
frozen and the K embedding rows alone are fitted, with Adam, to make the final-layer state of every text token
equal the source's (K = 0) state of the same token: mean squared error over the text tokens, the [DUMP] slots left
out. Nothing but the K rows changes, so the saved folder is the same format and the source's own weights are
untouched; the rows start wherever the chosen init put them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

DEFAULT_MATCH_STEPS = 60
DEFAULT_MATCH_LR = 1e-2
DEFAULT_MATCH_BATCH = 16
DEFAULT_MATCH_MAX_LENGTH = 128
MIN_MATCH_TEXTS = 16


@dataclass(frozen=True)
class MatchResult:
    """Loss (mean squared state difference per dimension) at the first and the last step."""

    first_loss: float
    last_loss: float
    steps: int


def text_states_without_dump(states: torch.Tensor, input_ids: torch.Tensor, dump_ids: Sequence[int]) -> torch.Tensor:
    """(B, L − K, H) states with the K [DUMP] positions of every row removed (every row holds exactly K)."""
    keep = ~torch.isin(input_ids, torch.tensor(list(dump_ids), device=input_ids.device))
    batch, length, hidden = states.shape
    return states[keep].view(batch, length - len(dump_ids), hidden)


def match_dump_rows(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    source: PreTrainedModel,
    source_tokenizer: PreTrainedTokenizerBase,
    dump_ids: Sequence[int],
    texts: Sequence[str],
    steps: int = DEFAULT_MATCH_STEPS,
    learning_rate: float = DEFAULT_MATCH_LR,
    batch_size: int = DEFAULT_MATCH_BATCH,
    max_length: int = DEFAULT_MATCH_MAX_LENGTH,
    seed: int = 0,
) -> MatchResult:
    """Fit the embedding rows ``dump_ids`` of ``model`` (a backbone whose tokenizer prepends the K [DUMP] tokens)
    so its text-token states match ``source`` (the same backbone with K = 0) on batches sampled from ``texts``.

    Only those rows change (in place); every other parameter of ``model`` is left as it was.
    """
    if steps < 1:
        raise ValueError(f"steps must be at least 1; got {steps}.")
    texts = [t for t in texts if t and t.strip()]
    if len(texts) < MIN_MATCH_TEXTS:
        raise ValueError(f"matching the [DUMP] rows needs at least {MIN_MATCH_TEXTS} non-empty texts; got "
                         f"{len(texts)}. Give more text (--match-texts) or --match-steps 0.")
    if tokenizer.padding_side != source_tokenizer.padding_side:
        raise ValueError("the model's and the source's tokenizers must pad on the same side.")
    dump_ids = list(dump_ids)
    weight = model.get_input_embeddings().weight
    rows = weight[dump_ids].detach().clone().float().requires_grad_(True)
    optimizer = torch.optim.Adam([rows], lr=learning_rate)
    trainable = [p for p in model.parameters() if p.requires_grad]
    was_training = model.training, source.training
    model.eval()
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
            embeddings = model.get_input_embeddings()(prefixed["input_ids"])
            is_dump = torch.isin(prefixed["input_ids"], torch.tensor(dump_ids, device=device))
            row_of = torch.cumsum(is_dump.long(), dim=1) - 1  # the j-th [DUMP] of each row takes rows[j]
            embeddings = torch.where(is_dump[..., None], rows.to(embeddings.dtype)[row_of.clamp_min(0)], embeddings)
            states = model(inputs_embeds=embeddings, attention_mask=prefixed["attention_mask"]).last_hidden_state
            states = text_states_without_dump(states.float(), prefixed["input_ids"], dump_ids)
            mask = plain["attention_mask"][..., None].float()
            loss = (((states - target) ** 2) * mask).sum() / mask.sum() / target.shape[-1]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    finally:
        for p in trainable:
            p.requires_grad_(True)
        model.train(was_training[0])
        source.train(was_training[1])
    with torch.no_grad():
        weight[dump_ids] = rows.detach().to(weight.dtype)
    return MatchResult(first_loss=losses[0], last_loss=losses[-1], steps=steps)
