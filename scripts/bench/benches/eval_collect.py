"""Turn a benchmark's ``{"<run>|<task>": {metric: value}}`` metrics file (as the train-quality bench writes it)
into report rows, so `hf-dumpembed report` tabulates it with mean ± std over seeds.

Run names ``K<k>-seed<n>`` become method ``DumpEmbed K=<k> fine-tuned`` with seed n; ``K<k>-untrained`` becomes
``DumpEmbed K=<k> untrained``.

    python scripts/bench/benchmarks.py eval-collect runs/bench_train/metrics.json runs/eval/train_rows.json
    hf-dumpembed report runs/eval/train_rows.json --baseline "DumpEmbed K=0 fine-tuned"
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from benchmarks import say
from harness import Subparsers, bench_parser

_RUN = re.compile(r"^K(?P<k>\d+)-(?:seed(?P<seed>\d+)|untrained)$")


def rows_from_metrics(metrics: dict[str, dict[str, float]], metric: str) -> list[dict]:
    rows = []
    for key, scores in metrics.items():
        run, _, task = key.partition("|")
        match = _RUN.match(run)
        if not match or metric not in scores:
            raise ValueError(f"unexpected entry {key!r} (want K<k>-seed<n>|Task or K<k>-untrained|Task with {metric})")
        trained = match["seed"] is not None
        rows.append({"method": f"DumpEmbed K={match['k']} {'fine-tuned' if trained else 'untrained'}",
                     "seed": int(match["seed"]) if trained else None, "task": task, metric: scores[metric]})
    return rows


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    parser.add_argument("metrics", type=Path, help="the bench's metrics.json")
    parser.add_argument("out", type=Path, help="the report rows to write (JSON)")
    parser.add_argument("--metric", default="ndcg_at_10")


def run(args: argparse.Namespace) -> None:
    rows = rows_from_metrics(json.loads(args.metrics.read_text()), args.metric)
    args.out.write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    say(f"wrote {len(rows)} rows to {args.out}")
