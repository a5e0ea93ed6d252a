"""BENCHMARKS.md as a generated file: records, validation, rendering, `benchmarks.py check`, the benches' tail
(`finish_run`, `run_or_rerecord`), the quickstart section, and the runner: every record's commands still parse."""

from __future__ import annotations

import argparse
import importlib
import json
import re
import shlex
import sys
from datetime import date
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "bench"))  # the runner is repository tooling, not part of the package

from benchmarks import (  # noqa: E402
    RUNNER_COMMAND,
    Table,
    add_command,
    build_parser,
    check,
    finish_run,
    format_cell,
    load_record,
    load_records,
    render,
    render_section,
    run_or_rerecord,
    write_record,
)
from benchmarks import main as benchmarks_main  # noqa: E402

MACHINE = {"cpu": "Test CPU", "cores": 2, "memory_gib": 8.0, "device": "cpu", "python": "3.11.7", "platform": "x",
           "libraries": {"torch": "2.13.0", "transformers": "5.24.0", "sentence-transformers": "6.2.0"},
           "torch_threads": 2}


def small_record(**changes) -> dict:
    record = {
        "section": "demo", "order": 10, "title": "Demo throughput", "date": "2026-11-30",
        "machine": "2 CPU cores, shared; no GPU",
        "commands": ["python scripts/bench/demo.py --repeats 3"],
        "setup": "Text: three sentences.",
        "tables": [{"caption": "Speed:", "columns": ["model", "median s", "ratio", "repeats s", "score"],
                    "rows": [["a", 1.23456, 1.0, [1.2, 1.25, 1.3], {"mean": 0.5, "std": 0.01}],
                             ["b", 2.5, 2.025, [2.4, 2.5], None]],
                    "formats": {"median s": 2, "ratio": "+.1%", "repeats s": 1, "score": 3},
                    "notes": "b is slower."}],
        "reading": "a is faster.",
    }
    record.update(changes)
    return record


def write(folder: Path, payload: dict, name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name or payload.get('section', 'quickstart')}.json"
    path.write_text(json.dumps(payload, ensure_ascii=False))
    return path


def test_small_record_renders_exactly(tmp_path: Path) -> None:
    record = load_record(write(tmp_path, small_record()))
    assert render_section(record) == """\
## Demo throughput

Date: 2026-11-30. Machine: 2 CPU cores, shared; no GPU.

Text: three sentences.

```bash
python scripts/bench/demo.py --repeats 3
```

Speed:

| model | median s | ratio | repeats s | score |
|---|---|---|---|---|
| a | 1.23 | +100.0% | 1.2, 1.2, 1.3 | 0.500 ± 0.010 |
| b | 2.50 | +202.5% | 2.4, 2.5 |  |

b is slower.

Reading: a is faster.
"""


def test_cells_and_machine_dicts(tmp_path: Path) -> None:
    assert format_cell(1234567, ",") == "1,234,567"
    assert format_cell(0.12345, 4) == "0.1235"
    assert format_cell("–") == "–"
    assert format_cell(None) == ""
    assert format_cell(3) == "3"
    record = load_record(write(tmp_path, small_record(machine=MACHINE)))
    assert "Machine: Test CPU, 2 cores, 8 GiB, cpu; torch 2.13.0, transformers 5.24.0" in render_section(record)


