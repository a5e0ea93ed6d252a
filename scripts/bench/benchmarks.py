"""The bench runner, and BENCHMARKS.md as a generated file: one small JSON record per section, rendered in order.

    python scripts/bench/benchmarks.py --help            # every bench, one line each
    python scripts/bench/benchmarks.py fit-cost --help   # one bench: what it measures, how, its options
    python scripts/bench/benchmarks.py fit-cost --rows 1000000 --repeats 3
    python scripts/bench/benchmarks.py render   # rewrite BENCHMARKS.md from scripts/bench/results/*.json
    python scripts/bench/benchmarks.py check    # write nothing; exit 1, with a diff, when BENCHMARKS.md differs

Run it from the repository root. A bench is a module of ``benches/`` (``fit_cost.py``: ``fit-cost``; ``_`` marks a
helper) with ``register(subparsers)`` and ``run(args)``, imported only when its subcommand runs; what the benches
share to measure is in ``harness.py``, what they share to record here. tests/repository/test_benchmarks.py checks
the committed BENCHMARKS.md and that every record's commands still parse.

A record (``scripts/bench/results/<section>.json``) holds what a section says: its title, date, machine, the
commands that reproduce it, the set-up (text, model, recipe), tables of raw numbers (formatted here, per column)
and the reading. A bench writes its record when it finishes (``finish_run``); ``render`` turns the records into
BENCHMARKS.md and ``check`` tells whether a file still equals that render (so a hand edit is caught).
A quickstart ``summary.json`` (``"kind": "quickstart"``) copied into the folder renders as a section too.

Record fields:

* ``section`` (str, = the file's stem), ``order`` (a number, sections render by ascending order; a bench that
  files one record per CPU class adds the class's rank / 10, as ``benches._serving.class_order`` does), ``title``
  (str), ``date`` (``YYYY-MM-DD``), ``machine`` (``this_machine()`` dict, or a string for records written before it
  existed), ``commands`` (list of shell lines), ``setup`` and ``reading`` (markdown);
* ``tables``: a list of ``{"caption": md, "columns": [str], "rows": [[cell]], "formats": {column: spec},
  "notes": md}`` (caption, formats and notes optional). A cell is a string (verbatim), a number (formatted with
  its column's spec: an int = decimals, or a Python format spec such as ``","`` or ``"+.2%"``), ``null``
  (empty), a list of numbers (joined with ", ") or ``{"mean": x, "std": y}`` (``x ± y``).
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import difflib
import importlib
import json
import logging
import os
import re
import shlex
import statistics
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

from harness import summary
from pydantic import AfterValidator, BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr, ValidationError

from hf_dumpembed._utils.console import say
from hf_dumpembed._utils.machine import describe_machine, machine_info
from hf_dumpembed._utils.tables import relative_change, render_markdown
from hf_dumpembed.export.serve_bench import cpu_flags

RESULTS_DIR = Path("scripts/bench/results")
BENCHMARKS_MD = Path("BENCHMARKS.md")
RUNNER_COMMAND = "python scripts/bench/benchmarks.py"
REGENERATE = f"{RUNNER_COMMAND} render"
BENCHES = Path(__file__).resolve().parent / "benches"
LOG_FORMAT = "%(asctime)s %(name)s: %(message)s"
INTRO = """\
Every figure here was measured on the machine named with it, with the command given. Ratios are measured side
by side in one run (models interleaved, rotated order per repeat) and reported as medians over repeats, because
these machines are noisy."""
QUICKSTART_ORDER = 5


@dataclass
class Table:
    """A table of raw values; ``formats`` maps a column to its number format (decimals or a format spec)."""

    columns: list[str]
    rows: list[list[Any]]
    caption: str = ""
    formats: dict[str, int | str] = field(default_factory=dict)
    notes: str = ""


@dataclass
class BenchRecord:
    """One section of BENCHMARKS.md."""

    section: str
    order: float
    title: str
    date: str
    machine: dict[str, Any] | str
    commands: list[str]
    setup: str
    tables: list[Table]
    reading: str
    headline: str = ""  # the area's headline figure, one line, for the summary at the top (optional)

    def to_json(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["tables"] = [{k: v for k, v in table.items() if v or k in ("columns", "rows")}
                             for table in payload["tables"]]
        if not payload["headline"]:
            del payload["headline"]
        return payload


# ---------------------------------------------------------------------------------------------------- validation
# pydantic checks the shapes (types, missing and unknown fields); the checks after it are about meaning (a row's
# length against its columns, a format against Python's format spec, a section against its file name).


def _fail(path: Path | str, where: str, message: str) -> ValueError:
    return ValueError(f"{path}: field {where!r} {message}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _valid_cell(value: Any) -> bool:
    if value is None or isinstance(value, str) or _number(value):
        return True
    if isinstance(value, list):
        return all(_number(v) for v in value)
    return isinstance(value, dict) and set(value) == {"mean", "std"} and all(_number(v) for v in value.values())


def _checked(test: Callable[[Any], bool], message: str) -> AfterValidator:
    """A pydantic validator that keeps the value when ``test`` holds and otherwise says ``message``."""
    def check(value: Any) -> Any:
        if not test(value):
            raise ValueError(f"{message}, got {value!r}")
        return value

    return AfterValidator(check)


_Cell = Annotated[Any, _checked(_valid_cell, "must be a string, number, null, list of numbers or {'mean', 'std'}")]
_Number = Annotated[Any, _checked(_number, "must be a number")]
_OptionalNumber = Annotated[Any, _checked(lambda v: v is None or _number(v), "must be a number or null")]
_Machine = Annotated[Any, _checked(lambda v: isinstance(v, (dict, str)), "must be dict or str")]
_Spec = Annotated[Any, _checked(lambda v: isinstance(v, str) or _number(v) and isinstance(v, int) and v >= 0,
                                "must be decimals (int) or a format spec")]
_STRICT = ConfigDict(strict=True, extra="forbid")


class _TableSchema(BaseModel):
    model_config = _STRICT
    columns: list[StrictStr]
    rows: list[list[_Cell]]
    caption: StrictStr = ""
    formats: dict[StrictStr, _Spec] = {}
    notes: StrictStr = ""


class _RecordSchema(BaseModel):
    model_config = _STRICT
    section: StrictStr
    order: _Number
    title: StrictStr
    date: StrictStr
    machine: _Machine
    commands: list[StrictStr]
    setup: StrictStr
    tables: list[_TableSchema]
    reading: StrictStr
    headline: StrictStr = ""


class _QuickstartRow(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")
    label: StrictStr
    dim: StrictInt
    texts_per_second: _OptionalNumber
    scores: dict[StrictStr, _OptionalNumber]
    mean: _OptionalNumber = None


class _QuickstartTraining(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")
    data: StrictStr
    rows: StrictInt
    steps: StrictInt | None
    batch_size: StrictInt
    max_seq_length: StrictInt
    seed: StrictInt
    num_negatives: Any = None
    dump_tokens_on_top: StrictBool = False  # max_seq_length counts text only; a K > 0 model reads K more tokens


class _QuickstartProjection(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")
    method: StrictStr
    mode: StrictStr | None = None  # SpecTemp's mode (summaries written before it was recorded have none)
    dim: StrictInt
    corpus: StrictStr
    num_texts: StrictInt


class _QuickstartStep(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")
    name: StrictStr
    seconds: _Number
    skipped: StrictBool


class _QuickstartSummary(BaseModel):
    """What the section reads from a quickstart ``summary.json`` (other keys are ignored)."""

    model_config = ConfigDict(strict=True, extra="ignore")
    date: StrictStr
    machine: _Machine
    command: StrictStr
    mode: StrictStr
    wall_seconds: _Number
    training: _QuickstartTraining
    projection: _QuickstartProjection
    tasks: list[StrictStr]
    skipped_tasks: dict[StrictStr, Any]
    steps: list[_QuickstartStep]
    rows: list[_QuickstartRow]
    decoder_rows: list[_QuickstartRow] | None = None
    pipeline_seconds: Any = None
    reading: StrictStr = ""


_TYPE_NAMES = {"int_type": "int", "string_type": "str", "list_type": "list", "dict_type": "dict", "bool_type": "bool",
               "model_type": "an object", "model_attributes_type": "an object"}


def _field_name(loc: tuple, payload: Any) -> str:
    """``tables[0].rows[2] (column)`` for pydantic's ``("tables", 0, "rows", 2, 1)``."""
    name, node, parent = "", payload, None
    for i, part in enumerate(loc):
        if isinstance(part, int) and i >= 2 and loc[i - 2] == "rows" and isinstance(loc[i - 1], int):
            columns = parent.get("columns", []) if isinstance(parent, dict) else []
            return f"{name} ({columns[part] if part < len(columns) else part})"
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
        if part == "rows" and isinstance(node, dict):
            parent = node
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            node = None
    return name


