"""Cost of a SpecTemp fit on n × d float32 embeddings read from a memmap, against the XᵀX floor and scikit-learn.

Measured, each in a fresh subprocess (so peak RSS is that method's own), in a rotated order per repeat:
  floor32   one pass of XᵀX over the same batches, float32 product accumulated in float64
  floor64   one pass of XᵀX over the same batches, batches widened to float64 (the exact product our stats use)
  ours      the whole fit: streaming n/Σx/Σxxᵀ (float64) + eigh + SpecTemp γ(k) curve + W_k for k = 256
  sklearn   scikit-learn PCA(n_components=256, whiten=True).fit on the array loaded into memory (--sklearn-rows
            rows, because it needs the data in RAM; floor and ours are then also timed on those rows)
Data: synthetic unit vectors with a decaying spectrum (the cost does not depend on the values), written once to
runs/bench_fit/. Reports medians and ratios to the floors.

    python scripts/bench/benchmarks.py fit-cost --rows 1000000 --dim 1024 --repeats 3 --sklearn-rows 200000

When it finishes it rewrites its BENCHMARKS.md section record (scripts/bench/results/fit-cost.json) from the
subprocess series (--series-json) and the in-process comparison (--in-process-json) on disk; --record-only does
only that.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
from collections.abc import Callable
from datetime import date
from pathlib import Path

import numpy as np
import torch
from benchmarks import Table, finish_run, save_results, say, stored_results
from harness import (
    Subparsers,
    add_threads,
    bench_parser,
    in_fresh_process,
    interleaved,
    medians,
    print_result,
    seconds,
    status_mib,
)

BATCH = 16384
SECTION, ORDER, TITLE = "fit-cost", 30, "Post-hoc projections: fit cost vs the XᵀX floor and scikit-learn"


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--k", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sklearn-rows", type=int, default=200_000,
                        help="rows for the side-by-side with scikit-learn (it needs the data in memory); 0 skips it")
    add_threads(parser)
    parser.add_argument("--data", type=Path, default=Path("runs/bench_fit/embeddings.f32"))
    parser.add_argument("--output", type=Path, default=Path("runs/bench_fit/results.json"))
    parser.add_argument("--in-process-rows", type=int, default=0,
                        help="also time floor64 and ours alternately inside one process on this many rows")
    parser.add_argument("--series-json", type=Path, default=Path("runs/bench_fit/results.json"),
                        help="subprocess-series results the section record is built from")
    parser.add_argument("--in-process-json", type=Path, default=Path("runs/bench_fit/in_process.json"),
                        help="in-process results the section record is built from (--rows 0 runs write them)")
    parser.add_argument("--record-only", action="store_true",
                        help="measure nothing: rewrite the section record from --series-json / --in-process-json")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)


def make_data(path: Path, rows: int, dim: int, seed: int = 0) -> None:
    if path.exists() and path.stat().st_size >= rows * dim * 4:  # the first rows of a larger file will do
        return
    rng = np.random.default_rng(seed)
    scales = (1.0 / np.arange(1, dim + 1) ** 0.8).astype(np.float32)
    offset = (rng.standard_normal(dim) * 0.05).astype(np.float32)
    out = np.memmap(path, dtype=np.float32, mode="w+", shape=(rows, dim))
    for start in range(0, rows, 65536):
        z = rng.standard_normal((min(65536, rows - start), dim), dtype=np.float32) * scales + offset
        out[start : start + len(z)] = z / np.linalg.norm(z, axis=1, keepdims=True)
    out.flush()
    del out


def _open(path: Path, rows: int, dim: int) -> np.memmap:
    return np.memmap(path, dtype=np.float32, mode="r", shape=(rows, dim))


def floor(x: np.memmap, wide: bool, drop_pages: bool = False) -> np.ndarray:
    """One pass of XᵀX over the fit's batches accumulated in float64 (``wide``: the batches widened to float64
    first, the exact product our statistics use); ``drop_pages``: read pages released as it goes, as a fit's are."""
    rows, dim = x.shape
    acc = np.zeros((dim, dim), dtype=np.float64)
    for i in range(0, rows, BATCH):
        b = torch.from_numpy(np.asarray(x[i : i + BATCH]))
        b = b.double() if wide else b
        acc += (b.T @ b).numpy()
        if drop_pages:
            x._mmap.madvise(mmap.MADV_DONTNEED, i * dim * 4 // mmap.PAGESIZE * mmap.PAGESIZE,
                            len(b) * dim * 4 // mmap.PAGESIZE * mmap.PAGESIZE)
    return acc


def whole_fit(k: int) -> Callable[[np.memmap], object]:
    """The whole fit of rows x (streaming statistics, eigh, SpecTemp's γ(k) curve and W_k), its imports done now:
    they are not timed (the package import pulls in transformers)."""
    from hf_dumpembed.projections.maths.reference_maps import fit_spectemp
    from hf_dumpembed.projections.maths.spectrum import eigendecompose
    from hf_dumpembed.projections.maths.statistics import accumulate

    return lambda x: fit_spectemp(eigendecompose(accumulate(x, BATCH)), k)


def run_one(method: str, path: Path, rows: int, dim: int, k: int) -> dict:
    """One timed measurement in this process; returns seconds and this process's peak RSS (MiB)."""
    x = _open(path, rows, dim)
    if method in ("floor32", "floor64"):
        wall = seconds(lambda: floor(x, wide=method == "floor64", drop_pages=True))
    elif method == "ours":
        fit = whole_fit(k)
        wall = seconds(lambda: fit(x))
    elif method == "sklearn":
        from sklearn.decomposition import PCA

        wall = seconds(lambda: PCA(n_components=k, whiten=True, random_state=0).fit(np.asarray(x)))
    else:
        raise ValueError(method)
    return {"method": method, "seconds": wall, "peak_rss_mib": status_mib("VmHWM")}


def series(methods: list[str], path: Path, rows: int, dim: int, k: int, repeats: int, threads: int) -> dict:
    """Every method in a fresh process per repeat (rotated order): seconds, peak RSS, medians, ratios to floors."""
    env = {**os.environ, **{name: str(threads) for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                            "MKL_NUM_THREADS")}}
    arguments = ("--data", str(path), "--rows", str(rows), "--dim", str(dim), "--k", str(k), "--threads", str(threads))

    def report(repeat: int, method: str, one: dict) -> None:
        say(f"  rows={rows} repeat {repeat + 1} {method:8s} {one['seconds']:8.2f} s  "
            f"peak RSS {one['peak_rss_mib']:.0f} MiB")

    runs = interleaved({m: lambda m=m: in_fresh_process("fit-cost", "--worker", m, *arguments, env=env)
                        for m in methods}, repeats, report)
    times = {m: [one["seconds"] for one in values] for m, values in runs.items()}
    median = medians(times)
    return {"rows": rows, "times": times, "median_s": median,
            "peak_rss_mib": {m: max(one["peak_rss_mib"] for one in values) for m, values in runs.items()},
            "ratio_to_floor64": {m: median[m] / median["floor64"] for m in methods},
            "ratio_to_floor32": {m: median[m] / median["floor32"] for m in methods}}