def test_sections_render_in_order_with_intro(tmp_path: Path) -> None:
    write(tmp_path, small_record(section="late", order=20, title="Late"))
    write(tmp_path, small_record(section="early", order=5, title="Early"))
    text = render(load_records(tmp_path))
    assert text.startswith("# Benchmarks\n\nEvery figure here was measured")
    assert text.index("## Early") < text.index("## Late")
    assert text == render(load_records(tmp_path))  # deterministic


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"title": None}, "title", "must be str"),
    ({"date": "30/11/2026"}, "date", "YYYY-MM-DD"),
    ({"date": "2026-11-30T10:00"}, "date", "YYYY-MM-DD"),
    ({"commands": []}, "commands", "non-empty"),
    ({"order": "1"}, "order", "must be a number"),
    ({"order": True}, "order", "must be a number"),
    ({"section": "other"}, "section", "file name"),
    ({"colour": "red"}, "colour", "not a record field"),
    ({"tables": [{"columns": ["a", "b"], "rows": [[1]]}]}, "tables[0].rows[0]", "2 cells"),
    ({"tables": [{"columns": ["a"], "rows": [[{"x": 1}]]}]}, "tables[0].rows[0] (a)", "must be a string"),
    ({"tables": [{"columns": ["a"], "rows": [], "formats": {"b": 2}}]}, "tables[0].formats.b", "names no column"),
    ({"tables": [{"columns": ["a"], "rows": [], "formats": {"a": "q!"}}]}, "tables[0].formats.a", "not a valid"),
])
def test_validation_errors_name_file_and_field(tmp_path: Path, change: dict, field: str, words: str) -> None:
    payload = small_record()
    payload.update(change)
    if change.get("title", "") is None:
        del payload["title"]
        words = "is missing"
    path = write(tmp_path, payload, name="demo")
    with pytest.raises(ValueError) as error:
        load_record(path)
    assert str(path) in str(error.value)
    assert f"field {field!r}" in str(error.value)
    assert words in str(error.value)


def test_per_class_records_each_get_their_own_place_next_to_each_other(tmp_path: Path) -> None:
    """A bench that files one record per CPU class (onnx and the int8 benches) gives each class its own order
    after the bench's base, most capable class first, so a second class's record does not collide."""
    from benches._serving import class_order

    flags = {"amx": ["avx2", "avx512f", "avx512_vnni", "amx_int8"], "avx512-vnni": ["avx2", "avx512f", "avx512_vnni"],
             "avx2": ["avx2"], "other": []}
    orders = {name: class_order(15, value) for name, value in flags.items()}
    assert orders["amx"] == 15 < orders["avx512-vnni"] < orders["avx2"] < orders["other"] < 16
    for name, order in orders.items():
        write(tmp_path, small_record(section=f"onnx-{name}", order=order))
    write(tmp_path, small_record(section="next", order=16))
    assert [r.section for r in load_records(tmp_path)] == ["onnx-amx", "onnx-avx512-vnni", "onnx-avx2", "onnx-other",
                                                           "next"]


