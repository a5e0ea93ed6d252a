"""The [DUMP] paper's claim on real text: fine-tune all-MiniLM-L6-v2 with K = 0 and K > 0 under one recipe.

Every (K, seed) run uses the same config except K and the training seed: the same training rows (a fixed
subset of data/StdlibCodeTrain, hard negatives mined once with the untrained backbone), the same budget and
hyperparameters. Each trained model is evaluated on ManPages, PyFAQ and StdlibCode (none of which is trained
on) with nDCG@10 from ``hf_dumpembed.evaluation.retrieval_metrics``. Finished runs and evaluations are kept
under --out and skipped when the script is run again.

    python scripts/bench/benchmarks.py train-quality --ks 0 4 --seeds 0 1 2 --rows 320 --out runs/bench_train

When it finishes, and with --table-only (which computes nothing), it writes the table of every finished run under
--out into its BENCHMARKS.md section record: scripts/bench/results/train-mean.json (train-cls.json with
--pooling cls).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path

from benchmarks import Table, finish_run, relative_change, render_table, spread
from harness import Subparsers, add_threads, bench_parser

from hf_dumpembed.data.corpora import EVAL_COLLECTIONS, TRAIN_COLLECTION

logger = logging.getLogger("bench_train_quality")
EVAL_TASKS = tuple(f"data/{name}" for name in EVAL_COLLECTIONS)
PAPER_GAIN = 2.46
SECTIONS = {"mean": ("train-mean", 50, "Training with [DUMP] tokens"),
            "cls": ("train-cls", 60, "Training with [DUMP] tokens and [CLS] pooling (the paper's encoder pooling)")}


def run_config(args: argparse.Namespace, k: int, seed: int, out: Path) -> dict:
    """The recipe: identical for every run except K and the seed."""
    return {
        "model": {"backbone": "embedded:encoder", "num_dump_tokens": k, "pooling": args.pooling,
                  "max_seq_length": args.max_length, "init": "mean", "init_seed": 0},
        "data": {"path": args.train, "format": "beir", "split": "train", "name": Path(args.train).name,
                 "num_negatives": 1, "max_rows": args.rows, "sample_seed": 0,
                 "mining": {"cache_dir": str(out / "mined"), "range_max": 50, "relative_margin": 0.05}},
        "training": {"batch_size": args.batch, "mini_batch_size": args.mini_batch, "learning_rate": args.lr,
                     "warmup_ratio": 0.05, "epochs": 1, "save_steps": 1000, "logging_steps": 1},
        "seed": seed,
        "output": str(out / f"K{k}-seed{seed}"),
    }


def train_all(args: argparse.Namespace, out: Path) -> dict[str, dict]:
    from hf_dumpembed.training.config import config_from_dict, save_config
    from hf_dumpembed.training.trainer import train

    runs = {}
    for seed in args.seeds:
        for k in args.ks:
            raw = run_config(args, k, seed, out)
            config = config_from_dict(raw, source=f"K={k} seed={seed}")
            folder = Path(config.output)
            if not (folder / "training" / "config.yaml").exists():
                start = time.perf_counter()
                train(config, resume=(Path(f"{folder}.checkpoints") / "run_config.yaml").exists())
                (folder / "training" / "bench_wall_s.txt").write_text(f"{time.perf_counter() - start:.1f}\n")
            runs[folder.name] = trained_run(folder)
            save_config(config, out / f"{folder.name}.yaml")
    return runs


def untrained(args: argparse.Namespace, out: Path) -> dict[str, dict]:
    """The starting points (K = 0 is all-MiniLM-L6-v2 itself with the same pooling), for reference."""
    from hf_dumpembed.model.builder import BuildOptions, build
    from hf_dumpembed.training.trainer import resolve_backbone

    runs = {}
    for k in sorted({0, *args.ks}):
        folder = out / f"K{k}-untrained"
        if not (folder / "modules.json").exists():
            build(resolve_backbone("embedded:encoder"), folder, BuildOptions(
                num_dump_tokens=k, pooling=args.pooling, max_seq_length=args.max_length, seed=0), overwrite=True)
        runs[folder.name] = untrained_run(folder)
    return runs


def evaluate(path: str, task: str, batch_size: int) -> dict[str, float]:
    from sentence_transformers import SentenceTransformer

    from hf_dumpembed.data.beir import load_beir
    from hf_dumpembed.evaluation import retrieval_metrics

    data = load_beir(task, "test")
    model = SentenceTransformer(path, trust_remote_code=True, device="cpu")
    query_ids, doc_ids = list(data.queries), list(data.corpus)
    queries = model.encode_query([data.queries[q] for q in query_ids], batch_size=batch_size,
                                 convert_to_tensor=True)
    docs = model.encode_document([data.document_text(d) for d in doc_ids], batch_size=batch_size,
                                 convert_to_tensor=True)
    return retrieval_metrics(queries, docs, query_ids, doc_ids, data.qrels)


def evaluate_all(runs: dict[str, dict], tasks: list[str], out: Path, batch_size: int,
                 metrics_name: str = "metrics.json") -> dict:
    cache_file = out / metrics_name
    cache = json.loads(cache_file.read_text()) if cache_file.exists() else {}
    for name, run in runs.items():
        for task in tasks:
            key = f"{name}|{Path(task).name}"
            if key not in cache:
                start = time.perf_counter()
                cache[key] = {k: float(v) for k, v in evaluate(run["path"], task, batch_size).items()}
                logger.info("%s on %s: nDCG@10 %.4f (%.0f s)", name, Path(task).name, cache[key]["ndcg_at_10"],
                            time.perf_counter() - start)
                cache_file.write_text(json.dumps(cache, indent=2) + "\n")
    return cache


def evaluate_as_trained(args: argparse.Namespace, out: Path) -> dict[str, dict]:
    """Evaluate each (K, seed) model once its folder is complete, while another process trains the rest."""
    runs: dict[str, dict] = {}
    names = [f"K{k}-seed{seed}" for seed in args.seeds for k in args.ks]
    while len(runs) < len(names):
        for name in names:
            folder = out / name
            if name in runs or not (folder / "training" / "bench_wall_s.txt").exists():
                continue
            runs[name] = trained_run(folder)
            evaluate_all({name: runs[name]}, args.tasks, out, args.eval_batch, args.metrics)
        if len(runs) < len(names):
            time.sleep(30)
    return runs


def trained_run(folder: Path) -> dict:
    """A finished run's entry (``K4-seed0``): K, seed, folder, steps and training wall seconds."""
    info = json.loads((folder / "config.json").read_text())["training_info"]
    return {"k": int(folder.name[1:].split("-")[0]), "seed": info["seed"], "path": str(folder), "steps": info["steps"],
            "wall_s": float((folder / "training" / "bench_wall_s.txt").read_text())}


