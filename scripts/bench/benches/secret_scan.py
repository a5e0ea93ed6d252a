"""Throughput of push's byte scan for credentials (hf_dumpembed.publishing.secret_bytes.scan_stream) on synthetic
safetensors files of 90 MB and 1.2 GB: is it linear in the size, and how fast is it?

Each file is one F32 tensor of normal random numbers (σ = 0.05, as trained weights are) behind a valid safetensors
header, written to a temporary folder (deleted after) in 8 MiB pieces. Each repeat times, per file in a rotated
order, a plain read of the file in the scan's chunks (the I/O floor) and the byte scan itself (every token format,
chunks of `CHUNK_BYTES` with their overlap). The files were just written, so they are read from the page cache:
the numbers are the scan's CPU cost, not the disk's. Reported are medians over repeats, MB/s (MB = 10^6 bytes)
and seconds per GB, whose ratio to the smallest file's says whether the time is linear in the size. The 1-minute
load average is recorded before and after.

    python scripts/bench/benchmarks.py secret-scan --sizes-mb 90 1200 --repeats 5 --output runs/bench_secret_scan.json

It writes its BENCHMARKS.md section record (scripts/bench/results/secret-scan.json) when it finishes (not with
--no-record, for smoke runs such as ``--sizes-mb 5 20 --repeats 2 --no-record``); --record-only rewrites that
record's tables from an existing --output file.
"""

from __future__ import annotations

import argparse
import json
import struct
import tempfile
import time
from pathlib import Path

import numpy as np
from benchmarks import RESULTS_DIR, Table, add_output_arguments, finish_run, run_or_rerecord
from harness import Subparsers, bench_parser, load_recorded, medians, rotation

from hf_dumpembed.publishing import secret_bytes
from hf_dumpembed.publishing.staging_safety import safetensors_problem

SECTION, ORDER, TITLE = "secret-scan", 72, "push's byte scan for credentials: throughput on synthetic safetensors"
WIDTH = 384  # floats per row of the synthetic tensor (all-MiniLM-L6-v2's hidden size)
PIECE_FLOATS = 2 * 2**20  # written 8 MiB at a time
SETUP = """\
`push` searches every byte of every staged file (and every path) for the token formats it knows (Hugging Face,
AWS, GitHub, OpenAI, JWT, private-key headers, basic-auth URLs): one compiled bytes regex per format over 8 MiB
chunks with a 64 KiB overlap (`hf_dumpembed/publishing/secret_bytes.py`). Here on one F32 tensor of normal random
numbers (σ = 0.05) in a valid safetensors file, read from the page cache; "read only" is a plain read of the same
file in the same chunks."""


def write_safetensors(path: Path, megabytes: float, seed: int) -> int:
    """A valid safetensors file of about ``megabytes`` MB: one [rows, WIDTH] F32 tensor of N(0, 0.05²) numbers;
    returns its size in bytes."""
    rows = max(1, round(megabytes * 1e6 / (4 * WIDTH)))
    count = rows * WIDTH
    header = json.dumps({"weight": {"dtype": "F32", "shape": [rows, WIDTH], "data_offsets": [0, 4 * count]}})
    header += " " * (-len(header) % 8)  # 8-byte aligned data, as the safetensors writer pads
    rng = np.random.default_rng(seed)
    with path.open("wb") as out:
        out.write(struct.pack("<Q", len(header)) + header.encode())
        for start in range(0, count, PIECE_FLOATS):
            piece = rng.standard_normal(min(PIECE_FLOATS, count - start), dtype=np.float32)
            piece *= 0.05
            out.write(piece.tobytes())
    size = path.stat().st_size
    with path.open("rb") as handle:
        problem = safetensors_problem(handle, size)
    if problem is not None:
        raise SystemExit(f"{path}: the synthetic file is not valid safetensors ({problem}); this is a bug here.")
    return size


def read_only(path: Path) -> float:
    """Seconds to read ``path`` in the scan's chunks, doing nothing else (the I/O floor)."""
    buffer = bytearray(secret_bytes.CHUNK_BYTES)
    started = time.perf_counter()
    with path.open("rb", buffering=0) as handle, memoryview(buffer) as view:
        while handle.readinto(view):
            pass
    return time.perf_counter() - started


