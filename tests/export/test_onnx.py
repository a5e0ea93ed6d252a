"""ONNX export of the whole head: onnxruntime (and OpenVINO) vectors equal the torch model's (encoder, decoder)."""

from __future__ import annotations

import builtins
import json

import numpy as np
import pytest

onnxruntime = pytest.importorskip("onnxruntime", reason="pip install 'hf_dumpembed[onnx]'")

import onnx  # noqa: E402  (installed with onnxruntime by the [onnx] extra)
from transformers import AutoTokenizer  # noqa: E402

from hf_dumpembed.cli import main  # noqa: E402
from hf_dumpembed.export import onnx as onnx_export  # noqa: E402
from hf_dumpembed.export.onnx import compare, export_onnx  # noqa: E402
from hf_dumpembed.export.ort_int8 import OrtInt8Options  # noqa: E402
from hf_dumpembed.export.verify import encode_with_automodel  # noqa: E402

# Other texts than the export's own parity check, of very different lengths (padding matters).
TEXTS = ["Open the file, read every line.", "a", "Dense retrieval ranks passages by cosine similarity " * 6,
         "Two men pushed carts through the woods.", "The girl is carrying a baby."]


# Calibration texts for OpenVINO int8 (a fit corpus stands in; other texts than TEXTS).
CALIBRATION = [f"Text number {i}: how to {verb} a {noun} in Python, step by step." for i, (verb, noun) in enumerate(
    [(v, n) for v in ("read", "write", "sort", "parse", "copy") for n in ("file", "list", "string", "socket")])]


def _onnx_vectors(folder, texts, padding_side="right", file="model.onnx"):
    session = onnxruntime.InferenceSession(str(folder / file), providers=["CPUExecutionProvider"])
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer.padding_side = padding_side
    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="np")
    names = [i.name for i in session.get_inputs()]
    return session.run(["sentence_embedding"], {n: batch[n].astype(np.int64) for n in names})[0], names


@pytest.fixture(scope="module")
def bert_onnx(bert_dump_model, tmp_path_factory):
    pytest.importorskip("openvino", reason="pip install 'hf_dumpembed[openvino]'")
    pytest.importorskip("nncf", reason="pip install 'hf_dumpembed[openvino]'")
    return export_onnx(bert_dump_model, tmp_path_factory.mktemp("onnx") / "bert", int8=True, openvino=True,
                       calibration_texts=CALIBRATION, calibration_source="tests/calibration.txt")


def test_encoder_graph_matches_torch(bert_dump_model, bert_onnx):
    out = bert_onnx.out_dir
    assert {"model.onnx", "model_optimized.onnx", "model_int8.onnx", "openvino/openvino_model.xml", "tokenizer.json",
            "README.md", "onnx_export.json"} <= set(bert_onnx.files)
    reference = encode_with_automodel(bert_dump_model, TEXTS)
    vectors, names = _onnx_vectors(out, TEXTS)
    assert names == ["input_ids", "attention_mask", "token_type_ids"]  # BERT uses segment ids
    np.testing.assert_allclose(vectors, reference, atol=1e-5)
    one, _ = _onnx_vectors(out, TEXTS[:1])  # dynamic batch: 1 row, another length
    np.testing.assert_allclose(one, reference[:1], atol=1e-5)
    fused, _ = _onnx_vectors(out, TEXTS, file="model_optimized.onnx")  # onnxruntime's fused attention etc.
    np.testing.assert_allclose(fused, reference, atol=1e-5)
    fused_ops = {node.op_type for node in onnx.load(str(out / "model_optimized.onnx")).graph.node}
    assert {"Attention", "SkipLayerNormalization", "BiasGelu"} <= fused_ops
    int8, _ = _onnx_vectors(out, TEXTS, file="model_int8.onnx")
    assert not np.allclose(int8, vectors, atol=1e-7)  # really quantised ...
    assert (int8 * reference).sum(axis=1).min() > 0.95  # ... and still close (unit vectors: dot = cosine)

    import openvino

    compiled = openvino.Core().compile_model(str(out / "openvino" / "openvino_model.xml"), "CPU",
                                             {"INFERENCE_PRECISION_HINT": "f32"})
    tokenizer = AutoTokenizer.from_pretrained(str(out))
    batch = tokenizer(TEXTS, padding=True, return_tensors="np")
    ov = compiled({n: batch[n].astype(np.int64) for n in names})["sentence_embedding"]
    np.testing.assert_allclose(ov, reference, atol=1e-4)

    manifest = json.loads((out / "onnx_export.json").read_text())
    assert manifest["inputs"] == names and manifest["dimension"] == 32 and manifest["openvino_precision"] == "f32"
    # 5 graphs x (right padding, left padding: cls pooling is padding-sensitive, one text)
    assert all(p["ok"] for p in manifest["parity"]) and len(manifest["parity"]) == 15
    assert manifest["onnxruntime_fused"]["file"] == "model_optimized.onnx"
    int8_entry = manifest["onnxruntime_int8"]
    assert int8_entry["source"] == "model_optimized.onnx" and int8_entry["options_text"] == "defaults"
    # by default every MatMul with a weight is quantised; the fused Attention keeps its q/k/v projection in fp32
    assert int8_entry["fp32_nodes"] == [] and int8_entry["quantised_products"] == sum(
        node.op_type == "MatMul" for node in onnx.load(str(out / "model_optimized.onnx")).graph.node)
    readme = (out / "README.md").read_text()
    assert "onnxruntime.InferenceSession" in readme and "add_custom_model" in readme and "openvino" in readme
    assert "openvino_model_int8.xml" in readme and "20 calibration texts from tests/calibration.txt" in readme
    # The tokenizer config is the portable one (transformers 4.x reads it too) and still adds the prefix.
    assert "extra_special_tokens" not in json.loads((out / "tokenizer_config.json").read_text())
    original = AutoTokenizer.from_pretrained(str(bert_dump_model), trust_remote_code=True)
    assert tokenizer("hi")["input_ids"] == original("hi")["input_ids"]


