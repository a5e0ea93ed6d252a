"""Token-level analysis on tiny models: groups, norms, attention, logit lens, outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from hf_dumpembed.analysis import analyze, english_stopwords, group_tokens, logit_lens, token_statistics
from hf_dumpembed.analysis.token_stats import ATTENTION_SCALE, backbone_forward, encode_one, load_for_analysis

TEXTS = ["the quick brown fox jumps over the lazy dog", "a dog is not a cat and it was here"]


def test_bundled_stopwords_are_nltks_list() -> None:
    words = english_stopwords()
    assert len(words) == 179
    assert {"the", "a", "is", "not", "don't", "ourselves", "wouldn't"} <= words
    assert not {"dog", "python", "retrieval"} & words


def test_groups_for_a_known_input() -> None:
    # [CLS] [D1] [D2] the quick bro ##wn [SEP]; "the" is a stopword; "brown" spans two tokens.
    text = "the quick brown"
    offsets = [(0, 0), (0, 0), (0, 0), (0, 3), (4, 9), (10, 13), (13, 15), (0, 0)]
    word_ids = [None, None, None, 0, 1, 2, 2, None]
    special = [1, 1, 1, 0, 0, 0, 0, 1]
    groups = group_tokens(text, offsets, word_ids, special, 2, 1, english_stopwords()).groups
    assert groups == {"cls": [0], "dump1": [1], "dump2": [2], "stopwords": [3], "other": [4, 5, 6], "special": [7]}
    # A decoder without BOS: no cls group, DUMP tokens first.
    groups = group_tokens("it runs", [(0, 0), (0, 2), (2, 7)], [None, 0, 1], [1, 0, 0], 1, 0, english_stopwords())
    assert groups.groups == {"dump1": [0], "stopwords": [1], "other": [2]}


def _direct(model_dir: Path, texts: list[str]):
    """Norms and stopword attention computed directly from the DumpEmbedModel forward (no grouping helper)."""
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(str(model_dir), trust_remote_code=True, attn_implementation="eager").eval()
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=True)
    stop = english_stopwords()
    norms: dict[str, list[float]] = {}
    attention = {"cls": [], **{f"dump{i + 1}": [] for i in range(model.config.num_dump_tokens)}}
    for text in texts:
        batch = tokenizer([text], return_tensors="pt")
        with torch.no_grad():
            out = model(**batch, output_attentions=True)
        tokens = tokenizer.convert_ids_to_tokens(batch["input_ids"][0])
        attn = out.attentions[-1][0].mean(0)
        # Words from WordPiece tokens: a "##" piece continues the previous word (the test texts have no punctuation).
        words: list[list[int]] = []
        for position, token in enumerate(tokens):
            if token.startswith("##"):
                words[-1].append(position)
            elif not token.startswith("[") or token == "[UNK]":
                words.append([position])
        word_of = {p: "".join(tokens[q].removeprefix("##") for q in word) for word in words for p in word}
        for position, token in enumerate(tokens):
            if position == 0:
                name = "cls"
            elif token.startswith("[DUMP"):
                name = f"dump{token[5:-1]}"
            elif token == "[SEP]":
                name = "special"
            else:
                name = "stopwords" if word_of[position] in stop else "other"
            norms.setdefault(name, []).append(float(out.last_hidden_state[0, position].norm()))
            if name == "stopwords":
                attention["cls"].append(float(attn[position, 0]))
                for i in range(model.config.num_dump_tokens):
                    attention[f"dump{i + 1}"].append(float(attn[position, 1 + i]))
    return ({k: sum(v) / len(v) for k, v in norms.items()},
            {k: ATTENTION_SCALE * sum(v) / len(v) for k, v in attention.items()}, len(norms["stopwords"]))


def test_norms_and_attention_equal_a_direct_computation(bert_dump_model: Path) -> None:
    stats = token_statistics(bert_dump_model, TEXTS, progress=False)
    norms, attention, stopword_tokens = _direct(bert_dump_model, TEXTS)
    assert stats.norms == pytest.approx(norms, rel=1e-5)
    assert stats.attention_from_stopwords == pytest.approx(attention, rel=1e-5)
    # the, over, the | a, is, not, a, and, it, was, here: 11 stopwords, each one token or more.
    assert stats.token_counts["stopwords"] == stopword_tokens >= 11
    assert set(stats.norms) == {"cls", "dump1", "dump2", "dump3", "dump4", "stopwords", "other", "special"}


def test_attention_rows_sum_to_one(bert_dump_model: Path) -> None:
    model, tokenizer = load_for_analysis(bert_dump_model)
    states, attention = backbone_forward(model, encode_one(tokenizer, TEXTS[0], None))
    assert attention.shape == (states.shape[0], states.shape[0])
    assert torch.allclose(attention.sum(dim=-1), torch.ones(states.shape[0]), atol=1e-5)
    assert model.config._attn_implementation == "eager"


def test_logit_lens_on_a_decoder_and_refused_on_an_encoder(llama_dump_model: Path, bert_dump_model: Path) -> None:
    lens = logit_lens(llama_dump_model, TEXTS, ratio=2, top_k=5)
    d = json.loads((llama_dump_model / "config.json").read_text())["text_config"]["hidden_size"]
    assert lens.band == ((d - d // 2) // 2, (d - d // 2) // 2 + d // 2)
    assert [len(r.before) for r in lens.rows] == [5, 5] and [len(r.after) for r in lens.rows] == [5, 5]
    assert all(not t.startswith("[DUMP") for r in lens.rows for t in r.before + r.after)
    assert "| text | before | after |" in lens.markdown()
    with pytest.raises(ValueError, match="causal LM"):
        logit_lens(bert_dump_model, TEXTS)


def test_analyze_writes_json_and_png_side_by_side(bert_dump_model: Path, tiny_bert: Path, tmp_path: Path) -> None:
    from hf_dumpembed.model.builder import BuildOptions, build

    base = build(tiny_bert, tmp_path / "base", BuildOptions(num_dump_tokens=0))
    result = analyze([bert_dump_model, base], TEXTS, tmp_path / "out", labels=["dump", "base"])
    payload = json.loads(result.json_path.read_text())
    assert set(payload["models"]) == {"dump", "base"}
    assert "dump1" not in payload["models"]["base"]["norms"]
    assert payload["models"]["base"]["attention_from_stopwords"].keys() == {"cls"}
    assert result.plot_path.stat().st_size > 1000 and result.lens_path is None
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        analyze([tmp_path / "nothing"], TEXTS, tmp_path / "out2")


def test_attention_sinks_equal_a_direct_computation(bert_dump_model: Path) -> None:
    from collections import defaultdict

    from hf_dumpembed.analysis.token_stats import attention_sinks

    sinks = attention_sinks(bert_dump_model, TEXTS * 3, top=50, min_count=3, progress=False)
    model, tokenizer = load_for_analysis(bert_dump_model)
    received, seen = defaultdict(float), defaultdict(int)
    for text in TEXTS * 3:
        encoding = encode_one(tokenizer, text, None)
        _, attention = backbone_forward(model, encoding)
        for position, token_id in enumerate(encoding["input_ids"][0].tolist()):
            received[token_id] += float(attention[:, position].mean())
            seen[token_id] += 1
    expected = {t: received[t] / seen[t] for t in seen if seen[t] >= 3 and t not in model.config.dump_token_ids}
    assert {s["id"]: s["attention"] for s in sinks} == pytest.approx(expected, rel=1e-5)
    assert [s["attention"] for s in sinks] == sorted((s["attention"] for s in sinks), reverse=True)
    assert tokenizer.cls_token_id in {s["id"] for s in sinks if s["special"]}


@pytest.mark.parametrize("pooling", ["last", "mean", "mean_no_dump"])
def test_logit_lens_pools_as_the_model_does(tiny_llama: Path, tmp_path: Path, pooling: str) -> None:
    """The lens reads the state the model itself pools (mean_no_dump leaves the [DUMP] slots out), not its own copy."""
    from hf_dumpembed.analysis.logit_lens import pooled_state
    from hf_dumpembed.model.builder import BuildOptions, build

    folder = build(tiny_llama, tmp_path / pooling, BuildOptions(num_dump_tokens=3, pooling=pooling))
    model, tokenizer = load_for_analysis(folder)
    encoding = encode_one(tokenizer, "a text of several words for the lens", None)
    states, _ = backbone_forward(model, encoding)
    expected = model.pool(states[None], encoding["attention_mask"], input_ids=encoding["input_ids"])[0]
    torch.testing.assert_close(pooled_state(model, states, encoding), expected)
    if pooling == "mean_no_dump":  # the old copy averaged every position, [DUMP] slots included
        assert not torch.allclose(pooled_state(model, states, encoding), states.mean(dim=0))


# Failures leave nothing half-written; inputs are checked before any work.


def test_a_failed_analyze_leaves_its_old_output_whole(bert_dump_model, tmp_path, monkeypatch):
    """A failure mid-way through `analyze` leaves the previous analysis in --out whole."""
    from hf_dumpembed.analysis import run

    out = tmp_path / "analysis"
    out.mkdir()
    (out / "analysis.json").write_text('{"old": true}\n')

    def fail(*args, **kwargs):
        raise RuntimeError("the plot failed")

    monkeypatch.setattr(run, "plot_token_statistics", fail)
    with pytest.raises(RuntimeError):
        run.analyze([bert_dump_model], ["a text", "another text"], out)
    assert sorted(p.name for p in out.iterdir()) == ["analysis.json"]
    assert (out / "analysis.json").read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