def in_process(path: Path, rows: int, dim: int, k: int, repeats: int) -> dict:
    """floor64 and the whole fit timed alternately in this one process (same imports, same BLAS threads)."""
    x = _open(path, rows, dim)
    fit = whole_fit(k)

    def report(repeat: int, name: str, wall: float) -> None:
        say(f"  in-process rows={rows} repeat {repeat + 1} {name:8s} {wall:8.2f} s")

    times = interleaved({"floor64": lambda: seconds(lambda: floor(x, wide=True)),
                         "ours": lambda: seconds(lambda: fit(x))}, repeats, report)
    median = medians(times)
    return {"rows": rows, "times": times, "median_s": median, "ours_over_floor64": median["ours"] / median["floor64"]}


def record_tables(series: dict | None, in_proc: dict | None) -> list[Table]:
    """The subprocess series (medians, ratios to both floors, peak RSS, every repeat) and the in-process pair."""
    tables = []
    if series:
        rows = [[run["rows"], m, run["median_s"][m], run["ratio_to_floor64"][m], run["ratio_to_floor32"][m],
                 run["peak_rss_mib"][m], run["times"][m]] for run in series["runs"] for m in run["times"]]
        tables.append(Table(columns=["n", "method", "median s", "× floor64", "× floor32", "peak RSS MiB",
                                     "all repeats s"], rows=rows, caption="Subprocess series:",
                            formats={"n": ",", "median s": 1, "× floor64": 2, "× floor32": 2, "peak RSS MiB": 0,
                                     "all repeats s": 1}))
    if in_proc:
        rows = [[in_proc["rows"], m, in_proc["median_s"][m], in_proc["median_s"][m] / in_proc["median_s"]["floor64"],
                 in_proc["times"][m]] for m in in_proc["times"]]
        tables.append(Table(columns=["n", "method", "median s", "× floor64", "all repeats s"], rows=rows,
                            caption="In-process side by side (both timed alternately in one process):",
                            formats={"n": ",", "median s": 1, "× floor64": 2, "all repeats s": 1},
                            notes=f"ours / floor64 in one process: **{in_proc['ours_over_floor64']:.2f}×**."))
    return tables