def test_openvino_int8_is_quantised_statically_and_close(bert_dump_model, bert_onnx):
    import openvino

    out = bert_onnx.out_dir
    assert "openvino/openvino_model_int8.xml" in bert_onnx.files
    manifest = json.loads((out / "onnx_export.json").read_text())
    entry = manifest["openvino_int8"]
    assert entry["file"] == "openvino/openvino_model_int8.xml" and entry["calibration_samples"] == len(CALIBRATION)
    assert entry["calibration_source"] == "tests/calibration.txt"
    assert [p["name"] for p in manifest["parity"]][-3:] == ["OpenVINO int8 (right padding)",
                                                            "OpenVINO int8 (left padding)", "OpenVINO int8 (one text)"]
    model = openvino.Core().read_model(str(out / "openvino" / "openvino_model_int8.xml"))
    assert sum(op.get_type_name() == "FakeQuantize" for op in model.get_ops()) >= 12  # activations quantised too
    compiled = openvino.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    batch = AutoTokenizer.from_pretrained(str(out))(TEXTS, padding=True, return_tensors="np")
    int8 = compiled({n: batch[n].astype(np.int64) for n in manifest["inputs"]})["sentence_embedding"]
    reference = encode_with_automodel(bert_dump_model, TEXTS)
    assert not np.allclose(int8, reference, atol=1e-6)
    assert (int8 * reference).sum(axis=1).min() > 0.95


def test_openvino_int8_needs_calibration_texts(bert_dump_model, tmp_path, monkeypatch):
    pytest.importorskip("nncf", reason="pip install 'hf_dumpembed[openvino]'")
    with pytest.raises(ValueError, match="needs calibration texts.*or use int8_dynamic instead"):
        export_onnx(bert_dump_model, tmp_path / "out", int8=True, openvino=True)
    with pytest.raises(ValueError, match="calibration texts are empty"):
        export_onnx(bert_dump_model, tmp_path / "out", int8=True, openvino=True, calibration_texts=["", " "])
    assert not (tmp_path / "out").exists()
    # The CLI: no fit corpus recorded in this folder -> says to pass --calibration; --calibration alone -> add flags.
    with pytest.raises(SystemExit, match="records no fit corpus.*--calibration PATH, or use --int8-dynamic without"):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "out"), "--int8", "--openvino"])
    with pytest.raises(SystemExit, match="add --int8 --openvino"):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "out"), "--calibration", "x.txt"])
    texts = tmp_path / "mine.txt"
    texts.write_text("\n".join(CALIBRATION) + "\n")
    seen = {}

    def record_and_stop(*args, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("stop")

    monkeypatch.setattr(onnx_export, "export_onnx", record_and_stop)
    with pytest.raises(RuntimeError, match="stop"):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "out"), "--int8", "--openvino",
              "--calibration", str(texts)])
    assert seen["calibration_texts"] == CALIBRATION and seen["calibration_source"] == "mine.txt"


