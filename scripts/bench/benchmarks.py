"""BENCHMARKS.md as a generated file: one small JSON record per section, rendered in a fixed order.

A record (``scripts/bench/results/<section>.json``) holds what a section says: its title, date, machine, the
commands that reproduce it, the set-up (text, model, recipe), tables of raw numbers (formatted here, per column)
and the reading. The bench scripts write their record when they finish (``write_record``); ``render`` turns
the records into BENCHMARKS.md and ``check`` tells whether a file still equals that render (so a hand edit
is caught). A quickstart ``summary.json`` (``"kind": "quickstart"``) copied into the folder renders as a section
too.

Record fields:

* ``section`` (str, = the file's stem), ``order`` (int, sections render by ascending order), ``title`` (str),
  ``date`` (``YYYY-MM-DD``), ``machine`` (``machine_info()`` dict, or a string for records written before it
  existed), ``commands`` (list of shell lines), ``setup`` and ``reading`` (markdown);
* ``tables``: a list of ``{"caption": md, "columns": [str], "rows": [[cell]], "formats": {column: spec},
  "notes": md}`` (caption, formats and notes optional). A cell is a string (verbatim), a number (formatted with
  its column's spec: an int = decimals, or a Python format spec such as ``","`` or ``"+.2%"``), ``null``
  (empty), a list of numbers (joined with ", ") or ``{"mean": x, "std": y}`` (``x ± y``).
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import shlex
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hf_dumpembed._utils.tables import relative_change, render_markdown

RESULTS_DIR = Path("scripts/bench/results")
REGENERATE = "hf-dumpembed report --benchmarks scripts/bench/results --out BENCHMARKS.md"
INTRO = """\
Every figure here was measured on the machine named with it, with the command given. Ratios are measured side
by side in one run (models interleaved, rotated order per repeat) and reported as medians over repeats, because
these machines are noisy."""
QUICKSTART_ORDER = 5
_FIELDS = ("section", "order", "title", "date", "machine", "commands", "setup", "tables", "reading")


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
    order: int
    title: str
    date: str
    machine: dict[str, Any] | str
    commands: list[str]
    setup: str
    tables: list[Table]
    reading: str

    def to_json(self) -> dict[str, Any]:
        payload = asdict(self)
        payload["tables"] = [{k: v for k, v in table.items() if v or k in ("columns", "rows")}
                             for table in payload["tables"]]
        return payload


# ---------------------------------------------------------------------------------------------------- validation


def _fail(path: Path | str, where: str, message: str) -> ValueError:
    return ValueError(f"{path}: field {where!r} {message}")


def _expect(payload: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path | str,
            where: str = "") -> Any:
    name = f"{where}{key}"
    if key not in payload:
        raise _fail(path, name, "is missing")
    value = payload[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or isinstance(value, bool) and bool not in kinds:
        names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise _fail(path, name, f"must be {names}, got {type(value).__name__}")
    return value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _valid_cell(value: Any) -> bool:
    if value is None or isinstance(value, str) or _number(value):
        return True
    if isinstance(value, list):
        return all(_number(v) for v in value)
    return isinstance(value, dict) and set(value) == {"mean", "std"} and all(_number(v) for v in value.values())


def _date(value: str, path: Path | str, where: str, with_time: bool = False) -> str:
    """The day of ``value`` (``YYYY-MM-DD``; an ISO date-time when ``with_time``)."""
    try:
        return (dt.datetime.fromisoformat(value).date() if with_time else dt.date.fromisoformat(value)).isoformat()
    except ValueError:
        expected = "an ISO date-time" if with_time else "a date YYYY-MM-DD"
        raise _fail(path, where, f"must be {expected}, got {value!r}") from None


def _table(payload: Any, path: Path | str, index: int) -> Table:
    where = f"tables[{index}]."
    if not isinstance(payload, dict):
        raise _fail(path, f"tables[{index}]", f"must be an object, got {type(payload).__name__}")
    unknown = set(payload) - {"caption", "columns", "rows", "formats", "notes"}
    if unknown:
        raise _fail(path, f"{where}{sorted(unknown)[0]}", "is not a table field (caption, columns, rows, formats, "
                    "notes)")
    columns = _expect(payload, "columns", list, path, where)
    if not columns or not all(isinstance(c, str) for c in columns):
        raise _fail(path, f"{where}columns", "must be a non-empty list of strings")
    rows = _expect(payload, "rows", list, path, where)
    for number, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != len(columns):
            raise _fail(path, f"{where}rows[{number}]", f"must be a list of {len(columns)} cells (one per column)")
        for column, cell in zip(columns, row, strict=True):
            if not _valid_cell(cell):
                raise _fail(path, f"{where}rows[{number}] ({column})", "must be a string, number, null, list of "
                            f"numbers or {{'mean', 'std'}}, got {cell!r}")
    formats = payload.get("formats", {})
    if not isinstance(formats, dict):
        raise _fail(path, f"{where}formats", "must be an object {column: decimals or format spec}")
    for column, spec in formats.items():
        if column not in columns:
            raise _fail(path, f"{where}formats.{column}", f"names no column (columns: {columns})")
        if not (isinstance(spec, str) or isinstance(spec, int) and not isinstance(spec, bool) and spec >= 0):
            raise _fail(path, f"{where}formats.{column}", f"must be decimals (int) or a format spec, got {spec!r}")
        try:
            _format_number(1.5, spec)
        except ValueError:
            raise _fail(path, f"{where}formats.{column}", f"is not a valid format spec: {spec!r}") from None
    for key in ("caption", "notes"):
        if not isinstance(payload.get(key, ""), str):
            raise _fail(path, f"{where}{key}", "must be a string (markdown)")
    return Table(columns=list(columns), rows=[list(r) for r in rows], caption=payload.get("caption", ""),
                 formats=dict(formats), notes=payload.get("notes", ""))


def record_from_json(payload: Any, path: Path | str = "<record>") -> BenchRecord:
    """Validate a record's JSON; errors name the file and the field."""
    if not isinstance(payload, dict):
        raise ValueError(f"{path}: a benchmark record must be a JSON object, got {type(payload).__name__}")
    if payload.get("kind") == "quickstart":
        return record_from_quickstart(payload, path)
    unknown = set(payload) - set(_FIELDS)
    if unknown:
        raise _fail(path, sorted(unknown)[0], f"is not a record field ({', '.join(_FIELDS)})")
    section = _expect(payload, "section", str, path)
    if isinstance(path, Path) and path.stem != section:
        raise _fail(path, "section", f"must equal the file name's stem {path.stem!r}, got {section!r}")
    order = _expect(payload, "order", int, path)
    title = _expect(payload, "title", str, path)
    if not title.strip():
        raise _fail(path, "title", "must not be empty")
    date = _date(_expect(payload, "date", str, path), path, "date")
    machine = _expect(payload, "machine", (dict, str), path)
    commands = _expect(payload, "commands", list, path)
    if not commands or not all(isinstance(c, str) and c.strip() for c in commands):
        raise _fail(path, "commands", "must be a non-empty list of command lines (strings)")
    setup = _expect(payload, "setup", str, path)
    tables = [_table(t, path, i) for i, t in enumerate(_expect(payload, "tables", list, path))]
    reading = _expect(payload, "reading", str, path)
    return BenchRecord(section, order, title, date, machine, list(commands), setup, tables, reading)


