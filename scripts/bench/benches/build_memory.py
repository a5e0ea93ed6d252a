"""Peak memory and wall time of `hf-dumpembed build` in the source's dtype: one copy of the weights, not two.

Each build runs in a fresh subprocess (so its peak RSS, from the kernel's ru_maxrss of that child, is its own), in a
rotated order per repeat; reported are medians. The source is the embedded SmolLM2-135M-Instruct (converted once to
a normal transformers folder, fp32) and a bf16 copy of it made here with save_pretrained, so "bf16" means a source
stored in bf16, built with default options (the folder keeps bf16). For scale, the same table has the size of the
source's weights on disk.

    python scripts/bench/benchmarks.py build-memory --repeats 3

When it finishes it writes its BENCHMARKS.md section record (scripts/bench/results/build-memory.json).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from pathlib import Path

from benchmarks import Table, finish_run, say
from harness import (
    Subparsers,
    bench_parser,
    in_fresh_process,
    interleaved,
    load_recorded,
    medians,
    print_result,
    seconds,
)

VARIANTS = ("fp32", "bf16")


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    parser.add_argument("--repeats", type=int, default=3, help="builds per source dtype (default: 3)")
    parser.add_argument("--work", default="runs/bench_build_memory", help="scratch folder (sources and outputs)")
    parser.add_argument("--only", choices=VARIANTS, help="internal: run one variant once and print JSON")


def bf16_source(fp32_source: Path, folder: Path) -> Path:
    """A copy of ``fp32_source`` stored in bf16 (what a bf16 Hub checkpoint looks like)."""
    if (folder / "config.json").exists():
        return folder
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    AutoModelForCausalLM.from_pretrained(fp32_source, dtype=torch.bfloat16).save_pretrained(folder)
    AutoTokenizer.from_pretrained(fp32_source).save_pretrained(folder)
    return folder


def weights_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.safetensors"))


def run_build(source: Path, out: Path) -> dict[str, float]:
    """One `build` in a child process: wall seconds and the child's peak RSS (MiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    wall = seconds(lambda: subprocess.run(
        [sys.executable, "-m", "hf_dumpembed.cli", "build", str(source), str(out), "--dump-tokens", "4", "--overwrite"],
        check=True, capture_output=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak <= before:
        raise RuntimeError("ru_maxrss did not grow: run each variant in a fresh benchmark process (--only).")
    return {"seconds": wall, "peak_mib": peak / 1024}


def run(args: argparse.Namespace) -> None:
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    from hf_dumpembed.data.assets import default_decoder_path

    sources = {"fp32": Path(default_decoder_path())}
    sources["bf16"] = bf16_source(sources["fp32"], work / "smollm2-bf16")
    if args.only:  # a fresh process per measurement: RUSAGE_CHILDREN's maximum is then this build's alone
        print_result(run_build(sources[args.only], work / f"out-{args.only}"))
        return
    builds = {name: lambda name=name: in_fresh_process("build-memory", "--only", name, "--work", str(work))
              for name in VARIANTS}
    result: dict = {}
    with load_recorded(result):
        series = interleaved(builds, args.repeats, report=lambda repeat, name, one: say(f"repeat {repeat + 1}: "
                                                                                         f"{name} {one}"))
    peaks = medians({name: [r["peak_mib"] for r in runs] for name, runs in series.items()})
    walls = medians({name: [r["seconds"] for r in runs] for name, runs in series.items()})
    rows = [[name, weights_bytes(sources[name]) / 2**20, weights_bytes(work / f"out-{name}") / 2**20, peaks[name],
             walls[name]] for name in VARIANTS]
    table = Table(columns=["source dtype", "source weights MiB", "folder weights MiB", "peak RSS MiB (median)",
                           "wall s (median)"], rows=rows,
                  formats={"source weights MiB": 0, "folder weights MiB": 0, "peak RSS MiB (median)": 0,
                           "wall s (median)": 1},
                  notes=f"{args.repeats} repeats, rotated order, each build a fresh process; 1-min load average at "
                        f"the start: {result['load_average_before'][0]:.2f}.")
    finish_run("build-memory", [table], title="`build` memory: one copy of the weights, in the source's dtype",
               order=71, add_command=True, result=result,
               setup="`hf-dumpembed build SOURCE OUT --dump-tokens 4` (a decoder: no [DUMP]-row match) on the "
                     "embedded SmolLM2-135M-Instruct as a normal transformers folder (fp32) and a bf16 copy of it.")
