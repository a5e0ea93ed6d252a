"""Prefix caching on causal backbones: the states of BOS / [DUMP1..K] / a prompt's opening are computed once and the
backbone runs on the rest; the vectors equal the plain forward's (left and right padding, every load path), the cache
is really used, follows weight changes, stays out of training, and falls back (logged) where it cannot be exact."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from huggingface_hub.errors import StrictDataclassError
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed.export.verify import MTEB_METADATA_TASK
from hf_dumpembed.model.builder import BuildOptions, build
from hf_dumpembed.remote.configuration_dumpembed import DumpEmbedConfig
from hf_dumpembed.remote.modeling_dumpembed import DumpEmbedModel

TEXTS = ["A man is eating food.", "a", "Dense retrieval ranks passages by cosine similarity " * 4,
         "The girl is carrying a baby.", "Two men pushed carts through the woods."]
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def folders(tiny_llama: Path, tiny_qwen2: Path, tiny_gpt2: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> Callable[[str], Path]:
    """``folders(name) -> Path``, each built once: Llama (BOS) K = 4 / K = 0, Qwen2 (no BOS, as SmolLM2) K = 4 /
    K = 0, GPT-2 (absolute positions) K = 4, and the PromptEOL and ECHO prompts (K = 4 on Llama, K = 4 on Qwen2)."""
    recipes = {
        "gpt2-k4": (tiny_gpt2, BuildOptions(num_dump_tokens=4)),
        "llama-k4": (tiny_llama, BuildOptions(num_dump_tokens=4)),
        "llama-k0": (tiny_llama, BuildOptions(num_dump_tokens=0)),
        "qwen2-k4": (tiny_qwen2, BuildOptions(num_dump_tokens=4)),
        "qwen2-k0": (tiny_qwen2, BuildOptions(num_dump_tokens=0)),
        "llama-prompteol": (tiny_llama, BuildOptions(num_dump_tokens=4, prompt="prompteol")),
        "qwen2-echo": (tiny_qwen2, BuildOptions(num_dump_tokens=4, prompt="echo")),
    }
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            source, options = recipes[name]
            built[name] = build(source, tmp_path_factory.mktemp(name) / "model", options)
        return built[name]

    return get


def dump_model(module: torch.nn.Module) -> DumpEmbedModel:
    """The DumpEmbedModel inside a SentenceTransformer / mteb wrapper (or the model itself)."""
    return next(m for m in module.modules() if type(m).__name__ == "DumpEmbedModel")


def record_lengths(model: DumpEmbedModel) -> list[tuple[int, int]]:
    """(batch, length) of every backbone call from now on."""
    seen: list[tuple[int, int]] = []
    model.backbone.register_forward_pre_hook(
        lambda _module, _args, kwargs: seen.append(tuple(kwargs["input_ids"].shape)), with_kwargs=True)
    return seen


def load(folder: Path, **kwargs) -> tuple[DumpEmbedModel, object]:
    model = AutoModel.from_pretrained(str(folder), trust_remote_code=True, **kwargs).eval()
    return model, AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True)


def run(model: DumpEmbedModel, batch: dict, cache: bool, **kwargs):
    model.config.prefix_cache = cache
    try:
        with torch.inference_mode():
            return model(**batch, **kwargs)
    finally:
        model.config.prefix_cache = True


@pytest.mark.parametrize("name", ["llama-k4", "llama-k0", "qwen2-k4", "gpt2-k4", "llama-prompteol", "qwen2-echo"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_cached_vectors_equal_the_plain_forward(folders, name: str, side: str) -> None:
    model, tokenizer = load(folders(name))
    tokenizer.padding_side = side
    batch = tokenizer(TEXTS, padding=True, truncation=True, return_tensors="pt")
    plain = run(model, batch, cache=False)
    seen = record_lengths(model)
    for _ in range(2):  # the first cached batch is also checked against the plain forward; the second is not
        seen.clear()
        cached = run(model, batch, cache=True)
        diff = (cached.sentence_embedding - plain.sentence_embedding).abs().max().item()
        assert diff <= TOLERANCE, f"{name}, {side} padding: max |Δ| {diff:.1e}"
    mask = batch["attention_mask"].bool()
    if model.config.prompt_mode is None:  # the outputs keep the caller's layout (a prompt re-lays the rows out)
        assert (cached.last_hidden_state[mask] - plain.last_hidden_state[mask]).abs().max() <= TOLERANCE
    prefix = model.constant_prefix_length()
    assert prefix >= 1 and len(model._prefix_cache) == 1
    (key,) = model._prefix_cache
    assert len(key) >= prefix
    longest = plain.last_hidden_state.shape[1]
    assert seen == [(len(TEXTS), longest - len(key))], seen  # one backbone call, on the rows without the prefix


def test_k0_without_bos_has_nothing_to_cache(folders) -> None:
    """SmolLM2-style K = 0 (no BOS, no prompt): no constant first token, so the plain forward runs."""
    model, tokenizer = load(folders("qwen2-k0"))
    batch = tokenizer(TEXTS, padding=True, truncation=True, return_tensors="pt")
    seen = record_lengths(model)
    cached, plain = run(model, batch, cache=True), run(model, batch, cache=False)
    assert torch.equal(cached.sentence_embedding, plain.sentence_embedding)
    assert seen == [tuple(batch["input_ids"].shape)] * 2 and not model._prefix_cache


def test_one_row_batches_reuse_the_cached_prefix(folders) -> None:
    model, tokenizer = load(folders("llama-k4"))
    seen = record_lengths(model)
    with torch.inference_mode():
        for text in TEXTS[:3]:
            one = tokenizer([text], return_tensors="pt")
            cached = model(**one).sentence_embedding
            model.config.prefix_cache = False
            assert (cached - model(**one).sentence_embedding).abs().max() <= TOLERANCE
            model.config.prefix_cache = True
    assert list(model._prefix_cache) == [tuple(tokenizer(TEXTS[0])["input_ids"][:5])]  # BOS + [DUMP1..4]
    prefix_calls = [shape for shape in seen if shape == (1, 5)]
    assert len(prefix_calls) == 1  # computed once, then reused


def test_hidden_states_are_rebuilt_and_attentions_run_the_plain_forward(folders, caplog) -> None:
    model, tokenizer = load(folders("llama-k4"), attn_implementation="eager")
    tokenizer.padding_side = "left"
    batch = tokenizer(TEXTS, padding=True, truncation=True, return_tensors="pt")
    mask = batch["attention_mask"].bool()
    plain = run(model, batch, cache=False, output_hidden_states=True, output_attentions=True)
    seen = record_lengths(model)
    cached = run(model, batch, cache=True, output_hidden_states=True)
    assert len(cached.hidden_states) == len(plain.hidden_states)
    for layer, (a, b) in enumerate(zip(cached.hidden_states, plain.hidden_states, strict=True)):
        assert (a[mask] - b[mask]).abs().max() <= TOLERANCE, f"layer {layer}"
    seen.clear()
    with caplog.at_level(logging.INFO):
        maps = run(model, batch, cache=True, output_attentions=True)
    assert seen == [tuple(batch["input_ids"].shape)] and "output_attentions" in caplog.text
    for a, b in zip(maps.attentions, plain.attentions, strict=True):
        torch.testing.assert_close(a, b)


def test_sentence_transformers_and_mteb_with_instruction_prompts(zoo_source, tmp_path: Path) -> None:
    """Qwen3-Embedding's replica (instruction query prompt, EOS appended, left padding), K = 4: encode_query through
    sentence-transformers and mteb's wrapper cache BOS-less [DUMP] + the instruction, with the plain vectors."""
    import mteb
    from datasets import Dataset
    from mteb.types import PromptType
    from sentence_transformers import SentenceTransformer
    from torch.utils.data import DataLoader

    folder = build(zoo_source("qwen3-embedding"), tmp_path / "model", BuildOptions(num_dump_tokens=4, match_steps=0))
    st = SentenceTransformer(str(folder), trust_remote_code=True)
    model = dump_model(st)
    seen = record_lengths(model)
    cached = st.encode_query(TEXTS, convert_to_numpy=True)
    model.config.prefix_cache = False
    plain = st.encode_query(TEXTS, convert_to_numpy=True)
    model.config.prefix_cache = True
    assert np.abs(cached - plain).max() <= TOLERANCE
    (key,) = model._prefix_cache
    instruction = st.tokenizer(st.prompts["query"], add_special_tokens=False)["input_ids"]
    assert len(key) >= 4 + len(instruction) - 1  # [DUMP1..4] + the instruction (its last token may merge)
    full = seen[-1]  # the plain call
    assert (full[0], full[1] - len(key)) in seen  # the cached call ran on the rows without the prefix

    wrapper = mteb.SentenceTransformerEncoderWrapper(str(folder), trust_remote_code=True)
    inner = dump_model(wrapper.model)
    seen = record_lengths(inner)

    def encode() -> np.ndarray:
        loader = DataLoader(Dataset.from_dict({"text": TEXTS}), batch_size=32)
        return np.asarray(wrapper.encode(loader, task_metadata=mteb.get_task(MTEB_METADATA_TASK).metadata,
                                         hf_split="test",
                                         hf_subset="default", prompt_type=PromptType.query))

    cached = encode()
    inner.config.prefix_cache = False
    plain = encode()
    assert np.abs(cached - plain).max() <= TOLERANCE
    (key,) = inner._prefix_cache
    full = seen[-1]
    assert (full[0], full[1] - len(key)) in seen


