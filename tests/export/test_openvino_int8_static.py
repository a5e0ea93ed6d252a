"""NNCF int8 options: the parts kept in float are found by structure, each option reaches NNCF and the manifest."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="pip install 'hf_dumpembed[onnx]'")
openvino = pytest.importorskip("openvino", reason="pip install 'hf_dumpembed[openvino]'")
pytest.importorskip("nncf", reason="pip install 'hf_dumpembed[openvino]'")

from transformers import AutoTokenizer  # noqa: E402

from hf_dumpembed.cli import main  # noqa: E402
from hf_dumpembed.export.onnx import export_onnx  # noqa: E402
from hf_dumpembed.export.openvino_int8_static import (  # noqa: E402
    IGNORABLE,
    SMOOTH_QUANT_OFF,
    Int8Options,
    graph_parts,
    ignored_names,
    quantize_openvino_int8,
)
from hf_dumpembed.export.openvino_ir import calibration_inputs  # noqa: E402

CALIBRATION = [f"Text {i}: how to {verb} a {noun} in Python." for i, (verb, noun) in enumerate(
    [(v, n) for v in ("read", "write", "sort", "parse", "copy", "hash") for n in ("file", "list", "string", "set")])]
OPTIONS = Int8Options(preset="mixed", smooth_quant_alpha=0.5, calibration_size=12, ignore=("mlp-down", "first-layer"))


@pytest.fixture(scope="module")
def tuned_export(bert_dump_model, tmp_path_factory):
    """The tiny BERT exported with OpenVINO int8 under non-default NNCF options."""
    return export_onnx(bert_dump_model, tmp_path_factory.mktemp("nncf") / "out", int8=True, openvino=True,
                       fuse=False, calibration_texts=CALIBRATION, int8_options=OPTIONS)


def _backbone(model_dir) -> dict:
    return json.loads((model_dir / "config.json").read_text())["text_config"]


def _float_matmuls(model) -> set[str]:
    """Names of the weight products that no FakeQuantize feeds (the ones NNCF left in float)."""
    def fed_by_quantizer(op) -> bool:
        return any(value.get_node().get_type_name() == "FakeQuantize" for value in op.input_values())
    return {op.get_friendly_name() for op in model.get_ordered_ops()
            if op.get_type_name() == "MatMul" and not fed_by_quantizer(op)}


def test_parts_are_found_by_structure(bert_dump_model, tuned_export):
    model = openvino.Core().read_model(str(tuned_export.out_dir / "openvino" / "openvino_model.xml"))
    parts = graph_parts(model)
    backbone = _backbone(bert_dump_model)
    layers = backbone["num_hidden_layers"]
    assert len(parts["layers"]) == layers and len({len(layer) for layer in parts["layers"]}) == 1
    assert len(parts["layers"][0]) == 6  # query, key, value, attention output, MLP up, MLP down
    assert len(parts["attention-inputs"]) == 3 * layers and len(parts["mlp-down"]) == layers
    assert len(parts["attention-scores"]) == 2 * layers
    assert parts["first-layer"] == parts["layers"][0] and parts["last-layer"] == parts["layers"][-1]
    down = {op.get_friendly_name(): op for op in model.get_ordered_ops()}
    for name in parts["mlp-down"]:  # the down-projection reads the wide MLP state
        assert down[name].input_value(0).get_partial_shape()[-1].get_length() == backbone["intermediate_size"]
    (head,) = parts["head"]  # the stored projection, after pooling
    assert down[head].input_value(0).get_partial_shape().rank.get_length() == 2
    assert ignored_names(model, ("first-layer", "attention-inputs")) == list(dict.fromkeys(
        parts["first-layer"] + parts["attention-inputs"]))


def test_a_decoders_parts_are_found_by_structure_and_stay_float(llama_dump_model, tmp_path):
    """A Llama graph (q, k, v at one depth, gate and up at another, RMSNorm, rotary embedding, last-token pooling):
    the same structural rules find its layers, attention inputs and MLP down-projections, and NNCF keeps them float.
    (The head stays float too: with it quantised under SmoothQuant this random decoder's pooled states lose parity,
    min cosine 0.87.)"""
    result = export_onnx(llama_dump_model, tmp_path / "llama", int8=True, openvino=True, fuse=False,
                         calibration_texts=CALIBRATION,
                         int8_options=Int8Options(calibration_size=12, ignore=("head", "attention-inputs", "mlp-down")))
    f32 = openvino.Core().read_model(str(result.out_dir / "openvino" / "openvino_model.xml"))
    parts = graph_parts(f32)
    backbone = _backbone(llama_dump_model)
    layers = backbone["num_hidden_layers"]
    assert len(parts["layers"]) == layers
    assert {len(layer) for layer in parts["layers"]} == {7}  # q, k, v, o, gate, up, down
    assert len(parts["attention-inputs"]) == 3 * layers and len(parts["mlp-down"]) == layers
    ops = {op.get_friendly_name(): op for op in f32.get_ordered_ops()}
    for name in parts["mlp-down"]:
        assert ops[name].input_value(0).get_partial_shape()[-1].get_length() == backbone["intermediate_size"]
    for name in parts["attention-inputs"]:
        assert ops[name].input_value(0).get_partial_shape()[-1].get_length() == backbone["hidden_size"]
    int8 = openvino.Core().read_model(str(result.out_dir / "openvino" / "openvino_model_int8.xml"))
    kept = set(parts["head"] + parts["attention-inputs"] + parts["mlp-down"])
    assert kept <= _float_matmuls(int8)
    assert all(p.ok for p in result.parity)


def test_a_refused_openvino_int8_graph_says_what_to_try(llama_dump_model, tmp_path):
    """NNCF's defaults on the random tiny Llama quantise its head under SmoothQuant and lose parity (min cosine about
    0.87, on the padded batch): the refusal names the choices to try, of which the head in float (above) and the
    dynamic int8 IR (test_openvino_int8_dynamic.py) pass."""
    with pytest.raises(ValueError, match="FAIL OpenVINO int8") as error:
        export_onnx(llama_dump_model, tmp_path / "llama", int8=True, openvino=True, fuse=False,
                    calibration_texts=CALIBRATION, int8_options=Int8Options(calibration_size=12))
    assert "--int8-float head attention-inputs" in str(error.value) and not (tmp_path / "llama").exists()
    assert "or --int8-dynamic instead" in str(error.value)


def test_a_graph_without_layers_names_what_it_has():
    import openvino.opset13 as ops

    pooled = ops.parameter([-1, 8], np.float32, name="pooled")
    projected = ops.matmul(pooled, ops.constant(np.ones((8, 4), np.float32)), False, False)
    model = openvino.Model([projected], [pooled])
    assert len(ignored_names(model, ("head",))) == 1
    with pytest.raises(ValueError, match="cannot keep 'mlp-down' in float.*Parts found: head"):
        ignored_names(model, ("head", "mlp-down"))


def test_options_reach_nncf_and_the_manifest(tuned_export):
    out = tuned_export.out_dir
    manifest = json.loads((out / "onnx_export.json").read_text())
    entry = manifest["openvino_int8"]
    assert entry["options"] == {**json.loads(json.dumps(OPTIONS.__dict__)), "ignore": ["mlp-down", "first-layer"]}
    assert entry["calibration_samples"] == 12 and entry["options_text"] == OPTIONS.describe()
    assert "preset mixed; SmoothQuant alpha 0.5; 12 calibration texts; float: mlp-down, first-layer" in (
        out / "README.md").read_text()
    f32 = openvino.Core().read_model(str(out / "openvino" / "openvino_model.xml"))
    kept = set(ignored_names(f32, OPTIONS.ignore))
    assert entry["float_nodes"] == len(kept) == 6 + 1  # the first layer's six products and the others' down-proj
    int8 = openvino.Core().read_model(str(out / "openvino" / "openvino_model_int8.xml"))
    assert kept <= _float_matmuls(int8)  # every named part stays float ...
    quantised = {op.get_friendly_name() for op in f32.get_ordered_ops() if op.get_type_name() == "MatMul"} - kept
    assert quantised and not quantised & _float_matmuls(int8)  # ... and every other product is quantised
    assert all(p["ok"] for p in manifest["parity"] if p["name"].startswith("OpenVINO int8"))


def test_accuracy_control_meets_its_cosine_target(tuned_export, tmp_path):
    xml = tuned_export.out_dir / "openvino" / "openvino_model.xml"
    tokenizer = AutoTokenizer.from_pretrained(str(tuned_export.out_dir))
    items = calibration_inputs(tokenizer, CALIBRATION, tuned_export.inputs)
    options = Int8Options(calibration_size=16, validation_size=8, max_cosine_drop=0.001)
    entry = quantize_openvino_int8(xml, tmp_path / "int8.xml", items, options, "sentence_embedding")
    assert entry["calibration_samples"] == 16 and entry["validation_samples"] == 8
    core = openvino.Core()
    reference = core.compile_model(str(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    quantised = core.compile_model(str(tmp_path / "int8.xml"), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    cosines = []
    for inputs in items[-8:]:  # the held-back validation texts
        a = reference(inputs)["sentence_embedding"][0]
        b = quantised(inputs)["sentence_embedding"][0]
        cosines.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))))
    assert np.mean(cosines) >= 1 - 0.001 - 1e-6
    assert entry["target_met"] and entry["validation_mean_cosine"] == pytest.approx(np.mean(cosines), abs=1e-6)
    with pytest.raises(ValueError, match="holds back 8 validation texts from the 8"):
        quantize_openvino_int8(xml, tmp_path / "x.xml", items[:8], options, "sentence_embedding")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"preset": "fast"}, "unknown NNCF preset 'fast'"),
    ({"ignore": ("embeddings",)}, "cannot keep 'embeddings' in float: the parts are head, first-layer"),
    ({"smooth_quant_alpha": 1.5}, r"alpha must lie in \[0, 1\]"),
    ({"calibration_size": 0}, "calibration size must be at least 1"),
    ({"max_cosine_drop": 0.0}, r"cosine drop must lie in \(0, 1\)"),
    ({"validation_size": 0}, "validation size must be at least 1"),
])
def test_bad_options_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Int8Options(**kwargs)


def test_options_describe_what_differs():
    assert Int8Options().describe() == "defaults"
    assert Int8Options(smooth_quant_alpha=SMOOTH_QUANT_OFF).describe() == "SmoothQuant off"
    assert Int8Options(max_cosine_drop=0.002).texts_needed == 300 + 100
    assert set(IGNORABLE) == {"head", "first-layer", "last-layer", "attention-inputs", "mlp-down", "attention-scores"}


def test_cli_flags_need_int8_openvino_and_valid_values(bert_dump_model, tmp_path, capsys):
    with pytest.raises(SystemExit, match="--int8-preset, --int8-float choose how OpenVINO int8 is quantised"):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "a"), "--int8", "--int8-preset", "mixed",
              "--int8-float", "mlp-down"])
    with pytest.raises(SystemExit):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "b"), "--int8", "--openvino",
              "--int8-smooth-quant", "strong"])
    assert "must be a finite number in [0, 1] or 'off'; got 'strong'" in capsys.readouterr().err
    # a value in range without --int8 --openvino: the missing flags are named
    with pytest.raises(SystemExit, match="--int8-smooth-quant choose how OpenVINO int8 is quantised; add --int8"):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "c"), "--int8-smooth-quant", "0.5"])
    with pytest.raises(SystemExit) as refused:  # out of range: refused as the command line is read
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "c"), "--int8", "--openvino",
              "--int8-smooth-quant", "2"])
    assert refused.value.code == 2
    assert "--int8-smooth-quant: must be a finite number in [0, 1]" in capsys.readouterr().err
    assert not any((tmp_path / name).exists() for name in "abc")
