"""Turn a benchmark's ``{"<run>|<task>": {metric: value}}`` metrics file (as scripts/bench/bench_train_quality.py
writes it) into report rows, so `hf-dumpembed report` tabulates it with mean ± std over seeds.

Run names ``K<k>-seed<n>`` become method ``DumpEmbed K=<k> fine-tuned`` with seed n; ``K<k>-untrained`` becomes
``DumpEmbed K=<k> untrained``.

    python scripts/bench/bench_eval_collect.py runs/bench_train/metrics.json runs/eval/train_rows.json
    hf-dumpembed report runs/eval/train_rows.json --baseline "DumpEmbed K=0 fine-tuned"
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("metrics", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--metric", default="ndcg_at_10")
    args = parser.parse_args()
    rows = rows_from_metrics(json.loads(args.metrics.read_text()), args.metric)
    args.out.write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    print(f"wrote {len(rows)} rows to {args.out}")  # noqa: T201 - a script's one line of output


if __name__ == "__main__":
    main()