def test_decoder_graph_matches_torch_under_left_and_right_padding(llama_dump_model, tmp_path):
    result = export_onnx(llama_dump_model, tmp_path / "llama")
    reference = encode_with_automodel(llama_dump_model, TEXTS)
    for side in ("left", "right"):
        vectors, names = _onnx_vectors(result.out_dir, TEXTS, padding_side=side)
        assert names == ["input_ids", "attention_mask"]
        np.testing.assert_allclose(vectors, reference, atol=1e-5, err_msg=f"{side} padding")
    assert [p.name for p in result.parity][:3] == ["onnxruntime fp32 (right padding)",
                                                   "onnxruntime fp32 (left padding)", "onnxruntime fp32 (one text)"]
    for side in ("left", "right"):  # onnxruntime's fusions for Llama: RMSNorm, rotary embedding, attention
        vectors, _ = _onnx_vectors(result.out_dir, TEXTS, padding_side=side, file="model_optimized.onnx")
        np.testing.assert_allclose(vectors, reference, atol=1e-5, err_msg=f"fused, {side} padding")
    assert not (result.out_dir / "model_int8.onnx").exists()


def test_graph_beyond_tolerance_is_not_written(bert_dump_model, tmp_path, monkeypatch):
    real = onnx_export.onnxruntime_runner

    def skewed(path):
        run = real(path)
        return lambda batch: run(batch) + 1e-3

    monkeypatch.setattr(onnx_export, "onnxruntime_runner", skewed)
    with pytest.raises(ValueError, match="does not reproduce") as error:
        export_onnx(bert_dump_model, tmp_path / "out")
    assert "max |Δ| 1.0e-03" in str(error.value)
    assert not (tmp_path / "out").exists() and not list(tmp_path.iterdir())


def test_int8_beyond_tolerance_says_what_to_try(bert_dump_model, tmp_path, monkeypatch):
    """A refused int8 graph names the options that bring it back within tolerance (and only the fp32 ones pass)."""
    real = onnx_export.onnxruntime_runner
    rng = np.random.default_rng(0)

    def scrambled_int8(path):
        run = real(path)
        return (lambda batch: rng.standard_normal(run(batch).shape).astype(np.float32)) \
            if path.name == "model_int8.onnx" else run

    monkeypatch.setattr(onnx_export, "onnxruntime_runner", scrambled_int8)
    with pytest.raises(ValueError, match="FAIL onnxruntime int8") as error:
        export_onnx(bert_dump_model, tmp_path / "out", int8=True, fuse=False)
    assert str(error.value).endswith(onnx_export.ONNXRUNTIME_INT8_HINT)
    assert "--int8-block-size 128" in str(error.value) and not (tmp_path / "out").exists()


def test_fused_graph_beyond_tolerance_is_left_out(bert_dump_model, tmp_path, monkeypatch):
    real = onnx_export.onnxruntime_runner

    def skew_fused(path):
        run = real(path)
        return (lambda batch: run(batch) + 1e-3) if path.name == "model_optimized.onnx" else run

    monkeypatch.setattr(onnx_export, "onnxruntime_runner", skew_fused)
    result = export_onnx(bert_dump_model, tmp_path / "out", int8=True)
    assert "model_optimized.onnx" not in result.files and "model.onnx" in result.files
    manifest = json.loads((tmp_path / "out" / "onnx_export.json").read_text())
    assert manifest["onnxruntime_fused"]["reason"] == "parity failed"
    assert manifest["onnxruntime_int8"]["source"] == "model.onnx"
    assert not any("fused" in p.name for p in result.parity)