def write_section(series_path: Path, in_process_path: Path, fresh: bool) -> None:
    series, in_proc = stored_results(series_path, in_process_path)
    if series and "in_process" in series:
        in_proc = series["in_process"]
    finish_run(SECTION, record_tables(series, in_proc), title=TITLE, order=ORDER, measured=fresh, add_command=fresh,
               date=None if fresh else (series or {}).get("date"))


def run(args: argparse.Namespace) -> None:
    if args.record_only:
        write_section(args.series_json, args.in_process_json, fresh=False)
        return
    if args.worker:
        print_result(run_one(args.worker, args.data, args.rows, args.dim, args.k))
        return
    args.data.parent.mkdir(parents=True, exist_ok=True)
    make_data(args.data, max(args.rows, args.in_process_rows), args.dim)
    if args.rows == 0:  # only the in-process comparison
        result = in_process(args.data, args.in_process_rows, args.dim, args.k, args.repeats)
        save_results(args.output, result)
        say(json.dumps(result["median_s"]) + f"  ours/floor64 {result['ours_over_floor64']:.3f}")
        write_section(args.series_json, args.output, fresh=True)
        return
    results = {"date": date.today().isoformat(), "threads": args.threads, "dim": args.dim, "k": args.k,
               "batch": BATCH, "runs": [series(["floor32", "floor64", "ours"], args.data, args.rows, args.dim, args.k,
                                               args.repeats, args.threads)]}
    if args.sklearn_rows:
        results["runs"].append(series(["floor32", "floor64", "ours", "sklearn"], args.data, args.sklearn_rows,
                                      args.dim, args.k, args.repeats, args.threads))
    if args.in_process_rows:
        results["in_process"] = in_process(args.data, args.in_process_rows, args.dim, args.k, args.repeats)
    save_results(args.output, results)
    for one in results["runs"]:
        say(f"rows={one['rows']}")
        for m, s in one["median_s"].items():
            say(f"  {m:8s} median {s:8.2f} s  ×floor64 {one['ratio_to_floor64'][m]:.2f}  "
                f"×floor32 {one['ratio_to_floor32'][m]:.2f}  peak RSS {one['peak_rss_mib'][m]:.0f} MiB")
    write_section(args.output, args.in_process_json, fresh=True)