def test_cache_follows_weight_changes(folders) -> None:
    model, tokenizer = load(folders("qwen2-k4"))
    batch = tokenizer(TEXTS, padding=True, truncation=True, return_tensors="pt")
    before = run(model, batch, cache=True).sentence_embedding
    rows = model.get_input_embeddings().weight
    with torch.no_grad():
        rows[model.config.dump_token_ids] += 0.5  # an in-place update, as an optimizer step makes
    after, plain = run(model, batch, cache=True), run(model, batch, cache=False)
    assert (after.sentence_embedding - plain.sentence_embedding).abs().max() <= TOLERANCE
    assert (after.sentence_embedding - before).abs().max() > 1e-3
    state = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    state["backbone.norm.weight"] *= 2
    model.load_state_dict(state)
    assert (run(model, batch, cache=True).sentence_embedding
            - run(model, batch, cache=False).sentence_embedding).abs().max() <= TOLERANCE
    model.double()
    assert (run(model, batch, cache=True).sentence_embedding
            - run(model, batch, cache=False).sentence_embedding).abs().max() <= TOLERANCE
    model.train()
    assert not model._prefix_cache


def test_training_and_gradients_never_use_the_cache(folders) -> None:
    model, tokenizer = load(folders("llama-k4"))
    batch = tokenizer(TEXTS, padding=True, truncation=True, return_tensors="pt")
    run(model, batch, cache=True)  # fills the cache
    seen = record_lengths(model)
    full = tuple(batch["input_ids"].shape)
    model(**batch).sentence_embedding.sum().backward()  # eval mode, gradients on
    model.train()
    model(**batch).sentence_embedding.sum().backward()
    assert seen == [full, full]
    grad = model.get_input_embeddings().weight.grad[model.config.dump_token_ids]
    assert bool((grad.abs().sum(dim=1) > 0).all())  # every [DUMP] row is trained


