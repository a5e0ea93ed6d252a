"""Fine-tuned [DUMP] models: K = 4 candidates (init x pooling x [DUMP] learning rate) against K = 0, paired by seed.

Every run fine-tunes the embedded all-MiniLM-L6-v2 on the same rows of StdlibCodeTrain (a fixed seeded subset, or
all of it for one epoch: --rows 0), with hard negatives mined once and shared, the same recipe (InfoNCE scale 20,
GradCache, batch 32, lr 1e-4, 5% warmup, 1 epoch) and the same training seeds; only the variant's K / pooling / init
/ [DUMP] learning rate differ. Each model is evaluated on the held-out ManPages, PyFAQ and StdlibCode (never trained
on) with nDCG@10 from mteb's metric code. A K = 4 variant is paired with the K = 0 run of the same seed and pooling
regime (mean_no_dump pairs with mean), and the table reports the per-seed relative differences (mean ± std).
Finished runs and evaluations are kept under --out and skipped when the script runs again (an interrupted training
run resumes from its last checkpoint).

    python scripts/bench/benchmarks.py dump-recipe --rows 320 --out runs/dump_recipe/quickstart   # quickstart budget
    python scripts/bench/benchmarks.py dump-recipe --rows 0 --out runs/dump_recipe/epoch         # one full epoch
    python scripts/bench/benchmarks.py dump-recipe --rows 0 --variants D0-last D4-last --out runs/dump_recipe/decoder
    python scripts/bench/benchmarks.py dump-recipe --rows 0 --variants D0-last D1-bos D4-last-frozen D1-last \
        D4-last --out runs/dump_recipe/decoder-controls      # what the decoder gain survives (GPU: --device cuda)

The D variants train the embedded SmolLM2-135M-Instruct decoder (last-token pooling, the paper's decoder regime),
with hard negatives mined by the embedded all-MiniLM-L6-v2.
On a machine without mteb (e.g. a GPU box), `--rank-only` trains and stores each model's top-10 ranking per query
(`rankings/NAME.json`, all nDCG@10 needs) instead of scores; `--table-only` on a machine with mteb then scores
those rankings with mteb's metric code, exactly as a full run would. (``python scripts/bench/bench_dump_recipe.py
ARGS`` is the same command, kept so that the runs started under that name resume with it.)
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

from benchmarks import Table, finish_run, relative_change, render_table, spread
from harness import Subparsers, bench_parser

from benches.train_quality import add_recipe_arguments
from hf_dumpembed.data.corpora import EVAL_COLLECTIONS, TRAIN_COLLECTION
from hf_dumpembed.export.serve_bench import cpu_flags

logger = logging.getLogger("bench_dump_recipe")
TASKS = EVAL_COLLECTIONS
# name -> (K, pooling, init, [DUMP] learning rate or None for the run's own)
VARIANTS = {
    "K0-mean": (0, "mean", "sep", None),
    "K4-mean-sep": (4, "mean", "sep", None),
    "K4-nodump-sep": (4, "mean_no_dump", "sep", None),
    "K4-nodump-sep-dlr1e-3": (4, "mean_no_dump", "sep", 1e-3),
    "K4-nodump-sep-match60": (4, "mean_no_dump", "sep+match60", None),  # rows matched to K = 0 first
    "K4-nodump-sep-match60-ontop": (4, "mean_no_dump", "sep+match60", None),  # and K positions on top of the text's
    "K4-mean-sep-match60-ontop": (4, "mean", "sep+match60", None),  # the same, stock mean ([DUMP] slots in)
    "K4-nodump-mean": (4, "mean_no_dump", "mean", None),
    "K4-mean-mean": (4, "mean", "mean", None),
    "K0-cls": (0, "cls", "sep", None),
    "K4-cls-sep": (4, "cls", "sep", None),
    "K4-cls-sep-dlr1e-3": (4, "cls", "sep", 1e-3),
    "K4-cls-mean": (4, "cls", "mean", None),
    # the decoder regime: SmolLM2-135M-Instruct, last-token pooling, the build's decoder init
    "D0-last": (0, "last", "auto", None),
    "D4-last": (4, "last", "auto", None),
    "D4-last-dlr1e-3": (4, "last", "auto", 1e-3),
    # controls of the decoder gain (which part of "K = 4 trained" pays):
    # K = 0 plus one constant first token: SmolLM2's declared BOS <|im_start|>, the first token of every chat sequence
    # it was instruction-tuned on (its tokenizer does not add it). One [DUMP] row initialised as an exact copy of that
    # token's row gives the same forward as prepending the token, and trains as the token's row would.
    "D1-bos": (1, "last", "token=<|im_start|>", None),
    "D4-last-frozen": (4, "last", "auto", 0.0),  # four constant first tokens: the rows stay at their init
    "D1-last": (1, "last", "auto", None),
}
# Variants whose K [DUMP] tokens come on top of --max-length (the text keeps every position K = 0 has); every other
# variant counts them inside --max-length, so its text is truncated K tokens earlier than K = 0's.
DUMP_ON_TOP = {"K4-nodump-sep-match60-ontop", "K4-mean-sep-match60-ontop"}
TOP = 10  # nDCG@10 needs the top 10 of each ranking only


def baseline_of(variant: str) -> str:
    """The K = 0 run a variant is compared with: the same pooling regime."""
    if variant.startswith("D"):
        return "D0-last"
    return "K0-cls" if VARIANTS[variant][1] == "cls" else "K0-mean"


def run_config(args: argparse.Namespace, variant: str, seed: int, out: Path) -> dict:
    k, pooling, init, dump_lr = VARIANTS[variant]
    init, _, match_steps = init.partition("+match")
    init, _, init_token = init.partition("=")
    training = {"batch_size": args.batch, "mini_batch_size": args.mini_batch, "learning_rate": args.lr,
                "warmup_ratio": 0.05, "epochs": args.epochs, "save_steps": args.save_steps, "logging_steps": 1,
                "precision": args.precision}
    if dump_lr is not None:
        training["dump_learning_rate"] = dump_lr
    mining = {"cache_dir": str(out / "mined"), "range_max": 50, "relative_margin": 0.05}
    if variant.startswith("D"):
        # An untrained decoder's raw last-token states are nearly collinear: mine with the embedded encoder instead
        # (the same negatives for K = 0 and K = 4).
        from hf_dumpembed.data.assets import default_encoder_path

        mining["model"] = str(default_encoder_path())
    return {
        "model": {"backbone": "embedded:decoder" if variant.startswith("D") else "embedded:encoder",
                  "num_dump_tokens": k, "pooling": pooling, "init": init, "init_token": init_token or None,
                  "match_steps": int(match_steps or 0),
                  "init_seed": 0, "max_seq_length": args.max_length + (k if variant in DUMP_ON_TOP else 0)},
        "data": {"path": str(Path(args.data_dir) / TRAIN_COLLECTION), "format": "beir", "split": "train",
                 "name": TRAIN_COLLECTION, "num_negatives": 1, "max_rows": args.rows or None, "sample_seed": 0,
                 "mining": mining},
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


def rank(folder: Path, data_dir: Path, batch_size: int, device: str, max_queries: int | None = None,
         max_documents: int | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """Per held-out collection, each judged query's top-10 documents with their cosine scores (no mteb needed);
    ``max_queries`` / ``max_documents``: a seeded sample of each collection (the same for every run)."""
    from sentence_transformers import SentenceTransformer

    from hf_dumpembed.data.beir import load_beir
    from hf_dumpembed.evaluation.cached import subsample
    from hf_dumpembed.evaluation.metrics import top_k_results

    model = SentenceTransformer(str(folder), trust_remote_code=True, device=device)
    rankings = {}
    for task in TASKS:
        data = subsample(load_beir(data_dir / task, "test"), max_queries, max_documents)
        query_ids, doc_ids = list(data.queries), list(data.corpus)
        queries = model.encode_query([data.queries[q] for q in query_ids], batch_size=batch_size,
                                     convert_to_tensor=True).float().cpu()
        docs = model.encode_document([data.document_text(d) for d in doc_ids], batch_size=batch_size,
                                     convert_to_tensor=True).float().cpu()
        judged = {q for q, rel in data.qrels.items() if any(int(v) > 0 for v in rel.values())}
        rankings[task] = top_k_results(queries, docs, query_ids, doc_ids, TOP, only=judged)
    return rankings


def score(rankings: dict[str, dict[str, dict[str, float]]], data_dir: Path) -> dict[str, float]:
    """nDCG@10 per collection from stored rankings, with mteb's metric code."""
    from hf_dumpembed.data.beir import load_beir
    from hf_dumpembed.evaluation.metrics import metrics_from_results

    scores = {}
    for task, results in rankings.items():
        qrels = load_beir(data_dir / task, "test").qrels
        judged = {q: {d: int(v) for d, v in rel.items()} for q, rel in qrels.items() if q in results}
        scores[task] = float(metrics_from_results(results, judged, [1, 3, 5, TOP])[f"ndcg_at_{TOP}"])
    return scores