def _quickstart_rows(rows: Any, tasks: list[str] | None, path: Path | str, key: str) -> Table:
    """One quickstart result table: nDCG@10 per task, the mean, its change against the first row, dimension and
    encode speed (``tasks`` None: the union of the rows' score keys, sorted; the mean is then computed here)."""
    if not isinstance(rows, list):
        raise _fail(path, key, f"must be a list, got {type(rows).__name__}")
    parsed = []
    for i, row in enumerate(rows):
        where = f"{key}[{i}]."
        if not isinstance(row, dict):
            raise _fail(path, f"{key}[{i}]", "must be an object")
        scores = _expect(row, "scores", dict, path, where)
        for task, value in scores.items():
            if value is not None and not _number(value):
                raise _fail(path, f"{where}scores.{task}", f"must be a number, got {value!r}")
        parsed.append((_expect(row, "label", str, path, where), _expect(row, "dim", int, path, where),
                       _expect(row, "texts_per_second", (int, float, type(None)), path, where), scores,
                       _expect(row, "mean", (int, float, type(None)), path, where) if tasks is not None
                       else row.get("mean")))
    columns = tasks if tasks is not None else sorted({t for *_, scores, _ in parsed for t in scores})
    means = []
    for *_, scores, mean in parsed:
        values = [scores.get(t) for t in columns]
        if mean is None and tasks is None and values and None not in values:
            mean = sum(values) / len(values)
        means.append(mean)
    baseline = f"vs {parsed[0][0]}" if parsed else "vs first row"
    table_rows = [[label, dim, *(scores.get(t) for t in columns), mean,
                   None if i == 0 else relative_change(mean, means[0]), speed]
                  for i, ((label, dim, speed, scores, _), mean) in enumerate(zip(parsed, means, strict=True))]
    return Table(columns=["model", "dim", *columns, "mean", baseline, "texts/s"], rows=table_rows,
                 formats={**{t: 4 for t in columns}, "mean": 4, baseline: "+.2%", "texts/s": 0})