def test_record_only_refiles_the_class_its_results_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--record-only of a per-class bench rewrites the record of the CPU class whose flags the earlier results
    hold, at that class's place, with those results' date, measuring nothing; an error naming the missing file."""
    from benches._serving import class_order, run_serving

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["scripts/bench/benchmarks.py", "demo", "--record-only"])
    flags = ["avx2", "avx512f", "avx512_vnni"]
    output = tmp_path / "runs" / "demo.json"
    output.parent.mkdir()
    speed = {"torch fp32": {"median_s": 0.5, "times": [0.5]}}
    output.write_text(json.dumps({"date": "2026-12-01", "cpu_flags": flags, "max_length": 256, "batch_size": 32,
                                  "threads": 2, "repeats": 1, "lengths": {"short": {
                                      "texts": 8, "source": "s", "mean_tokens": 9.0, "speed": speed}}}))

    def measure(args: argparse.Namespace) -> dict:
        raise AssertionError("--record-only measures nothing")

    results = tmp_path / "scripts" / "bench" / "results"
    write(results, small_record(section="demo-avx512-vnni", order=class_order(15, flags)))
    args = argparse.Namespace(record_only=True, output=output)
    run_serving(args, measure, 15, "demo", "Demo on {}")
    record = load_record(results / "demo-avx512-vnni.json")
    assert record.order == class_order(15, flags) and record.date == "2026-12-01"
    assert record.title == "Demo on AVX-512 VNNI, no AMX" and record.tables[0].rows == [["torch fp32", 0.5, 16.0, 1.0]]
    assert sorted(p.name for p in results.iterdir()) == ["demo-avx512-vnni.json"]
    args.output = tmp_path / "missing.json"
    with pytest.raises(SystemExit, match="missing.json does not exist"):
        run_serving(args, measure, 15, "demo", "Demo on {}")


def test_duplicate_order_and_bad_json_are_errors(tmp_path: Path) -> None:
    write(tmp_path, small_record(section="one"))
    write(tmp_path, small_record(section="two"))
    with pytest.raises(ValueError, match="same order 10"):
        load_records(tmp_path)
    (tmp_path / "two.json").write_text("{not json")
    with pytest.raises(ValueError, match="two.json: not valid JSON"):
        load_records(tmp_path)


def test_check_catches_a_hand_edit_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "results"
    write(records, small_record())
    out = tmp_path / "BENCHMARKS.md"
    paths = ["--results", str(records), "--out", str(out)]
    assert benchmarks_main(["render", *paths]) == 0
    assert benchmarks_main(["check", *paths]) == 0  # passes: fresh render
    assert "is the render of" in capsys.readouterr().out
    out.write_text(out.read_text().replace("| a | 1.23 |", "| a | 1.20 |"))
    with pytest.raises(SystemExit) as error:
        benchmarks_main(["check", *paths])
    message = str(error.value)
    assert message.startswith("benchmarks.py check: ") and "is not the render" in message
    assert "+| a | 1.20 |" in message
    assert f"python scripts/bench/benchmarks.py render --results {records} --out {out}" in message
    with pytest.raises(SystemExit, match="does not exist; write it with"):
        benchmarks_main(["check", "--results", str(records), "--out", str(tmp_path / "missing.md")])
    with pytest.raises(SystemExit, match="not a folder of benchmark records"):
        benchmarks_main(["render", "--results", str(tmp_path / "nothing"), "--out", str(out)])
    assert "1.20" in out.read_text()  # a failed render leaves the file as it was


def test_a_measured_run_records_its_command_machine_and_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A measured run (``run_or_rerecord``): its results saved with the command, machine and date; its record gets
    the command, this machine with the load averages, today's date; --record-only keeps them; --no-record (record
    false) writes no record."""
    monkeypatch.chdir(tmp_path)  # the records go to scripts/bench/results under the working folder
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "scripts" / "bench" / "benchmarks.py"), "demo", "--repeats", "3"])
    table = Table(columns=["model", "median s"], rows=[["a", 0.9]], formats={"median s": 2})
    result = {"rows": [0.9], "load_average_before": [1.234, 1.0, 1.0], "load_average_after": [2.345, 1.0, 1.0]}

    def record(result: dict, fresh: bool) -> None:
        finish_run("demo", [table], title="Demo", order=10, measured=fresh, add_command=not fresh, result=result,
                   summary="3 repeats", show=True)

    args = argparse.Namespace(record_only=False, output=tmp_path / "runs" / "demo.json")
    run_or_rerecord(args, lambda _: dict(result), record)
    recorded = load_record(tmp_path / "scripts" / "bench" / "results" / "demo.json")
    assert recorded.commands == [f"{RUNNER_COMMAND} demo --repeats 3"] and recorded.date == date.today().isoformat()
    assert recorded.machine["load_average"] == [1.23, 1.0, 1.0] and recorded.machine["load_average_after"][0] == 2.35
    assert "cpu_flags" in recorded.machine
    saved = json.loads(args.output.read_text())
    assert saved["command"] == recorded.commands[0] and saved["machine"]["cpu"] == recorded.machine["cpu"]
    printed = capsys.readouterr().out
    assert "3 repeats; load average 1.23 → 2.35" in printed and "| a | 0.90 |" in printed
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "scripts" / "bench" / "benchmarks.py"), "demo", "--record-only"])
    args.record_only = True
    run_or_rerecord(args, lambda _: pytest.fail("--record-only measures nothing"), record)
    again = load_record(tmp_path / "scripts" / "bench" / "results" / "demo.json")
    assert again.machine == recorded.machine and again.date == recorded.date
    assert again.commands == [*recorded.commands, f"{RUNNER_COMMAND} demo --record-only"]
    finish_run("other", [table], title="Other", order=11, record=False)
    assert not (tmp_path / "scripts" / "bench" / "results" / "other.json").exists()


