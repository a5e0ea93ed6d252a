"""EmbedFilter basis cost for a Qwen3-0.6B-shaped unembedding matrix (151936 × 1024, random float32).

Side by side in one run: our path (WᵀW accumulated in float64 row chunks + eigh) and the reference full SVD
(numpy's thin SVD of W in float64), with the agreement of the kept middle bands (τ = 2 and 4) as the largest
entry of the difference of the two band projectors. Medians over repeats (the SVD, far slower, runs --svd-repeats
times).

    python scripts/bench/benchmarks.py embedfilter-basis --rows 151936 --dim 1024 --repeats 3 --svd-repeats 1

It writes its BENCHMARKS.md section record (scripts/bench/results/embedfilter-basis.json) when it finishes;
--record-only rewrites that record's table from an existing --output file without measuring anything.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
from benchmarks import Table, add_output_arguments, finish_run, run_or_rerecord, say
from harness import Subparsers, add_threads, bench_parser

from hf_dumpembed.projections.maths.band_basis import band_size, gram_basis, svd_basis
from hf_dumpembed.projections.maths.reference_maps import embedfilter_map

SECTION, ORDER, TITLE = "embedfilter-basis", 40, "EmbedFilter basis: eigh(WᵀW) vs full SVD, Qwen3-0.6B-shaped head"


def record_tables(result: dict) -> list[Table]:
    """Wall times of both paths (every repeat and the median), CPU time of ours, and their agreement."""
    cpu = result.get("gram_cpu_s")
    rows = [["eigh(WᵀW), ours", result["gram_s"], result["gram_median_s"], cpu if cpu else "–"],
            ["full SVD (reference)", result["svd_s"], result["svd_median_s"], "–"]]
    agreement = result["max_projector_difference"]
    notes = (f"SVD / eigh: **{result['svd_over_gram']:.0f}×** (wall, same run). Agreement: the largest entry of the "
             f"difference of the kept band projectors is {agreement['tau=2']:.1e} (τ=2) and "
             f"{agreement['tau=4']:.1e} (τ=4).")
    return [Table(columns=["path", "wall s (repeats)", "median", "CPU s (all threads)"], rows=rows, notes=notes,
                  formats={"wall s (repeats)": ".3g", "median": ".3g", "CPU s (all threads)": 1})]


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    parser.add_argument("--rows", type=int, default=151936)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--svd-repeats", type=int, default=1)
    add_threads(parser)
    add_output_arguments(parser, default=Path("runs/bench_embedfilter.json"))


def run(args: argparse.Namespace) -> None:
    run_or_rerecord(args, measure, lambda result, fresh: finish_run(
        SECTION, record_tables(result), title=TITLE, order=ORDER, measured=fresh, result=result,
        summary=json.dumps(result, indent=2) if fresh else None))


def measure(args: argparse.Namespace) -> dict:
    """Both paths on one random head: wall (and our CPU) seconds per repeat, and the band projectors' agreement."""
    rng = np.random.default_rng(0)
    # Random head with a non-flat spectrum, so the band edges are well separated.
    weight = rng.standard_normal((args.rows, args.dim), dtype=np.float32)
    weight *= np.linspace(2.0, 0.5, args.dim, dtype=np.float32)
    gram_times, svd_times, gram_cpu = [], [], []
    for _ in range(args.repeats):
        start, cpu = time.perf_counter(), time.process_time()
        _, v_gram = gram_basis(weight)
        gram_times.append(time.perf_counter() - start)
        gram_cpu.append(time.process_time() - cpu)
        say(f"eigh(WᵀW) {gram_times[-1]:.2f} s wall, {gram_cpu[-1]:.2f} s CPU (all threads)")
    for _ in range(args.svd_repeats):
        start = time.perf_counter()
        _, v_svd = svd_basis(weight)
        svd_times.append(time.perf_counter() - start)
        say(f"full SVD  {svd_times[-1]:.2f} s")
    agreement = {}
    for ratio in (2, 4):
        m = band_size(args.dim, ratio=ratio)
        a, b = embedfilter_map(v_gram, m).matrix, embedfilter_map(v_svd, m).matrix
        agreement[f"tau={ratio}"] = float(np.abs(a @ a.T - b @ b.T).max())
    return {"rows": args.rows, "dim": args.dim, "threads": args.threads,
            "gram_s": gram_times, "gram_cpu_s": gram_cpu, "svd_s": svd_times,
            "gram_median_s": statistics.median(gram_times), "gram_cpu_median_s": statistics.median(gram_cpu),
            "svd_median_s": statistics.median(svd_times),
            "svd_over_gram": statistics.median(svd_times) / statistics.median(gram_times),
            "max_projector_difference": agreement}
