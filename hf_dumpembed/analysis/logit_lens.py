"""Logit lens of a decoder's embedding (the EmbedFilter paper's Figure 1): the top vocabulary tokens of the pooled
final-layer state read through the unembedding matrix W_U, before and after EmbedFilter (the state projected on
the middle band of W_U's right singular vectors, edge spectrum removed)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._utils.tables import render_markdown

DEFAULT_RATIO = 2
DEFAULT_TOP_K = 10


@dataclass
class LensRow:
    """Top tokens of one text's embedding before and after the filter."""

    text: str
    before: list[str]
    after: list[str]


@dataclass
class LogitLens:
    """The view for one model."""

    model: str
    ratio: int
    band: tuple[int, int]
    unembedding: str
    rows: list[LensRow]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def markdown(self) -> str:
        """A table: text, top tokens before, top tokens after."""
        title = (f"Logit lens of {self.model}: top tokens of W_U·h (before) and W_U·(B Bᵀ h) (after EmbedFilter, "
                 f"τ = {self.ratio}, band {self.band[0]}..{self.band[1]}; W_U = {self.unembedding})")
        rows = []
        for row in self.rows:
            text = row.text if len(row.text) <= 60 else row.text[:57] + "..."
            rows.append([text.replace("|", "/"), " ".join(f"`{t}`" for t in row.before),
                         " ".join(f"`{t}`" for t in row.after)])
        return title + "\n\n" + render_markdown(["text", "before", "after"], rows) + "\n"


def _readable(tokenizer, token_id: int) -> str:
    """A token as text (byte-level pieces decoded), with spaces and newlines made visible."""
    return tokenizer.decode([token_id]).replace(" ", "␣").replace("\n", "\\n") or f"<{token_id}>"


def pooled_state(model, states: torch.Tensor, encoding) -> torch.Tensor:
    """One text's final-layer ``states`` (seq, hidden) pooled by the model's own rule (its pooling mode and mask:
    [DUMP] slots and an excluded prompt left out), before any Dense layers: the state W_U reads."""
    from ..remote.modeling_dumpembed import first_token_index, pool_states

    mask, mode = encoding["attention_mask"], model.config.pooling
    pooling_mask = model.pooling_mask(mask, mode, encoding["input_ids"])
    return pool_states(states[None], pooling_mask, mode, pad_lengths=first_token_index(mask))[0]


def logit_lens(
    model_dir: str | Path, texts: list[str], ratio: int = DEFAULT_RATIO, top_k: int = DEFAULT_TOP_K,
    max_length: int | None = None,
) -> LogitLens:
    """Top-``top_k`` tokens of each text's pooled state through W_U, before/after EmbedFilter with ratio τ."""
    from ..projections.maths.band_basis import band_size, gram_basis
    from ..projections.unembedding import find_unembedding
    from ..remote.modeling_dumpembed import band_start
    from .token_stats import backbone_forward, encode_one, load_for_analysis

    model, tokenizer = load_for_analysis(model_dir)
    unembedding = find_unembedding(model)  # a clear error for encoders: EmbedFilter needs a causal LM
    weight = unembedding.weight.float()
    d = weight.shape[1]
    _, basis = gram_basis(weight, unembedding.exclude_rows)
    m = band_size(d, ratio=ratio)
    start = band_start(d, m)
    band = torch.from_numpy(np.ascontiguousarray(basis[:, start : start + m])).float()
    excluded = torch.tensor(sorted(unembedding.exclude_rows), dtype=torch.long)
    rows = []
    for text in texts:
        encoding = encode_one(tokenizer, text, max_length)
        states, _ = backbone_forward(model, encoding)
        h = pooled_state(model, states, encoding)
        views = []
        for vector in (h, band @ (band.T @ h)):
            logits = weight @ vector
            if len(excluded):
                logits[excluded] = -torch.inf  # [DUMP] rows were never unembedding rows
            views.append([_readable(tokenizer, i) for i in logits.topk(top_k).indices.tolist()])
        rows.append(LensRow(text=text, before=views[0], after=views[1]))
    return LogitLens(str(model_dir), ratio, (start, start + m), unembedding.source, rows)