def test_write_record_keeps_the_prose_and_replaces_tables(tmp_path: Path) -> None:
    write(tmp_path, small_record())
    table = Table(columns=["model", "median s"], rows=[["a", 0.9]], formats={"median s": 2})
    write_record("demo", tables=[table], directory=tmp_path, command="python scripts/bench/demo.py --repeats 5",
                 replaces="python scripts/bench/demo.py")
    record = load_record(tmp_path / "demo.json")
    assert record.tables == [table]
    assert record.reading == "a is faster." and record.setup == "Text: three sentences."
    assert record.commands == ["python scripts/bench/demo.py --repeats 5"]
    assert record.date == "2026-11-30" and record.machine == "2 CPU cores, shared; no GPU"
    with pytest.raises(ValueError, match="give title, commands, machine, order"):
        write_record("new", tables=[table], directory=tmp_path)
    assert add_command(["a 1", "b"], "a 2", replaces="a ") == ["a 2", "b"]
    assert add_command(["a 1", "b"], "c") == ["a 1", "b", "c"]


def quickstart_summary() -> dict:
    """Shaped like hf_dumpembed.quickstart's summary.json (extra keys such as folder/all_scores are ignored)."""
    return {
        "kind": "quickstart", "date": "2026-11-30T14:05:09+00:00", "machine": MACHINE,
        "command": "hf-dumpembed quickstart --fast --decoder", "mode": "fast", "wall_seconds": 151.4,
        "training": {"data": "data/StdlibCodeTrain", "rows": 64, "steps": 4, "batch_size": 16, "max_seq_length": 128,
                     "seed": 0, "num_negatives": 0},
        "projection": {"method": "spectemp", "dim": 128, "corpus": "data/StdlibCodeTrain", "num_texts": 512},
        "tasks": ["PyFAQ", "StdlibCode"], "skipped_tasks": {"ManPages": "not built"},
        "rows": [
            {"name": "k0", "label": "MiniLM K=0", "folder": "x", "dim": 384, "texts_per_second": 212.6,
             "scores": {"PyFAQ": 0.8, "StdlibCode": 0.6}, "mean": 0.7, "all_scores": {}},
            {"name": "k4", "label": "MiniLM K=4", "dim": 384, "texts_per_second": 200.4,
             "scores": {"PyFAQ": 0.77, "StdlibCode": 0.63}, "mean": 0.7},
            {"name": "spectemp", "label": "[DUMP] + SpecTemp k=128", "dim": 128, "texts_per_second": None,
             "scores": {"PyFAQ": 0.85, "StdlibCode": None}, "mean": None},
        ],
        "decoder_rows": [
            {"name": "decoder", "label": "SmolLM2 PromptEOL", "dim": 576, "texts_per_second": 2.5,
             "scores": {"PyFAQ": 0.25}},
            {"name": "embedfilter", "label": "SmolLM2 PromptEOL + EmbedFilter τ=2", "dim": 288,
             "texts_per_second": 2.5, "scores": {"PyFAQ": 0.35}},
        ],
        "steps": [{"name": "train K=4", "seconds": 61.25, "skipped": False},
                  {"name": "evaluate", "seconds": 0.0, "skipped": True}],
    }


def test_quickstart_summary_renders_first(tmp_path: Path) -> None:
    write(tmp_path, small_record())
    write(tmp_path, quickstart_summary(), name="quickstart")
    text = render(load_records(tmp_path))
    assert text.index("## Quickstart") < text.index("## Demo throughput")
    section = text[text.index("## Quickstart"):text.index("## Demo throughput")]
    assert "Date: 2026-11-30. Machine: Test CPU, 2 cores" in section
    assert "```bash\nhf-dumpembed quickstart --fast --decoder\n```" in section
    assert "| model | dim | PyFAQ | StdlibCode | mean | vs MiniLM K=0 | texts/s |" in section
    assert "| MiniLM K=0 | 384 | 0.8000 | 0.6000 | 0.7000 |  | 213 |" in section
    assert "| MiniLM K=4 | 384 | 0.7700 | 0.6300 | 0.7000 | +0.00% | 200 |" in section
    assert "| [DUMP] + SpecTemp k=128 | 128 | 0.8500 |  |  |  |  |" in section
    assert "| model | dim | PyFAQ | mean | vs SmolLM2 PromptEOL | texts/s |" in section
    assert "| SmolLM2 PromptEOL + EmbedFilter τ=2 | 288 | 0.3500 | 0.3500 | +40.00% | 2 |" in section
    assert "| train K=4 | 61.2 | no |" in section and "| evaluate | 0.0 | yes (saved output reused) |" in section
    assert "64 pairs of `data/StdlibCodeTrain`, 0 mined hard negative(s) per pair, 4 steps at batch 16" in section
    assert "Skipped: ManPages (not built)." in section
    assert "max length 128, seed 0" in section  # an older summary: max_seq_length counted the [DUMP] tokens too


