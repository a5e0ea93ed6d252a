"""DumpEmbedModel: pooling under both padding sides, prefix check, projection storage and dtype, config checks."""

from __future__ import annotations

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModel, AutoTokenizer, BertConfig

from hf_dumpembed.remote import DumpEmbedConfig, DumpEmbedModel
from hf_dumpembed.remote.modeling_dumpembed import first_token_index, last_token_index

TEXTS = ["A man is eating food.", "hello", "Dense retrieval ranks passages by cosine similarity of their embeddings."]


def _load(folder):
    model = AutoModel.from_pretrained(str(folder), trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True)
    return model, tokenizer


def _embed(model, tokenizer, texts, padding_side="right"):
    tokenizer.padding_side = padding_side
    with torch.no_grad():
        return model(**tokenizer(texts, padding=True, return_tensors="pt"))


def test_pad_indices():
    right = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    left = torch.tensor([[0, 1, 1, 1], [1, 1, 1, 1]])
    assert first_token_index(right).tolist() == [0, 0] and last_token_index(right).tolist() == [2, 3]
    assert first_token_index(left).tolist() == [1, 0] and last_token_index(left).tolist() == [3, 3]


@pytest.mark.parametrize("model_fixture", ["bert_dump_model", "llama_dump_model"])
@pytest.mark.parametrize("pooling", ["cls", "last", "mean"])
def test_pooling_is_the_same_under_left_right_and_no_padding(request, model_fixture, pooling):
    model, tokenizer = _load(request.getfixturevalue(model_fixture))
    model.config.pooling = pooling
    alone = torch.cat([_embed(model, tokenizer, [t]).sentence_embedding for t in TEXTS])
    right = _embed(model, tokenizer, TEXTS, "right").sentence_embedding
    left = _embed(model, tokenizer, TEXTS, "left").sentence_embedding
    torch.testing.assert_close(right, alone, atol=1e-5, rtol=0)
    torch.testing.assert_close(left, alone, atol=1e-5, rtol=0)