def _schema(model: type[BaseModel], payload: Any, path: Path | str, what: str) -> Any:
    """``model`` validated from ``payload``; an error naming the file and the field, as the records are written."""
    try:
        return model.model_validate(payload)
    except ValidationError as error:
        first = error.errors()[0]
        where, kind, value = _field_name(first["loc"], payload), first["type"], first.get("input")
        if kind == "missing":
            raise _fail(path, where, "is missing") from None
        if kind == "extra_forbidden":
            what, model = ("table", _TableSchema) if "tables" in first["loc"] else (what, model)
            raise _fail(path, where, f"is not a {what} field ({', '.join(model.model_fields)})") from None
        if kind == "value_error":
            raise _fail(path, where, str(first["ctx"]["error"])) from None
        expected = _TYPE_NAMES.get(kind, first["msg"])
        raise _fail(path, where, f"must be {expected}, got {type(value).__name__}") from None


def _date(value: str, path: Path | str, where: str, with_time: bool = False) -> str:
    """The day of ``value`` (``YYYY-MM-DD``; an ISO date-time when ``with_time``)."""
    try:
        return (dt.datetime.fromisoformat(value).date() if with_time else dt.date.fromisoformat(value)).isoformat()
    except ValueError:
        expected = "an ISO date-time" if with_time else "a date YYYY-MM-DD"
        raise _fail(path, where, f"must be {expected}, got {value!r}") from None