def test_the_switch_turns_it_off(folders) -> None:
    model, tokenizer = load(folders("llama-k4"), prefix_cache=False)
    assert model.config.prefix_cache is False
    batch = tokenizer(TEXTS, padding=True, truncation=True, return_tensors="pt")
    seen = record_lengths(model)
    with torch.inference_mode():
        model(**batch)
    assert seen == [tuple(batch["input_ids"].shape)] and not model._prefix_cache
    with pytest.raises(StrictDataclassError, match="'prefix_cache' expected bool"):
        DumpEmbedConfig(prefix_cache="yes")
    with pytest.raises(StrictDataclassError, match="'prefix_cache' expected bool"):
        load(folders("llama-k4"), prefix_cache=1)


def in_memory(text_config, **overrides) -> DumpEmbedModel:
    values = dict(text_config=text_config, num_dump_tokens=2, dump_token_ids=[30, 31], dump_token_offset=1,
                  pooling="mean")
    torch.manual_seed(0)
    return DumpEmbedModel(DumpEmbedConfig(**{**values, **overrides})).eval()


def llama_config(**overrides):
    from transformers import LlamaConfig

    values = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                  intermediate_size=32, max_position_embeddings=64, bos_token_id=1, pad_token_id=0,
                  architectures=["LlamaForCausalLM"])
    return LlamaConfig(**{**values, **overrides})