def test_pooling_reads_the_configured_position(bert_dump_model):
    model, tokenizer = _load(bert_dump_model)
    out = _embed(model, tokenizer, TEXTS)
    mask = tokenizer(TEXTS, padding=True, return_tensors="pt")["attention_mask"]
    torch.testing.assert_close(out.pooled_embedding, out.last_hidden_state[:, 0])  # [CLS]
    model.config.pooling = "mean"
    out = _embed(model, tokenizer, TEXTS)
    expected = (out.last_hidden_state * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
    torch.testing.assert_close(out.pooled_embedding, expected)


def test_outputs_are_normalised_and_complete(bert_dump_model):
    model, tokenizer = _load(bert_dump_model)
    with torch.no_grad():
        out = model(**tokenizer(TEXTS, padding=True, return_tensors="pt"), output_hidden_states=True)
    assert out.sentence_embedding.shape == (3, model.config.projection_dim)
    torch.testing.assert_close(out.sentence_embedding.norm(dim=-1), torch.ones(3))
    assert out.pooled_embedding.shape == (3, model.config.hidden_size)
    assert len(out.hidden_states) == model.config.text_config.num_hidden_layers + 1
    assert out["sentence_embedding"] is out.sentence_embedding  # dict access, as sentence-transformers reads it


def test_inputs_without_the_prefix_are_refused(bert_dump_model, tiny_bert):
    model, _ = _load(bert_dump_model)
    plain = AutoTokenizer.from_pretrained(str(tiny_bert))  # the backbone's own tokenizer: no [DUMP] tokens
    with pytest.raises(ValueError, match="lack the \\[DUMP\\] prefix"):
        model(**plain(TEXTS, padding=True, return_tensors="pt"))
    with pytest.raises(ValueError, match="too short"):
        model(input_ids=torch.tensor([[2, 3]]))


def test_projection_is_stored_in_safetensors_and_kept_fp32(bert_dump_model):
    with safe_open(str(bert_dump_model / "model.safetensors"), "pt") as weights:
        keys = set(weights.keys())
        assert {"projection.mean", "projection.matrix"} <= keys
        torch.testing.assert_close(weights.get_tensor("projection.matrix"), torch.eye(32))
    model = AutoModel.from_pretrained(str(bert_dump_model), trust_remote_code=True, dtype=torch.bfloat16)
    assert model.backbone.embeddings.word_embeddings.weight.dtype == torch.bfloat16
    assert model.projection.matrix.dtype == torch.float32 and model.projection.mean.dtype == torch.float32
    tokenizer = AutoTokenizer.from_pretrained(str(bert_dump_model), trust_remote_code=True)
    with torch.no_grad():
        out = model(**tokenizer(TEXTS, padding=True, return_tensors="pt"))
    # No fitted projection: the output keeps the backbone's dtype, as a stock sentence-transformers Normalize does
    # (so a bf16 K = 0 folder gives its bf16 source's vectors); a fitted projection runs in fp32 (below).
    assert out.sentence_embedding.dtype == torch.bfloat16
    model.projection.mean.fill_(0.5)
    with torch.no_grad():
        out = model(**tokenizer(TEXTS, padding=True, return_tensors="pt"))
    assert out.sentence_embedding.dtype == torch.float32


def test_a_stored_projection_is_applied(bert_dump_model, tmp_path):
    model, tokenizer = _load(bert_dump_model)
    generator = torch.Generator().manual_seed(0)
    mean, matrix = torch.randn(32, generator=generator), torch.randn(32, 8, generator=generator)
    projected = DumpEmbedModel(DumpEmbedConfig(**{**model.config.to_dict(), "projection_dim": 8}))
    projected.load_state_dict({**model.state_dict(), "projection.mean": mean, "projection.matrix": matrix})
    projected.save_pretrained(tmp_path)
    reloaded = DumpEmbedModel.from_pretrained(tmp_path).eval()
    out = _embed(reloaded, tokenizer, TEXTS)
    expected = torch.nn.functional.normalize((out.pooled_embedding - mean) @ matrix, dim=-1)
    torch.testing.assert_close(out.sentence_embedding, expected)


def test_unique_model_type_needs_trust_remote_code(bert_dump_model):
    with pytest.raises(ValueError, match="trust_remote_code"):
        AutoModel.from_pretrained(str(bert_dump_model), trust_remote_code=False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pooling": "avg"}, "pooling must be one of"),
        ({"num_dump_tokens": 2, "dump_token_ids": [5]}, "exactly num_dump_tokens=2"),
        ({"num_dump_tokens": -1}, "num_dump_tokens must be an integer"),
        ({"projection_dim": 64}, "projection_dim must be between 1 and"),
    ],
)
def test_config_rejects_bad_values(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DumpEmbedConfig(text_config=BertConfig(hidden_size=32, num_attention_heads=4), **kwargs)


def test_config_round_trip_keeps_the_backbone_config(bert_dump_model):
    config = DumpEmbedConfig.from_pretrained(str(bert_dump_model))
    assert config.model_type == "dumpembed" and config.text_config.model_type == "bert"
    assert config.num_dump_tokens == 4 and config.dump_token_offset == 1 and config.pooling == "cls"
    assert config.max_position_embeddings == config.text_config.max_position_embeddings == 128
    assert config.auto_map == {
        "AutoConfig": "configuration_dumpembed.DumpEmbedConfig",
        "AutoModel": "modeling_dumpembed.DumpEmbedModel",
    }


def test_dump_rows_get_gradients_with_activation_checkpointing(bert_dump_model):
    model, tokenizer = _load(bert_dump_model)
    model.train()
    model.activation_checkpointing_enable()
    assert model.backbone.is_activation_checkpointing
    out = model(**tokenizer(TEXTS, padding=True, return_tensors="pt"))
    (out.sentence_embedding @ torch.randn(model.config.projection_dim)).sum().backward()
    grad = model.get_input_embeddings().weight.grad
    assert grad[model.config.dump_token_ids].abs().sum() > 0
    assert model.projection.matrix.grad is None  # buffers: the projection is fitted, never trained


def test_eager_attention_is_returned_for_analysis(llama_dump_model):
    model = AutoModel.from_pretrained(str(llama_dump_model), trust_remote_code=True, attn_implementation="eager")
    tokenizer = AutoTokenizer.from_pretrained(str(llama_dump_model), trust_remote_code=True)
    batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = model.eval()(**batch, output_attentions=True)
    assert len(out.attentions) == model.config.text_config.num_hidden_layers
    rows = out.attentions[-1].sum(-1)  # (batch, heads, seq): every attended row sums to 1
    torch.testing.assert_close(rows[batch["attention_mask"][:, None, :].expand_as(rows) == 1],
                               torch.ones(int(batch["attention_mask"].sum()) * rows.shape[1]))