def test_quickstart_summary_says_when_the_dump_tokens_come_on_top_of_the_text(tmp_path: Path) -> None:
    summary = quickstart_summary()
    summary["training"]["dump_tokens_on_top"] = True
    write(tmp_path, summary, name="quickstart")
    assert "max length 128 text tokens (+ K [DUMP] tokens), seed 0" in render(load_records(tmp_path))


def test_quickstart_summary_errors_name_the_field(tmp_path: Path) -> None:
    summary = quickstart_summary()
    del summary["training"]["steps"]
    path = write(tmp_path, summary, name="quickstart")
    with pytest.raises(ValueError, match=r"quickstart.json: field 'training.steps' is missing"):
        load_record(path)
    summary = quickstart_summary()
    summary["rows"][0]["scores"]["PyFAQ"] = "high"
    path = write(tmp_path, summary, name="quickstart")
    with pytest.raises(ValueError, match=r"field 'rows\[0\].scores.PyFAQ' must be a number"):
        load_record(path)


def test_committed_benchmarks_md_is_the_render_of_the_committed_records() -> None:
    check(ROOT / "scripts" / "bench" / "results", ROOT / "BENCHMARKS.md")


def bench_script(name: str):
    """A bench's module (scripts/bench/benches/NAME.py)."""
    return importlib.import_module(f"benches.{name}")


def test_bench_scripts_derive_tables_from_raw_results() -> None:
    cost = bench_script("train_cost")
    memory = cost.memory_table([
        {"loss": "plain", "step_peak_added_mib": 4000.0}, {"loss": "cached mbs=8", "step_peak_added_mib": 500.0},
        {"loss": "cached mbs=128", "step_peak_added_mib": 1000.0}])
    assert [row[1:] for row in memory.rows] == [["–", 4000.0, 1.0], [128, 1000.0, 0.25], [8, 500.0, 0.125]]
    step = cost.step_table({"models": {
        "0": {"median_s": 10.0, "median_paired_ratio": 1.0, "paired_ratios": [1.0, 1.0], "goal": 1.0},
        "4": {"median_s": 11.0, "median_paired_ratio": 1.05, "paired_ratios": [0.9, 1.2], "goal": 1.08}}})
    assert step.rows[1] == ["all-MiniLM-L6-v2 K = 4", 11.0, 1.05, "0.90–1.20", 1.08] and step.rows[0][3] is None

    quality = bench_script("train_quality")
    runs = {f"K{k}-seed{s}": {"k": k, "seed": s, "path": f"r/K{k}-seed{s}", "steps": 9} for k in (0, 4) for s in (0, 1)}
    metrics = {f"K{k}-seed{s}|T": {"ndcg_at_10": 0.5 + 0.1 * s + (0.01 if k else 0)} for k in (0, 4) for s in (0, 1)}
    table = quality.table(runs, metrics, ["data/T"], [0, 4])
    assert table.columns[3] == "T"
    assert table.rows[0][:3] == ["K=0 fine-tuned", 2, 9] and table.rows[0][-1] == 0.0
    assert table.rows[1][3]["mean"] == pytest.approx(0.56) and table.rows[1][-1] == pytest.approx(0.01 / 0.55)

    projection = bench_script("projection_quality")
    rows = [{"method": "full dimension (baseline)", "k": 384, "ManPages": 0.7, "PyFAQ": 0.9, "StdlibCode": 0.5,
             "mean": 0.7}]
    rows += [{"method": f"oracle γ* ({name})", "k": 384, "gamma": gamma, name: 0.8}
             for name, gamma in (("ManPages", 0.05), ("PyFAQ", 0.3), ("StdlibCode", 0.25), ("mean", 0.2))]
    encoder = projection.encoder_table({"rows": rows})
    assert encoder.rows[0][1] == "full dimension (baseline, no projection)"
    assert encoder.rows[1][1:] == [projection.ORACLE_LABEL, "0.05/0.30/0.25/0.20", 0.8, 0.8, 0.8, 0.8]

    fit = bench_script("fit_cost")
    in_process = fit.record_tables(None, {"rows": 100, "times": {"floor64": [2.0, 4.0], "ours": [3.0, 3.0]},
                                          "median_s": {"floor64": 3.0, "ours": 3.0}, "ours_over_floor64": 1.0})
    assert in_process[0].rows == [[100, "floor64", 3.0, 1.0, [2.0, 4.0]], [100, "ours", 3.0, 1.0, [3.0, 3.0]]]