def untrained_run(folder: Path) -> dict:
    """An untrained model's entry (``K4-untrained``), as ``trained_run`` gives a trained one's."""
    return {"k": int(folder.name[1:].split("-")[0]), "seed": None, "path": str(folder), "steps": 0, "wall_s": 0.0}


def finished_runs(out: Path) -> dict[str, dict]:
    """Every finished (K, seed) run and untrained model under ``out``."""
    runs = {}
    for folder in sorted(out.glob("K*-*")):
        if folder.name.endswith("-untrained") and (folder / "modules.json").exists():
            runs[folder.name] = untrained_run(folder)
        elif (folder / "training" / "bench_wall_s.txt").exists():
            runs[folder.name] = trained_run(folder)
    return runs


def table(runs: dict[str, dict], metrics: dict, tasks: list[str], ks: list[int], pooling: str = "mean") -> Table:
    """Untrained then fine-tuned rows per K: nDCG@10 per task and their mean (mean ± sample std over seeds), and
    the relative change of the mean against fine-tuned K = 0."""
    names = [Path(t).name for t in tasks]
    rows = []
    base_mean = None
    for trained in (False, True):
        for k in ks if trained else sorted({0, *ks}):
            chosen = [r for r in runs.values() if r["k"] == k and (r["seed"] is not None) == trained
                      and all(f"{Path(r['path']).name}|{t}" in metrics for t in names)]
            if not chosen:
                continue
            per_task = [[metrics[f"{Path(r['path']).name}|{t}"]["ndcg_at_10"] for r in chosen] for t in names]
            per_run_mean = [statistics.mean(v) for v in zip(*per_task, strict=True)]
            mean = statistics.mean(per_run_mean)
            if trained and k == 0:
                base_mean = mean
            gain = relative_change(mean, base_mean) if trained else None
            label = f"K={k} {'fine-tuned' if trained else 'untrained'}"
            if k == 0 and not trained and pooling == "mean":
                label += " (all-MiniLM-L6-v2 itself)"
            rows.append([label, len(chosen) if trained else "-", chosen[0]["steps"],
                         *(spread(v) for v in per_task), spread(per_run_mean), gain])
    return Table(columns=["model", "runs", "steps", *names, "mean", "rel. gain vs K=0 (mean)"], rows=rows,
                 formats={**{n: 4 for n in names}, "mean": 4, "rel. gain vs K=0 (mean)": "+.2%"})


