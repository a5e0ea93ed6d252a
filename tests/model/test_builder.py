"""Building a folder: files, [DUMP] rows, K=0 baseline, same vectors through every load path, refusals."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed._utils.remote_trust import REMOTE_FILES
from hf_dumpembed.cli import main
from hf_dumpembed.export.stock import export_stock_st
from hf_dumpembed.export.verify import SAMPLE_TEXTS, check_load_paths, encode_with_automodel
from hf_dumpembed.model import builder
from hf_dumpembed.model.builder import MAX_DUMP_TOKENS, BuildOptions, build, build_dump_model
from hf_dumpembed.model.embeddings import DumpInit, grow_embeddings, init_dump_rows
from tests.support import tiny_models
from tests.support.tiny_models import MAX_POSITIONS

EXPECTED_FILES = {
    "config.json", "configuration_dumpembed.py", "modeling_dumpembed.py", "prefix_cache_dumpembed.py",
    "model.safetensors", "tokenizer.json", "tokenizer_config.json", "modules.json", "sentence_bert_config.json",
    "config_sentence_transformers.json", "README.md",
}


def test_folder_has_every_file_and_nothing_else(bert_dump_model):
    assert {p.name for p in bert_dump_model.iterdir()} == EXPECTED_FILES
    config = json.loads((bert_dump_model / "config.json").read_text())
    assert config["model_type"] == "dumpembed" and config["architectures"] == ["DumpEmbedModel"]
    st_config = json.loads((bert_dump_model / "config_sentence_transformers.json").read_text())
    assert st_config["similarity_fn_name"] == "cosine" and st_config["prompts"] == {"query": "", "document": ""}
    modules = json.loads((bert_dump_model / "modules.json").read_text())
    assert [m["type"] for m in modules] == ["sentence_transformers.base.modules.transformer.Transformer"]
    st_module = json.loads((bert_dump_model / "sentence_bert_config.json").read_text())
    assert st_module["modality_config"]["text"]["method_output_name"] == "sentence_embedding"


def test_remote_code_imports_nothing_but_torch_transformers_and_siblings(bert_dump_model):
    for name in REMOTE_FILES:
        source = (bert_dump_model / name).read_text()
        imports = [line.split()[1] for line in source.splitlines() if line.startswith(("import ", "from "))]
        # the standard library's pure helpers only (sys: the loaded sentence-transformers' version; no file is read);
        # huggingface_hub for the config's validation, as transformers' own configs (a requirement of transformers);
        # no os/subprocess/socket/json
        assert {i.split(".")[0] for i in imports} <= {"__future__", "typing", "dataclasses", "inspect", "sys", "torch",
                                                       "transformers", "huggingface_hub", ""}, imports


@pytest.mark.parametrize("fixture", ["bert_dump_model", "llama_dump_model"])
def test_automodel_sentence_transformers_mteb_and_stock_export_agree(request, fixture, tmp_path):
    model_dir = request.getfixturevalue(fixture)
    stock = export_stock_st(model_dir, tmp_path / "stock")
    report = check_load_paths(model_dir, stock_export_dir=stock)
    assert set(report.max_abs_diff) == {"sentence-transformers", "mteb", "stock export (no remote)"}
    assert report.ok, report.describe()


@pytest.mark.parametrize("fixture", ["tiny_gpt2", "tiny_qwen2"])
def test_other_byte_level_decoders_build_and_agree(request, fixture, tmp_path):
    model_dir = build(request.getfixturevalue(fixture), tmp_path / "model", BuildOptions(num_dump_tokens=2))
    config = json.loads((model_dir / "config.json").read_text())
    assert config["pooling"] == "last" and config["dump_token_offset"] == 0
    report = check_load_paths(model_dir, include_mteb=False)
    assert report.ok, report.describe()


def test_dump_rows_grow_the_matrix_and_other_rows_stay(tiny_bert):
    original = AutoModel.from_pretrained(str(tiny_bert)).get_input_embeddings().weight.detach().clone()
    model, tokenizer = build_dump_model(tiny_bert, BuildOptions(num_dump_tokens=4, match_steps=0))
    weight = model.get_input_embeddings().weight.detach()
    ids = model.config.dump_token_ids
    assert weight.shape[0] == original.shape[0] + 4 == len(tokenizer)
    assert model.config.text_config.vocab_size == weight.shape[0]
    torch.testing.assert_close(weight[: original.shape[0]], original)
    # default init (before the match): exact copies of the [SEP] row (an attention sink), no noise
    torch.testing.assert_close(weight[ids], original[tokenizer.sep_token_id].expand(4, -1), atol=0, rtol=0)


def test_padded_embedding_matrix_is_never_shrunk(tiny_qwen2):
    rows_before = AutoModel.from_pretrained(str(tiny_qwen2)).get_input_embeddings().weight.shape[0]
    model, tokenizer = build_dump_model(tiny_qwen2, BuildOptions(num_dump_tokens=2))
    assert len(tokenizer) < rows_before  # the DUMP ids fit inside the padded matrix
    assert model.get_input_embeddings().weight.shape[0] == rows_before


@pytest.mark.parametrize("init", ["cls", "normal"])
def test_other_inits(tiny_bert, init):
    base = AutoModel.from_pretrained(str(tiny_bert))
    grow_embeddings(base, base.get_input_embeddings().weight.shape[0] + 3)
    ids = [base.get_input_embeddings().weight.shape[0] - i for i in (3, 2, 1)]
    cls_id = 2
    init_dump_rows(base, ids, DumpInit(init), first_token_id=cls_id, seed=0)
    rows = base.get_input_embeddings().weight.detach()[ids]
    if init == "cls":  # the [CLS] row + noise of 1% of the vocabulary's per-dimension std (was: atol 0.01)
        from tests.model.test_builder_dump_defaults import assert_small_noise_around

        vocabulary = base.get_input_embeddings().weight.detach()[: ids[0]].double()
        assert_small_noise_around(rows.double(), vocabulary[cls_id], vocabulary)
    else:
        assert 0.01 < rows.std().item() < 0.04


def test_cls_init_needs_a_leading_token(tiny_gpt2):
    with pytest.raises(ValueError, match="adds no leading special token"):
        build_dump_model(tiny_gpt2, BuildOptions(num_dump_tokens=2, init="cls"))


def test_a_decoder_without_bos_gets_the_measured_advice(tiny_gpt2, tiny_llama, caplog):
    """A decoder whose tokenizer adds no BOS is told what the controls measured; one with a BOS is not."""
    with caplog.at_level("WARNING", logger="hf_dumpembed.model.builder"):
        build_dump_model(tiny_gpt2, BuildOptions(num_dump_tokens=4))
    advice = [r.getMessage() for r in caplog.records if "adds no BOS" in r.getMessage()]
    assert len(advice) == 1 and "K=4 [DUMP] tokens" in advice[0]
    assert "--dump-tokens 1 --init token --init-token" in advice[0]
    assert "one trained [DUMP] token (--dump-tokens 1)" in advice[0]
    caplog.clear()
    with caplog.at_level("WARNING", logger="hf_dumpembed.model.builder"):
        build_dump_model(tiny_llama, BuildOptions(num_dump_tokens=4))
    assert not [r for r in caplog.records if "adds no BOS" in r.getMessage()]


def test_k_zero_is_the_plain_backbone(tiny_bert, tmp_path):
    """K=0 goes through the same builder and gives exactly the normalised [CLS] state of the raw backbone."""
    model_dir = build(tiny_bert, tmp_path / "k0", BuildOptions(num_dump_tokens=0))
    ours = encode_with_automodel(model_dir, list(SAMPLE_TEXTS))
    backbone = AutoModel.from_pretrained(str(tiny_bert)).eval()
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert))
    with torch.no_grad():
        cls = backbone(**tokenizer(list(SAMPLE_TEXTS), padding=True, return_tensors="pt")).last_hidden_state[:, 0]
    np.testing.assert_allclose(ours, torch.nn.functional.normalize(cls, dim=-1).numpy(), atol=1e-6)


def test_build_options_are_a_frozen_pydantic_dataclass_with_one_sentence_errors():
    import dataclasses

    from pydantic.dataclasses import is_pydantic_dataclass

    from hf_dumpembed._utils.checked import OptionError

    options = BuildOptions(num_dump_tokens=2, pooling="auto", init="sep", prompt="echo", match_texts=["a", "b"])
    assert is_pydantic_dataclass(BuildOptions) and options.pooling is None and options.init is DumpInit.SEP
    assert options.prompt == "echo" and options.match_texts == ("a", "b")
    assert BuildOptions(pooling="mean").pooling is builder.Pooling.MEAN
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seed = 1  # type: ignore[misc]
    assert dataclasses.replace(options, seed=3).seed == 3
    for kwargs, message in [
        ({"num_dump_tokens": True}, "num_dump_tokens must be an integer between 0 and 1024 (the [DUMP] paper uses "
                                    "1-16); got True."),
        ({"seed": -1}, "seed must be a non-negative integer; got -1."),
        ({"dtype": "int8"}, "dtype must be one of ('float32', 'bfloat16', 'float16') or None (the source's own); "
                            "got 'int8'."),
        ({"prompt": 5}, "prompt must be one of ('prompteol', 'echo'); got 5."),
    ]:
        with pytest.raises(OptionError) as info:
            BuildOptions(**kwargs)
        assert str(info.value) == message and isinstance(info.value, ValueError)


def test_build_options_and_existing_folders_are_checked(tiny_bert, bert_dump_model, tmp_path):
    with pytest.raises(ValueError, match="pooling must be one of"):
        BuildOptions(pooling="avg")
    with pytest.raises(ValueError, match="init must be one of"):
        BuildOptions(init="zeros")
    with pytest.raises(ValueError, match="leaves no room"):
        BuildOptions(num_dump_tokens=8, max_seq_length=10)
    before = (bert_dump_model / "model.safetensors").stat().st_mtime_ns
    with pytest.raises(FileExistsError, match="already exists"):
        build(tiny_bert, bert_dump_model)
    assert (bert_dump_model / "model.safetensors").stat().st_mtime_ns == before
    with pytest.raises(ValueError, match="already a DumpEmbed model"):
        build(bert_dump_model, tmp_path / "again")


def test_a_failed_build_leaves_nothing_behind(tiny_bert, tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(builder, "write_sentence_transformers_files", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        build(tiny_bert, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_hub_ids_take_the_normal_path_and_fail_clearly_offline(tmp_path):
    with pytest.raises(OSError, match="Could not load the backbone 'sentence-transformers/all-MiniLM-L6-v2'"):
        build("sentence-transformers/all-MiniLM-L6-v2", tmp_path / "out")


def test_saved_folder_loads_in_a_fresh_process_without_the_package(llama_dump_model, tmp_path):
    """The remote code must work where hf_dumpembed is not importable (as on a user's machine)."""
    script = textwrap.dedent(
        f"""
        import importlib.abc, json, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "hf_dumpembed":
                    raise ImportError("hf_dumpembed is blocked in this test")
        sys.meta_path.insert(0, Block())
        import torch
        from transformers import AutoModel, AutoTokenizer
        from sentence_transformers import SentenceTransformer
        path = {str(llama_dump_model)!r}
        texts = {list(SAMPLE_TEXTS)!r}
        model = AutoModel.from_pretrained(path, trust_remote_code=True).eval()
        tok = AutoTokenizer.from_pretrained(path, trust_remote_code=True)
        with torch.no_grad():
            auto = model(**tok(texts, padding=True, return_tensors="pt")).sentence_embedding
        st = SentenceTransformer(path, trust_remote_code=True).encode(texts, convert_to_tensor=True)
        assert "hf_dumpembed" not in sys.modules
        print(json.dumps({{"auto": auto.tolist(), "st": st.tolist()}}))
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    vectors = json.loads(result.stdout.strip().splitlines()[-1])
    expected = encode_with_automodel(llama_dump_model, list(SAMPLE_TEXTS))
    np.testing.assert_allclose(np.array(vectors["auto"]), expected, atol=1e-5)
    np.testing.assert_allclose(np.array(vectors["st"]), expected, atol=1e-5)


def test_safetensors_only(bert_dump_model):
    assert not list(bert_dump_model.glob("*.bin")) and not list(bert_dump_model.glob("*.pt"))
    with safe_open(str(bert_dump_model / "model.safetensors"), "pt") as weights:
        assert any(k.startswith("backbone.") for k in weights.keys())


def test_max_seq_length_reaches_sentence_transformers(tiny_bert, tmp_path):
    from sentence_transformers import SentenceTransformer

    model_dir = build(tiny_bert, tmp_path / "m", BuildOptions(num_dump_tokens=4, max_seq_length=16))
    st = SentenceTransformer(str(model_dir), trust_remote_code=True)
    assert st.max_seq_length == 16
    features = st.tokenize(["word " * 50])
    ids = features["input_ids"][0].tolist()
    assert len(ids) == 16 and ids[1:5] == json.loads((model_dir / "config.json").read_text())["dump_token_ids"]


def test_a_decoder_without_pad_token_pads_with_eos(tiny_gpt2, tmp_path):
    import shutil

    source = tmp_path / "no-pad"
    shutil.copytree(tiny_gpt2, source)
    config_path = source / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config.pop("pad_token")
    config_path.write_text(json.dumps(config))
    assert AutoTokenizer.from_pretrained(str(source)).pad_token is None
    model_dir = build(source, tmp_path / "model", BuildOptions(num_dump_tokens=2))
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), trust_remote_code=True)
    assert tokenizer.pad_token == tokenizer.eos_token == "<|endoftext|>"
    assert check_load_paths(model_dir, include_mteb=False).ok


@pytest.mark.parametrize(("source_length", "k", "expected"), [(32, 0, 32), (32, 4, 36), (126, 4, 128), (128, 4, 128)])
def test_default_max_seq_length_puts_the_dump_tokens_on_top_of_the_sources_text(tiny_bert, tmp_path, source_length, k,
                                                                                 expected):
    """The K [DUMP] tokens do not shorten the text the source reads, as far as the position limit (128) allows."""
    source = tiny_models.as_sentence_transformers_folder(tiny_bert, tmp_path / "st")
    (source / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": source_length}))
    _, tokenizer = build_dump_model(source, BuildOptions(num_dump_tokens=k, match_steps=0))
    assert tokenizer.model_max_length == expected
    ids = tokenizer("word " * 200, truncation=True)["input_ids"]
    assert len(ids) == expected and len(ids) - k == min(source_length, 128 - k)


def test_max_seq_length_beyond_the_position_limit_is_refused(tiny_bert, tmp_path):
    with pytest.raises(ValueError, match="exceeds the backbone's position limit 128"):
        build(tiny_bert, tmp_path / "m", BuildOptions(max_seq_length=4096))
    assert not (tmp_path / "m").exists()


def test_built_model_holds_no_meta_tensors(tiny_llama):
    model, _ = build_dump_model(tiny_llama, BuildOptions(num_dump_tokens=2))
    tensors = list(model.named_parameters()) + list(model.named_buffers())
    assert not [name for name, tensor in tensors if tensor.is_meta]
    assert model.backbone.config is model.config.text_config


def test_encoder_decoder_backbones_are_refused(tmp_path):
    from transformers import T5Config, T5Model

    from tests.support.tiny_models import wordpiece_tokenizer

    tokenizer = wordpiece_tokenizer()
    config = T5Config(vocab_size=len(tokenizer), d_model=32, d_ff=64, num_layers=1, num_heads=4, d_kv=8)
    T5Model(config).save_pretrained(tmp_path / "t5")
    tokenizer.save_pretrained(tmp_path / "t5")
    with pytest.raises(ValueError, match="encoder-decoder model"):
        build(tmp_path / "t5", tmp_path / "out")


# Boundary checks: a bad parameter is refused with a message that names it.


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_build_refuses_a_k_that_leaves_no_room_for_text(tiny_bert, tmp_path):
    with pytest.raises(ValueError, match="leave no room for text"):
        build(tiny_bert, tmp_path / "m", BuildOptions(num_dump_tokens=MAX_POSITIONS - 2))
    assert not (tmp_path / "m").exists()


def test_build_refuses_an_absurd_k_before_loading_anything(tiny_bert, tmp_path):
    with pytest.raises(SystemExit, match="num_dump_tokens must be an integer between 0 and"):
        main(["build", str(tiny_bert), str(tmp_path / "m"), "--dump-tokens", "100000"])
    assert not (tmp_path / "m").exists()


@PROPERTY
@given(k=st.one_of(st.integers(min_value=-10**9, max_value=10**9), st.booleans(), st.floats(), st.text(max_size=3)),
       length=st.one_of(st.none(), st.integers(min_value=-10**6, max_value=10**6)))
def test_build_options_accept_or_refuse_with_value_error(k, length):
    try:
        options = BuildOptions(num_dump_tokens=k, max_seq_length=length)
    except ValueError:
        return
    assert isinstance(options.num_dump_tokens, int) and not isinstance(options.num_dump_tokens, bool)
    assert 0 <= options.num_dump_tokens <= MAX_DUMP_TOKENS
    assert options.max_seq_length is None or options.max_seq_length > options.num_dump_tokens + 2


def test_a_built_folder_names_its_backbone_without_a_local_path(bert_dump_model, tiny_bert):
    text = (bert_dump_model / "config.json").read_text()
    assert str(tiny_bert) not in text
    config = json.loads(text)
    assert config["base_model"] == tiny_bert.name or not Path(config["base_model"]).is_absolute()


# Failures leave nothing half-written; inputs are checked before any work.


def test_build_of_a_missing_local_path_says_so(tmp_path):
    """A local path that does not exist is an error saying so (not a Hub id error)."""
    with pytest.raises(SystemExit, match="BACKBONE /nonexistent/path does not exist"):
        main(["build", "/nonexistent/path", str(tmp_path / "m")])
    assert not (tmp_path / "m").exists()