def test_analysis_record_lists_every_dump_token(tmp_path: Path) -> None:
    analysis = {"models": {
        "K=2": {"num_dump_tokens": 2, "pooling": "mean", "norms": {"cls": 7.0, "dump1": 9.0, "dump2": 9.5,
                                                                   "stopwords": 3.0, "other": 4.0},
                "attention_from_stopwords": {"cls": 9000.4, "dump1": 300.0, "dump2": 310.0}},
        "K=0": {"num_dump_tokens": 0, "pooling": "cls", "norms": {"cls": 6.0, "stopwords": 2.0, "other": 4.5},
                "attention_from_stopwords": {"cls": 10000.0}}}}
    (tmp_path / "analysis.json").write_text(json.dumps(analysis))
    table = bench_script("eval_local").analysis_table([tmp_path])
    assert table.columns[2] == "norm D1..D2"
    text = render_section(load_record(write(tmp_path, small_record(tables=[{
        "columns": table.columns, "rows": table.rows, "formats": table.formats}]))))
    assert "| K=2, mean pooling | 7.00 | 9.00, 9.50 | 3.00 | 4.00 | 9000 | 300, 310 |" in text
    assert "| K=0, cls pooling | 6.00 | – | 2.00 | 4.50 | 10000 | – |" in text


def test_the_summary_lists_each_headline_linked_to_its_section(tmp_path: Path) -> None:
    import re

    (tmp_path / "demo.json").write_text(json.dumps(small_record(headline="3.5x faster at -0.1% nDCG@10")))
    (tmp_path / "other.json").write_text(json.dumps(small_record(section="other", order=20, title="Other [DUMP] run")))
    text = render(load_records(tmp_path))
    summary = text.split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert "| [Demo throughput](#demo-throughput) | 3.5x faster at -0.1% nDCG@10 |" in summary
    assert "Other" not in summary  # no headline, no row
    headings = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^## (.+)$", text, re.M)}
    assert set(re.findall(r"\]\(#([^)]+)\)", summary)) <= headings


@pytest.mark.parametrize("headline", ["two\nlines", "a | b"])
def test_a_headline_is_one_table_cell(headline: str, tmp_path: Path) -> None:
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(small_record(headline=headline)))
    with pytest.raises(ValueError, match="headline"):
        load_record(path)


def test_write_record_keeps_the_headline(tmp_path: Path) -> None:
    (tmp_path / "demo.json").write_text(json.dumps(small_record(headline="kept")))
    write_record("demo", tables=[Table(columns=["a"], rows=[[1]])], directory=tmp_path)
    assert load_record(tmp_path / "demo.json").headline == "kept"


# ------------------------------------------------------------------------------------------- the runner's commands


def shell_commands(record: dict) -> list[str]:
    """A record's command lines, continuation lines joined."""
    return "\n".join(record.get("commands") or [record["command"]]).replace("\\\n", " ").splitlines()


