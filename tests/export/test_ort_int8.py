"""onnxruntime int8 choices (export/ort_int8.py): each does what it says to the int8 graph, and reaches the manifest,
the README and the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

onnxruntime = pytest.importorskip("onnxruntime", reason="pip install 'hf_dumpembed[onnx]'")

import onnx  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

from hf_dumpembed.cli import main  # noqa: E402
from hf_dumpembed.export.onnx import export_onnx  # noqa: E402
from hf_dumpembed.export.onnx_optimize import fuse_for_onnxruntime, projection_fusion  # noqa: E402
from hf_dumpembed.export.ort_int8 import (  # noqa: E402
    OrtInt8Options,
    quantize_blockwise_int8,
    quantize_dynamic_int8,
    quantize_onnxruntime_int8,
)
from hf_dumpembed.export.verify import encode_with_automodel  # noqa: E402

TEXTS = ["Open the file, read every line.", "a", "Dense retrieval ranks passages by cosine similarity " * 6,
         "Two men pushed carts through the woods.", "The girl is carrying a baby."]


@pytest.fixture(scope="module")
def bert_export(bert_dump_model, tmp_path_factory):
    """The tiny BERT's export with today's int8 graph (the graphs the choices below are quantised from)."""
    return export_onnx(bert_dump_model, tmp_path_factory.mktemp("ort-int8") / "bert", int8=True).out_dir


def _vectors(path, folder, texts=TEXTS):
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    batch = AutoTokenizer.from_pretrained(str(folder))(texts, padding=True, return_tensors="np")
    names = [i.name for i in session.get_inputs()]
    return session.run(["sentence_embedding"], {n: batch[n].astype(np.int64) for n in names})[0]


def _ops(path) -> list[str]:
    return [node.op_type for node in onnx.load(str(path)).graph.node]


def _layers(model_dir) -> int:
    return json.loads((model_dir / "config.json").read_text())["text_config"]["num_hidden_layers"]


def _quantised(export, tmp_path, options):
    tmp_path.mkdir(exist_ok=True)
    target = tmp_path / "model_int8.onnx"
    entry = quantize_onnxruntime_int8(export / "model.onnx", export / "model_optimized.onnx", target, options)
    return target, entry


def test_attention_inputs_quantise_the_query_key_value_projections(bert_dump_model, bert_export, tmp_path):
    layers = _layers(bert_dump_model)
    default = _ops(bert_export / "model_int8.onnx")
    assert default.count("Attention") == layers and "MultiHeadAttention" not in default  # projection inside, fp32
    target, entry = _quantised(bert_export, tmp_path, OrtInt8Options(attention_inputs=True))
    ops = _ops(target)
    assert "Attention" not in ops and ops.count("MultiHeadAttention") == layers
    assert ops.count("MatMulInteger") == default.count("MatMulInteger") + 3 * layers  # + q, k, v per layer
    assert entry["quantised_products"] == ops.count("MatMulInteger") and entry["source"] == "model.onnx"
    assert not any(tmp_path.glob("ort-int8-*"))  # the re-fused source was a temporary file
    reference = encode_with_automodel(bert_dump_model, TEXTS)
    vectors = _vectors(target, bert_export)
    assert not np.allclose(vectors, reference, atol=1e-6) and (vectors * reference).sum(axis=1).min() > 0.95


def test_reduce_range_keeps_weights_in_seven_bits(bert_export, tmp_path):
    def weight_extremes(path):
        graph = onnx.load(str(path)).graph
        values = [numpy_helper.to_array(t) for t in graph.initializer if t.name.endswith("_quantized")]
        return min(int(v.min()) for v in values), max(int(v.max()) for v in values)

    low, high = weight_extremes(bert_export / "model_int8.onnx")
    assert low < -64 or high > 63  # 8-bit weights use the whole range
    target, entry = _quantised(bert_export, tmp_path, OrtInt8Options(reduce_range=True))
    low, high = weight_extremes(target)
    assert -64 <= low and high <= 64 and entry["options_text"] == "7-bit weights"


def test_block_wise_int8_is_matmul_nbits(bert_dump_model, bert_export, tmp_path):
    target, entry = _quantised(bert_export, tmp_path, OrtInt8Options(block_size=16))
    nodes = [node for node in onnx.load(str(target)).graph.node if node.op_type == "MatMulNBits"]
    assert len(nodes) == entry["quantised_products"] > 0 and "MatMul" not in _ops(target)
    attributes = {a.name: a.i for a in nodes[0].attribute}
    assert attributes["bits"] == 8 and attributes["block_size"] == 16 and attributes["accuracy_level"] == 4
    reference = encode_with_automodel(bert_dump_model, TEXTS)
    assert (_vectors(target, bert_export) * reference).sum(axis=1).min() > 0.999


def test_block_wise_activations_survive_an_outlier_feature(tmp_path):
    """One outlier input feature (as in transformers' MLP states): one activation scale per tensor rounds the other
    features away; one per block of 16 features confines the damage to the outlier's block."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    weight = rng.standard_normal((64, 16)).astype(np.float32)
    weight[0] = 0.0  # the outlier feature only sets the activation scale; its own product is exact either way
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="product")], "one_product",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 16])],
                              [numpy_helper.from_array(weight, "w")])
    source = tmp_path / "product.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(source))
    x = rng.standard_normal((8, 64)).astype(np.float32)
    x[:, 0], x[:, 1:16] = 200.0, 0.0  # the outlier feature, alone in its block
    exact = x @ weight

    def error(quantise, name):
        target = tmp_path / f"{name}.onnx"
        quantise(source, target)
        session = onnxruntime.InferenceSession(str(target), providers=["CPUExecutionProvider"])
        return float(np.abs(session.run(["y"], {"x": x})[0] - exact).max())

    per_tensor = error(quantize_dynamic_int8, "dynamic")
    per_block = error(lambda s, t: quantize_blockwise_int8(s, t, 16), "blockwise")
    assert per_block < per_tensor / 10