def record_from_quickstart(summary: dict[str, Any], path: Path | str = "<summary>") -> BenchRecord:
    """The section of a ``hf-dumpembed quickstart`` run, from its ``summary.json``."""
    date = _date(_expect(summary, "date", str, path), path, "date", with_time=True)
    machine = _expect(summary, "machine", (dict, str), path)
    command = _expect(summary, "command", str, path)
    mode = _expect(summary, "mode", str, path)
    wall = _expect(summary, "wall_seconds", (int, float), path)
    training = _expect(summary, "training", dict, path)
    projection = _expect(summary, "projection", dict, path)
    tasks = _expect(summary, "tasks", list, path)
    skipped = _expect(summary, "skipped_tasks", dict, path)
    steps = _expect(summary, "steps", list, path)
    for key, kind in (("data", str), ("rows", int), ("steps", (int, type(None))), ("batch_size", int),
                      ("max_seq_length", int), ("seed", int)):
        _expect(training, key, kind, path, "training.")
    for key, kind in (("method", str), ("dim", int), ("corpus", str), ("num_texts", int)):
        _expect(projection, key, kind, path, "projection.")
    if not all(isinstance(t, str) for t in tasks):
        raise _fail(path, "tasks", "must be a list of task names")
    step_rows = []
    for i, step in enumerate(steps):
        where = f"steps[{i}]."
        if not isinstance(step, dict):
            raise _fail(path, f"steps[{i}]", "must be an object")
        step_rows.append([_expect(step, "name", str, path, where), _expect(step, "seconds", (int, float), path, where),
                          "yes (saved output reused)" if _expect(step, "skipped", bool, path, where) else "no"])
    budget = f"{training['steps']} steps" if training["steps"] is not None else "one epoch"
    negatives = (f", {training['num_negatives']} mined hard negative(s) per pair"
                 if isinstance(training.get("num_negatives"), int) else "")
    pipeline = summary.get("pipeline_seconds")
    timing = (f"wall time {wall:.0f} s for the whole run" if not _number(pipeline) or abs(pipeline - wall) < 0.1 * wall
              else f"all steps together {pipeline:.0f} s (the last invocation, {wall:.0f} s, resumed the others)")
    setup = (f"Mode: {mode}; {timing}. **Training text:** {training['rows']} pairs "
             f"of `{training['data']}`{negatives}, {budget} at batch {training['batch_size']}, max length "
             f"{training['max_seq_length']}, seed {training['seed']}, the same recipe for every trained model. "
             f"**Projection:** {projection['method']} to {projection['dim']} dimensions, fitted on "
             f"{projection['num_texts']} texts of `{projection['corpus']}`. **Evaluation text** (never trained "
             f"on): {', '.join(tasks)}.")
    if skipped:
        setup += " Skipped: " + "; ".join(f"{name} ({reason})" for name, reason in sorted(skipped.items())) + "."
    main_table = _quickstart_rows(_expect(summary, "rows", list, path), tasks, path, "rows")
    main_table.caption = "nDCG@10 on the held-out tasks; encode speed measured in the same run:"
    tables = [main_table]
    if summary.get("decoder_rows"):
        decoder = _quickstart_rows(summary["decoder_rows"], None, path, "decoder_rows")
        decoder.caption = "Zero-shot decoder (`--decoder`), nDCG@10:"
        tables.append(decoder)
    tables.append(Table(columns=["step", "seconds", "resumed"], rows=step_rows, formats={"seconds": 1},
                        caption="Steps (a rerun resumes every step from its saved output):"))
    reading = summary.get("reading", "")
    if not isinstance(reading, str):
        raise _fail(path, "reading", "must be a string (markdown)")
    return BenchRecord("quickstart", QUICKSTART_ORDER, "Quickstart: the whole pipeline in one command", date,
                       machine, [command], setup, tables, reading)


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
    by_order: dict[int, str] = {}
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


