"""``serve-bench``: time every runtime an ONNX export carries on this machine, check its vectors, recommend one.

Which runtime is fastest depends on the CPU (AVX2 only, AVX-512 VNNI, AVX512-BF16, AMX) and on the text length, so
the choice is measured where the model will serve, not read from a table made elsewhere. Every runtime gets the same
tokenized batches (texts sorted by length, padded to each batch's longest, as sentence-transformers batches them;
tokenizing is not timed): short texts (docstring paragraphs) and long ones (function sources) of the running
Python's standard library, or the user's own texts. Timing is interleaved per batch (every runtime encodes a batch,
in an order rotated per batch and repeat, before the next batch starts), so a load spike hits all alike; each
runtime's time is the median over repeats, its speed-up the baseline's median over its own (same run). Before
timing, every runtime encodes all the texts once (the vectors checked below); that first pass is the warm-up, and its
seconds are recorded with the seconds opening the runtime took: compiled torch compiles there, so what each costs
before its first fast batch is stated beside its speed.

Quality is parity: each runtime's vectors on the timed texts against torch fp32's (the export's own tolerances:
fp32 max |Δ| <= 1e-4, bf16 / int8 min cosine >= 0.99 / 0.95). The recommendation is the runtime with the highest
geometric mean speed-up over the lengths among those within tolerance. Parity bounds how far vectors move, not
retrieval quality on a given collection: measure nDCG on held-out data before serving an int8 graph.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .._utils.tables import render_markdown
from .artefacts import MANIFEST_FILE
from .runtimes import Runner, Runtime, available_runtimes

# The vector instruction sets int8 and bf16 speed depends on, as /proc/cpuinfo names them.
ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8", "amx_tile")
SECTION_START, SECTION_END = "<!-- serve-bench -->", "<!-- /serve-bench -->"
Batch = dict[str, np.ndarray]


def cpu_flags() -> list[str]:
    """The instruction sets among ISA_FLAGS this CPU reports (Linux /proc/cpuinfo; empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return []
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    flags = set(line.split(":", 1)[1].split()) if ":" in line else set()
    return [flag for flag in ISA_FLAGS if flag in flags]


# CPU classes by the fastest int8 / bf16 path they have, most capable first (how the benches file their records).
CPU_CLASSES = (("amx", ("amx_int8", "amx_bf16"), "AMX"), ("avx512-vnni", ("avx512_vnni",), "AVX-512 VNNI, no AMX"),
               ("avx-vnni", ("avx_vnni",), "AVX-VNNI, no AVX-512"), ("avx512", ("avx512f",), "AVX-512, no VNNI"),
               ("avx2", ("avx2",), "AVX2 only (no VNNI, no AMX)"))


def cpu_class(flags: Sequence[str]) -> tuple[str, str]:
    """(slug, description) of the most capable class in CPU_CLASSES whose flags the CPU has; ("other", ...)
    when it has none of them."""
    for slug, needs, description in CPU_CLASSES:
        if any(flag in flags for flag in needs):
            return slug, description
    return "other", "no AVX2"


@dataclass
class TextGroup:
    """One length class: its texts tokenized into length-sorted batches, and the order that restores the input."""

    name: str
    source: str
    batches: list[Batch]
    restore: np.ndarray

    @property
    def texts(self) -> int:
        return int(len(self.restore))

    @property
    def mean_tokens(self) -> float:
        return float(np.mean(np.concatenate([b["attention_mask"].sum(1) for b in self.batches])))


def length_sorted_batches(tokenizer, texts: Sequence[str], batch_size: int, inputs: Sequence[str],
                          max_length: int) -> tuple[list[Batch], np.ndarray]:
    """``texts`` longest first in batches of ``batch_size`` (int64 arrays of ``inputs``, each padded to its
    longest, truncated at ``max_length``), and the permutation that restores the input order."""
    order = np.argsort([-len(text) for text in texts], kind="stable")
    batches = []
    for start in range(0, len(texts), batch_size):
        chunk = [texts[i] for i in order[start:start + batch_size]]
        encoded = tokenizer(chunk, padding=True, truncation=True, max_length=max_length, return_tensors="np")
        batches.append({name: encoded[name].astype(np.int64) for name in inputs})
    return batches, np.argsort(order)


def text_group(name: str, source: str, texts: Sequence[str], tokenizer, batch_size: int, inputs: Sequence[str],
               max_length: int) -> TextGroup:
    """``texts`` as a TextGroup of length-sorted batches (`length_sorted_batches`)."""
    batches, restore = length_sorted_batches(tokenizer, texts, batch_size, inputs, max_length)
    return TextGroup(name, source, batches, restore)


def encode_group(run: Runner, group: TextGroup) -> np.ndarray:
    """The vectors of ``group``'s texts in input order."""
    return np.concatenate([run(batch) for batch in group.batches])[group.restore]


def time_interleaved(runs: dict[str, Runner], batches: Sequence[Batch], *, min_repeats: int = 3,
                     max_repeats: int = 20, seconds: float = 0.0, report=None) -> dict[str, list[float]]:
    """Seconds per runtime for all ``batches``, per repeat, interleaved per batch in an order rotated from batch
    to batch and repeat to repeat. Repeats until every runtime has ``seconds`` in all (at least ``min_repeats``,
    at most ``max_repeats``); ``report(repeat, times)`` is called after each."""
    names = list(runs)
    times: dict[str, list[float]] = {name: [] for name in names}
    for repeat in range(max_repeats):
        total = dict.fromkeys(names, 0.0)
        for index, batch in enumerate(batches):
            shift = (repeat + index) % len(names)
            for name in names[shift:] + names[:shift]:
                started = time.perf_counter()
                runs[name](batch)
                total[name] += time.perf_counter() - started
        for name in names:
            times[name].append(total[name])
        if report is not None:
            report(repeat, times)
        if repeat + 1 >= min_repeats and min(sum(t) for t in times.values()) >= seconds:
            break
    return times


@dataclass
class RuntimeResult:
    """One runtime's medians per text group, speed-ups against the baseline, and its parity with the reference."""

    name: str
    arithmetic: str
    file: str | None
    median_s: dict[str, float]
    speedup: dict[str, float]
    max_abs_diff: float
    min_cosine: float
    tolerance: str
    ok: bool
    open_s: float | None = None  # opening the runtime (loading the model or graph)
    first_pass_s: float | None = None  # its first encoding of every timed text (the warm-up; compiles, if it does)

    @property
    def mean_speedup(self) -> float:
        """Geometric mean of the speed-ups over the text groups."""
        values = list(self.speedup.values())
        return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


@dataclass
class ServeBench:
    """What ``serve_bench`` measured: the machine, the text groups, one result per runtime, the recommendation."""

    date: str
    machine: dict[str, Any]
    threads: int
    batch_size: int
    max_length: int
    baseline: str
    reference: str
    groups: dict[str, dict[str, Any]]
    results: list[RuntimeResult]
    skipped: dict[str, str] = field(default_factory=dict)
    recommendation: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def table(self) -> str:
        """The results as a markdown table (speed-ups per text group, geometric mean, parity)."""
        groups = list(self.groups)
        header = ["runtime", *[f"{g} texts/s" for g in groups], *[f"{g} speed-up" for g in groups],
                  "mean speed-up", "min cosine", "within tolerance", "load s", "first pass s"]
        rows = []
        for row in self.results:
            rates = [f"{self.groups[g]['texts'] / row.median_s[g]:.1f}" for g in groups]
            speedups = [f"{row.speedup[g]:.2f}x" for g in groups]
            seconds = ["?" if value is None else f"{value:.1f}" for value in (row.open_s, row.first_pass_s)]
            rows.append([row.name, *rates, *speedups, f"{row.mean_speedup:.2f}x", f"{row.min_cosine:.4f}",
                         "yes" if row.ok else "no", *seconds])
        return render_markdown(header, rows) + "\n"

    def describe(self) -> str:
        """The table, what was left out, and the recommendation, for the terminal and the README."""
        groups = "; ".join(f"{name}: {g['texts']} {g['source']}, mean {g['mean_tokens']:.0f} tokens"
                           for name, g in self.groups.items())
        flags = ", ".join(self.machine.get("cpu_flags") or []) or "none of " + ", ".join(ISA_FLAGS)
        lines = [f"Measured {self.date} on {self.machine.get('cpu', '?')} ({flags}), {self.threads} threads, batch "
                 f"{self.batch_size}, load average {self.machine.get('load_average', '?')}; {groups}. Speed-up vs "
                 f"{self.baseline} in the same run; min cosine vs {self.reference}. Load s: opening the runtime; first "
                 "pass s: its first encoding of all the texts, untimed otherwise (compiled runtimes compile then: "
                 "the cost before the first fast batch).", "", self.table()]
        lines += [f"Not measured: {name} ({why})." for name, why in self.skipped.items()]
        lines.append(self.recommendation.get("text", ""))
        return "\n".join(line for line in lines if line is not None).rstrip() + "\n"


# Runtimes within this fraction of the best mean speed-up are named beside it: on a shared 2-core VM, OpenVINO int8 at
# f32 and at bf16 precision swapped places between runs of one day with gaps of up to 10% inside one run (serve-bench
# 3.32x vs 3.02x torch fp32; bench_onnx 3.15x / 3.25x vs 3.46x / 3.86x; BENCHMARKS.md, "CPU serving on AVX-512
# VNNI"), so one run does not order runtimes that close.
CLOSE_FRACTION = 0.10


def recommend(results: Sequence[RuntimeResult], baseline: str) -> dict[str, Any]:
    """The runtime within tolerance with the highest geometric mean speed-up (ties: the earlier, simpler one), the
    fastest within tolerance per text group when that differs, and those within CLOSE_FRACTION of the best (``close``:
    one run does not order them)."""
    passing = [r for r in results if r.ok]
    if not passing:
        return {"runtime": None, "text": "No runtime reproduced the reference vectors within tolerance; serve "
                "the model with torch."}
    best = max(passing, key=lambda r: (r.mean_speedup, -results.index(r)))
    per_group = {g: max(passing, key=lambda r: r.speedup[g]).name for g in best.speedup}
    close = [r.name for r in passing if r is not best and r.mean_speedup >= best.mean_speedup * (1 - CLOSE_FRACTION)]
    text = (f"Recommended here: {best.name}" + (f" ({best.file})" if best.file else "") +
            f", {best.mean_speedup:.2f}x {baseline} (geometric mean over the text groups)")
    differs = {g: name for g, name in per_group.items() if name != best.name}
    if differs:
        text += "; fastest per group: " + ", ".join(f"{g} texts {name}" for g, name in differs.items())
    if close:
        text += (f". Within {CLOSE_FRACTION:.0%} of it: {', '.join(close)} (one run does not order runtimes this "
                 "close; rerun to see whether the order holds)")
    return {"runtime": best.name, "file": best.file, "mean_speedup": best.mean_speedup, "per_group": per_group,
            "close": close, "text": text + "."}


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages (None where the system has none)."""
    return [round(v, 2) for v in os.getloadavg()] if hasattr(os, "getloadavg") else None


def machine_record(threads: int) -> dict[str, Any]:
    """CPU model, instruction sets, cores, load average and library versions, as the bench records them."""
    from .._utils.machine import machine_info

    info = machine_info()
    flags = cpu_flags()
    info.update(cpu_flags=flags, cpu_class=cpu_class(flags)[0], threads=threads, system=platform.system(),
                load_average=load_average())
    return info


def read_manifest(export_dir: Path) -> dict[str, Any]:
    """The export's onnx_export.json; ValueError when ``export_dir`` is not an ``export-onnx`` folder."""
    path = export_dir / MANIFEST_FILE
    if not path.is_file():
        raise ValueError(f"{export_dir} has no {MANIFEST_FILE}: give a folder written by `hf-dumpembed export-onnx`.")
    return json.loads(path.read_text())


def model_folder(manifest: dict[str, Any], model_dir: str | Path | None, trust_remote_code: bool) -> Path | None:
    """The torch model to time and compare against: ``model_dir``, else the export's recorded source when it is
    still there, else None (then the fp32 ONNX graph is the reference). Checked as every command checks a folder."""
    from ..model.dumpembed_folder import require_dumpembed_folder
    from ..model.folder_schema import folder_code_may_run

    if model_dir is None:
        source = Path(manifest.get("source") or "")
        if not (manifest.get("source") and (source / "config.json").is_file()):
            return None
        model_dir = source
    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise ValueError(f"{model_dir} is not a model folder (no config.json): give the DumpEmbed folder the export "
                         "was made from.")
    require_dumpembed_folder(model_dir)
    folder_code_may_run(model_dir, trust_remote_code)
    return model_dir


def text_groups(tokenizer, inputs: Sequence[str], texts: Sequence[str] | None, options: MeasureOptions
                ) -> list[TextGroup]:
    """The user's ``texts`` as one group, else ``options.short`` docstring paragraphs and ``options.long``
    function sources."""
    from ..data.sample_texts import stdlib_docstrings, stdlib_sources

    if texts is not None:
        texts = [t for t in texts if t and t.strip()]
        if not texts:
            raise ValueError("the texts to time on are empty (or blank); give the texts the model will embed.")
        sources = {"given": (list(texts), "of the given texts")}
    else:
        sources = {"short": (stdlib_docstrings(options.short), "stdlib docstring paragraphs"),
                   "long": (stdlib_sources(options.long), "stdlib function sources")}
    return [text_group(name, source, group_texts, tokenizer, options.batch_size, inputs, options.max_length)
            for name, (group_texts, source) in sources.items() if group_texts]


def parity_results(runtimes: Sequence[Runtime], vectors: dict[str, np.ndarray], medians: dict[str, dict[str, float]],
                   baseline: str, reference: str, first_pass: dict[str, float] | None = None) -> list[RuntimeResult]:
    """One RuntimeResult per runtime: medians, speed-ups against ``baseline``, parity against ``reference``, the
    seconds its opening and its ``first_pass`` took."""
    from .onnx import compare

    results = []
    for runtime in runtimes:
        parity = compare(runtime.name, vectors[reference], vectors[runtime.name], runtime.spec.arithmetic)
        median = medians[runtime.name]
        speedup = {g: medians[baseline][g] / seconds for g, seconds in median.items()}
        results.append(RuntimeResult(runtime.name, runtime.spec.arithmetic, runtime.spec.file, median, speedup,
                                     parity.max_abs_diff, parity.min_cosine, parity.tolerance, parity.ok,
                                     runtime.open_s, (first_pass or {}).get(runtime.name)))
    return results


def first_pass(runs: dict[str, Runner], groups: Sequence[TextGroup]) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """Each runtime's vectors of every group (in order, concatenated) and the seconds that first pass took (the
    warm-up before timing: compiled runtimes compile here)."""
    vectors, seconds = {}, {}
    for name, run in runs.items():
        started = time.perf_counter()
        vectors[name] = np.concatenate([encode_group(run, g) for g in groups])
        seconds[name] = time.perf_counter() - started
    return vectors, seconds


@dataclass(frozen=True)
class MeasureOptions:
    """What ``serve_bench`` times and how long: ``seconds`` of timing per runtime and text group at least (3
    repeats at least), ``short`` / ``long`` stdlib texts, batches of ``batch_size`` truncated at ``max_length``,
    ``threads`` per runtime (None: the CPUs this process may use). ``max_length`` None: the tokenizer's own limit
    (a larger value is capped at it)."""

    seconds: float = 2.0
    short: int = 64
    long: int = 32
    batch_size: int = 32
    max_length: int | None = None
    threads: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.seconds, bool) or not isinstance(self.seconds, (int, float)) \
                or not math.isfinite(self.seconds) or self.seconds < 0:
            raise ValueError(f"seconds must be a finite number >= 0; got {self.seconds!r}.")