def fallback_case(model: DumpEmbedModel, ids: torch.Tensor, caplog, expected: str) -> None:
    """The model gives the plain forward's vectors, with ``expected`` in a log line."""
    mask = torch.ones_like(ids)
    with caplog.at_level(logging.INFO), torch.inference_mode():
        cached = model(input_ids=ids, attention_mask=mask).sentence_embedding
        model.config.prefix_cache = False
        plain = model(input_ids=ids, attention_mask=mask).sentence_embedding
    assert torch.equal(cached, plain)
    assert expected in caplog.text and "plain forward runs" in caplog.text


def test_text_before_the_prefix_falls_back(caplog) -> None:
    """A first token that differs between rows (text where the template's BOS should be) is not cached."""
    model = in_memory(llama_config())
    ids = torch.tensor([[5, 30, 31, 7, 8], [6, 30, 31, 9, 10]])
    fallback_case(model, ids, caplog, "do not share their first 3 tokens")
    model.config.prefix_cache = True
    fallback_case(model, ids[:1], caplog, "are not the backbone's BOS [1]")


def test_encoder_falls_back(caplog) -> None:
    from transformers import BertConfig

    bert = BertConfig(vocab_size=40, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                      max_position_embeddings=24, pad_token_id=0)
    fallback_case(in_memory(bert), torch.tensor([[2, 30, 31, 7, 8], [2, 30, 31, 9, 10]]), caplog, "not causal")


def test_sliding_window_backbone_falls_back(caplog) -> None:
    from transformers import Qwen2Config

    qwen = Qwen2Config(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                       num_key_value_heads=1, intermediate_size=32, max_position_embeddings=64, bos_token_id=1,
                       use_sliding_window=True, sliding_window=3, max_window_layers=0,
                       architectures=["Qwen2ForCausalLM"])
    fallback_case(in_memory(qwen), torch.tensor([[1, 30, 31, 7, 8, 9], [1, 30, 31, 9, 10, 11]]), caplog,
                  "keeps no plain key/value cache")


def test_a_backbone_that_ignores_the_cache_is_caught_by_the_first_check(caplog) -> None:
    model = in_memory(llama_config())
    forward = model.backbone.forward

    @functools.wraps(forward)
    def ignores_cache(*args, **kwargs):
        kwargs.pop("cache", None)
        return forward(*args, **kwargs)

    model.backbone.forward = ignores_cache
    ids = torch.tensor([[1, 30, 31, 7, 8], [1, 30, 31, 9, 10]])
    fallback_case(model, ids, caplog, "gave other states with the cached prefix")
    assert model._prefix_cache_off is not None and not model._prefix_cache


def test_onnx_graph_of_a_decoder_equals_the_cached_torch_vectors(folders, tmp_path: Path) -> None:
    """export-onnx keeps the whole input in the graph (the prefix is computed there); its parity check and this test
    compare it with the torch model's cached forward, under both padding sides."""
    onnxruntime = pytest.importorskip("onnxruntime", reason="pip install 'hf_dumpembed[onnx]'")
    from hf_dumpembed.export.onnx import export_onnx

    folder = folders("llama-k4")
    result = export_onnx(folder, tmp_path / "onnx", fuse=False)
    assert all(p.ok for p in result.parity)
    session = onnxruntime.InferenceSession(str(result.out_dir / "model.onnx"), providers=["CPUExecutionProvider"])
    model, tokenizer = load(folder)
    for side in ("left", "right"):
        tokenizer.padding_side = side
        batch = tokenizer(TEXTS, padding=True, truncation=True, return_tensors="pt")
        seen = record_lengths(model)
        cached = run(model, batch, cache=True).sentence_embedding.numpy()
        width = batch["input_ids"].shape[1]
        assert (len(TEXTS), width - 5) in seen  # the torch side ran on the rows without BOS + [DUMP1..4]
        graph = session.run(["sentence_embedding"], {k: batch[k].numpy() for k in ("input_ids", "attention_mask")})[0]
        assert np.abs(graph - cached).max() <= TOLERANCE, side
