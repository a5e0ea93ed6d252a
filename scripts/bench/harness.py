"""What the benches share to measure: a bench's subcommand and options, interleaved repeats and their medians, the
load around a timing, peak memory, and a measurement in a fresh process (the bench's own subcommand run again).

Interleaving: each repeat runs every candidate once, in an order rotated by one place per repeat (``rotation``), so
that a load spike or a warming cache hits every candidate alike and none always runs first; a bench reports the
median over repeats (``medians``) and ratios of medians taken in the same run.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from hf_dumpembed.export.serve_bench import load_average

RUNNER = Path(__file__).resolve().with_name("benchmarks.py")
Subparsers = Any  # what ArgumentParser.add_subparsers returns (its class is private to argparse)
K = TypeVar("K")
T = TypeVar("T")


def bench_parser(subparsers: Subparsers, module: str, doc: str | None, run: Callable[[argparse.Namespace], Any], *,
                 log_level: int = logging.WARNING) -> argparse.ArgumentParser:
    """The subcommand of the bench in ``module`` (``benches.fit_cost`` -> ``fit-cost``): its docstring as help and
    description, ``run(args)`` as what it does, log records from ``log_level`` up on stderr."""
    name = module.rpartition(".")[2].replace("_", "-")
    parser = subparsers.add_parser(name, help=summary(doc or name), description=doc,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(run=run, log_level=log_level)
    return parser


def summary(doc: str) -> str:
    """A docstring's first paragraph on one line (a subcommand's help)."""
    return " ".join(doc.strip().partition("\n\n")[0].split())


def add_threads(parser: argparse.ArgumentParser, default: int = 2) -> None:
    """``--threads``: the runner sets torch's threads to it before the bench runs."""
    parser.add_argument("--threads", type=int, default=default, help=f"torch threads (default: {default})")


def rotation(items: Sequence[T], repeat: int) -> list[T]:
    """``items`` in the order of repeat number ``repeat``: rotated by one place per repeat."""
    shift = repeat % len(items)
    return [*items[shift:], *items[:shift]]


def interleaved(measures: Mapping[K, Callable[[], T]], repeats: int,
                report: Callable[[int, K, T], None] | None = None) -> dict[K, list[T]]:
    """Each repeat calls every measure once, in ``rotation`` order; per measure its values in repeat order.
    ``report(repeat, key, value)`` is called after each call."""
    values: dict[K, list[T]] = {key: [] for key in measures}
    for repeat in range(repeats):
        for key in rotation(list(measures), repeat):
            values[key].append(measures[key]())
            if report is not None:
                report(repeat, key, values[key][-1])
    return values


def seconds(action: Callable[[], object]) -> float:
    """Wall seconds of ``action()``."""
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def medians(series: Mapping[K, Sequence[float]]) -> dict[K, float]:
    """The median of each series."""
    return {key: statistics.median(values) for key, values in series.items()}


@contextmanager
def load_recorded(result: dict[str, Any]) -> Iterator[None]:
    """The 1, 5 and 15 minute load averages before and after the block into ``result`` (``load_average_before``,
    ``load_average_after``), which ``finish_run`` records with the machine."""
    result["load_average_before"] = load_average()
    yield
    result["load_average_after"] = load_average()


def status_mib(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (this process's peak: unlike ru_maxrss it does not carry over the parent's peak
    across fork + exec) from /proc/self/status, in MiB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def in_fresh_process(subcommand: str, *arguments: str, env: Mapping[str, str] | None = None) -> Any:
    """Run ``benchmarks.py SUBCOMMAND ARGUMENTS`` in a new Python process (its peak memory is then its own); the
    value its last line of stdout holds (``print_result``)."""
    command = [sys.executable, str(RUNNER), subcommand, *arguments]
    done = subprocess.run(command, capture_output=True, text=True, env=None if env is None else dict(env))
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def print_result(value: Any) -> None:
    """What a process run by ``in_fresh_process`` hands back: one JSON line on stdout."""
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()