def bundle(out: Path, target: Path) -> None:
    """Pack the run records and rankings (small) into one archive, written atomically."""
    import tarfile

    partial = target.with_name(target.name + ".partial")
    with tarfile.open(partial, "w:gz") as archive:
        archive.add(out / "runs.json", arcname="runs.json")
        archive.add(out / "rankings", arcname="rankings")
    partial.replace(target)


def table(metrics: dict[str, dict[str, float]], variants: list[str], seeds: list[int], run_info: dict,
          against: str | None = None) -> Table:
    """Per variant: runs, steps, per-task and mean nDCG@10 (mean ± std over seeds) and the paired change: against
    the K = 0 run of its pooling regime, or against the variant ``against`` (same seed) when given."""
    rows = []
    for variant in variants:
        done = [s for s in seeds if f"{variant}-seed{s}" in metrics]
        if not done:
            continue
        runs = [metrics[f"{variant}-seed{s}"] for s in done]
        means = [statistics.mean(r[t] for t in TASKS) for r in runs]
        base = against or baseline_of(variant)
        paired = [relative_change(statistics.mean(metrics[f"{variant}-seed{s}"][t] for t in TASKS),
                                  statistics.mean(metrics[f"{base}-seed{s}"][t] for t in TASKS))
                  for s in done if f"{base}-seed{s}" in metrics and variant != base]
        steps = {run_info[f"{variant}-seed{s}"]["steps"] for s in done if f"{variant}-seed{s}" in run_info}
        rows.append([variant_label(variant), len(done), steps.pop() if len(steps) == 1 else "-",
                     *(spread([r[t] for r in runs]) for t in TASKS),
                     spread(means), spread(paired) if paired else "-",
                     f"{sum(p > 0 for p in paired)}/{len(paired)}" if paired else "-"])
    change, ahead = "paired change vs K=0", "seeds K=4 > K=0"
    if against:
        change, ahead = f"paired change vs {variant_label(against)}", "seeds ahead of it"
    return Table(columns=["model", "seeds", "steps", *TASKS, "mean", change, ahead],
                 rows=rows, formats={**{t: 4 for t in TASKS}, "mean": 4, change: "+.2%"})