def test_int8_mlp_fp32_keeps_the_down_projections(bert_dump_model, tmp_path):
    result = export_onnx(bert_dump_model, tmp_path / "out", int8=True, fuse=False,
                         onnxruntime_int8=OrtInt8Options(mlp_fp32=True))
    entry = json.loads((tmp_path / "out" / "onnx_export.json").read_text())["onnxruntime_int8"]
    layers = json.loads((bert_dump_model / "config.json").read_text())["text_config"]["num_hidden_layers"]
    kept = set(entry["fp32_nodes"])
    assert len(kept) == layers and entry["source"] == "model.onnx"
    assert entry["options_text"] == "MLP down-projections fp32"
    # Each kept node is a MatMul reading the MLP activation (intermediate -> hidden); the others are quantised.
    portable = onnx.load(str(tmp_path / "out" / "model.onnx")).graph
    weights = {t.name: list(t.dims) for t in portable.initializer}
    for node in portable.node:
        if node.name in kept:
            rows, columns = weights[node.input[1]]
            assert node.op_type == "MatMul" and rows > columns
    int8_nodes = onnx.load(str(tmp_path / "out" / "model_int8.onnx")).graph.node
    assert kept <= {node.name for node in int8_nodes if node.op_type == "MatMul"}
    assert sum(node.op_type == "MatMulInteger" for node in int8_nodes) >= 3 * layers  # Q, K, V, out, MLP up
    assert all(p.ok for p in result.parity)
    with pytest.raises(SystemExit, match="add --int8"):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "cli"), "--int8-mlp-fp32"])


def test_compare_fails_on_nan_and_shape_mismatch():
    reference = np.eye(2, dtype=np.float32)
    assert compare("x", reference, reference.copy(), "fp32").ok
    assert not compare("x", reference, np.full((2, 2), np.nan, dtype=np.float32), "fp32").ok
    assert not compare("x", reference, np.full((2, 2), np.nan, dtype=np.float32), "int8").ok
    assert not compare("x", reference, reference[:1], "fp32").ok
    assert not compare("x", reference, reference[::-1].copy(), "int8").ok  # cosine 0


def test_missing_extra_names_the_install_command(bert_dump_model, tmp_path, monkeypatch):
    real_import = builtins.__import__

    def no_onnxruntime(name, *args, **kwargs):
        if name.split(".")[0] == "onnxruntime":
            raise ImportError("No module named 'onnxruntime'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_onnxruntime)
    monkeypatch.delitem(__import__("sys").modules, "onnxruntime", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'hf_dumpembed\[onnx\]'"):
        export_onnx(bert_dump_model, tmp_path / "out")
    with pytest.raises(SystemExit, match=r"hf_dumpembed\[onnx\]"):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "out")])


def test_cli_precision_needs_openvino(bert_dump_model, tmp_path):
    with pytest.raises(SystemExit, match="add --openvino"):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "out"), "--precision", "bf16"])


def test_quantization_calibration_travels_with_the_graph(bert_dump_model, tmp_path):
    import shutil

    from hf_dumpembed.model.quantization import Calibration, quantize, write_calibration

    folder = tmp_path / "model"
    shutil.copytree(bert_dump_model, folder)
    lows = np.linspace(-0.5, -0.1, 32, dtype=np.float32)
    write_calibration(folder, Calibration(ranges={32: np.stack([lows, -lows])},
                                          thresholds={32: np.zeros(32, np.float32)}))
    result = export_onnx(folder, tmp_path / "onnx", fuse=False)
    assert "quantization.json" in result.files
    assert json.loads((result.out_dir / "onnx_export.json").read_text())["quantization"] == "quantization.json"
    vectors, _ = _onnx_vectors(result.out_dir, TEXTS)
    np.testing.assert_array_equal(quantize(vectors, result.out_dir), quantize(vectors, folder))  # same codes
    # A calibration that does not cover the graph's output dimension stays behind (with a warning).
    write_calibration(folder, Calibration(ranges={16: np.stack([lows[:16], -lows[:16]])},
                                          thresholds={16: np.zeros(16, np.float32)}))
    staging = tmp_path / "staging"
    staging.mkdir()
    assert onnx_export.copy_quantization_calibration(folder, staging, 32) is None
    assert not (staging / "quantization.json").exists()


def test_onnx_export_refuses_a_model_that_composes_a_prompt(llama_dump_model, tmp_path):
    """A folder composing a prompt inside the model is refused with the reason; nothing is written."""
    from hf_dumpembed.projections.fit import FitOptions, fit_projection

    prompted = fit_projection(llama_dump_model, tmp_path / "eol",
                              FitOptions(method="embedfilter", ratio=1, prompt="prompteol", progress=False,
                                         plots=False))
    with pytest.raises(ValueError, match="composes a 'prompteol' prompt inside the model"):
        export_onnx(prompted, tmp_path / "onnx")
    assert not (tmp_path / "onnx").exists()
