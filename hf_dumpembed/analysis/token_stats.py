"""Per-group statistics of final-layer token states (the [DUMP] paper's Figure 2).

(a) mean L2 norm of the final-layer hidden states of each token group; (b) last-layer attention from stopword
tokens to [CLS]/BOS and to each [DUMP_i], averaged over heads, over stopword tokens and texts, reported ×1e5.
The backbone runs with eager attention (the attention maps are its real softmax weights), one text at a time (no
padding), on the model's own tokenizer, so the [DUMP] positions are exactly where inference puts them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from .stopwords import english_stopwords
from .tokens import CLS, STOPWORDS, dump_group, group_tokens

ATTENTION_SCALE = 1e5


@dataclass
class TokenStatistics:
    """What `token_statistics` measured for one model."""

    model: str
    num_texts: int
    num_dump_tokens: int
    pooling: str
    norms: dict[str, float] = field(default_factory=dict)
    token_counts: dict[str, int] = field(default_factory=dict)
    attention_from_stopwords: dict[str, float] = field(default_factory=dict)
    attention_scale: float = ATTENTION_SCALE

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def load_for_analysis(model_dir: str | Path):
    """(DumpEmbedModel with eager attention, its tokenizer), in eval mode."""
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(model_dir), trust_remote_code=True, attn_implementation="eager").eval()
    if getattr(model.config, "model_type", None) != "dumpembed":
        raise ValueError(f"{model_dir} is not a DumpEmbed model folder (model_type {model.config.model_type!r}).")
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=True)
    if not tokenizer.is_fast:
        raise ValueError(f"{model_dir}: the analysis needs a fast tokenizer (word ids and offsets).")
    return model, tokenizer


def encode_one(tokenizer, text: str, max_length: int | None):
    """The model's tokenization of one text with offsets, word ids and the special-token mask."""
    return tokenizer(
        text,
        truncation=True,
        max_length=max_length,
        return_offsets_mapping=True,
        return_special_tokens_mask=True,
        return_tensors="pt",
    )


def backbone_forward(model, encoding) -> tuple[torch.Tensor, torch.Tensor]:
    """(final-layer states (seq, hidden), last-layer attention averaged over heads (seq, seq)) of one text."""
    inputs = {k: encoding[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in encoding}
    model.check_dump_prefix(inputs["input_ids"], inputs["attention_mask"])
    with torch.inference_mode():
        out = model.backbone(**inputs, output_attentions=True)
    if not out.attentions or out.attentions[-1] is None:
        raise ValueError("the backbone returned no attention maps; it needs eager attention support.")
    return out.last_hidden_state[0].float(), out.attentions[-1][0].float().mean(dim=0)


def token_statistics(
    model_dir: str | Path, texts: list[str], max_length: int | None = None, progress: bool = True
) -> TokenStatistics:
    """Norms per group and stopword attention for ``texts`` through ``model_dir``."""
    model, tokenizer = load_for_analysis(model_dir)
    config = model.config
    stopwords = english_stopwords()
    norm_sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    attention_sums: dict[str, float] = defaultdict(float)
    stopword_tokens = 0
    targets = ([CLS] if config.dump_token_offset else []) + [dump_group(i + 1) for i in range(config.num_dump_tokens)]
    for text in tqdm(texts, desc=f"analyse {Path(model_dir).name}", unit="text", disable=not progress):
        encoding = encode_one(tokenizer, text, max_length)
        groups = group_tokens(
            text,
            [tuple(o) for o in encoding["offset_mapping"][0].tolist()],
            encoding.word_ids(0),
            encoding["special_tokens_mask"][0].tolist(),
            config.num_dump_tokens,
            config.dump_token_offset,
            stopwords,
        )
        states, attention = backbone_forward(model, encoding)
        norms = states.norm(dim=-1)
        for name, positions in groups.groups.items():
            norm_sums[name] += float(norms[positions].sum())
            counts[name] += len(positions)
        stop = groups.of(STOPWORDS)
        if stop:
            stopword_tokens += len(stop)
            for target in targets:
                attention_sums[target] += float(attention[stop][:, groups.of(target)].sum())
    return TokenStatistics(
        model=str(model_dir),
        num_texts=len(texts),
        num_dump_tokens=config.num_dump_tokens,
        pooling=config.pooling,
        norms={name: norm_sums[name] / counts[name] for name in counts},
        token_counts=dict(counts),
        attention_from_stopwords={
            target: ATTENTION_SCALE * attention_sums[target] / stopword_tokens for target in targets
        } if stopword_tokens else {},
    )


def attention_sinks(model_dir: str | Path, texts: list[str], max_length: int | None = None, top: int = 10,
                    min_count: int = 20, progress: bool = True) -> list[dict[str, Any]]:
    """The vocabulary tokens that receive the most last-layer attention per occurrence (head mean, averaged over
    the text's query positions), ordinary and special tokens alike, most-attended first.

    Clark et al. (2019, "What Does BERT Look At?") found BERT's heads park attention on [SEP] and punctuation; this
    measures it for any model, e.g. to pick the token whose row ``hf-dumpembed build --init token`` copies.
    Tokens seen fewer than ``min_count`` times are left out.
    """
    model, tokenizer = load_for_analysis(model_dir)
    received: dict[int, float] = defaultdict(float)
    seen: dict[int, int] = defaultdict(int)
    for text in tqdm(texts, desc=f"attention sinks {Path(model_dir).name}", unit="text", disable=not progress):
        encoding = encode_one(tokenizer, text, max_length)
        _, attention = backbone_forward(model, encoding)
        per_key = attention.mean(dim=0)  # mean over query positions: the share of attention each token receives
        for token_id, share in zip(encoding["input_ids"][0].tolist(), per_key.tolist(), strict=True):
            received[token_id] += share
            seen[token_id] += 1
    dump_ids = set(model.config.dump_token_ids)
    rows = [
        {"token": tokenizer.convert_ids_to_tokens(token_id), "id": token_id, "count": seen[token_id],
         "attention": received[token_id] / seen[token_id], "special": token_id in tokenizer.all_special_ids}
        for token_id in seen
        if seen[token_id] >= min_count and token_id not in dump_ids
    ]
    return sorted(rows, key=lambda row: -row["attention"])[:top]
