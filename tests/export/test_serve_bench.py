"""serve-bench: every runtime of an export timed on the same batches, checked against torch, the fastest within
tolerance recommended and recorded in the export (manifest and README)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="pip install 'hf_dumpembed[onnx]'")

from hf_dumpembed.cli import main  # noqa: E402
from hf_dumpembed.data.sample_texts import stdlib_docstrings, stdlib_sources  # noqa: E402
from hf_dumpembed.export import torch_compiled  # noqa: E402
from hf_dumpembed.export.onnx import MANIFEST_FILE, export_onnx  # noqa: E402
from hf_dumpembed.export.runtimes import (  # noqa: E402
    COMPILED_RUNTIMES,
    RUNTIME_NAMES,
    available_runtimes,
    row_cosines,
    spec_of,
)
from hf_dumpembed.export.serve_bench import (  # noqa: E402
    ISA_FLAGS,
    SECTION_START,
    MeasureOptions,
    RuntimeResult,
    cpu_flags,
    length_sorted_batches,
    recommend,
    record_in_export,
    serve_bench,
    time_interleaved,
)

QUICK = MeasureOptions(seconds=0.0, short=6, long=3, batch_size=4, max_length=64, threads=1)
CALIBRATION = [f"How to {verb} a {noun} in Python, step by step." for verb in ("read", "sort", "parse")
               for noun in ("file", "list", "string")]
# The default run times the runtimes that need no compiling; the compiled ones are checked apart (aot_eager here,
# inductor in the slow test).
EAGER = [name for name in RUNTIME_NAMES if name not in COMPILED_RUNTIMES]


@pytest.fixture(scope="module")
def full_export(bert_dump_model, tmp_path_factory):
    pytest.importorskip("openvino", reason="pip install 'hf_dumpembed[openvino]'")
    pytest.importorskip("nncf", reason="pip install 'hf_dumpembed[openvino]'")
    return export_onnx(bert_dump_model, tmp_path_factory.mktemp("serve") / "bert", int8=True, openvino=True,
                       int8_dynamic=True, calibration_texts=CALIBRATION, calibration_source="tests").out_dir


@pytest.fixture(scope="module")
def bench(full_export):
    return serve_bench(full_export, options=QUICK, runtimes=EAGER)


def test_the_streams_runtime_splits_batches_and_gives_the_one_request_vectors(full_export, bert_dump_model):
    from transformers import AutoTokenizer

    opened, skipped = available_runtimes(full_export, bert_dump_model, threads=2,
                                         names=["OpenVINO int8 bf16", "OpenVINO int8 bf16 streams"])
    assert not skipped
    one_request, streams = (runtime.run for runtime in opened)
    tokenizer = AutoTokenizer.from_pretrained(str(full_export))
    inputs = json.loads((full_export / MANIFEST_FILE).read_text())["inputs"]
    for texts in (CALIBRATION[:1], CALIBRATION[:2], CALIBRATION[:5]):  # fewer rows than streams, odd splits
        (batch,), _ = length_sorted_batches(tokenizer, texts, len(texts), inputs, max_length=64)
        expected, got = one_request(batch), streams(batch)
        assert got.shape == expected.shape == (len(texts), expected.shape[1])
        cosines = row_cosines(got, expected)
        assert cosines.min() > 0.9999  # the same graph and arithmetic; only the threads per request differ


def test_every_runtime_of_the_export_is_timed_and_checked(bench):
    names = [r.name for r in bench.results]
    assert names == EAGER  # the export carries every graph; torch comes from the recorded source
    assert bench.baseline == bench.reference == "torch fp32"
    assert list(bench.groups) == ["short", "long"]
    assert bench.groups["short"]["texts"] == 6 and bench.groups["long"]["texts"] == 3
    assert bench.groups["long"]["mean_tokens"] > bench.groups["short"]["mean_tokens"]
    by_name = {r.name: r for r in bench.results}
    assert by_name["torch fp32"].speedup == {"short": 1.0, "long": 1.0}
    assert by_name["torch fp32"].max_abs_diff == 0.0
    for name in ("onnxruntime fp32", "onnxruntime fp32 fused", "OpenVINO f32"):
        assert by_name[name].ok and by_name[name].max_abs_diff <= 1e-4, name
    for name in ("torch bf16", "OpenVINO bf16", "onnxruntime int8", "OpenVINO int8", "OpenVINO int8 dynamic"):
        row = by_name[name]
        assert row.arithmetic == spec_of(name).arithmetic and 0.5 < row.min_cosine <= 1.0 + 1e-6, name
        assert row.tolerance.startswith("min cosine"), name
    assert all(seconds > 0 for r in bench.results for seconds in r.median_s.values())
    assert all(r.open_s >= 0 and r.first_pass_s > 0 for r in bench.results)


def test_the_table_and_json_state_each_runtimes_load_and_first_pass(bench):
    header, _, *rows = bench.table().splitlines()
    assert header.endswith("| within tolerance | load s | first pass s |")
    for row, result in zip(rows, bench.results, strict=True):
        assert row.endswith(f"| {result.open_s:.1f} | {result.first_pass_s:.1f} |")
    recorded = json.loads(json.dumps(bench.to_json()))["results"]
    assert [r["first_pass_s"] for r in recorded] == [r.first_pass_s for r in bench.results]
    assert "first pass s: its first encoding of all the texts" in bench.describe()


@pytest.fixture
def traced_only(monkeypatch):
    """Compiled runtimes traced by aot_eager (no C++ build): the default run checks their plumbing, quickly."""
    monkeypatch.setattr(torch_compiled, "BACKEND", "aot_eager")


def test_compiled_runtimes_are_timed_with_their_warm_up(full_export, traced_only):
    names = ["torch fp32", "torch fp32 compiled", "torch bf16", "torch bf16 compiled"]
    measured = serve_bench(full_export, options=QUICK, runtimes=names)
    by_name = {r.name: r for r in measured.results}
    assert list(by_name) == names and not measured.skipped
    assert by_name["torch fp32 compiled"].ok and by_name["torch fp32 compiled"].max_abs_diff <= 1e-5
    assert abs(by_name["torch bf16 compiled"].min_cosine - by_name["torch bf16"].min_cosine) <= 1e-3
    assert all(r.first_pass_s > 0 for r in measured.results)


def test_compiled_runtimes_say_why_they_cannot_run(full_export, monkeypatch):
    monkeypatch.setattr(torch_compiled, "cpp_compiler", lambda: None)
    opened, skipped = available_runtimes(full_export, None, 1, ["onnxruntime fp32", "torch bf16 compiled"])
    assert [r.name for r in opened] == ["onnxruntime fp32"]
    assert skipped == {"torch bf16 compiled": "no model folder (give --model)"}
    source = json.loads((full_export / MANIFEST_FILE).read_text())["source"]
    _, skipped = available_runtimes(full_export, source, 1, ["torch bf16 compiled"])
    assert skipped == {"torch bf16 compiled": "no C++ compiler for torch.compile (install g++)"}


@pytest.mark.slow
def test_inductor_compiled_runtimes_stay_within_tolerance(full_export):
    measured = serve_bench(full_export, options=QUICK, runtimes=["torch fp32", "torch bf16", *COMPILED_RUNTIMES])
    by_name = {r.name: r for r in measured.results}
    assert list(by_name) == ["torch fp32", "torch bf16", *COMPILED_RUNTIMES] and not measured.skipped
    assert by_name["torch fp32 compiled"].ok
    # the tiny random model's bf16 rounding: as far from fp32 as eager bf16 is
    assert abs(by_name["torch bf16 compiled"].min_cosine - by_name["torch bf16"].min_cosine) <= 0.01
    assert all(r.first_pass_s > 0 for r in measured.results)


def test_the_recommendation_is_the_fastest_runtime_within_tolerance(bench):
    chosen = bench.recommendation["runtime"]
    passing = [r for r in bench.results if r.ok]
    assert chosen == max(passing, key=lambda r: r.mean_speedup).name
    assert chosen in bench.recommendation["text"] and "torch fp32" in bench.recommendation["text"]
    assert set(bench.recommendation["per_group"]) == {"short", "long"}
    assert set(bench.machine["cpu_flags"]) <= set(ISA_FLAGS)
    assert bench.machine["cpu_flags"] == cpu_flags()


def _result(name, speedups, ok=True):
    return RuntimeResult(name, "fp32", None, dict.fromkeys(speedups, 1.0), dict(speedups), 0.0, 1.0, "t", ok)


def test_recommend_skips_runtimes_beyond_tolerance_and_breaks_ties_by_order():
    results = [_result("torch fp32", {"short": 1.0, "long": 1.0}), _result("fast but wrong", {"short": 9, "long": 9},
               ok=False), _result("a", {"short": 2.0, "long": 1.0}), _result("b", {"short": 1.0, "long": 2.0}),
               _result("c", {"short": 1.2, "long": 1.2})]
    chosen = recommend(results, "torch fp32")
    assert chosen["runtime"] == "a"  # a and b tie at sqrt(2); a comes first
    assert chosen["per_group"] == {"short": "a", "long": "b"}
    assert "long texts b" in chosen["text"]
    assert chosen["close"] == ["b"] and "Within 10% of it: b (one run does not order" in chosen["text"]
    assert recommend([_result("x", {"short": 2.0}, ok=False)], "x")["runtime"] is None


def test_recommend_names_the_runtimes_too_close_to_order():
    results = [_result("torch fp32", {"short": 1.0}), _result("int8", {"short": 3.0}),
               _result("int8 bf16", {"short": 2.8}), _result("bf16", {"short": 2.6}),
               _result("near but wrong", {"short": 2.99}, ok=False)]
    chosen = recommend(results, "torch fp32")
    assert chosen["runtime"] == "int8" and chosen["close"] == ["int8 bf16"]  # 2.8 within 10% of 3.0; 2.6 is not
    assert "Within 10% of it: int8 bf16" in chosen["text"]
    alone = recommend(results[:2] + results[3:], "torch fp32")
    assert alone["close"] == [] and "Within" not in alone["text"]


def test_timing_is_interleaved_over_the_same_batches_and_honours_the_budget():
    calls = []
    runs = {name: (lambda batch, name=name: calls.append((name, batch["id"]))) for name in ("a", "b", "c")}
    batches = [{"id": i} for i in range(4)]
    times = time_interleaved(runs, batches, min_repeats=2, max_repeats=5)
    assert {len(t) for t in times.values()} == {2}  # no seconds asked: the minimum repeats
    assert len(calls) == 2 * 4 * 3
    for batch in range(4):  # every runtime gets each batch before the next batch starts
        block = calls[batch * 3:(batch + 1) * 3]
        assert {name for name, _ in block} == {"a", "b", "c"} and {b for _, b in block} == {batch}
    assert [name for name, _ in calls[:3]] != [name for name, _ in calls[3:6]]  # the order rotates
    capped = time_interleaved(runs, batches, min_repeats=1, max_repeats=3, seconds=3600.0)
    assert {len(t) for t in capped.values()} == {3}


def test_record_in_export_writes_manifest_and_one_readme_section(bench, full_export, tmp_path):
    folder = shutil.copytree(full_export, tmp_path / "export")
    record_in_export(folder, bench, "hf-dumpembed serve-bench EXPORT")
    record_in_export(folder, bench, "hf-dumpembed serve-bench EXPORT --seconds 1")
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    assert manifest["serve_bench"]["recommendation"]["runtime"] == bench.recommendation["runtime"]
    assert manifest["serve_bench"]["machine"]["cpu_flags"] == bench.machine["cpu_flags"]
    assert manifest["inputs"] == json.loads((full_export / MANIFEST_FILE).read_text())["inputs"]  # kept
    readme = (folder / "README.md").read_text()
    assert readme.count(SECTION_START) == 1 and "--seconds 1" in readme  # replaced, not appended twice
    assert readme.startswith((full_export / "README.md").read_text().split(SECTION_START)[0][:200])
    assert bench.recommendation["text"] in readme


def test_cli_measures_the_runtimes_asked_for_and_records_them(full_export, tmp_path, capsys):
    folder = shutil.copytree(full_export, tmp_path / "export")
    untouched = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    args = ["serve-bench", str(folder), "--seconds", "0", "--short", "3", "--long", "2", "--batch-size", "2",
            "--runtime", "torch fp32", "--runtime", "onnxruntime int8"]
    main([*args, "--no-record"])
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == untouched
    main([*args, "--output", str(tmp_path / "bench.json")])
    out = capsys.readouterr().out
    assert "| onnxruntime int8 |" in out and "Recommended here:" in out
    recorded = json.loads((folder / MANIFEST_FILE).read_text())["serve_bench"]
    assert [r["name"] for r in recorded["results"]] == ["torch fp32", "onnxruntime int8"]
    assert json.loads((tmp_path / "bench.json").read_text())["results"] == recorded["results"]
    readme = (folder / "README.md").read_text()
    command = "hf-dumpembed serve-bench EXPORT --seconds 0.0 --short 3 --long 2 --batch-size 2 --runtime 'torch fp32'"
    assert f"`{command} --runtime 'onnxruntime int8'`" in readme


def test_without_the_model_folder_the_fp32_graph_is_the_reference(full_export, tmp_path):
    folder = shutil.copytree(full_export, tmp_path / "export")
    manifest = json.loads((folder / MANIFEST_FILE).read_text())
    manifest["source"] = str(tmp_path / "gone")
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest))
    bench = serve_bench(folder, options=QUICK, runtimes=["torch fp32", "onnxruntime fp32", "onnxruntime int8"])
    assert bench.baseline == "onnxruntime fp32" and "torch fp32" in bench.skipped
    assert "--model" in bench.skipped["torch fp32"]
    assert [r.name for r in bench.results] == ["onnxruntime fp32", "onnxruntime int8"]


def test_missing_graphs_are_named_not_timed(bert_dump_model, full_export, tmp_path):
    folder = shutil.copytree(full_export, tmp_path / "export")
    (folder / "model_int8.onnx").unlink()
    opened, skipped = available_runtimes(folder, bert_dump_model, 1, ["onnxruntime fp32", "onnxruntime int8"])
    assert [r.name for r in opened] == ["onnxruntime fp32"]
    assert skipped == {"onnxruntime int8": "model_int8.onnx is not in the export"}


def test_bad_inputs_are_refused_with_what_to_do(bert_dump_model, full_export, tmp_path):
    with pytest.raises(ValueError, match="export-onnx"):
        serve_bench(bert_dump_model, options=QUICK)  # a model folder, not an export
    with pytest.raises(ValueError, match="unknown runtime 'tensorrt'.*torch fp32"):
        serve_bench(full_export, options=QUICK, runtimes=["tensorrt"])
    with pytest.raises(ValueError, match="not a model folder"):
        serve_bench(full_export, tmp_path, options=QUICK)
    with pytest.raises(ValueError, match="empty"):
        serve_bench(full_export, options=QUICK, texts=["  ", ""])


def test_given_texts_are_one_group(full_export):
    bench = serve_bench(full_export, options=QUICK, texts=["one short text", "another text, a bit longer " * 5],
                        runtimes=["torch fp32", "onnxruntime fp32"])
    assert list(bench.groups) == ["given"] and bench.groups["given"]["texts"] == 2
    assert np.isclose(bench.results[0].speedup["given"], 1.0)


def test_sample_texts_are_deterministic_and_of_two_lengths():
    short, long = stdlib_docstrings(20), stdlib_sources(5)
    assert short == stdlib_docstrings(20) and long == stdlib_sources(5)
    assert len(short) == 20 and len(long) == 5
    assert max(map(len, short)) < min(map(len, long)) and min(map(len, long)) >= 800


@pytest.mark.parametrize("seconds", [float("nan"), float("inf"), -1.0, True])
def test_measure_options_refuse_seconds_that_are_not_a_finite_duration(seconds) -> None:
    from hf_dumpembed.export.serve_bench import MeasureOptions

    with pytest.raises(ValueError, match="seconds must be a finite number >= 0"):
        MeasureOptions(seconds=seconds)