def _table(table: _TableSchema, path: Path | str, index: int) -> Table:
    where = f"tables[{index}]."
    columns = table.columns
    if not columns:
        raise _fail(path, f"{where}columns", "must be a non-empty list of strings")
    for number, row in enumerate(table.rows):
        if len(row) != len(columns):
            raise _fail(path, f"{where}rows[{number}]", f"must be a list of {len(columns)} cells (one per column)")
    for column, spec in table.formats.items():
        if column not in columns:
            raise _fail(path, f"{where}formats.{column}", f"names no column (columns: {columns})")
        try:
            _format_number(1.5, spec)
        except ValueError:
            raise _fail(path, f"{where}formats.{column}", f"is not a valid format spec: {spec!r}") from None
    return Table(columns=list(columns), rows=[list(r) for r in table.rows], caption=table.caption,
                 formats=dict(table.formats), notes=table.notes)


def record_from_json(payload: Any, path: Path | str = "<record>") -> BenchRecord:
    """Validate a record's JSON; errors name the file and the field."""
    if not isinstance(payload, dict):
        raise ValueError(f"{path}: a benchmark record must be a JSON object, got {type(payload).__name__}")
    if payload.get("kind") == "quickstart":
        return record_from_quickstart(payload, path)
    record = _schema(_RecordSchema, payload, path, "record")
    if isinstance(path, Path) and path.stem != record.section:
        raise _fail(path, "section", f"must equal the file name's stem {path.stem!r}, got {record.section!r}")
    if not record.title.strip():
        raise _fail(path, "title", "must not be empty")
    if not record.commands or not all(c.strip() for c in record.commands):
        raise _fail(path, "commands", "must be a non-empty list of command lines (strings)")
    tables = [_table(t, path, i) for i, t in enumerate(record.tables)]
    if "\n" in record.headline or "|" in record.headline:
        raise _fail(path, "headline", "must be one line without '|' (a cell of the summary table)")
    return BenchRecord(record.section, record.order, record.title, _date(record.date, path, "date"), record.machine,
                       list(record.commands), record.setup, tables, record.reading, record.headline)


