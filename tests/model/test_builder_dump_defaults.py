"""[DUMP] defaults that do not hurt the source: pooling taken from the source (a mean stays the stock mean, so the
default folder exports to stock modules), the mean without the [DUMP] slots, the sink-copy inits, the [DUMP] rows'
own learning rate, and the stock export's refusal of what it cannot express."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed.export.stock import export_stock_st
from hf_dumpembed.model.builder import BuildOptions, build, build_dump_model
from hf_dumpembed.model.source_stack import read_source_stack
from hf_dumpembed.training.config import config_from_dict
from hf_dumpembed.training.trainer import train
from tests.support.tiny_models import as_sentence_transformers_folder
from tests.support.training_fixtures import run_config, toy_rows, write_jsonl

TEXTS = ["a short text", "a somewhat longer text about reading files line by line", "x"]


def _as_st_folder(backbone: Path, out: Path, mode: str) -> Path:
    return as_sentence_transformers_folder(backbone, out, mode)


@pytest.mark.parametrize(("mode", "k", "expected"), [
    ("mean_tokens", 4, "mean"), ("mean_tokens", 0, "mean"), ("cls_token", 4, "cls"), ("lasttoken", 4, "last"),
])
def test_pooling_comes_from_the_source_sentence_transformers_config(tiny_bert, tmp_path, mode, k, expected):
    source = _as_st_folder(tiny_bert, tmp_path / "source", mode)
    model, _ = build_dump_model(source, BuildOptions(num_dump_tokens=k))
    assert model.config.pooling == expected
    assert "sentence-transformers Pooling" in model.config.pooling_reason


def test_pooling_without_a_source_config_is_cls_or_last_and_explicit_wins(tiny_bert, tiny_llama, tmp_path):
    assert read_source_stack(str(tiny_bert)) is None
    assert build_dump_model(tiny_bert, BuildOptions())[0].config.pooling == "cls"
    assert build_dump_model(tiny_llama, BuildOptions())[0].config.pooling == "last"
    source = _as_st_folder(tiny_bert, tmp_path / "source", "mean_tokens")
    model, _ = build_dump_model(source, BuildOptions(pooling="cls"))
    assert (model.config.pooling, model.config.pooling_reason) == ("cls", "set explicitly")


def test_every_single_stock_pooling_mode_is_taken_and_a_concatenation_is_refused_with_the_fix(tiny_bert, tmp_path):
    source = _as_st_folder(tiny_bert, tmp_path / "source", "max_tokens")
    assert build_dump_model(source, BuildOptions(num_dump_tokens=0))[0].config.pooling == "max"
    config_path = source / "1_Pooling" / "config.json"
    config = json.loads(config_path.read_text())
    config_path.write_text(json.dumps({**config, "pooling_mode_cls_token": True}))  # cls and max, concatenated
    with pytest.raises(ValueError, match=r"concatenates several pooling modes \['cls', 'max'\].*--pooling"):
        build_dump_model(source, BuildOptions())


def _encode(model, tokenizer, texts: list[str], side: str) -> torch.Tensor:
    tokenizer.padding_side = side
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        return model(**batch).sentence_embedding


@pytest.mark.parametrize("side", ["right", "left"])
def test_mean_no_dump_is_the_mean_over_the_other_tokens(tiny_bert, side):
    model, tokenizer = build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=3, pooling="mean_no_dump"))
    model.eval()
    batched = _encode(model, tokenizer, TEXTS, side)
    for row, text in enumerate(TEXTS):
        ids = tokenizer([text], return_tensors="pt")
        with torch.no_grad():
            states = model.backbone(**ids).last_hidden_state[0]
        keep = [i for i in range(states.shape[0]) if not 1 <= i <= 3]  # [CLS] D1 D2 D3 text [SEP]
        expected = torch.nn.functional.normalize(states[keep].mean(0), dim=-1)
        torch.testing.assert_close(batched[row], expected, atol=1e-5, rtol=0)


def test_mean_no_dump_with_k_zero_is_the_plain_mean(tiny_bert):
    plain, tokenizer = build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=0, pooling="mean"))
    no_dump, _ = build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=0, pooling="mean_no_dump"))
    for side in ("right", "left"):
        torch.testing.assert_close(_encode(no_dump.eval(), tokenizer, TEXTS, side),
                                   _encode(plain.eval(), tokenizer, TEXTS, side), atol=0, rtol=0)


@pytest.mark.parametrize(("fixture", "special"), [("tiny_bert", "sep_token_id"), ("tiny_llama", "eos_token_id")])
def test_sep_init_copies_the_trailing_special_row_exactly(request, fixture, special):
    backbone = request.getfixturevalue(fixture)
    original = AutoModel.from_pretrained(str(backbone)).get_input_embeddings().weight.detach()
    model, tokenizer = build_dump_model(backbone, BuildOptions(num_dump_tokens=3, init="sep", match_steps=0))
    rows = model.get_input_embeddings().weight.detach()[model.config.dump_token_ids]
    assert torch.equal(rows, original[getattr(tokenizer, special)].expand(3, -1))
    assert model.config.dump_init == "sep"


def test_token_init_copies_the_named_token_and_rejects_unknown_ones(tiny_bert):
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert))
    original = AutoModel.from_pretrained(str(tiny_bert)).get_input_embeddings().weight.detach()
    model, _ = build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=2, init="token", init_token=".", match_steps=0))
    rows = model.get_input_embeddings().weight.detach()[model.config.dump_token_ids]
    assert torch.equal(rows, original[tokenizer.convert_tokens_to_ids(".")].expand(2, -1))
    assert model.config.dump_init == "token:."
    with pytest.raises(ValueError, match="not one token of this vocabulary"):
        build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=2, init="token", init_token="no-such-token-xyz"))
    with pytest.raises(ValueError, match="needs init_token"):
        build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=2, init="token"))


def test_mean_init_is_the_vocabulary_mean_within_the_noise(tiny_bert):
    original = AutoModel.from_pretrained(str(tiny_bert)).get_input_embeddings().weight.detach().double()
    model, _ = build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=4, init="mean", match_steps=0))
    rows = model.get_input_embeddings().weight.detach()[model.config.dump_token_ids].double()
    assert_small_noise_around(rows, original.mean(0), original)


def assert_small_noise_around(rows: torch.Tensor, centre: torch.Tensor, vocabulary: torch.Tensor) -> None:
    """``rows`` = ``centre`` + noise whose std is 1% of the vocabulary's per-dimension std: the standardised noise
    z = (rows − centre) / (0.01 σ) of the 4 × 32 entries has mean ≈ 0 and std ≈ 1 (bounds at ~4.5 standard errors),
    and the rows differ from each other."""
    z = (rows - centre) / (0.01 * vocabulary.std(0))
    assert abs(float(z.mean())) < 0.4, float(z.mean())
    assert 0.72 < float(z.std()) < 1.28, float(z.std())
    assert torch.cdist(rows, rows).fill_diagonal_(1.0).min() > 0  # the noise keeps the rows distinct


def _trained_rows(backbone: Path, data: Path, out: Path, **training) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    config = config_from_dict(run_config(backbone, data, out, max_steps=1, **training))
    folder = train(config)
    weights = load_file(folder / "model.safetensors")
    embedding = next(v for k, v in weights.items() if k.endswith("word_embeddings.weight"))
    ids = json.loads((folder / "config.json").read_text())["dump_token_ids"]
    initial = load_file(config.checkpoint_path / "initial-model" / "model.safetensors")
    start = next(v for k, v in initial.items() if k.endswith("word_embeddings.weight"))
    return embedding, start, ids


def test_dump_learning_rate_scales_the_rows_step_and_nothing_else(tiny_bert, tmp_path):
    data = write_jsonl(tmp_path / "train.jsonl", toy_rows())
    plain, start, ids = _trained_rows(tiny_bert, data, tmp_path / "plain", learning_rate=1e-3)
    fast, start_fast, _ = _trained_rows(tiny_bert, data, tmp_path / "fast", learning_rate=1e-3,
                                        dump_learning_rate=1e-2)
    assert torch.equal(start, start_fast)
    others = torch.ones(plain.shape[0], dtype=torch.bool)
    others[ids] = False
    torch.testing.assert_close(fast[others], plain[others], atol=1e-7, rtol=0)
    plain_step, fast_step = plain[ids] - start[ids], fast[ids] - start[ids]
    assert float(plain_step.abs().max()) > 1e-5  # the rows did move
    torch.testing.assert_close(fast_step, 10 * plain_step, atol=1e-6, rtol=1e-4)
    info = json.loads((tmp_path / "fast" / "config.json").read_text())["training_info"]["hyperparameters"]
    assert info["dump_learning_rate"] == 1e-2 and info["learning_rate"] == 1e-3


def test_the_default_k4_folder_of_a_mean_source_is_served_by_a_stock_load_of_its_export(tiny_bert, tmp_path):
    """`build --dump-tokens 4` of a mean-pooled sentence-transformers source: stock mean pooling ([DUMP] slots
    included), so `export-st` writes stock modules that a plain SentenceTransformer (no remote code) serves with the
    folder's vectors (what Text Embeddings Inference, Infinity and vLLM need)."""
    from sentence_transformers import SentenceTransformer

    source = _as_st_folder(tiny_bert, tmp_path / "source", "mean_tokens")
    folder = build(source, tmp_path / "model", BuildOptions(num_dump_tokens=4, match_steps=0))
    assert json.loads((folder / "config.json").read_text())["pooling"] == "mean"
    stock = export_stock_st(folder, tmp_path / "stock")
    assert not list(stock.glob("*.py"))  # no remote code
    expected = SentenceTransformer(str(folder), trust_remote_code=True).encode(list(TEXTS))
    served = SentenceTransformer(str(stock), trust_remote_code=False).encode(list(TEXTS))
    torch.testing.assert_close(torch.from_numpy(served), torch.from_numpy(expected), atol=1e-6, rtol=0)