# The decoder controls, named for what each one is (the row a reader compares with K = 0).
CONTROL_LABELS = {"D1-bos": "SmolLM2 K=0 + BOS", "D4-last-frozen": "SmolLM2 K=4 frozen", "D1-last": "SmolLM2 K=1 last",
                  "D4-last": "SmolLM2 K=4 last"}


def variant_label(variant: str) -> str:
    """A variant's row label: backbone, K, pooling, init, [DUMP] learning rate, positions."""
    if variant in CONTROL_LABELS:
        return CONTROL_LABELS[variant]
    k, pooling, init, dump_lr = VARIANTS[variant]
    label = ("SmolLM2 " if variant.startswith("D") else "") + f"K={k} {pooling}"
    label += (f", init {init.replace('=', ' ')}" if k else "")
    label += "" if dump_lr is None else (", [DUMP] rows frozen" if dump_lr == 0 else f", [DUMP] lr {dump_lr:g}")
    return label + (f", +{k} positions (text as K=0)" if variant in DUMP_ON_TOP else "")


def merge_entry(path: Path, name: str, entry: dict) -> dict:
    """Add one run's entry to a shared JSON file, re-read just before writing (another process on the same --out
    may have added its own since this one started), written whole via a temporary file; returns the merged dict."""
    merged = json.loads(path.read_text()) if path.exists() else {}
    merged[name] = entry
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(merged, indent=1) + "\n")
    temporary.replace(path)
    return merged


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run, log_level=logging.INFO)
    parser.add_argument("--variants", nargs="+", default=["K0-mean", "K4-nodump-sep", "K4-nodump-sep-dlr1e-3"],
                        choices=sorted(VARIANTS))
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--rows", type=int, default=320, help="training pairs (fixed seeded subset); 0 = all")
    parser.add_argument("--epochs", type=int, default=1, help="passes over the --rows pairs")
    add_recipe_arguments(parser)
    parser.add_argument("--save-steps", type=int, default=20, help="checkpoint interval (resume granularity)")
    parser.add_argument("--max-queries", type=int, default=None,
                        help="evaluate on a seeded sample of each held-out collection's queries (default: all)")
    parser.add_argument("--max-documents", type=int, default=None,
                        help="... and documents (every judged one kept, seeded distractors; default: all)")
    parser.add_argument("--device", default="cpu", help="where to train and encode: cpu, cuda, ...")
    parser.add_argument("--precision", default="fp32", choices=["auto", "bf16", "fp32"],
                        help="training precision (fp32 keeps CPU and GPU runs comparable)")
    parser.add_argument("--rank-only", action="store_true",
                        help="store each model's top-10 rankings (rankings/NAME.json) instead of scoring them "
                             "(for a machine without mteb); score them later with --table-only")
    parser.add_argument("--bundle", default=None,
                        help="after each run, pack rankings/ and runs.json into this .tar.gz (to copy them back)")
    parser.add_argument("--section", default=None,
                        help="write the table into this BENCHMARKS.md section record (e.g. dump-recipe-quickstart)")
    parser.add_argument("--order", type=float, default=55, help="with --section: the section's place in BENCHMARKS.md")
    parser.add_argument("--title", default=None, help="with --section: its title (default: K = 4 candidates vs K = 0)")
    parser.add_argument("--table-only", action="store_true",
                        help="tabulate (and record) the runs already evaluated under --out; train nothing")
    parser.add_argument("--machine", default=None,
                        help="with --table-only: where the runs trained and encoded, when not on this machine "
                             "(recorded instead of this machine's description)")
    parser.add_argument("--against", default=None, choices=sorted(VARIANTS),
                        help="add a table pairing every K > 0 variant with this one (same seed), after the table "
                             "against K = 0 (e.g. K4-nodump-sep-match60-ontop: stock mean vs mean_no_dump)")
    parser.add_argument("--out", default="runs/dump_recipe")


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    metrics_file, runs_file = out / "metrics.json", out / "runs.json"
    metrics = json.loads(metrics_file.read_text()) if metrics_file.exists() else {}
    runs = json.loads(runs_file.read_text()) if runs_file.exists() else {}
    (out / "rankings").mkdir(exist_ok=True)
    result = table(metrics, args.variants, args.seeds, runs)
    # seed-major: every variant of seed 0 first, so a paired comparison is complete as early as possible
    for seed in args.seeds:
        for variant in args.variants:
            name = f"{variant}-seed{seed}"
            ranking_file = out / "rankings" / f"{name}.json"
            rankings = json.loads(ranking_file.read_text()) if ranking_file.exists() else None
            if not args.table_only and name not in metrics and rankings is None:
                load_before = os.getloadavg()
                folder = train_one(args, variant, seed, out)
                info = json.loads((folder / "config.json").read_text())["training_info"]
                wall = float((folder / "training" / "bench_wall_s.txt").read_text())
                runs = merge_entry(runs_file, name, {"steps": info["steps"], "train_wall_s": wall,
                                                     "device": args.device, "precision": args.precision,
                                                     "cpu_flags": cpu_flags(), "load_average": load_before[0],
                                                     "load_average_after": os.getloadavg()[0]})
                rankings = rank(folder, Path(args.data_dir), args.eval_batch, args.device, args.max_queries,
                                args.max_documents)
                ranking_file.write_text(json.dumps(rankings))
                if args.bundle:
                    bundle(out, Path(args.bundle))
            if name not in metrics and rankings is not None and not args.rank_only:
                metrics = merge_entry(metrics_file, name, score(rankings, Path(args.data_dir)))
                logger.info("%s: %s", name, metrics[name])
            result = table(metrics, args.variants, args.seeds, runs)
            (out / "table.md").write_text(render_table(result) + "\n")
    tables = [result]
    if args.against:  # the K > 0 variants paired with the chosen one, after the table against K = 0
        tables.append(table(metrics, [v for v in args.variants if VARIANTS[v][0] > 0], args.seeds, runs, args.against))
    sys.stdout.write("\n\n".join(render_table(t) for t in tables) + "\n")
    if args.section:
        budget = f"{args.rows} rows" if args.rows else "one epoch"
        budget += f" x {args.epochs} epochs" if args.epochs > 1 else ""
        title = args.title or f"Training with [DUMP] tokens: K = 4 candidates vs K = 0, paired seeds ({budget})"
        finish_run(args.section, tables, title=title, order=args.order, add_command=True, machine=args.machine)