def _quickstart_rows(parsed: list[_QuickstartRow], tasks: list[str] | None) -> Table:
    """One quickstart result table: nDCG@10 per task, the mean, its change against the first row, dimension and
    encode speed (``tasks`` None: the union of the rows' score keys, sorted; the mean is then computed here)."""
    columns = tasks if tasks is not None else sorted({t for row in parsed for t in row.scores})
    means = []
    for row in parsed:
        values = [row.scores.get(t) for t in columns]
        mean = row.mean
        if mean is None and tasks is None and values and None not in values:
            mean = sum(values) / len(values)
        means.append(mean)
    baseline = f"vs {parsed[0].label}" if parsed else "vs first row"
    table_rows = [[row.label, row.dim, *(row.scores.get(t) for t in columns), mean,
                   None if i == 0 else relative_change(mean, means[0]), row.texts_per_second]
                  for i, (row, mean) in enumerate(zip(parsed, means, strict=True))]
    return Table(columns=["model", "dim", *columns, "mean", baseline, "texts/s"], rows=table_rows,
                 formats={**{t: 4 for t in columns}, "mean": 4, baseline: "+.2%", "texts/s": 0})


def record_from_quickstart(summary: dict[str, Any], path: Path | str = "<summary>") -> BenchRecord:
    """The section of a ``hf-dumpembed quickstart`` run, from its ``summary.json``."""
    run = _schema(_QuickstartSummary, summary, path, "summary")
    missing = next((i for i, row in enumerate(summary["rows"]) if "mean" not in row), None)
    if missing is not None:
        raise _fail(path, f"rows[{missing}].mean", "is missing")
    date = _date(run.date, path, "date", with_time=True)
    training, projection, wall, pipeline = run.training, run.projection, run.wall_seconds, run.pipeline_seconds
    budget = f"{training.steps} steps" if training.steps is not None else "one epoch"
    negatives = (f", {training.num_negatives} mined hard negative(s) per pair"
                 if isinstance(training.num_negatives, int) else "")
    timing = (f"wall time {wall:.0f} s for the whole run" if not _number(pipeline) or abs(pipeline - wall) < 0.1 * wall
              else f"all steps together {pipeline:.0f} s (the last invocation, {wall:.0f} s, resumed the others)")
    setup = (f"Mode: {run.mode}; {timing}. **Training text:** {training.rows} pairs "
             f"of `{training.data}`{negatives}, {budget} at batch {training.batch_size}, max length "
             f"{training.max_seq_length}{' text tokens (+ K [DUMP] tokens)' if training.dump_tokens_on_top else ''}, "
             f"seed {training.seed}, the same recipe for every trained model. "
             f"**Projection:** {projection.method}{f' ({projection.mode} mode)' if projection.mode else ''} to "
             f"{projection.dim} dimensions, fitted on "
             f"{projection.num_texts} texts of `{projection.corpus}`. **Evaluation text** (never trained "
             f"on): {', '.join(run.tasks)}.")
    if run.skipped_tasks:
        setup += " Skipped: " + "; ".join(f"{name} ({reason})" for name, reason in sorted(run.skipped_tasks.items()))
        setup += "."
    main_table = _quickstart_rows(run.rows, run.tasks)
    main_table.caption = "nDCG@10 on the held-out tasks; encode speed measured in the same run:"
    tables = [main_table]
    if run.decoder_rows:
        decoder = _quickstart_rows(run.decoder_rows, None)
        decoder.caption = "Zero-shot decoder (`--decoder`), nDCG@10:"
        tables.append(decoder)
    step_rows = [[step.name, step.seconds, "yes (saved output reused)" if step.skipped else "no"] for step in run.steps]
    tables.append(Table(columns=["step", "seconds", "resumed"], rows=step_rows, formats={"seconds": 1},
                        caption="Steps (a rerun resumes every step from its saved output):"))
    return BenchRecord("quickstart", QUICKSTART_ORDER, "Quickstart: the whole pipeline in one command", date,
                       run.machine, [run.command], setup, tables, run.reading)