def all_metrics(out: Path) -> dict:
    """Every metrics cache under ``out`` merged (parallel evaluating processes keep one each)."""
    return {k: v for f in sorted(out.glob("metrics*.json")) for k, v in json.loads(f.read_text()).items()}


def record(args: argparse.Namespace, result: Table, fresh: bool) -> None:
    """Write this pooling's section record: the table, this command added to the section's commands."""
    section, order, title = SECTIONS[args.pooling]
    finish_run(section, [result], title=title, order=order, measured=fresh, add_command=True)


def report(result: Table) -> str:
    return render_table(result) + f"\n\nPaper: +{PAPER_GAIN}% relative (average over its retrieval tasks).\n"


def add_recipe_arguments(parser: argparse.ArgumentParser) -> None:
    """The training benches' shared recipe options: seeds, batch, GradCache mini-batch, learning rate, text length,
    evaluation batch and torch threads."""
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds (default: 0 1 2)")
    parser.add_argument("--batch", type=int, default=32, help="global batch (default: 32)")
    parser.add_argument("--mini-batch", type=int, default=16, help="GradCache mini-batch (default: 16)")
    parser.add_argument("--lr", type=float, default=1e-4, help="learning rate (default: 1e-4)")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per text (default: 128)")
    parser.add_argument("--eval-batch", type=int, default=64, help="encode batch of the evaluation (default: 64)")
    add_threads(parser)


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run, log_level=logging.INFO)
    parser.add_argument("--ks", type=int, nargs="+", default=[0, 4])
    parser.add_argument("--train", default=f"data/{TRAIN_COLLECTION}")
    parser.add_argument("--tasks", nargs="+", default=list(EVAL_TASKS))
    parser.add_argument("--rows", type=int, default=320, help="training pairs (a fixed seeded subset)")
    add_recipe_arguments(parser)
    parser.add_argument("--pooling", default="mean", choices=["cls", "mean"],
                        help="all-MiniLM-L6-v2 was trained with mean pooling; 'pooling unchanged' keeps it")
    parser.add_argument("--skip-eval", action="store_true", help="only train")
    parser.add_argument("--metrics", default="metrics.json",
                        help="metrics cache file under --out (a second evaluating process needs its own)")
    parser.add_argument("--table-only", action="store_true",
                        help="print the table of the runs and metrics already under --out and write it into the "
                        "section record (nothing is computed)")
    parser.add_argument("--eval-only", action="store_true",
                        help="evaluate runs as another process finishes training them (polls until all are done)")
    parser.add_argument("--out", default="runs/bench_train")


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.table_only:
        result = table(finished_runs(out), all_metrics(out), args.tasks, args.ks, args.pooling)
        sys.stdout.write(report(result))
        record(args, result, fresh=False)
        return
    if args.eval_only:
        runs = evaluate_as_trained(args, out)
    else:
        runs = train_all(args, out)
    runs.update(untrained(args, out))
    (out / "runs.json").write_text(json.dumps(runs, indent=2) + "\n")
    if args.skip_eval:
        return
    metrics = evaluate_all(runs, args.tasks, out, args.eval_batch, args.metrics)
    result = table(runs, metrics, args.tasks, args.ks, args.pooling)
    (out / "table.md").write_text(report(result))
    sys.stdout.write(report(result))
    # The section shows every finished run under --out (earlier invocations' Ks too), as --table-only does.
    finished = finished_runs(out)
    record(args, table(finished, all_metrics(out), args.tasks, sorted({r["k"] for r in finished.values()}),
                       args.pooling), fresh=True)
