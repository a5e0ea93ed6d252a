"""Property-based tests (hypothesis) where the inputs are a space, not a few examples.

- the remote model's embeddings do not depend on the padding side, the pooling's handling of padding, or which
  other texts share the batch (tiny BERT and tiny Llama, every pooling mode);
- streaming projection statistics give the same n, Σx, Σxxᵀ and covariance whatever the batching, the sharding
  and the order in which shards are merged;
- the tokenizer's [DUMP] prefix survives any truncation length, and truncation only shortens the text.

Kept fast for the default run: small ``max_examples``, no deadline (the shared machine's timing varies).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed.projections.stats import StreamingStats

WORDS = ["a", "man", "is", "eating", "food", "the", "girl", "riding", "horse", "open", "file", "read", "every",
         "line", "dense", "retrieval", "ranks", "passages", "by", "cosine", ".", ",", "hello", "world", "xyzzy"]
POOLINGS = ["cls", "last", "mean", "mean_no_dump"]
FIXTURE_SETTINGS = settings(max_examples=20, deadline=None,
                            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=14).map(" ".join)


@pytest.fixture(scope="module")
def loaded(bert_dump_model: Path, llama_dump_model: Path) -> dict[str, tuple]:
    """The two tiny DumpEmbed models (encoder: [CLS] + K=4; decoder: BOS + K=3), loaded through AutoModel."""
    out = {}
    for name, folder in (("bert", bert_dump_model), ("llama", llama_dump_model)):
        model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
        out[name] = (model, AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True))
    return out


def _embed(model, tokenizer, batch: list[str], side: str) -> torch.Tensor:
    tokenizer.padding_side = side
    with torch.inference_mode():
        return model(**tokenizer(batch, padding=True, return_tensors="pt")).sentence_embedding


@FIXTURE_SETTINGS
@given(name=st.sampled_from(["bert", "llama"]), pooling=st.sampled_from(POOLINGS),
       side=st.sampled_from(["left", "right"]), batch=st.lists(texts, min_size=1, max_size=6))
def test_each_row_is_the_text_alone_whatever_the_padding_pooling_and_batch(loaded, name, pooling, side, batch):
    """Each row of a padded batch equals the same text encoded alone (no padding at all), for every pooling mode,
    either padding side and any batch composition (duplicates, lengths, order).

    Breaks tried: `last_token_index` returning `seq_len - 1` (last pooling under right padding fails);
    `without_dump_positions` counting the [DUMP] slots from column 0 instead of each row's first real token
    (mean_no_dump under left padding fails); no left-padding `position_ids` in `forward` (BERT under left padding
    fails)."""
    model, tokenizer = loaded[name]
    model.config.pooling = pooling
    try:
        together = _embed(model, tokenizer, batch, side)
        alone = torch.cat([_embed(model, tokenizer, [text], side) for text in batch])
    finally:
        model.config.pooling = {"bert": "cls", "llama": "last"}[name]
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=0)


def _stats(rows: np.ndarray) -> StreamingStats:
    return StreamingStats(rows.shape[1]).update(rows)


@st.composite
def sharded(draw) -> tuple[np.ndarray, list[np.ndarray], list[int]]:
    """A (n, d) float array, a split of its rows into consecutive shards (some may be empty), a merge order."""
    n, d = draw(st.integers(2, 40)), draw(st.integers(1, 6))
    x = draw(arrays(np.float64, (n, d), elements=st.floats(-4, 4, allow_nan=False, width=32)))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=5)))
    shards = np.split(x, cuts)
    order = draw(st.permutations(range(len(shards))))
    return x, shards, list(order)


@settings(max_examples=60, deadline=None)
@given(case=sharded())
def test_stats_merge_in_any_order_equals_one_pass(case):
    """Σ-statistics merged from any sharding, in any merge order (and nested merges), equal one pass over all
    rows, to float64 round-off of the sums. Breaks tried: `merge` not adding `count` (fails at once); `merge`
    replacing Σxxᵀ by the other shard's (`self.sum_outer = other.sum_outer.copy()`: fails whenever two non-empty
    shards exist)."""
    x, shards, order = case
    whole = _stats(x)
    parts = [_stats(shard) for shard in shards]
    merged = StreamingStats(x.shape[1])
    for index in order:
        merged.merge(parts[index])
    half = len(order) // 2  # (a + b) + (c + d): the tree all-reduce's shape
    left, right = StreamingStats(x.shape[1]), StreamingStats(x.shape[1])
    for index in order[:half]:
        left.merge(_stats(shards[index]))
    for index in order[half:]:
        right.merge(_stats(shards[index]))
    nested = right.merge(left)
    scale = max(1.0, float(np.abs(x).max()) ** 2) * len(x) * 1e-13
    for got in (merged, nested):
        assert got.count == whole.count == len(x)
        np.testing.assert_allclose(got.sum, whole.sum, rtol=0, atol=scale)
        np.testing.assert_allclose(got.sum_outer, whole.sum_outer, rtol=0, atol=scale)
        np.testing.assert_allclose(got.covariance(), np.cov(x, rowvar=False).reshape(x.shape[1], -1), rtol=0,
                                   atol=scale * 10)


@pytest.fixture(scope="module")
def tokenizers(bert_dump_model: Path, llama_dump_model: Path) -> dict[str, tuple]:
    """Each saved tokenizer, its model (config: [DUMP] ids and offset) and the special tokens it ends a text with."""
    out = {}
    for name, folder in (("bert", bert_dump_model), ("llama", llama_dump_model)):
        model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
        tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True)
        out[name] = (tokenizer, model, [tokenizer.sep_token_id] if name == "bert" else [])
    return out


@FIXTURE_SETTINGS
@given(name=st.sampled_from(["bert", "llama"]), room=st.integers(1, 70),
       text=st.one_of(st.lists(texts, max_size=12).map(" ".join),
                      st.text(st.sampled_from("abc XYZ.,é😀-"), max_size=200)))
def test_dump_prefix_survives_any_truncation_length(tokenizers, name, text, room):
    """For any text and any max_length that leaves room for at least one text token, the truncated input keeps the
    leading special token, [DUMP1..K] right after it and the trailing [SEP]; the text part is a prefix of the
    untruncated text part; and the model accepts the row. Break tried: the post-processor template built without the
    special tokens after `$A` (no [SEP]; the build's own prefix check does not see it): the BERT cases fail."""
    tokenizer, model, ending = tokenizers[name]
    config = model.config
    offset, k, trailing = config.dump_token_offset, config.num_dump_tokens, len(ending)
    lead = offset + k
    max_length = lead + trailing + room
    full = tokenizer(text)["input_ids"]
    ids = tokenizer(text, truncation=True, max_length=max_length)["input_ids"]
    assert len(ids) == min(len(full), max_length)
    assert ids[:offset] == full[:offset]
    assert ids[offset:lead] == list(config.dump_token_ids)
    assert ids[len(ids) - trailing:] == full[len(full) - trailing:] == ending
    kept = ids[lead:len(ids) - trailing]
    assert kept == full[lead:lead + len(kept)]
    model.check_dump_prefix(torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.long))
