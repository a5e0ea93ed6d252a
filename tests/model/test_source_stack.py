"""A K = 0 folder is a lossless wrapper of its sentence-transformers source: the real all-MiniLM-L6-v2 re-saved by
sentence-transformers 6.2 (new Pooling format), with e5 prompts, with ``include_prompt=False``, with Dense layers
after pooling and stored in bf16 builds into a folder whose every load path gives the source's own vectors; what
cannot be reproduced exactly is refused with the module named.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open
from sentence_transformers import SentenceTransformer
from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed.data.assets import default_encoder_path
from hf_dumpembed.export.stock import export_stock_st
from hf_dumpembed.export.verify import check_load_paths
from hf_dumpembed.model.builder import BuildOptions, build, build_dump_model
from hf_dumpembed.model.source_stack import read_source_stack

TEXTS = [
    "how do I read a file line by line?",
    "Open the file and iterate over it: each item is one line.",
    "x",
    "Dense retrieval ranks passages by the cosine similarity of their embeddings. " * 30,  # truncated at 256
]
E5_PROMPTS = {"query": "query: ", "document": "passage: "}


def _variant(name: str, folder: Path) -> Path:
    """all-MiniLM-L6-v2 re-saved by sentence-transformers 6.2 as the variant ``name``."""
    model = SentenceTransformer(str(default_encoder_path()),
                                model_kwargs={"dtype": torch.bfloat16} if name == "bf16" else {})
    if name in ("e5", "no_prompt_in_pool"):
        model.prompts = dict(E5_PROMPTS)
    if name == "no_prompt_in_pool":
        model[1].include_prompt = False
    if name == "dense":
        torch.manual_seed(0)
        model = SentenceTransformer(modules=[
            model[0], model[1],
            Dense(384, 256, bias=True, activation_function=torch.nn.Identity()),
            Dense(256, 128, bias=False, activation_function=torch.nn.Identity()),
            model[2],
        ], prompts=dict(E5_PROMPTS), default_prompt_name="query")
    model.save(str(folder))
    return folder


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """(source, K = 0 folder built with default options) per variant."""
    out = {}
    for name in ("resaved", "e5", "no_prompt_in_pool", "dense", "bf16"):
        root = tmp_path_factory.mktemp(name)
        source = _variant(name, root / "source")
        out[name] = (source, build(source, root / "k0", BuildOptions(num_dump_tokens=0)))
    return out


@pytest.mark.parametrize("name", ["resaved", "e5", "no_prompt_in_pool", "dense", "bf16"])
def test_k0_folder_gives_the_sources_vectors_on_every_path(variants, name, tmp_path):
    source_dir, folder = variants[name]
    source = SentenceTransformer(str(source_dir))
    ours = SentenceTransformer(str(folder), trust_remote_code=True)
    assert (ours.prompts, ours.default_prompt_name, ours.similarity_fn_name) == (
        source.prompts, source.default_prompt_name, source.similarity_fn_name)
    assert ours.max_seq_length == source.max_seq_length
    for encode in ("encode", "encode_query", "encode_document"):
        expected = getattr(source, encode)(TEXTS)
        np.testing.assert_allclose(getattr(ours, encode)(TEXTS), expected, atol=1e-5, rtol=0, err_msg=encode)
    for prompt_name in source.prompts:
        np.testing.assert_allclose(ours.encode(TEXTS, prompt_name=prompt_name),
                                   source.encode(TEXTS, prompt_name=prompt_name), atol=1e-5, rtol=0)
    # AutoModel with the prompt written out, as a transformers user does it
    model = AutoModel.from_pretrained(str(folder), trust_remote_code=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True)
    prompt = source.prompts.get("query", "")
    with torch.no_grad():
        batch = tokenizer([prompt + t for t in TEXTS], padding=True, truncation=True, return_tensors="pt")
        vectors = model(**batch).sentence_embedding.float().numpy()
    np.testing.assert_allclose(vectors, source.encode_query(TEXTS), atol=1e-5, rtol=0)
    # MTEB's wrapper and the stock export (no remote code) agree with AutoModel
    stock = export_stock_st(folder, tmp_path / "stock")
    report = check_load_paths(folder, TEXTS, stock_export_dir=stock)
    assert report.ok, report.describe()
    np.testing.assert_allclose(SentenceTransformer(str(stock)).encode_query(TEXTS), source.encode_query(TEXTS),
                               atol=1e-5, rtol=0)


def test_include_prompt_false_leaves_the_prompt_out_and_is_not_a_no_op(variants):
    with_prompt = SentenceTransformer(str(variants["e5"][1]), trust_remote_code=True)
    without = SentenceTransformer(str(variants["no_prompt_in_pool"][1]), trust_remote_code=True)
    assert np.abs(with_prompt.encode_query(TEXTS) - without.encode_query(TEXTS)).max() > 0.01
    config = json.loads((variants["no_prompt_in_pool"][1] / "config.json").read_text())
    assert config["include_prompt"] is False
    # "query: " and "passage: " as the tokenizer makes them alone: [CLS] + the prompt (sentence-transformers' rule)
    tokenizer = AutoTokenizer.from_pretrained(str(variants["e5"][0]))
    assert sorted(config["prompt_token_ids_excluded"]) == sorted(
        tokenizer(p)["input_ids"][:-1] for p in E5_PROMPTS.values())


def test_dense_layers_are_folded_and_a_fit_composes_on_top(variants, tmp_path):
    folder = variants["dense"][1]
    config = json.loads((folder / "config.json").read_text())
    assert [(d["in_features"], d["out_features"], d["bias"]) for d in config["dense_layers"]] == [
        (384, 256, True), (256, 128, False)]
    assert config["projection_dim"] == 128
    from hf_dumpembed.projections import FitOptions, fit_projection

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"text number {i} about files, lines and {w}" for i, w in
                                enumerate(["parsing", "sockets", "threads", "retrieval", "embeddings"] * 12)))
    fitted = fit_projection(folder, tmp_path / "pca", FitOptions(method="pca", dim=16, plots=False), corpus=corpus)
    small = SentenceTransformer(str(fitted), trust_remote_code=True, model_kwargs={"projection_dim": 8})
    assert small.encode(TEXTS).shape == (len(TEXTS), 8)
    assert SentenceTransformer(str(fitted), trust_remote_code=True).encode(TEXTS).shape == (len(TEXTS), 16)


def test_a_bf16_source_is_stored_in_bf16_unless_dtype_says_otherwise(variants, tmp_path):
    folder = variants["bf16"][1]
    with safe_open(str(folder / "model.safetensors"), "pt") as weights:
        dtypes = {name: weights.get_slice(name).get_dtype() for name in weights.keys()}
    assert {dtype for name, dtype in dtypes.items() if name.startswith("backbone.")} == {"BF16"}
    assert {dtypes["projection.matrix"], dtypes["projection.mean"]} == {"F32"}
    model, _ = build_dump_model(variants["bf16"][0], BuildOptions(num_dump_tokens=0, dtype="float32"))
    assert model.backbone.embeddings.word_embeddings.weight.dtype == torch.float32


def test_prompts_follow_the_dump_tokens_when_k_is_positive(variants, tmp_path):
    folder = build(variants["no_prompt_in_pool"][0], tmp_path / "k2",
                   BuildOptions(num_dump_tokens=2, match_steps=0))
    config = json.loads((folder / "config.json").read_text())
    tokenizer = AutoTokenizer.from_pretrained(str(folder), trust_remote_code=True)
    ids = tokenizer("query: hello")["input_ids"]
    assert ids[1:3] == config["dump_token_ids"]  # [CLS] [DUMP1] [DUMP2] query : hello [SEP]
    assert all(prompt[1:3] == config["dump_token_ids"] for prompt in config["prompt_token_ids_excluded"])
    assert SentenceTransformer(str(folder), trust_remote_code=True).prompts == E5_PROMPTS


def _stack_with(source: Path, folder: Path, extra: list[torch.nn.Module]) -> Path:
    model = SentenceTransformer(str(source))
    SentenceTransformer(modules=[model[0], model[1], *extra]).save(str(folder))
    return folder


def test_what_cannot_be_reproduced_exactly_is_refused_with_the_module_named(variants, tmp_path):
    source = variants["resaved"][0]
    tanh = _stack_with(source, tmp_path / "tanh", [Dense(384, 64, activation_function=torch.nn.Tanh()), Normalize()])
    with pytest.raises(ValueError, match=r"non-linear activation 'torch.nn.modules.activation.Tanh'"):
        build(tanh, tmp_path / "out-tanh", BuildOptions(num_dump_tokens=0))
    after = _stack_with(source, tmp_path / "after",
                        [Normalize(), Dense(384, 64, activation_function=torch.nn.Identity())])
    with pytest.raises(ValueError, match="comes after Normalize"):
        build(after, tmp_path / "out-after", BuildOptions(num_dump_tokens=0))
    pickled = _stack_with(source, tmp_path / "pickled", [Dense(384, 64, activation_function=torch.nn.Identity())])
    dense_dir = next(p for p in pickled.iterdir() if p.name.endswith("_Dense"))
    (dense_dir / "model.safetensors").rename(dense_dir / "pytorch_model.bin")
    with pytest.raises(ValueError, match="no model.safetensors .*never loads"):
        build(pickled, tmp_path / "out-pickled", BuildOptions(num_dump_tokens=0))
    for out in ("out-tanh", "out-after", "out-pickled"):
        assert not (tmp_path / out).exists()


@pytest.mark.parametrize("mode", list(Pooling.POOLING_MODES))
@pytest.mark.parametrize("side", ["right", "left"])
def test_every_stock_pooling_mode_matches_sentence_transformers(tiny_bert, tmp_path, mode, side):
    source = SentenceTransformer(modules=[_transformer(tiny_bert), Pooling(32, mode), Normalize()])
    source.save(str(tmp_path / "source"))
    config_path = tmp_path / "source" / "tokenizer_config.json"  # where Qwen3-Embedding states its left padding
    config_path.write_text(json.dumps({**json.loads(config_path.read_text()), "padding_side": side}))
    assert read_source_stack(tmp_path / "source").pooling == {"lasttoken": "last"}.get(mode, mode)
    folder = build(tmp_path / "source", tmp_path / "k0", BuildOptions(num_dump_tokens=0))
    reloaded = SentenceTransformer(str(tmp_path / "source"))
    ours = SentenceTransformer(str(folder), trust_remote_code=True)
    assert ours.tokenizer.padding_side == side
    texts = ["a man is eating food", "hello", "the quick brown fox jumps over the lazy dog again and again"]
    # BERT's positions are absolute: a left-padded batch shifts the source's short rows (their vectors depend on the
    # batch), while DumpEmbed counts positions from each row's first token. Both agree on what the source means,
    # each text on its own; right padding must agree batched.
    batch_size = 32 if side == "right" else 1
    np.testing.assert_allclose(ours.encode(texts, batch_size=32), reloaded.encode(texts, batch_size=batch_size),
                               atol=1e-5, rtol=0)


def _transformer(folder: Path):
    from sentence_transformers.base.modules.transformer import Transformer

    return Transformer(str(folder))


@pytest.mark.parametrize("mode", ["max", "weightedmean", "mean_sqrt_len_tokens"])
def test_onnx_graph_reproduces_the_new_pooling_modes_and_folded_dense(tiny_bert, tmp_path, mode):
    from hf_dumpembed.export.onnx import export_onnx

    torch.manual_seed(0)
    source = SentenceTransformer(modules=[_transformer(tiny_bert), Pooling(32, mode),
                                          Dense(32, 16, bias=True, activation_function=torch.nn.Identity()),
                                          Normalize()])
    source.save(str(tmp_path / "source"))
    folder = build(tmp_path / "source", tmp_path / "k0", BuildOptions(num_dump_tokens=0))
    texts = ["a man is eating food", "hello", "the quick brown fox jumps over the lazy dog again and again"]
    np.testing.assert_allclose(SentenceTransformer(str(folder), trust_remote_code=True).encode(texts),
                               SentenceTransformer(str(tmp_path / "source")).encode(texts), atol=1e-5, rtol=0)
    result = export_onnx(folder, tmp_path / "onnx")
    assert result.dimension == 16 and result.parity and all(p.ok for p in result.parity), result.describe()


def test_onnx_refuses_prompts_left_out_of_the_pooling(variants, tmp_path):
    from hf_dumpembed.export.onnx import export_onnx

    with pytest.raises(ValueError, match="include_prompt=False.*export-st"):
        export_onnx(variants["no_prompt_in_pool"][1], tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()


def test_sentence_transformers_files_are_what_its_own_save_writes(variants, tmp_path):
    """The files are written directly (no second load of the weights); they must equal sentence-transformers'
    own save of the same pipeline."""
    from sentence_transformers.base.modules.transformer import Transformer

    from hf_dumpembed.model.st_files import MODALITY_CONFIG, sentence_transformers_files

    folder = variants["dense"][1]
    config = AutoModel.from_pretrained(str(folder), trust_remote_code=True).config
    transformer = Transformer(str(folder), model_kwargs={"trust_remote_code": True},
                              config_kwargs={"trust_remote_code": True}, processor_kwargs={"trust_remote_code": True},
                              modality_config=MODALITY_CONFIG, module_output_name="sentence_embedding")
    SentenceTransformer(modules=[transformer], prompts=config.prompts, default_prompt_name=config.default_prompt_name,
                        similarity_fn_name=config.similarity_fn_name).save(str(tmp_path / "st"))
    ours = sentence_transformers_files(config)
    for name in ours:
        assert json.loads((tmp_path / "st" / name).read_text()) == ours[name], name
        assert json.loads((folder / name).read_text()) == ours[name], name
    assert ours["config_sentence_transformers.json"]["default_prompt_name"] == "query"


def test_a_backbone_that_needs_its_own_code_is_refused_without_running_it(tiny_bert, tmp_path):
    """gte-multilingual / Alibaba "NewModel" style: config.json names custom code through auto_map (model_type new,
    which transformers does not know)."""
    import shutil

    source = tmp_path / "newmodel-like"
    shutil.copytree(tiny_bert, source)
    config = json.loads((source / "config.json").read_text())
    config.update(model_type="new", architectures=["NewModel"],
                  auto_map={"AutoConfig": "configuration.NewConfig", "AutoModel": "modeling.NewModel"})
    (source / "config.json").write_text(json.dumps(config))
    marker = tmp_path / "ran"
    for name in ("configuration.py", "modeling.py"):
        (source / name).write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    with pytest.raises(ValueError, match="needs its own modeling code.*does not wrap"):
        build(source, tmp_path / "out", BuildOptions(num_dump_tokens=0))
    assert not marker.exists() and not (tmp_path / "out").exists()
