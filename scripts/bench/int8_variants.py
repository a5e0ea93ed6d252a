"""What the int8 benches share: each variant quantised once under a work folder (reused when its options are
unchanged: resume), and nDCG scores kept across runs for variants whose options did not change."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench_onnx import measure_quality


def cached_variants(work: Path, variants: dict[str, Any], file_name: str,
                    quantise: Callable[[Any, Path], dict[str, Any]]) -> dict[str, dict]:
    """Each variant's manifest entry: ``quantise(options, target)`` writes ``work/variant_NN/file_name`` and returns
    its entry, unless an earlier run's entry there has the same options (then it is reused). Every entry gets
    ``quantise_seconds`` and ``path``."""
    entries = {}
    for index, (name, options) in enumerate(variants.items()):
        target = work / f"variant_{index:02d}" / file_name
        manifest = target.with_suffix(".json")
        earlier = json.loads(manifest.read_text()) if manifest.is_file() else {}
        if earlier.get("options") == json.loads(json.dumps(asdict(options))) and earlier.get("path") == str(target):
            entries[name] = earlier  # as JSON: tuples read back as lists
            print(f"{name}: reusing {target}", flush=True)  # noqa: T201
            continue
        print(f"{name}: quantising ({options.describe()}) ...", flush=True)  # noqa: T201
        target.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        entry = quantise(options, target)
        entry.update(quantise_seconds=time.perf_counter() - started, path=str(target))
        manifest.write_text(json.dumps(entry, indent=1, default=list))
        entries[name] = json.loads(manifest.read_text())  # as a later run reads it back
        print(f"{name}: {entry['quantise_seconds']:.0f} s", flush=True)  # noqa: T201
    return entries


def scored_quality(args: argparse.Namespace, scored: dict, entries: dict[str, dict], tokenizer, inputs: list[str]
                   ) -> dict:
    """nDCG@10 of every scored runtime; with --reuse-quality, the earlier --output's scores of runtimes whose
    options are unchanged are kept and only the others are scored (torch fp32 again, as their reference)."""
    earlier: dict = {}
    if args.reuse_quality and args.output is not None and args.output.is_file():
        previous = json.loads(args.output.read_text())
        same = {name for name in scored if name not in entries or previous.get("variants", {}).get(
            name, {}).get("options") == entries[name]["options"]}
        earlier = {c: {n: v for n, v in rows.items() if n in same} for c, rows in previous.get("quality", {}).items()}
    missing = {name: run for name, run in scored.items()
               if not earlier or any(name not in rows for rows in earlier.values())}
    if not missing:
        return earlier
    fresh = measure_quality({"torch fp32": scored["torch fp32"], **missing}, tokenizer, inputs, args.data_dir,
                            args.batch_size, args.max_length, args.max_queries, args.max_documents)
    return {c: {**earlier.get(c, {}), **rows} for c, rows in fresh.items()}


def add_variant_arguments(parser: argparse.ArgumentParser, work: str, names: list[str]) -> None:
    """--work, --reuse-quality and --variants, as every int8 bench reads them."""
    parser.add_argument("--work", type=Path, default=Path(work),
                        help=f"where the variants' graphs are written (and reused; default: {work})")
    parser.add_argument("--reuse-quality", action="store_true",
                        help="keep the nDCG scores of the earlier --output for runtimes whose options are unchanged "
                             "(the scores do not depend on the load; re-time on a quiet machine without re-scoring)")
    parser.add_argument("--variants", nargs="+", default=None, metavar="NAME",
                        help=f"only these variants ('defaults' always runs; names: {', '.join(names)})")


def chosen_variants(variants: dict[str, Any], wanted: list[str] | None) -> dict[str, Any]:
    """``variants`` limited to ``wanted`` (and 'defaults'); SystemExit naming the unknown ones."""
    if not wanted:
        return variants
    unknown = sorted(set(wanted) - set(variants))
    if unknown:
        raise SystemExit(f"unknown variants {unknown}; the variants are: {', '.join(variants)}.")
    return {name: options for name, options in variants.items() if name == "defaults" or name in wanted}