def test_stock_export_refuses_the_mean_without_dump_slots(tiny_bert, tmp_path):
    model_dir = build(tiny_bert, tmp_path / "model", BuildOptions(num_dump_tokens=2, pooling="mean_no_dump"))
    with pytest.raises(ValueError, match="cannot express exactly"):
        export_stock_st(model_dir, tmp_path / "stock")
    assert not (tmp_path / "stock").exists()


def test_card_states_the_pooling_reason_and_the_missing_stock_export(tiny_bert, tmp_path):
    """The default K > 0 folder of a mean-pooled source pools with the stock mean ([DUMP] slots included) and has a
    stock export; an explicit mean_no_dump says it has none."""
    source = _as_st_folder(tiny_bert, tmp_path / "source", "mean_tokens")
    card = (build(source, tmp_path / "model", BuildOptions(num_dump_tokens=2)) / "README.md").read_text()
    assert "mean (the source's sentence-transformers Pooling: mean, over every token, the [DUMP] slots included" in card
    assert "exact copy of the [SEP]/EOS embedding row (an attention sink), then fitted for 60 steps" in card
    assert "hf-dumpembed export-st" in card and "has no stock export" not in card
    no_dump = build(source, tmp_path / "no-dump", BuildOptions(num_dump_tokens=2, pooling="mean_no_dump"))
    card = (no_dump / "README.md").read_text()
    assert "mean over every token except the [DUMP] slots (set explicitly)" in card
    assert "has no stock export" in card and "hf-dumpembed export-st" not in card


def test_auto_init_is_sep_for_encoders_and_small_normal_rows_for_decoders(tiny_bert, tiny_llama):
    encoder, _ = build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=2))
    decoder, _ = build_dump_model(tiny_llama, BuildOptions(num_dump_tokens=3))
    assert (encoder.config.dump_init, decoder.config.dump_init) == ("sep+match60", "normal")  # matched by default
    rows = decoder.get_input_embeddings().weight.detach()[decoder.config.dump_token_ids]
    assert 0.01 < rows.std().item() < 0.04 and abs(rows.mean().item()) < 0.01