def load_record(path: Path) -> BenchRecord:
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not valid JSON ({error.msg}, line {error.lineno}).") from None
    return record_from_json(payload, path)


def load_records(directory: Path | str) -> list[BenchRecord]:
    """Every ``*.json`` record under ``directory``, in render order (``order``, then section)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not a folder of benchmark records (scripts/bench/results).")
    records = [load_record(path) for path in sorted(directory.glob("*.json"))]
    if not records:
        raise ValueError(f"{directory} holds no benchmark records (*.json).")
    by_order: dict[float, str] = {}
    for record in records:
        if record.order in by_order:
            raise ValueError(f"{directory}: sections {by_order[record.order]!r} and {record.section!r} have the "
                             f"same order {record.order}; give each its own.")
        by_order[record.order] = record.section
    return sorted(records, key=lambda r: (r.order, r.section))


# ------------------------------------------------------------------------------------------------------- render


def _format_number(value: float, spec: int | str | None) -> str:
    if spec is None:
        return str(value) if isinstance(value, int) else f"{value:g}"
    if isinstance(spec, int):
        return f"{value:.{spec}f}"
    return format(value, spec)


def format_cell(value: Any, spec: int | str | None = None) -> str:
    """A cell as markdown text (see the module docstring)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ", ".join(_format_number(v, spec) for v in value)
    if isinstance(value, dict):
        return f"{_format_number(value['mean'], spec)} ± {_format_number(value['std'], spec)}"
    return _format_number(value, spec)


def spread(values: Sequence[float]) -> float | dict[str, float]:
    """A cell of values over seeds: the one value, or their mean and sample standard deviation."""
    return values[0] if len(values) == 1 else {"mean": statistics.mean(values), "std": statistics.stdev(values)}


def render_table(table: Table) -> str:
    return render_markdown(table.columns, [[format_cell(v, table.formats.get(c)) for c, v in zip(table.columns, row,
                                                                                                   strict=True)]
                                           for row in table.rows])


def machine_line(machine: dict[str, Any] | str) -> str:
    return machine if isinstance(machine, str) else describe_machine(machine)


def render_section(record: BenchRecord) -> str:
    parts = [f"## {record.title}", f"Date: {record.date}. Machine: {machine_line(record.machine).rstrip('.')}."]
    if record.setup.strip():
        parts.append(record.setup.strip())
    parts.append("```bash\n" + "\n".join(record.commands) + "\n```")
    for table in record.tables:
        if table.caption.strip():
            parts.append(table.caption.strip())
        parts.append(render_table(table))
        if table.notes.strip():
            parts.append(table.notes.strip())
    reading = record.reading.strip()
    if reading:
        parts.append(("Reading:\n" if reading.startswith("- ") else "Reading: ") + reading)
    return "\n\n".join(parts) + "\n"


def render(records: list[BenchRecord]) -> str:
    """The whole BENCHMARKS.md: title, intro, a note that the file is generated, the summary (each record's headline,
    linked to its section), each section in order."""
    header = (f"# Benchmarks\n\n{INTRO}\n\n<!-- Generated from scripts/bench/results/*.json (the bench scripts write "
              f"them); do not edit by hand. Regenerate: {REGENERATE} -->\n")
    return "\n".join([header, *render_summary(records), *(render_section(r) for r in records)])


def render_summary(records: list[BenchRecord]) -> list[str]:
    """The one-screen summary: a row per record with a headline, its title linked to its section (empty when no
    record has a headline)."""
    rows = [f"| [{r.title}](#{section_anchor(r.title)}) | {r.headline} |" for r in records if r.headline]
    if not rows:
        return []
    return ["## Summary\n\nThe headline figure of each area; every section below says how it was measured.\n\n"
            "| area | headline |\n|---|---|\n" + "\n".join(rows) + "\n"]