def python_scripts(line: str) -> list[tuple[str, list[str]]]:
    """(script, arguments) of every ``python PATH.py ...`` in a shell line: comments dropped, each command between
    ``;``, ``&``, ``&&``, ``|`` and ``$(...)`` apart, environment assignments before it skipped, and the variable of
    a ``for X in A B ...`` loop read as its first value."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    loops = {tokens[i + 1]: tokens[i + 3] for i in range(len(tokens) - 3) if tokens[i] == "for" and
             tokens[i + 2] == "in"}
    found, words = [], []
    for token in [*tokens, ";"]:
        if token not in {";", "&", "&&", "|", "||", "(", ")"}:
            words.append(token)
            continue
        while words and (words[0] in ("do", "then") or re.fullmatch(r"\w+=\S*", words[0])):
            words.pop(0)
        if len(words) > 1 and words[0] == "python" and words[1].endswith(".py"):
            found.append((words[1], [re.sub(r"\$\{?(\w+)\}?", lambda m: loops.get(m[1], m[0]), w) for w in words[2:]]))
        words = []
    return found


def test_python_scripts_reads_loops_comments_and_chains() -> None:
    line = ('for S in 0 1; do HF_HUB_OFFLINE=1 python scripts/bench/benchmarks.py dump-recipe --seeds $S '
            '--out runs/s$S & done; wait && python scripts/x.py --a "b c"  # python scripts/no.py')
    assert python_scripts(line) == [
        ("scripts/bench/benchmarks.py", ["dump-recipe", "--seeds", "0", "--out", "runs/s0"]),
        ("scripts/x.py", ["--a", "b c"])]


def test_every_record_command_runs_an_existing_script_and_the_runner_parses_it() -> None:
    """A record's command still reproduces it: each ``python PATH.py`` it runs is a file of the repository, a bench
    is run through the runner (``python scripts/bench/benchmarks.py SUBCOMMAND``), whose parser takes its arguments."""
    runner = RUNNER_COMMAND.split()[1]
    wrong, parsed = [], 0
    for path in sorted((ROOT / "scripts" / "bench" / "results").glob("*.json")):
        for line in shell_commands(json.loads(path.read_text(encoding="utf-8"))):
            for script, arguments in python_scripts(line):
                if Path(script).is_absolute() or not (ROOT / script).is_file():
                    wrong.append(f"{path.name}: {script} is not a file of this repository")
                elif script.startswith("scripts/bench/") and script != runner:
                    wrong.append(f"{path.name}: {script} is not the runner, {runner}")
                elif script == runner:
                    try:
                        build_parser(arguments[0] if arguments else None).parse_args(arguments)
                        parsed += 1
                    except SystemExit:
                        wrong.append(f"{path.name}: the runner does not parse {shlex.join(arguments)}")
    assert not wrong, "\n".join(wrong)
    assert parsed >= 50, f"only {parsed} bench commands found in the records: python_scripts is out of date"


def test_the_runner_lists_every_bench_and_runs_a_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    """``--help`` lists every module of benches/ (none imported for it); a bench's --help is its docstring."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    listing = capsys.readouterr().out
    names = [p.stem.replace("_", "-") for p in (ROOT / "scripts" / "bench" / "benches").glob("[!_]*.py")]
    assert len(names) >= 15 and all(re.search(rf"^    {name}\b", listing, re.M) for name in names)
    with pytest.raises(SystemExit):
        build_parser("eval-collect").parse_args(["eval-collect", "--help"])
    assert "usage: python scripts/bench/benchmarks.py eval-collect" in capsys.readouterr().out


def test_the_dump_recipe_entry_point_is_the_runner_subcommand(monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """``python scripts/bench/bench_dump_recipe.py ARGS`` (the runs started under that name resume with it) runs
    ``benchmarks.py dump-recipe ARGS``."""
    import runpy

    monkeypatch.setattr(sys, "argv", ["scripts/bench/bench_dump_recipe.py", "--help"])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(ROOT / "scripts" / "bench" / "bench_dump_recipe.py"), run_name="__main__")
    assert done.value.code == 0
    assert "usage: python scripts/bench/benchmarks.py dump-recipe" in capsys.readouterr().out


def test_interleaved_repeats_rotate_the_order_and_keep_each_series() -> None:
    from harness import interleaved, medians, rotation

    assert [rotation("abc", repeat) for repeat in range(4)] == [list("abc"), list("bca"), list("cab"), list("abc")]
    calls: list[str] = []
    series = interleaved({name: lambda name=name: calls.append(name) or len(calls) for name in "ab"}, 3)
    assert calls == ["a", "b", "b", "a", "a", "b"] and series == {"a": [1, 4, 5], "b": [2, 3, 6]}
    assert medians(series) == {"a": 4, "b": 3}