def render_table(table: Table) -> str:
    return render_markdown(table.columns, [[format_cell(v, table.formats.get(c)) for c, v in zip(table.columns, row,
                                                                                                   strict=True)]
                                           for row in table.rows])


def machine_line(machine: dict[str, Any] | str) -> str:
    from hf_dumpembed._utils.machine import describe_machine

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
    """The whole BENCHMARKS.md: title, intro, a note that the file is generated, each section in order."""
    header = (f"# Benchmarks\n\n{INTRO}\n\n<!-- Generated from scripts/bench/results/*.json (the bench scripts write "
              f"them); do not edit by hand. Regenerate: {REGENERATE} -->\n")
    return "\n".join([header, *(render_section(r) for r in records)])


def render_directory(directory: Path | str) -> str:
    return render(load_records(directory))


def write_benchmarks(directory: Path | str, out: Path | str) -> str:
    text = render_directory(directory)
    Path(out).write_text(text, encoding="utf-8")
    return text


def check(directory: Path | str, out: Path | str) -> None:
    """Raise ValueError (with the first differing lines) when ``out`` is not the render of ``directory``."""
    expected = render_directory(directory)
    out = Path(out)
    if not out.is_file():
        raise FileNotFoundError(f"{out} does not exist; write it with `{REGENERATE}`.")
    actual = out.read_text(encoding="utf-8")
    if actual != expected:
        diff = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(), f"render of {directory}",
                                         str(out), lineterm="", n=1))
        shown = "\n".join(diff[:30]) + ("\n..." if len(diff) > 30 else "")
        raise ValueError(f"{out} is not the render of the records in {directory} (edited by hand, or a record "
                         f"changed without regenerating). Edit the records, then run `{REGENERATE}`.\n{shown}")


# ------------------------------------------------------------------------------------------------- writing records


def command_line(argv: list[str] | None = None) -> str:
    """The command that is running, as a reader would type it (``python scripts/bench/x.py --flag ...``)."""
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


def write_record(section: str, *, tables: list[Table], commands: list[str] | None = None,
                 command: str | None = None, replaces: str | None = None,
                 machine: dict[str, Any] | str | None = None, date: str | None = None, title: str | None = None,
                 setup: str | None = None, reading: str | None = None, order: int | None = None,
                 directory: Path | str = RESULTS_DIR) -> Path:
    """Write (or update) ``<directory>/<section>.json`` with fresh tables.

    Fields left ``None`` keep the existing record's value (the prose — set-up and reading — is written by a
    person and kept); a new record needs ``title``, ``commands`` (or ``command``), ``machine``, ``order``.
    ``command`` adds one command to the existing ones (sections built by several runs; see ``add_command``).
    ``date`` defaults to the existing record's (else today): a fresh measurement passes its own. Prints a
    reminder when the numbers changed but the reading was kept."""
    from hf_dumpembed._utils.console import say

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
