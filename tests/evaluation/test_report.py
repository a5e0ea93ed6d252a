"""The report tool: mean ± std over seeds from JSON rows and mteb results folders."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from hf_dumpembed.evaluation.report import Record, load_records, markdown_table
from tests.support.eval_fixtures import KNOWN_NDCG_AT_10


def test_mean_and_std_over_seeds_from_long_rows(tmp_path: Path) -> None:
    rows = [
        {"method": "spectemp", "k": 64, "seed": seed, "task": task, "ndcg_at_10": value}
        for seed, values in enumerate([(0.5, 0.7), (0.6, 0.9), (0.7, 0.8)])
        for task, value in zip(("A", "B"), values, strict=True)
    ] + [{"method": "pca", "k": 64, "task": "A", "value": 0.4}, {"method": "pca", "k": 64, "task": "B", "value": 0.6}]
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"rows": rows}))
    table = markdown_table(load_records([path]), baseline="pca")
    lines = table.splitlines()
    assert lines[0] == "| method | k | seeds | A | B | mean | vs pca |"
    spectemp = next(line for line in lines if line.startswith("| spectemp"))
    a_std = statistics.stdev([0.5, 0.6, 0.7])
    assert f"0.6000 ± {a_std:.4f}" in spectemp
    per_seed = [(0.5 + 0.7) / 2, (0.6 + 0.9) / 2, (0.7 + 0.8) / 2]
    assert f"{statistics.mean(per_seed):.4f} ± {statistics.stdev(per_seed):.4f}" in spectemp
    assert f"{100 * (statistics.mean(per_seed) / 0.5 - 1):+.2f}%" in spectemp
    assert "| pca | 64 | – | 0.4000 | 0.6000 | 0.5000 |  |" in lines


def test_wide_rows_as_benchmark_scripts_write_them(tmp_path: Path) -> None:
    path = tmp_path / "wide.json"
    path.write_text(json.dumps({"encoder": {"model": "x", "rows": [
        {"method": "pca", "k": 128, "PyFAQ": 0.8, "ManPages": 0.6},
        {"method": "pca", "k": 64, "PyFAQ": 0.7, "ManPages": 0.5},
    ]}}))
    records = load_records([path])
    assert Record("pca", "PyFAQ", 0.8, 128, None) in records and len(records) == 4
    lines = markdown_table(records, tasks=["PyFAQ", "ManPages"]).splitlines()
    assert lines[2] == "| pca | 128 | – | 0.8000 | 0.6000 | 0.7000 |"  # larger k first
    assert lines[3] == "| pca | 64 | – | 0.7000 | 0.5000 | 0.6000 |"


def test_mteb_results_folder(known_run, bert_dump_model: Path) -> None:  # noqa: F811
    records = load_records([known_run.results_folder.parents[2]])
    dim = json.loads((bert_dump_model / "config.json").read_text())["projection_dim"]
    assert records == [Record("test-org/tiny-dump", "KnownTask", pytest.approx(KNOWN_NDCG_AT_10, abs=1e-5), dim,
                              None)]


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_records([tmp_path / "missing.json"])
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    with pytest.raises(ValueError, match="no rows"):
        load_records([empty])
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_records([broken])
    (tmp_path / "results").mkdir()
    with pytest.raises(ValueError, match="no mteb results"):
        load_records([tmp_path / "results"])


def _rows_file(tmp_path: Path) -> Path:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps([{"method": "pca", "task": "A", "value": 0.5}]))
    return path


def _report_error(argv: list[str]) -> str:
    from hf_dumpembed.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["report", *argv])
    message = str(exit_info.value.code)
    assert message.startswith("hf-dumpembed report: error: ") and "\n" not in message
    return message


def test_report_out_refuses_an_existing_file_unless_overwrite(tmp_path: Path) -> None:
    """An existing --out is refused in one line and left as it was; --overwrite replaces it."""
    from hf_dumpembed.cli import main

    rows, out = _rows_file(tmp_path), tmp_path / "table.md"
    out.write_text("old notes\n")
    message = _report_error([str(rows), "--out", str(out)])
    assert f"{out} already exists" in message and "--overwrite" in message
    assert out.read_text() == "old notes\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.json", "table.md"]  # no lock, no staging file
    main(["report", str(rows), "--out", str(out), "--overwrite"])
    assert out.read_text().startswith("| method |")


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_report_out_never_writes_into_a_model_folder_or_an_input(tmp_path: Path, overwrite: list[str]) -> None:
    """An --out inside a model folder, equal to an input or inside an input folder is refused whatever --overwrite
    says; every file is left as it was."""
    rows = _rows_file(tmp_path)
    model = tmp_path / "model"
    (model / "plots").mkdir(parents=True)
    (model / "config.json").write_text('{"model_type": "dumpembed"}')
    stock = tmp_path / "stock"
    (stock / "1_Pooling").mkdir(parents=True)
    (stock / "modules.json").write_text("[]")
    results = tmp_path / "results"
    results.mkdir()
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    targets = (model / "config.json", model / "README.md", model / "plots" / "table.md", stock / "1_Pooling" / "x.md")
    for target in targets:
        assert "is inside the model folder" in _report_error([str(rows), "--out", str(target), *overwrite])
    assert "must differ from the input" in _report_error([str(rows), "--out", str(rows), *overwrite])
    assert "is inside (or is) the input" in _report_error([str(rows), str(results), "--out", str(results / "t.md"),
                                                           *overwrite])
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