def test_mlp_fp32_with_attention_inputs_keeps_only_the_down_projections(bert_dump_model, bert_export, tmp_path):
    target, entry = _quantised(bert_export, tmp_path, OrtInt8Options(attention_inputs=True, mlp_fp32=True))
    layers = _layers(bert_dump_model)
    graph = onnx.load(str(target)).graph
    kept = [node for node in graph.node if node.op_type == "MatMul" and node.name in entry["fp32_nodes"]]
    assert len(kept) == len(entry["fp32_nodes"]) == layers
    everything, _ = _quantised(bert_export, tmp_path / "all", OrtInt8Options(attention_inputs=True))
    assert _ops(target).count("MatMulInteger") == _ops(everything).count("MatMulInteger") - layers


def test_the_choices_reach_the_manifest_and_readme(bert_dump_model, tmp_path):
    options = OrtInt8Options(attention_inputs=True, block_size=32)
    result = export_onnx(bert_dump_model, tmp_path / "out", int8=True, onnxruntime_int8=options)
    manifest = json.loads((result.out_dir / "onnx_export.json").read_text())
    entry = manifest["onnxruntime_int8"]
    assert entry["options"] == {"attention_inputs": True, "reduce_range": False, "mlp_fp32": False, "block_size": 32}
    assert entry["options_text"] == options.describe() == ("block-wise int8 (MatMulNBits, blocks of 32); attention "
                                                           "inputs quantised")
    assert any(p["name"].startswith("onnxruntime int8") and p["ok"] for p in manifest["parity"])
    readme = (result.out_dir / "README.md").read_text()
    assert "query/key/value projections apart" in readme and "one scale per block of 32 input features" in readme


def test_cli_sets_the_choices_and_refuses_them_without_int8(bert_dump_model, tmp_path):
    main(["export-onnx", str(bert_dump_model), str(tmp_path / "cli"), "--int8", "--int8-reduce-range",
          "--int8-attention-inputs"])
    entry = json.loads((tmp_path / "cli" / "onnx_export.json").read_text())["onnxruntime_int8"]
    assert entry["options"]["reduce_range"] and entry["options"]["attention_inputs"]
    with pytest.raises(SystemExit, match="--int8-reduce-range, --int8-block-size choose how model_int8.onnx"):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "no"), "--int8-reduce-range",
              "--int8-block-size", "32"])
    with pytest.raises(SystemExit):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "no"), "--int8", "--int8-block-size", "33"])
    with pytest.raises(SystemExit, match="choose one of the two"):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "no"), "--int8", "--int8-block-size", "32",
              "--int8-reduce-range"])
    assert not (tmp_path / "no").exists()


def test_options_are_checked():
    with pytest.raises(ValueError, match="block size must be one of"):
        OrtInt8Options(block_size=48)
    with pytest.raises(ValueError, match="choose one of the two"):
        OrtInt8Options(block_size=32, reduce_range=True)
    assert OrtInt8Options().describe() == "defaults"


def test_projection_fusion_is_restored_after_the_block(bert_export, tmp_path):
    from onnxscript.rewriter.ort_fusions import _core

    original = _core.fuse_attention
    with pytest.raises(RuntimeError, match="inside"), projection_fusion(enabled=False):
        assert _core.fuse_attention is not original
        raise RuntimeError("inside")
    assert _core.fuse_attention is original
    counts = fuse_for_onnxruntime(bert_export / "model.onnx", tmp_path / "fused.onnx")
    assert counts.get("attention")  # the next plain fusion fuses the projections again


def test_decoder_attention_inputs(llama_dump_model, tmp_path):
    """A decoder's fusions keep its projections as MatMul nodes anyway: the choice changes nothing there."""
    result = export_onnx(llama_dump_model, tmp_path / "llama", int8=True,
                         onnxruntime_int8=OrtInt8Options(attention_inputs=True))
    assert all(p.ok for p in result.parity)
    entry = json.loads((result.out_dir / "onnx_export.json").read_text())["onnxruntime_int8"]
    assert entry["quantised_products"] == sum(op == "MatMulInteger" for op in _ops(result.out_dir / "model_int8.onnx"))
    assert entry["quantised_products"] >= 7 * _layers(llama_dump_model)  # q, k, v, o, gate, up, down
