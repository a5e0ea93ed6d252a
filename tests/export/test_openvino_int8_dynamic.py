"""OpenVINO int8 dynamic: int8 weights without calibration, the run-time group size stored in the IR, checked and
served like the other runtimes, for encoders and decoders."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="pip install 'hf_dumpembed[onnx]'")
openvino = pytest.importorskip("openvino", reason="pip install 'hf_dumpembed[openvino]'")
pytest.importorskip("nncf", reason="pip install 'hf_dumpembed[openvino]'")

from hf_dumpembed.cli import main  # noqa: E402
from hf_dumpembed.export.onnx import export_onnx  # noqa: E402
from hf_dumpembed.export.openvino_int8_dynamic import (  # noqa: E402
    GROUP_SIZE_OPTION,
    RUNTIME_OPTIONS,
    dynamic_group_size,
    weight_input_widths,
)
from hf_dumpembed.export.runtimes import available_runtimes, row_cosines  # noqa: E402

DYNAMIC = "openvino/openvino_model_int8_dynamic.xml"
RUNTIMES = ["torch fp32", "OpenVINO f32", "OpenVINO int8 dynamic", "OpenVINO int8 dynamic bf16"]


def stored_group_size(xml) -> int | None:
    """The dynamic-quantisation group size in the IR's rt_info (None when it has none)."""
    model = openvino.Core().read_model(str(xml))
    if not model.has_rt_info([RUNTIME_OPTIONS, GROUP_SIZE_OPTION]):
        return None
    return int(model.get_rt_info([RUNTIME_OPTIONS, GROUP_SIZE_OPTION]).astype(str))


@pytest.fixture(scope="module")
def dynamic_export(bert_dump_model, tmp_path_factory):
    """The tiny BERT (hidden 32, MLP 64) exported with the OpenVINO dynamic int8 IR only (no calibration texts)."""
    return export_onnx(bert_dump_model, tmp_path_factory.mktemp("dynamic") / "out", openvino=True, fuse=False,
                       int8_dynamic=True)


@pytest.mark.parametrize(("widths", "size"), [([384, 1536], 128), ([576, 1536], 64), ([32, 64], 32),
                                              ([48, 64], 16)])
def test_group_size_is_the_largest_that_divides_every_width(widths, size):
    assert dynamic_group_size(widths) == size


@pytest.mark.parametrize(("widths", "message"), [([100, 384], "no dynamic-quantisation group size"),
                                                 ([], "no matrix product with a constant weight")])
def test_group_size_refuses_widths_it_cannot_serve(widths, message):
    with pytest.raises(ValueError, match=message):
        dynamic_group_size(widths)


def test_weights_are_int8_and_the_group_size_travels_in_the_ir(bert_dump_model, dynamic_export):
    out = dynamic_export.out_dir
    manifest = json.loads((out / "onnx_export.json").read_text())
    entry = manifest["openvino_int8_dynamic"]
    core = openvino.Core()
    f32 = core.read_model(str(out / "openvino" / "openvino_model.xml"))
    widths = weight_input_widths(f32)
    assert entry["group_size"] == 32 and entry["products"] == len(widths) > 0 and entry["mode"] == "int8_sym"
    assert manifest["openvino_int8"] is None and not (out / "model_int8.onnx").exists()  # no static int8 asked for
    dynamic = core.read_model(str(out / DYNAMIC))
    assert weight_input_widths(dynamic) == []  # no product reads a float constant any more
    int8_weights = [op for op in dynamic.get_ordered_ops()
                    if op.get_type_name() == "Constant" and op.get_element_type() == openvino.Type.i8]
    assert len(int8_weights) >= len(widths)
    assert stored_group_size(out / DYNAMIC) == 32 and stored_group_size(out / "openvino/openvino_model.xml") is None
    # the key the writer stores is the one OpenVINO compiles with: 16 (not its default, 32) read from the IR alone
    # equals 16 passed explicitly (on a CPU whose plugin takes no group size, both read 0)
    model = core.read_model(str(out / DYNAMIC))
    model.set_rt_info("16", [RUNTIME_OPTIONS, GROUP_SIZE_OPTION])
    explicit = core.compile_model(model, "CPU", {GROUP_SIZE_OPTION: 16}).get_property(GROUP_SIZE_OPTION)
    assert core.compile_model(model, "CPU").get_property(GROUP_SIZE_OPTION) == explicit
    checked = [p for p in manifest["parity"] if p["name"].startswith("OpenVINO int8 dynamic (")]
    assert checked and all(p["ok"] and p["min_cosine"] >= 0.95 for p in checked)
    readme = (out / "README.md").read_text()
    assert "openvino_model_int8_dynamic.xml" in readme and "groups of 32 input channels" in readme


def test_both_precisions_serve_and_stay_close_to_torch(bert_dump_model, dynamic_export):
    opened, skipped = available_runtimes(dynamic_export.out_dir, bert_dump_model, threads=1, names=RUNTIMES)
    assert [r.name for r in opened] == RUNTIMES and not skipped
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(dynamic_export.out_dir))
    batch = tokenizer(["How do I sort a list?", "Open the file and read it line by line, then close it."],
                      padding=True, return_tensors="np")
    feed = {name: batch[name].astype(np.int64) for name in dynamic_export.inputs}
    vectors = {runtime.name: runtime.run(feed) for runtime in opened}
    for name in RUNTIMES[1:]:
        assert row_cosines(vectors[name], vectors["torch fp32"]).min() > 0.95, name
    assert not np.array_equal(vectors["OpenVINO int8 dynamic"], vectors["OpenVINO f32"])  # int8 weights differ


def test_a_decoder_exports_its_dynamic_int8_ir(llama_dump_model, tmp_path):
    result = export_onnx(llama_dump_model, tmp_path / "llama", openvino=True, fuse=False, int8_dynamic=True)
    manifest = json.loads((result.out_dir / "onnx_export.json").read_text())
    assert manifest["openvino_int8_dynamic"]["group_size"] == 32
    checked = [p for p in manifest["parity"] if p["name"].startswith("OpenVINO int8 dynamic (")]
    assert checked and all(p["ok"] for p in checked)


def test_dynamic_int8_needs_openvino(bert_dump_model, tmp_path):
    with pytest.raises(SystemExit, match="--int8-dynamic writes an OpenVINO IR .*; add --openvino"):
        main(["export-onnx", str(bert_dump_model), str(tmp_path / "cli"), "--int8-dynamic"])
    with pytest.raises(ValueError, match="needs openvino=True"):
        export_onnx(bert_dump_model, tmp_path / "api", int8_dynamic=True)
    assert not (tmp_path / "cli").exists() and not (tmp_path / "api").exists()
