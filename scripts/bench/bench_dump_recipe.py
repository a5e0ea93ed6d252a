"""Fine-tuned [DUMP] models: K = 4 candidates (init x pooling x [DUMP] learning rate) against K = 0, paired by seed.

Every run fine-tunes the embedded all-MiniLM-L6-v2 on the same rows of StdlibCodeTrain (a fixed seeded subset, or
all of it for one epoch: --rows 0), with hard negatives mined once and shared, the same recipe (InfoNCE scale 20,
GradCache, batch 32, lr 1e-4, 5% warmup, 1 epoch) and the same training seeds; only the variant's K / pooling / init
/ [DUMP] learning rate differ. Each model is evaluated on the held-out ManPages, PyFAQ and StdlibCode (never trained
on) with nDCG@10 from mteb's metric code. A K = 4 variant is paired with the K = 0 run of the same seed and pooling
regime (mean_no_dump pairs with mean), and the table reports the per-seed relative differences (mean ± std).
Finished runs and evaluations are kept under --out and skipped when the script runs again (an interrupted training
run resumes from its last checkpoint).

    python scripts/bench/bench_dump_recipe.py --rows 320 --out runs/dump_recipe/quickstart     # the quickstart budget
    python scripts/bench/bench_dump_recipe.py --rows 0 --out runs/dump_recipe/epoch           # one full epoch
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path

import torch
from benchmarks import Table, command_line, relative_change, render_table, write_record

logger = logging.getLogger("bench_dump_recipe")
TASKS = ("ManPages", "PyFAQ", "StdlibCode")
# name -> (K, pooling, init, [DUMP] learning rate or None for the run's own)
VARIANTS = {
    "K0-mean": (0, "mean", "sep", None),
    "K4-mean-sep": (4, "mean", "sep", None),
    "K4-nodump-sep": (4, "mean_no_dump", "sep", None),
    "K4-nodump-sep-dlr1e-3": (4, "mean_no_dump", "sep", 1e-3),
    "K4-nodump-mean": (4, "mean_no_dump", "mean", None),
    "K4-mean-mean": (4, "mean", "mean", None),
    "K0-cls": (0, "cls", "sep", None),
    "K4-cls-sep": (4, "cls", "sep", None),
    "K4-cls-sep-dlr1e-3": (4, "cls", "sep", 1e-3),
    "K4-cls-mean": (4, "cls", "mean", None),
}


def baseline_of(variant: str) -> str:
    """The K = 0 run a variant is compared with: the same pooling regime."""
    return "K0-cls" if VARIANTS[variant][1] == "cls" else "K0-mean"


def run_config(args: argparse.Namespace, variant: str, seed: int, out: Path) -> dict:
    k, pooling, init, dump_lr = VARIANTS[variant]
    training = {"batch_size": args.batch, "mini_batch_size": args.mini_batch, "learning_rate": args.lr,
                "warmup_ratio": 0.05, "epochs": 1, "save_steps": args.save_steps, "logging_steps": 1}
    if dump_lr is not None:
        training["dump_learning_rate"] = dump_lr
    return {
        "model": {"backbone": "embedded:encoder", "num_dump_tokens": k, "pooling": pooling, "init": init,
                  "init_seed": 0, "max_seq_length": args.max_length},
        "data": {"path": str(Path(args.data_dir) / "StdlibCodeTrain"), "format": "beir", "split": "train",
                 "name": "StdlibCodeTrain", "num_negatives": 1, "max_rows": args.rows or None, "sample_seed": 0,
                 "mining": {"cache_dir": str(out / "mined"), "range_max": 50, "relative_margin": 0.05}},
        "training": training,
        "seed": seed,
        "output": str(out / f"{variant}-seed{seed}"),
    }


def train_one(args: argparse.Namespace, variant: str, seed: int, out: Path) -> Path:
    from hf_dumpembed.training.config import config_from_dict
    from hf_dumpembed.training.trainer import train

    config = config_from_dict(run_config(args, variant, seed, out), source=f"{variant} seed={seed}")
    folder = Path(config.output)
    if not (folder / "training" / "bench_wall_s.txt").exists():
        start = time.perf_counter()
        train(config, resume=(config.checkpoint_path / "run_config.yaml").exists())
        (folder / "training" / "bench_wall_s.txt").write_text(f"{time.perf_counter() - start:.1f}\n")
    return folder


def evaluate(folder: Path, data_dir: Path, batch_size: int) -> dict[str, float]:
    """nDCG@10 of one model on each held-out collection (sentence-transformers encode + mteb's metric code)."""
    from sentence_transformers import SentenceTransformer

    from hf_dumpembed.data.beir import load_beir
    from hf_dumpembed.evaluation import retrieval_metrics

    model = SentenceTransformer(str(folder), trust_remote_code=True, device="cpu")
    scores = {}
    for task in TASKS:
        data = load_beir(data_dir / task, "test")
        query_ids, doc_ids = list(data.queries), list(data.corpus)
        queries = model.encode_query([data.queries[q] for q in query_ids], batch_size=batch_size,
                                     convert_to_tensor=True)
        docs = model.encode_document([data.document_text(d) for d in doc_ids], batch_size=batch_size,
                                     convert_to_tensor=True)
        scores[task] = float(retrieval_metrics(queries, docs, query_ids, doc_ids, data.qrels)["ndcg_at_10"])
    return scores


def table(metrics: dict[str, dict[str, float]], variants: list[str], seeds: list[int], steps: dict) -> Table:
    """Per variant: runs, steps, per-task and mean nDCG@10 (mean ± std over seeds) and the paired change."""

    def cell(values: list[float]) -> float | dict[str, float]:
        return values[0] if len(values) == 1 else {"mean": statistics.mean(values), "std": statistics.stdev(values)}

    rows = []
    for variant in variants:
        done = [s for s in seeds if f"{variant}-seed{s}" in metrics]
        if not done:
            continue
        runs = [metrics[f"{variant}-seed{s}"] for s in done]
        means = [statistics.mean(r[t] for t in TASKS) for r in runs]
        base = baseline_of(variant)
        paired = [relative_change(statistics.mean(metrics[f"{variant}-seed{s}"][t] for t in TASKS),
                                  statistics.mean(metrics[f"{base}-seed{s}"][t] for t in TASKS))
                  for s in done if f"{base}-seed{s}" in metrics and variant != base]
        k, pooling, init, dump_lr = VARIANTS[variant]
        label = f"K={k} {pooling}" + (f", init {init}" if k else "") + (f", [DUMP] lr {dump_lr:g}" if dump_lr else "")
        rows.append([label, len(done), steps.get(variant, "-"), *(cell([r[t] for r in runs]) for t in TASKS),
                     cell(means), cell(paired) if paired else "-",
                     f"{sum(p > 0 for p in paired)}/{len(paired)}" if paired else "-"])
    return Table(columns=["model", "seeds", "steps", *TASKS, "mean", "paired change vs K=0", "seeds K=4 > K=0"],
                 rows=rows, formats={**{t: 4 for t in TASKS}, "mean": 4, "paired change vs K=0": "+.2%"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", nargs="+", default=["K0-mean", "K4-nodump-sep", "K4-nodump-sep-dlr1e-3"],
                        choices=sorted(VARIANTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--rows", type=int, default=320, help="training pairs (fixed seeded subset); 0 = all")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--mini-batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--save-steps", type=int, default=20, help="checkpoint interval (resume granularity)")
    parser.add_argument("--eval-batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--section", default=None,
                        help="write the table into this BENCHMARKS.md section record (e.g. dump-recipe-quickstart)")
    parser.add_argument("--table-only", action="store_true",
                        help="tabulate (and record) the runs already evaluated under --out; train nothing")
    parser.add_argument("--out", default="runs/dump_recipe")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    metrics_file = out / "metrics.json"
    metrics = json.loads(metrics_file.read_text()) if metrics_file.exists() else {}
    steps: dict[str, int] = {}
    # seed-major: every variant of seed 0 first, so a paired comparison is complete as early as possible
    for seed in args.seeds:
        for variant in args.variants:
            name = f"{variant}-seed{seed}"
            folder = out / name if args.table_only else train_one(args, variant, seed, out)
            if args.table_only and name not in metrics:
                continue
            steps[variant] = json.loads((folder / "config.json").read_text())["training_info"]["steps"]
            if name not in metrics:
                metrics[name] = evaluate(folder, Path(args.data_dir), args.eval_batch)
                metrics_file.write_text(json.dumps(metrics, indent=1) + "\n")
                logger.info("%s: %s", name, metrics[name])
            result = table(metrics, args.variants, args.seeds, steps)
            (out / "table.md").write_text(render_table(result) + "\n")
    sys.stdout.write(render_table(result) + "\n")
    if args.section:
        from datetime import date

        from hf_dumpembed._utils.machine import machine_info

        budget = f"{args.rows} rows" if args.rows else "one epoch"
        write_record(args.section, tables=[result], command=command_line(), order=55, machine=machine_info(),
                     date=date.today().isoformat(),
                     title=f"Training with [DUMP] tokens: K = 4 candidates vs K = 0, paired seeds ({budget})")


if __name__ == "__main__":
    main()