def section_anchor(title: str) -> str:
    """The ``#anchor`` GitHub gives a markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def render_directory(directory: Path | str) -> str:
    return render(load_records(directory))


def regenerate_command(directory: Path | str = RESULTS_DIR, out: Path | str = BENCHMARKS_MD) -> str:
    """The ``render`` command line for ``directory`` and ``out`` (their options only where they are not the
    defaults)."""
    command = REGENERATE
    if Path(directory) != RESULTS_DIR:
        command += f" --results {shlex.quote(str(directory))}"
    if Path(out) != BENCHMARKS_MD:
        command += f" --out {shlex.quote(str(out))}"
    return command


def write_benchmarks(directory: Path | str, out: Path | str) -> str:
    """Render ``directory`` into ``out``; the file is replaced whole (a failed render or write leaves the old one)."""
    text = render_directory(directory)
    out = Path(out)
    staged = out.with_name(f".{out.name}.rendering")
    staged.write_text(text, encoding="utf-8")
    os.replace(staged, out)
    return text


def check(directory: Path | str, out: Path | str) -> None:
    """Raise ValueError (with the first differing lines) when ``out`` is not the render of ``directory``."""
    expected = render_directory(directory)
    out = Path(out)
    if not out.is_file():
        raise FileNotFoundError(f"{out} does not exist; write it with `{regenerate_command(directory, out)}`.")
    actual = out.read_text(encoding="utf-8")
    if actual != expected:
        diff = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(), f"render of {directory}",
                                         str(out), lineterm="", n=1))
        shown = "\n".join(diff[:30]) + ("\n..." if len(diff) > 30 else "")
        raise ValueError(f"{out} is not the render of the records in {directory} (edited by hand, or a record "
                         f"changed without regenerating). Edit the records, then run "
                         f"`{regenerate_command(directory, out)}`.\n{shown}")


# ------------------------------------------------------------------------------------------------- writing records


def command_line(argv: list[str] | None = None) -> str:
    """The command that is running, as a reader would type it (``python scripts/bench/benchmarks.py x --flag``)."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0])
    try:
        script = script.resolve().relative_to(Path.cwd())
    except ValueError:
        pass
    return "python " + shlex.join([script.as_posix(), *argv[1:]])


def add_command(commands: list[str], command: str, replaces: str | None = None) -> list[str]:
    """``commands`` with ``command`` in the place of the first one starting with ``replaces`` (else appended;
    unchanged when it is already there)."""
    if command in commands:
        return list(commands)
    for i, existing in enumerate(commands):
        if replaces and existing.startswith(replaces):
            return [*commands[:i], command, *(c for c in commands[i + 1:] if not c.startswith(replaces))]
    return [*commands, command]


def add_output_arguments(parser: Any, default: Path | None = None) -> None:
    """``--output FILE`` (the run's results as JSON) and ``--record-only`` (re-record them, measuring nothing)."""
    parser.add_argument("--output", type=Path, default=default,
                        help="write the results as JSON here" + (f" (default: {default})" if default else ""))
    parser.add_argument("--record-only", action="store_true",
                        help="measure nothing: rewrite the section record's tables from the --output JSON")


def run_or_rerecord(args: Any, measure: Callable[[Any], dict[str, Any]],
                    record: Callable[[dict[str, Any], bool], None]) -> None:
    """A bench with ``add_output_arguments``: with ``--record-only``, ``record(the --output JSON, False)``, measuring
    nothing; otherwise ``record(result, True)`` of a fresh ``measure(args)`` dated today, saved to ``--output`` first
    (when given)."""
    if args.record_only:
        if args.output is None or not args.output.is_file():
            raise SystemExit(f"--record-only reads the results of an earlier run: give --output FILE "
                             f"({args.output} does not exist).")
        record(json.loads(args.output.read_text()), False)
        return
    result = measure(args)
    result["date"] = dt.date.today().isoformat()
    if args.output is not None:
        save_results(args.output, result)
    record(result, True)


def stored_results(*paths: Path) -> list[Any]:
    """The JSON in each of ``paths`` (None where there is no file); SystemExit when there is none at all."""
    found = [json.loads(path.read_text()) if path.is_file() else None for path in paths]
    if all(value is None for value in found):
        raise SystemExit(f"no results to record: none of {', '.join(map(str, paths))} exists.")
    return found