def scan(path: Path) -> float:
    """Seconds of the byte scan of ``path``; a finding in random numbers is a false positive and stops the run."""
    started = time.perf_counter()
    with path.open("rb") as handle:
        found = secret_bytes.scan_stream(handle, path.stat().st_size)
    wall = time.perf_counter() - started
    if found:
        raise SystemExit(f"{path}: the byte scan reports {found} in random numbers: a false positive.")
    return wall


def measure(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-secret-scan-", dir=args.dir) as work:
        files = {size: Path(work) / f"weights-{size:g}MB.safetensors" for size in args.sizes_mb}
        sizes = {mb: write_safetensors(path, mb, seed=i) for i, (mb, path) in enumerate(files.items())}
        secret_bytes.byte_rules()  # compiled once, outside the timings
        for path in files.values():  # warm-up: page cache, allocator
            read_only(path)
            scan(path)
        result = {"repeats": args.repeats, "chunk_bytes": secret_bytes.CHUNK_BYTES,
                  "overlap_bytes": secret_bytes.OVERLAP_BYTES}
        times = {(mb, what): [] for mb in files for what in ("read", "scan")}
        with load_recorded(result):
            for repeat in range(args.repeats):
                for mb in rotation(list(files), repeat):
                    times[(mb, "read")].append(read_only(files[mb]))
                    times[(mb, "scan")].append(scan(files[mb]))
    median = medians(times)
    rows = []
    for mb, size in sizes.items():
        read_s, scan_s = median[(mb, "read")], median[(mb, "scan")]
        rows.append({"size_mb": size / 1e6, "bytes": size, "read_s": read_s, "scan_s": scan_s,
                     "read_mb_s": size / 1e6 / read_s, "scan_mb_s": size / 1e6 / scan_s,
                     "scan_s_per_gb": scan_s / (size / 1e9), "scan_times_s": times[(mb, "scan")],
                     "read_times_s": times[(mb, "read")]})
    smallest = rows[0]["scan_s_per_gb"]
    for row in rows:
        row["per_gb_vs_smallest"] = row["scan_s_per_gb"] / smallest
    return {**result, "rows": rows}


def record_tables(result: dict) -> list[Table]:
    """Per file: size, median seconds (read only, scan), MB/s, scan seconds per GB and its ratio to the smallest."""
    rows = [[r["size_mb"], r["read_s"], r["read_mb_s"], r["scan_s"], r["scan_mb_s"], r["scan_s_per_gb"],
             r["per_gb_vs_smallest"]] for r in result["rows"]]
    return [Table(columns=["file MB", "read only s", "read only MB/s", "scan s", "scan MB/s", "scan s per GB",
                           "s per GB vs smallest"], rows=rows,
                  caption=f"Medians of {result['repeats']} interleaved repeats.",
                  formats={"file MB": 1, "read only s": 3, "read only MB/s": 0, "scan s": 3, "scan MB/s": 0,
                           "scan s per GB": 3, "s per GB vs smallest": 3})]


def draft_reading(result: dict) -> str:
    rows = result["rows"]
    speeds = ", ".join(f"{r['scan_mb_s']:.0f} MB/s on {r['size_mb']:.0f} MB" for r in rows)
    return (f"the byte scan runs at {speeds}; seconds per GB of the largest file are "
            f"{rows[-1]['per_gb_vs_smallest']:.2f}× the smallest's (1.00 = linear in the size).")


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    parser.add_argument("--sizes-mb", type=float, nargs="+", default=[90, 1200],
                        help="file sizes in MB (10^6 bytes), smallest first (default: 90 1200)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per file (default: 5)")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the temporary files (default: TMPDIR)")
    parser.add_argument("--no-record", action="store_true", help="do not write the section record (smoke runs)")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> None:
    if sorted(args.sizes_mb) != args.sizes_mb or len(set(args.sizes_mb)) != len(args.sizes_mb):
        raise SystemExit("--sizes-mb: give distinct sizes, smallest first (e.g. --sizes-mb 90 1200).")
    run_or_rerecord(args, measure, lambda result, fresh: record(result, fresh, args.no_record))


def record(result: dict, fresh: bool, no_record: bool) -> None:
    new = not (RESULTS_DIR / f"{SECTION}.json").is_file()
    finish_run(SECTION, record_tables(result), title=TITLE, order=ORDER, measured=fresh, result=result,
               setup=SETUP if new else None, reading=draft_reading(result) if new else None, record=not no_record,
               summary=f"{result['repeats']} repeats", show=True)
