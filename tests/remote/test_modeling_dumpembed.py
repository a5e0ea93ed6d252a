"""DumpEmbedModel: pooling under both padding sides, prefix check, projection storage and dtype, config checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from huggingface_hub.errors import StrictDataclassError
from hypothesis import given
from hypothesis import strategies as st
from safetensors import safe_open
from transformers import AutoModel, AutoTokenizer, BertConfig

from hf_dumpembed.remote.configuration_dumpembed import DumpEmbedConfig
from hf_dumpembed.remote.modeling_dumpembed import (
    SPECTRAL_EPS,
    DumpEmbedModel,
    DumpProjection,
    band_matrix,
    check_finite,
    check_loading_info,
    first_token_index,
    last_token_index,
    spectral_matrix,
)
from tests.support.hypothesis_inputs import FIXTURE_SETTINGS, texts

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
        ({"pooling": "avg"}, "'pooling' expected one of"),
        ({"num_dump_tokens": 2, "dump_token_ids": [5]}, "exactly num_dump_tokens=2"),
        ({"num_dump_tokens": -1}, "num_dump_tokens must be an integer"),
        ({"projection_dim": 64}, "projection_dim must be between 1 and"),
    ],
)
def test_config_rejects_bad_values(kwargs, message):
    with pytest.raises(StrictDataclassError, match=message):
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


# Fast unit tests of the remote code (written to kill mutants: tests/MUTATION.md).


DUMP_IDS = [30, 31]


def text_config(**overrides: object) -> BertConfig:
    values = dict(vocab_size=40, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                  max_position_embeddings=24, pad_token_id=0)
    return BertConfig(**{**values, **overrides})


def tiny(**overrides: object) -> DumpEmbedModel:
    values = dict(text_config=text_config(), num_dump_tokens=2, dump_token_ids=DUMP_IDS, dump_token_offset=1)
    torch.manual_seed(0)
    return DumpEmbedModel(DumpEmbedConfig(**{**values, **overrides})).eval()


def rng_tensor(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).standard_normal(shape)).float()


def test_spectral_matrix_is_the_tempered_basis_with_the_default_eps() -> None:
    basis, eigenvalues = rng_tensor(5, 5), torch.tensor([4.0, 1.0, 1e-6, 0.0, 0.0])
    got = spectral_matrix(basis, eigenvalues, 0.5, 3)
    scale = (eigenvalues[:3].double() + 1e-6) ** -0.25
    assert SPECTRAL_EPS == 1e-6
    assert got.dtype == torch.float32 and got.shape == (5, 3)
    torch.testing.assert_close(got, (basis[:, :3].double() * scale).float(), rtol=0, atol=0)
    # eps is used as given; gamma may be a tensor
    other = spectral_matrix(basis, eigenvalues, torch.tensor(1.0), 3, eps=1e-3)
    torch.testing.assert_close(other[:, 2], (basis[:, 2].double() * (1e-6 + 1e-3) ** -0.5).float())


def test_band_matrix_is_the_middle_band_and_a_copy() -> None:
    basis = torch.arange(36, dtype=torch.float32).reshape(6, 6)
    assert torch.equal(band_matrix(basis, 2), basis[:, 2:4])
    assert torch.equal(band_matrix(basis, 3), basis[:, 1:4])
    assert torch.equal(band_matrix(basis, 6), basis)
    band = band_matrix(basis, 2)
    band += 1
    assert basis[0, 2] == 2


def test_projection_buffers_per_selection() -> None:
    names = {sel: {n for n, _ in DumpProjection(4, 3, sel).named_buffers()} for sel in (None, "prefix", "band",
                                                                                        "spectral", "auto")}
    assert names[None] == names["prefix"] == {"mean", "matrix"}
    assert names["band"] == {"mean", "matrix", "basis"}
    assert names["spectral"] == {"mean", "matrix", "basis", "eigenvalues", "gammas"}
    assert names["auto"] == names["spectral"] | {"centre", "routes"}
    plain = DumpProjection(4, 3)
    assert torch.equal(plain.matrix, torch.eye(4, 3)) and torch.equal(plain.mean, torch.zeros(4))
    assert plain.eps == SPECTRAL_EPS and DumpProjection(4, 3, eps=0.5).eps == 0.5
    with pytest.raises(ValueError, match="selection must be one of"):
        DumpProjection(4, 3, "svd")


def test_projection_routes_and_matrices_for_each_selection() -> None:
    auto = DumpProjection(4, 4, "auto")
    auto.routes.copy_(torch.tensor([0.0, 1.0, 2.0, 0.0]))
    assert [auto.route(k) for k in (1, 2, 3, 4)] == ["centred", "uncentred", "prefix", "centred"]
    assert DumpProjection(4, 4, "prefix").route(2) == "prefix"
    assert DumpProjection(4, 4, "spectral").route(2) == "centred" == DumpProjection(4, 4).route(2)
    auto.basis.copy_(rng_tensor(4, 4))
    auto.eigenvalues.copy_(torch.tensor([3.0, 2.0, 1.0, 0.5]))
    auto.gammas.copy_(torch.tensor([0.1, 0.2, 0.3, 0.4]))
    assert torch.equal(auto.matrix_for(3), torch.eye(4, 3))
    assert torch.equal(auto.matrix_for(2), spectral_matrix(auto.basis, auto.eigenvalues, auto.gammas[1], 2))
    assert torch.equal(auto.matrix_for(4), spectral_matrix(auto.basis, auto.eigenvalues, auto.gammas[3], 4))
    band = DumpProjection(4, 4, "band")
    band.basis.copy_(rng_tensor(4, 4))
    assert torch.equal(band.matrix_for(2), band.basis[:, 1:3])
    assert torch.equal(DumpProjection(4, 4, "prefix").matrix_for(4), torch.eye(4))
    with pytest.raises(ValueError, match="stores no spectrum"):
        DumpProjection(4, 4).matrix_for(2)
    for bad in (0, 5):
        with pytest.raises(ValueError, match="between 1 and 4"):
            DumpProjection(4, 4, "prefix").matrix_for(bad)
    assert DumpProjection(4, 4, "prefix").matrix_for(1).shape == (4, 1)


def test_select_replaces_the_matrix_and_the_auto_mean() -> None:
    auto = DumpProjection(3, 3, "auto")
    auto.eigenvalues.copy_(torch.tensor([2.0, 1.0, 0.5]))
    auto.centre.copy_(torch.tensor([1.0, 2.0, 3.0]))
    auto.routes.copy_(torch.tensor([1.0, 0.0, 2.0]))
    auto.select(2)
    assert torch.equal(auto.mean, auto.centre) and auto.matrix.shape == (3, 2)
    auto.mean += 1
    assert torch.equal(auto.centre, torch.tensor([1.0, 2.0, 3.0]))  # the mean is a copy of the centre
    for k in (1, 3):
        auto.select(k)
        assert torch.equal(auto.mean, torch.zeros(3)) and auto.matrix.shape == (3, k)
    spectral = DumpProjection(3, 3, "spectral")
    spectral.centre = torch.ones(3)
    spectral.select(2)
    assert torch.equal(spectral.mean, torch.zeros(3))
    spectral.eigenvalues.copy_(torch.tensor([-1.0, 1.0, 1.0]))
    spectral.gammas.fill_(1.0)
    with pytest.raises(ValueError, match="projection_dim=2 is not finite"):
        spectral.select(2)


def test_projection_forward_centres_then_maps_in_fp32() -> None:
    projection = DumpProjection(3, 2)
    projection.mean.copy_(torch.tensor([1.0, 0.0, -1.0]))
    projection.matrix.copy_(torch.tensor([[1.0, 2.0], [0.0, 1.0], [3.0, 0.0]]))
    out = projection(torch.tensor([[2.0, 1.0, 0.0]], dtype=torch.float64))
    assert out.dtype == torch.float32
    assert torch.equal(out, torch.tensor([[4.0, 3.0]]))


def test_check_loading_info_names_missing_and_misshapen_tensors() -> None:
    check_loading_info({})
    check_loading_info({"missing_keys": [], "mismatched_keys": []})
    with pytest.raises(ValueError, match=r"lacks 2 tensor\(s\) the model needs: a, b\. The"):
        check_loading_info({"missing_keys": ["b", "a"]})
    many = [f"k{i}" for i in range(9)]
    with pytest.raises(ValueError, match=r"lacks 9 .*k0, k1, k2, k3, k4, k5, k6, k7 \.\.\."):
        check_loading_info({"missing_keys": many})
    with pytest.raises(ValueError, match=r"lacks 8 .*k7\. The"):
        check_loading_info({"missing_keys": many[:8]})
    shaped = [("w", (2, 3), (3, 3)), "odd"]
    expected = r"another shape .*: w \(checkpoint \(2, 3\), config expects \(3, 3\)\); odd\. "
    with pytest.raises(ValueError, match=expected):
        check_loading_info({"mismatched_keys": shaped})
    with pytest.raises(ValueError, match=r": \('w', 1\)\. "):
        check_loading_info({"mismatched_keys": [("w", 1)]})


def test_check_finite_names_bad_tensors_and_dump_rows() -> None:
    model = tiny()
    check_finite(model)
    with torch.no_grad():
        model.get_input_embeddings().weight[31, 0] = float("inf")
    with pytest.raises(ValueError, match=r"\[DUMP2\] embedding row \(id 31\)") as error:
        check_finite(model, prefix="m.")
    assert "m.backbone.embeddings.word_embeddings.weight" in str(error.value)
    assert "[DUMP1]" not in str(error.value)
    projection = DumpProjection(3, 3)
    projection.mean[0] = float("nan")
    with pytest.raises(ValueError, match=r"non-finite values \(NaN or inf\) in p\.mean: every"):
        check_finite(projection, prefix="p.")
    many = torch.nn.ModuleList(DumpProjection(2, 2) for _ in range(5))
    for module in many:
        module.matrix[0, 0] = float("nan")
        module.mean[0] = float("nan")
    with pytest.raises(ValueError, match=r"3\.mean, 3\.matrix \.\.\.: every"):
        check_finite(many)
    exact = torch.nn.ModuleList(DumpProjection(2, 2) for _ in range(4))
    for module in exact:
        module.matrix[0, 0] = float("nan")
        module.mean[0] = float("nan")
    with pytest.raises(ValueError, match=r"3\.mean, 3\.matrix: every"):
        check_finite(exact)


def test_first_and_last_token_index_under_both_paddings() -> None:
    mask = torch.tensor([[1, 1, 1, 0, 0], [0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 1, 1, 0, 0]])
    assert first_token_index(mask).tolist() == [0, 2, 0, 1]
    assert last_token_index(mask).tolist() == [2, 4, 4, 2]


def test_projection_dim_argument_is_checked_and_recorded() -> None:
    model = tiny()
    assert model.config.projection_dim == 8 and model.projection.matrix.shape == (8, 8)
    assert model._absolute_positions and model._backbone_takes_position_ids
    for bad in (True, 0, 9, 2.0):
        with pytest.raises(ValueError, match=r"projection_dim must be an integer between 1 and 8"):
            DumpEmbedModel(tiny().config, projection_dim=bad)
    config = tiny().config
    config.projection_info = {"selection": "prefix", "dim": 8}
    model = DumpEmbedModel(config, projection_dim=1)
    assert model.config.projection_dim == 1 and model.projection.matrix.shape == (8, 8)
    assert DumpEmbedModel(tiny().config, projection_dim=8).config.projection_dim == 8
    config = tiny().config
    config.projection_info = {"method": "fixed", "dim": 8}
    with pytest.raises(ValueError, match=r"projection_dim=4 was asked for, .* output dimension 8 \(method 'fixed'"):
        DumpEmbedModel(config, projection_dim=4)
    config.projection_info = {"dim": 8}
    with pytest.raises(ValueError, match=r"method 'identity'"):
        DumpEmbedModel(config, projection_dim=4)
    config = tiny().config
    config.projection_info = {"selection": "spectral", "dim": 8, "params": {"eps": 0.25}}
    assert DumpEmbedModel(config).projection.eps == 0.25
    config.projection_info = {"selection": "spectral", "dim": 8, "eps": 0.5}  # written before "params"
    assert DumpEmbedModel(config).projection.eps == 0.5


@pytest.mark.parametrize("nested", [True, False], ids=["params", "flat-before-params"])
def test_apply_projection_dim_keeps_the_provenance_in_step(nested: bool) -> None:
    config = tiny().config
    params = {"knee_fallback": True, "knee": 4, "gamma": 0.9}
    config.projection_info = {"selection": "auto", "dim": 8, **({"params": params} if nested else params)}
    model = DumpEmbedModel(config)
    model.projection.gammas.copy_(torch.linspace(0.1, 0.8, 8))
    model.projection.eigenvalues.fill_(1.0)
    model.projection.routes.copy_(torch.tensor([0, 0, 0, 1, 0, 2, 0, 0], dtype=torch.float32))

    def recorded() -> dict:
        info = model.config.projection_info
        assert ("params" in info) == nested and "gamma" not in (info if nested else {})
        return info["params"] if nested else info

    model.apply_projection_dim(4)
    assert model.config.projection_info["dim"] == 4 == model.config.projection_dim
    assert recorded()["route"] == "uncentred" and recorded()["gamma"] == pytest.approx(0.4) and recorded()["knee"] == 2
    model.apply_projection_dim(6)
    assert recorded()["route"] == "prefix" and recorded()["gamma"] is None
    model.apply_projection_dim(1)
    assert recorded()["knee"] == 1
    spectral = tiny().config
    spectral.projection_info = {"selection": "spectral", "dim": 8, "knee": 5}
    model = DumpEmbedModel(spectral)
    model.projection.gammas.fill_(0.5)
    model.apply_projection_dim(2)
    assert model.config.projection_info == {"selection": "spectral", "dim": 2, "knee": 5, "gamma": 0.5}
    band = tiny().config
    band.projection_info = {"selection": "band", "dim": 8}
    model = DumpEmbedModel(band)
    model.apply_projection_dim(8)  # same dimension: nothing changes
    assert model.config.projection_info == {"selection": "band", "dim": 8}
    model.apply_projection_dim(3)
    assert model.config.projection_info == {"selection": "band", "dim": 3}


def test_check_dump_prefix_under_both_paddings() -> None:
    model = tiny()
    right = torch.tensor([[2, 30, 31, 5, 3, 0], [2, 30, 31, 3, 0, 0]])
    model.check_dump_prefix(right, (right != 0).long())
    left = torch.tensor([[0, 0, 2, 30, 31, 3]])
    model.check_dump_prefix(left, (left != 0).long())
    bad = torch.tensor([[2, 30, 31, 5], [2, 31, 30, 5], [2, 30, 31, 5]])
    with pytest.raises(ValueError, match=r"1 input row\(s\) .*expected ids \[30, 31\] at positions \[1, 2\] of row 1, "
                                         r"found \[31, 30\]"):
        model.check_dump_prefix(bad, torch.ones_like(bad))
    with pytest.raises(ValueError, match="too short to hold the 2"):
        model.check_dump_prefix(torch.tensor([[2, 30]]), torch.ones(1, 2, dtype=torch.long))
    model.check_dump_prefix(torch.tensor([[2, 30, 31]]), torch.ones(1, 3, dtype=torch.long))
    tiny(num_dump_tokens=0, dump_token_ids=[]).check_dump_prefix(torch.tensor([[5]]), torch.ones(1, 1))


def test_without_dump_positions_under_both_paddings() -> None:
    model = tiny()
    mask = torch.tensor([[1, 1, 1, 1, 1, 0], [0, 1, 1, 1, 1, 1]])
    assert model.without_dump_positions(mask).tolist() == [[1, 0, 0, 1, 1, 0], [0, 1, 0, 0, 1, 1]]
    plain = tiny(num_dump_tokens=0, dump_token_ids=[])
    assert plain.without_dump_positions(mask) is mask


def test_pool_each_mode_on_known_states() -> None:
    model = tiny(pooling="mean")
    states = (torch.arange(2 * 5 * 2, dtype=torch.float32).reshape(2, 5, 2) - 7) ** 2  # not an arithmetic series
    mask = torch.tensor([[1, 1, 1, 1, 0], [0, 1, 1, 1, 1]])

    def mean_over(keep: list[list[int]]) -> torch.Tensor:
        weights = torch.tensor(keep, dtype=torch.float32)[..., None]
        return (states * weights).sum(dim=1) / weights.sum(dim=1)

    assert torch.equal(model.pool(states, mask, "cls"), states[[0, 1], [0, 1]])
    assert torch.equal(model.pool(states, mask, "last"), states[[0, 1], [3, 4]])
    torch.testing.assert_close(model.pool(states, mask), mean_over([[1, 1, 1, 1, 0], [0, 1, 1, 1, 1]]))
    # mean_no_dump leaves out the [DUMP] slots: positions 1, 2 (row 0) and 2, 3 (row 1)
    torch.testing.assert_close(model.pool(states, mask, "mean_no_dump"), mean_over([[1, 0, 0, 1, 0], [0, 1, 0, 0, 1]]))
    torch.testing.assert_close(tiny(pooling="mean_no_dump").pool(states, mask), mean_over([[1, 0, 0, 1, 0],
                                                                                          [0, 1, 0, 0, 1]]))
    assert torch.equal(model.pool(states, torch.zeros(2, 5, dtype=torch.long)), torch.zeros(2, 2))
    assert torch.equal(tiny(pooling="last").pool(states, mask), states[[0, 1], [3, 4]])


def test_head_normalises_as_configured() -> None:
    pooled = torch.tensor([[3.0, 4.0] + [0.0] * 6, [0.0, 0.0, 0.0, 2.0] + [0.0] * 4])
    torch.testing.assert_close(tiny().head(pooled), pooled / torch.tensor([[5.0], [2.0]]))
    raw = tiny(normalize=False)
    raw.projection.mean.fill_(1.0)
    torch.testing.assert_close(raw.head(pooled), pooled - 1)
    both = tiny(normalize=False, normalize_pooled=True)
    both.projection.mean.fill_(1.0)
    torch.testing.assert_close(both.head(pooled), pooled / torch.tensor([[5.0], [2.0]]) - 1)


def test_forward_outputs_and_left_padding_positions() -> None:
    model = tiny(normalize_pooled=True, pooling="mean")
    ids = torch.tensor([[2, 30, 31, 5, 6, 3]])
    with torch.no_grad():
        out = model(ids)
        left = model(torch.tensor([[0, 0, 2, 30, 31, 5, 6, 3]]), torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1]]))
        typed = model(ids, token_type_ids=torch.ones_like(ids))
        hidden = model(ids, output_hidden_states=True, return_dict=False)
    torch.testing.assert_close(left.sentence_embedding, out.sentence_embedding, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(typed.sentence_embedding, out.sentence_embedding)
    assert out.sentence_embedding.shape == (1, 8) and out.last_hidden_state.shape == (1, 6, 8)
    torch.testing.assert_close(out.pooled_embedding.norm(dim=-1), torch.ones(1))
    torch.testing.assert_close(out.sentence_embedding, out.pooled_embedding)
    assert out.hidden_states is None and len(hidden.hidden_states) == 2
    with pytest.raises(ValueError, match="needs input_ids"):
        model(None)
    with pytest.raises(ValueError, match="inputs of 25 tokens exceed this model's limit of 24"):
        model(torch.cat([ids, torch.full((1, 19), 5)], dim=1))
    model(torch.cat([ids, torch.full((1, 18), 5)], dim=1))


def prompt_model(mode: str, limit: int = 24) -> DumpEmbedModel:
    pieces = {"prefix": [7, 8], "middle": [9], "suffix": [10, 11], "num_trailing_special": 1}
    return tiny(prompt_mode=mode, prompt_token_ids=pieces, max_position_embeddings=limit, pooling="last")


def test_compose_prompteol_and_echo_rows() -> None:
    ids = torch.tensor([[2, 30, 31, 5, 6, 3], [2, 30, 31, 5, 3, 0]])
    mask = (ids != 0).long()
    new_ids, new_mask, pool = prompt_model("prompteol").compose_prompt(ids, mask)
    assert pool is None
    assert new_ids.tolist() == [[2, 30, 31, 7, 8, 5, 6, 10, 11], [0, 2, 30, 31, 7, 8, 5, 10, 11]]
    assert new_mask.tolist() == [[1] * 9, [0] + [1] * 8]
    new_ids, new_mask, pool = prompt_model("echo").compose_prompt(ids, mask)
    assert new_ids.tolist() == [[2, 30, 31, 7, 8, 5, 6, 9, 5, 6, 10, 11, 3],
                                [0, 0, 2, 30, 31, 7, 8, 5, 9, 5, 10, 11, 3]]
    assert pool.tolist() == [[0] * 8 + [1] * 5, [0] * 9 + [1] * 4]
    assert new_mask.dtype == mask.dtype and new_ids.dtype == ids.dtype


def test_compose_prompt_truncates_the_text_to_the_position_limit() -> None:
    ids = torch.tensor([[2, 30, 31] + list(range(12, 22)) + [3]])
    mask = torch.ones_like(ids)
    # prompteol: 3 lead + 2 prefix + 2 suffix = 7 fixed, limit 12 -> 5 text tokens
    new_ids, _, _ = prompt_model("prompteol", limit=12).compose_prompt(ids, mask)
    assert new_ids.tolist() == [[2, 30, 31, 7, 8, 12, 13, 14, 15, 16, 10, 11]]
    # echo: 7 fixed + 1 middle + 1 trailing = 9, limit 16 -> 3 text tokens per copy
    new_ids, _, _ = prompt_model("echo", limit=16).compose_prompt(ids, mask)
    assert new_ids.tolist() == [[2, 30, 31, 7, 8, 12, 13, 14, 9, 12, 13, 14, 10, 11, 3]]
    # never fewer than one text token
    new_ids, _, _ = prompt_model("prompteol", limit=4).compose_prompt(ids, mask)
    assert new_ids.tolist() == [[2, 30, 31, 7, 8, 12, 10, 11]]


def test_forward_with_a_prompt_pools_the_composed_rows() -> None:
    model = prompt_model("echo")
    ids = torch.tensor([[2, 30, 31, 5, 6, 3]])
    with torch.no_grad():
        out = model(ids, token_type_ids=torch.ones_like(ids))
        composed, mask, pool = model.compose_prompt(ids, torch.ones_like(ids))
        states = model.backbone(input_ids=composed, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(out.pooled_embedding, model.pool(states, pool, "mean"))


def test_from_pretrained_recomposes_and_refuses(tmp_path) -> None:
    config = tiny().config
    config.projection_info = {"selection": "prefix", "dim": 8}
    DumpEmbedModel(config).save_pretrained(tmp_path / "prefix")
    model, info = DumpEmbedModel.from_pretrained(tmp_path / "prefix", projection_dim=3, output_loading_info=True)
    assert model.projection.matrix.shape == (8, 3) and model.config.projection_info["dim"] == 3
    assert not info["missing_keys"] and not info["mismatched_keys"]
    assert isinstance(DumpEmbedModel.from_pretrained(tmp_path / "prefix"), DumpEmbedModel)
    with pytest.raises(ValueError, match="ignore_mismatched_sizes=True"):
        DumpEmbedModel.from_pretrained(tmp_path / "prefix", ignore_mismatched_sizes=True)
    fixed = tiny().config
    fixed.projection_dim = 4
    DumpEmbedModel(fixed).save_pretrained(tmp_path / "fixed")
    with pytest.raises(ValueError, match="another output dimension than the projection_dim asked for"):
        DumpEmbedModel.from_pretrained(tmp_path / "fixed", projection_dim=8, projection_info={"dim": 8})


@pytest.mark.parametrize(("field", "value", "message"), [
    ("pooling", "maximum", "'pooling' expected one of"),
    ("num_dump_tokens", True, "'num_dump_tokens' expected int, got bool"),
    ("num_dump_tokens", -1, "num_dump_tokens must be an integer >= 0"),
    ("dump_token_ids", [30, -1], "dump_token_ids must be non-negative"),
    ("dump_token_ids", [30, True], "'dump_token_ids' with value \\[30, True\\]"),
    ("dump_token_ids", ["30", 31], "'dump_token_ids' with value"),
    ("dump_token_ids", [30, 31, 32], "must list exactly num_dump_tokens=2 ids; got 3"),
    ("dump_token_offset", -1, "dump_token_offset must be >= 0; got -1"),
    ("projection_dim", 0, "projection_dim must be between 1 and the pooled embedding size 8; got 0"),
    ("projection_dim", 9, "embedding size 8; got 9"),
    ("normalize", 1, r"'normalize' expected bool, got int \(value: 1\)"),
    ("base_model", 3, "'base_model' with value 3"),
    ("prompt_mode", "chat", "'prompt_mode' expected one of"),
    ("prompt_mode", "echo", "needs prompt_token_ids"),
    ("similarity_fn_name", "cos", "'similarity_fn_name' expected one of"),
    ("default_prompt_name", "query", "is not one of the prompts"),
    ("prompt_token_ids_excluded", [[1]], "only used with include_prompt=False"),
    ("dense_layers", [{"in_features": 7, "out_features": 4}], r"dense_layers\[0\] must map 8 features"),
])
def test_config_refuses_bad_fields_when_set_and_when_validated(field: str, value: object, message: str) -> None:
    """A field of the wrong type is refused as it is set; fields that disagree with each other when validated (as
    the model's constructor and save_pretrained do)."""
    config = tiny().config
    with pytest.raises(StrictDataclassError, match=message):
        setattr(config, field, value)
        config.validate()


def test_config_defaults_and_edges() -> None:
    config = DumpEmbedConfig(text_config=text_config())
    assert config.dump_token_ids == [] and config.projection_info == {} and config.training_info == {}
    assert config.projection_dim == 8 == config.hidden_size and config.max_position_embeddings == 24
    assert DumpEmbedConfig(text_config=text_config(), max_position_embeddings=10).max_position_embeddings == 10
    edge = DumpEmbedConfig(text_config=text_config(), projection_dim=1, dump_token_offset=0, pooling="mean_no_dump",
                           num_dump_tokens=1, dump_token_ids=[0])
    edge.base_model = None
    edge.validate()
    assert DumpEmbedConfig(text_config=text_config(), prompt_mode="prompteol",
                           prompt_token_ids={"prefix": [1]}).prompt_mode == "prompteol"


def test_spectral_gamma_is_applied_in_float64() -> None:
    # a Python-float γ rounded to fp32 would move (1e30)^(−γ/2) by ~4e-7 relative: visible in the fp32 result
    basis, eigenvalues = torch.eye(2), torch.tensor([1e30, 1e20])
    got = spectral_matrix(basis, eigenvalues, 0.3, 2, eps=0.0)
    expected = torch.tensor([1e30, 1e20], dtype=torch.float64) ** -0.15
    assert torch.equal(got.diagonal(), expected.float())


def test_forward_keeps_given_position_ids_and_one_left_pad() -> None:
    model = tiny(pooling="mean")
    ids = torch.tensor([[2, 30, 31, 5, 6, 3]])
    padded, mask = torch.tensor([[0, 2, 30, 31, 5, 6, 3]]), torch.tensor([[0, 1, 1, 1, 1, 1, 1]])
    given = torch.tensor([[5, 6, 7, 8, 9, 10, 11]])
    with torch.no_grad():
        plain = model(ids).sentence_embedding
        one_pad = model(padded, mask).sentence_embedding
        explicit = model(padded, mask, position_ids=given).pooled_embedding
        states = model.backbone(input_ids=padded, attention_mask=mask, position_ids=given).last_hidden_state
    torch.testing.assert_close(one_pad, plain, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(explicit, model.pool(states, mask))


def test_forward_returns_attentions_and_reads_tuple_backbones() -> None:
    model = tiny()
    model.set_attn_implementation("eager")
    ids = torch.tensor([[2, 30, 31, 5, 3]])
    with torch.no_grad():
        out = model(ids, output_attentions=True)
    assert out.attentions is not None and len(out.attentions) == 1 and out.attentions[0].shape == (1, 2, 5, 5)
    tuples = tiny(text_config=text_config(return_dict=False))
    with torch.no_grad():
        assert tuples(ids).last_hidden_state.shape == (1, 5, 8)


def test_input_embeddings_are_the_backbones() -> None:
    model = tiny()
    table = torch.nn.Embedding(40, 8)
    model.set_input_embeddings(table)
    assert model.get_input_embeddings() is table is model.backbone.embeddings.word_embeddings


def test_compose_prompt_defaults_without_trailing_count_or_position_limit() -> None:
    model = tiny(prompt_mode="prompteol", prompt_token_ids={"prefix": [7], "suffix": [10]}, pooling="last")
    ids = torch.tensor([[2, 30, 31, 5, 6, 3]])
    new_ids, _, _ = model.compose_prompt(ids, torch.ones_like(ids))
    assert new_ids.tolist() == [[2, 30, 31, 7, 5, 6, 3, 10]]  # no trailing specials: [SEP] stays in the text
    model.config.max_position_embeddings = None
    long = torch.tensor([[2, 30, 31] + [5] * 120])
    new_ids, _, _ = model.compose_prompt(long, torch.ones_like(long))
    assert new_ids.shape == (1, 125)


def test_forward_normalises_each_pooled_row() -> None:
    model = tiny(normalize_pooled=True)
    ids = torch.tensor([[2, 30, 31, 5, 6, 3], [2, 30, 31, 7, 3, 0]])
    with torch.no_grad():
        out = model(ids, (ids != 0).long())
    torch.testing.assert_close(out.pooled_embedding.norm(dim=-1), torch.ones(2))


def test_projection_buffers_are_fp32_persistent_and_reset_by_init_weights() -> None:
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        projection = DumpProjection(3, 2, "auto")
    finally:
        torch.set_default_dtype(default)
    assert {name: t.dtype for name, t in projection.state_dict().items()} == {
        name: torch.float32 for name in ("mean", "matrix", "basis", "eigenvalues", "gammas", "centre", "routes")}
    for tensor in projection.buffers():
        tensor.fill_(3.0)
    tiny()._init_weights(projection)
    assert torch.equal(projection.matrix, torch.eye(3, 2)) and torch.equal(projection.basis, torch.eye(3))
    for name in ("mean", "eigenvalues", "gammas", "centre", "routes"):
        assert torch.equal(getattr(projection, name), torch.zeros(3)), name


def test_matrix_for_uses_the_stored_eps() -> None:
    projection = DumpProjection(2, 2, "spectral", eps=0.5)
    projection.gammas.fill_(1.0)
    assert torch.allclose(projection.matrix_for(2), torch.eye(2) * 0.5**-0.5)


def test_absolute_position_tables_are_detected_by_name() -> None:
    from transformers import GPT2Config, LlamaConfig

    llama = LlamaConfig(vocab_size=40, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                        num_key_value_heads=1, intermediate_size=16, max_position_embeddings=24)
    gpt2 = GPT2Config(vocab_size=40, n_embd=8, n_layer=1, n_head=2, n_positions=24)
    assert not tiny(text_config=llama)._absolute_positions
    assert tiny(text_config=gpt2)._absolute_positions and tiny()._absolute_positions


def test_from_pretrained_loads_a_fixed_projection_as_saved(tmp_path) -> None:
    fixed = tiny().config
    fixed.projection_dim = 4
    DumpEmbedModel(fixed).save_pretrained(tmp_path)
    assert DumpEmbedModel.from_pretrained(tmp_path).projection.matrix.shape == (8, 4)


def test_knee_fallback_is_an_integer_half() -> None:
    config = tiny().config
    config.projection_info = {"selection": "spectral", "dim": 8, "params": {"knee_fallback": True}}
    model = DumpEmbedModel(config)
    model.apply_projection_dim(5)
    knee = model.config.projection_info["params"]["knee"]
    assert knee == 2 and isinstance(knee, int)


def test_check_finite_needs_no_embeddings_without_dump_ids() -> None:
    from types import SimpleNamespace

    module = torch.nn.Linear(2, 2)
    module.config = SimpleNamespace(dump_token_ids=[1])
    check_finite(module)


def test_compose_prompt_pads_with_the_backbones_pad_id() -> None:
    pieces = {"prefix": [7], "suffix": [10], "num_trailing_special": 0}
    ids = torch.tensor([[2, 30, 31, 5, 6], [2, 30, 31, 5, 0]])
    mask = (ids != 0).long()
    for pad, expected in ((5, 5), (None, 0)):
        model = tiny(text_config=text_config(pad_token_id=pad), prompt_mode="prompteol", prompt_token_ids=pieces,
                     pooling="last")
        new_ids, _, _ = model.compose_prompt(ids, mask)
        assert new_ids[1, 0].item() == expected and new_ids[1, 1:].tolist() == [2, 30, 31, 7, 5, 10]


# Property-based (hypothesis): the inputs are a space, not a few examples.


POOLINGS = ["cls", "last", "mean", "mean_no_dump"]


@pytest.fixture(scope="module")
def loaded(bert_dump_model: Path, llama_dump_model: Path) -> dict[str, tuple]:
    """The two tiny DumpEmbed models (encoder: [CLS] + K=4; decoder: BOS + K=3), loaded through AutoModel."""
    out = {}
    for name, folder in (("bert", bert_dump_model), ("llama", llama_dump_model)):
        model = AutoModel.from_pretrained(folder, trust_remote_code=True).eval()
        out[name] = (model, AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True))
    return out


def _embed_on_side(model, tokenizer, batch: list[str], side: str) -> torch.Tensor:
    tokenizer.padding_side = side
    with torch.inference_mode():
        return model(**tokenizer(batch, padding=True, return_tensors="pt")).sentence_embedding


@FIXTURE_SETTINGS
@given(name=st.sampled_from(["bert", "llama"]), pooling=st.sampled_from(POOLINGS),
       side=st.sampled_from(["left", "right"]), batch=st.lists(texts, min_size=1, max_size=6))
def test_each_row_is_the_text_alone_whatever_the_padding_pooling_and_batch(loaded, name, pooling, side, batch):
    """Each row of a padded batch equals the same text encoded alone (no padding at all), for every pooling mode,
    either padding side and any batch composition (duplicates, lengths, order)."""
    model, tokenizer = loaded[name]
    model.config.pooling = pooling
    try:
        together = _embed_on_side(model, tokenizer, batch, side)
        alone = torch.cat([_embed_on_side(model, tokenizer, [text], side) for text in batch])
    finally:
        model.config.pooling = {"bert": "cls", "llama": "last"}[name]
    torch.testing.assert_close(together, alone, atol=1e-5, rtol=0)