def time_groups(runs: dict[str, Runner], groups: Sequence[TextGroup], seconds: float, progress=None
                ) -> dict[str, dict[str, float]]:
    """Median seconds per runtime and text group (``time_interleaved`` on each group's batches)."""
    medians: dict[str, dict[str, float]] = {name: {} for name in runs}
    for group in groups:
        def report(repeat: int, times: dict[str, list[float]], group: TextGroup = group) -> None:
            if progress is not None:
                progress(f"{group.name} texts, repeat {repeat + 1}: " +
                         ", ".join(f"{name} {t[-1]:.2f}s" for name, t in times.items()))
        for name, values in time_interleaved(runs, group.batches, seconds=seconds, report=report).items():
            medians[name][group.name] = statistics.median(values)
    return medians


def serve_bench(export_dir: str | Path, model_dir: str | Path | None = None,
                options: MeasureOptions = MeasureOptions(), *, texts: Sequence[str] | None = None,
                runtimes: list[str] | None = None, trust_remote_code: bool = False, progress=None) -> ServeBench:
    """Time and check every runtime of the export in ``export_dir`` (or those in ``runtimes``), and torch on
    ``model_dir`` (by default the export's source folder), on this machine; see the module docstring. ``texts``
    replace the stdlib texts as one group; ``progress(line)`` receives a line per repeat."""
    from transformers import AutoTokenizer

    export_dir = Path(export_dir)
    manifest = read_manifest(export_dir)
    model_dir = model_folder(manifest, model_dir, trust_remote_code)
    threads = options.threads or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                                  else os.cpu_count() or 1)
    tokenizer = AutoTokenizer.from_pretrained(str(export_dir))  # the export's own tokenizer files, no code
    limit = int(min(tokenizer.model_max_length or 512, 10**6))
    options = replace(options, max_length=min(options.max_length or limit, limit))
    groups = text_groups(tokenizer, manifest["inputs"], texts, options)
    opened, skipped = available_runtimes(export_dir, model_dir, threads, runtimes)
    names = [r.name for r in opened]
    baseline = next((n for n in ("torch fp32", "onnxruntime fp32") if n in names), None)
    if baseline is None:
        raise ValueError("serve-bench compares against torch fp32 (give --model) or the export's model.onnx (needs "
                         "onnxruntime); neither can run here: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
    runs = {r.name: r.run for r in opened}
    load_before = load_average()
    vectors, first_seconds = first_pass(runs, groups)
    medians = time_groups(runs, groups, options.seconds, progress)
    results = parity_results(opened, vectors, medians, baseline, baseline, first_seconds)
    bench = ServeBench(
        date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        machine={**machine_record(threads), "load_average_before": load_before},
        threads=threads, batch_size=options.batch_size, max_length=options.max_length, baseline=baseline,
        reference=baseline,
        groups={g.name: {"texts": g.texts, "source": g.source, "mean_tokens": g.mean_tokens} for g in groups},
        results=results, skipped=skipped)
    bench.recommendation = recommend(results, baseline)
    return bench


def readme_section(bench: ServeBench, command: str) -> str:
    """The README block between the serve-bench markers: the measured table and the recommendation."""
    return (f"{SECTION_START}\n## Measured on this machine\n\n`{command}` timed every runtime of this folder on the "
            f"CPU it ran on; rerun it where you serve (the ranking changes with the CPU's instruction sets and the "
            f"text length).\n\n{bench.describe()}{SECTION_END}\n")


def record_in_export(export_dir: str | Path, bench: ServeBench, command: str) -> None:
    """Store the measurement in the export: ``serve_bench`` in onnx_export.json and a README section (replacing
    an earlier one). Each file is replaced whole (written next to it, then renamed)."""
    export_dir = Path(export_dir)
    manifest = read_manifest(export_dir)
    manifest["serve_bench"] = bench.to_json()
    replace_file(export_dir / MANIFEST_FILE, json.dumps(manifest, indent=2) + "\n")
    readme = export_dir / "README.md"
    text = readme.read_text() if readme.is_file() else ""
    section = readme_section(bench, command)
    if SECTION_START in text and SECTION_END in text:
        before, rest = text.split(SECTION_START, 1)
        text = before + section + rest.split(SECTION_END, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    replace_file(readme, text)


def replace_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, then rename it into place."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)