def save_results(path: Path, result: dict[str, Any]) -> None:
    """Write a run's raw results as JSON (its folder made when missing), with the command that produced them and
    this machine (``this_machine``, with the result's load averages)."""
    result["command"] = command_line()
    result["machine"] = this_machine(result.get("load_average_before"), result.get("load_average_after"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    say(f"Wrote {path}")


def this_machine(load_average: Sequence[float] | None = None,
                 load_average_after: Sequence[float] | None = None) -> dict[str, Any]:
    """``machine_info()`` of this process with the CPU's vector instruction sets (``cpu_flags``) and the load
    averages (``os.getloadavg()``) measured before and after the run where given (rounded to 2 decimals)."""
    machine = {**machine_info(), "cpu_flags": cpu_flags()}
    for key, value in (("load_average", load_average), ("load_average_after", load_average_after)):
        if value is not None:
            machine[key] = [round(v, 2) for v in value]
    return machine


def _provenance(measured: bool, add_command: bool, replaces: str | None, date: str | None,
                machine: dict[str, Any] | str | None, load_averages: tuple[Sequence[float] | None, ...]
                ) -> dict[str, Any]:
    """``write_record``'s command, machine and date fields for the running command (see ``finish_run``)."""
    fields: dict[str, Any] = {"date": date}
    if add_command:
        fields |= {"command": command_line(), "replaces": replaces}
    elif measured:
        fields["commands"] = [command_line()]
    if measured:
        fields["date"] = date or dt.date.today().isoformat()
        fields["machine"] = machine if machine is not None else this_machine(*load_averages)
    return fields


def finish_run(section: str, tables: list[Table], *, title: str | None, order: float | None, measured: bool = True,
               add_command: bool = False, replaces: str | None = None, date: str | None = None,
               machine: dict[str, Any] | str | None = None, result: dict[str, Any] | None = None,
               setup: str | None = None, reading: str | None = None, record: bool = True,
               summary: str | None = None, show: bool = False) -> None:
    """The tail of every bench run: write the section record with ``tables`` (unless ``record`` is false: smoke
    runs), then print ``summary`` (with the 1-minute load averages the result holds, where it does) and, with
    ``show``, the tables.

    ``measured`` (a run that measured the tables): the record gets this command as its one command (with
    ``add_command``: added to its commands, in the place of the one starting with ``replaces``), this machine
    (``this_machine`` with the result's ``load_average_before`` / ``load_average_after``, unless ``machine`` is
    given) and ``date`` (default: the result's ``"date"``, else today). Not ``measured`` (tables re-derived from
    earlier results): the record keeps its machine, commands (unless ``add_command``) and date (unless ``date``
    or the result's). ``setup`` / ``reading`` left None keep the record's prose."""
    result = result or {}
    loads = (result.get("load_average_before"), result.get("load_average_after"))
    if record:
        fields = _provenance(measured, add_command, replaces, date or result.get("date"), machine, loads)
        write_record(section, tables=tables, title=title, order=order, setup=setup, reading=reading, **fields)
    if summary is not None:
        before, after = loads
        load = "" if before is None else f"; load average {before[0]:.2f}"
        load += "" if after is None else f" → {after[0]:.2f}"
        say(summary + load)
    for table in tables if show else []:
        say(render_table(table))


def write_record(section: str, *, tables: list[Table], commands: list[str] | None = None,
                 command: str | None = None, replaces: str | None = None,
                 machine: dict[str, Any] | str | None = None, date: str | None = None, title: str | None = None,
                 setup: str | None = None, reading: str | None = None, order: float | None = None,
                 directory: Path | str = RESULTS_DIR) -> Path:
    """Write (or update) ``<directory>/<section>.json`` with fresh tables.

    Fields left ``None`` keep the existing record's value (the prose — set-up and reading — is written by a
    person and kept); a new record needs ``title``, ``commands`` (or ``command``), ``machine``, ``order``.
    ``command`` adds one command to the existing ones (sections built by several runs; see ``add_command``).
    ``date`` defaults to the existing record's (else today): a fresh measurement passes its own. Prints a
    reminder when the numbers changed but the reading was kept."""
    path = Path(directory) / f"{section}.json"
    old = load_record(path) if path.is_file() else None
    if command is not None:
        commands = add_command(commands or (old.commands if old else []), command, replaces)
    missing = [name for name, value in (("title", title), ("commands", commands), ("machine", machine),
                                        ("order", order)) if value is None and old is None]
    if missing:
        raise ValueError(f"{path} does not exist yet: give {', '.join(missing)} for a new record.")
    record = BenchRecord(
        section=section,
        order=order if order is not None else old.order,
        title=title if title is not None else old.title,
        date=date or (old.date if old else dt.date.today().isoformat()),
        machine=machine if machine is not None else old.machine,
        commands=commands if commands is not None else old.commands,
        setup=setup if setup is not None else (old.setup if old else ""),
        tables=tables,
        reading=reading if reading is not None else (old.reading if old else ""),
        headline=old.headline if old else "",
    )
    payload = record.to_json()
    record_from_json(json.loads(json.dumps(payload)), path)  # what we write must load
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if old is not None and reading is None and old.tables != record.tables:
        say(f"{path}: the numbers changed; re-read them and update its 'reading' (and setup) before "
            f"regenerating BENCHMARKS.md ({REGENERATE}).")
    else:
        say(f"Wrote {path}; regenerate BENCHMARKS.md with `{REGENERATE}`.")
    return path


# ---------------------------------------------------------------------------------------------------- command line


def bench_files() -> dict[str, Path]:
    """Subcommand -> module file of every bench: ``benches/fit_cost.py`` is ``fit-cost`` (``_`` marks a helper)."""
    return {path.stem.replace("_", "-"): path for path in sorted(BENCHES.glob("[!_]*.py"))}


def first_paragraph(path: Path) -> str:
    """``harness.summary`` of a module's docstring, read without importing it (a bench's imports take seconds)."""
    return summary(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or path.stem)


def register(subparsers: Any) -> None:
    """``render`` and ``check``, each with ``--results DIR`` and ``--out FILE``."""
    paths = argparse.ArgumentParser(add_help=False)
    paths.add_argument("--results", type=Path, default=RESULTS_DIR, metavar="DIR",
                       help=f"the folder of section records, <section>.json (default: {RESULTS_DIR})")
    paths.add_argument("--out", type=Path, default=BENCHMARKS_MD, metavar="FILE",
                       help=f"the rendered file (default: {BENCHMARKS_MD})")
    for name, words in (("render", "Write --out from the records in --results (in their order), replacing it."),
                        ("check", "Write nothing; exit 1, with the first differing lines, when --out is not the "
                                  "render of --results (a hand edit, or a record changed without regenerating).")):
        subparsers.add_parser(name, parents=[paths], help=words, description=words).set_defaults(run=render_or_check)


def render_or_check(args: argparse.Namespace) -> int:
    """``render`` or ``check``; a problem (an invalid record, a stale --out) exits 1 with one message."""
    try:
        if args.command == "check":
            check(args.results, args.out)
            say(f"{args.out} is the render of {args.results}")
        else:
            write_benchmarks(args.results, args.out)
            say(f"Wrote {args.out} from {args.results}")
    except (ValueError, OSError) as error:
        raise SystemExit(f"benchmarks.py {args.command}: {error}") from None
    return 0


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The runner's parser: ``render``, ``check`` and every bench, the bench ``command`` with all its options (only
    its module is imported; the others are listed by name and the first line of their docstring)."""
    parser = argparse.ArgumentParser(prog="python scripts/bench/benchmarks.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")
    register(subparsers)
    for name, path in bench_files().items():
        if name == command:
            importlib.import_module(f"benches.{path.stem}").register(subparsers)
        else:
            subparsers.add_parser(name, help=first_paragraph(path))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse a subcommand and run it: logging on stderr, torch's threads from ``--threads`` where the bench has it."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    logging.basicConfig(level=getattr(args, "log_level", logging.WARNING), format=LOG_FORMAT)
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)
    return args.run(args) or 0


if __name__ == "__main__":
    sys.exit(main())
