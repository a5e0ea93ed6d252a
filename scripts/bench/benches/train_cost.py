"""Training cost of [DUMP] tokens and of GradCache, on all-MiniLM-L6-v2 with real StdlibCodeTrain text.

``step``: one optimizer step (CachedMultipleNegativesRankingLoss + AdamW) for K = 0 and K > 0 models on the
same batches, interleaved with the order rotated each repeat; median seconds per step, their ratio, and the
goal 1 + 1.5 K / L at the batch's mean token length L (without [DUMP] tokens).

``memory``: peak resident memory added by one training step at a given global batch, plain
MultipleNegativesRankingLoss vs the cached loss at several ``mini_batch_size`` values; each configuration runs
in its own fresh process (VmHWM is a high-water mark), and the figure is the peak during the step minus
the resident memory just before it (activations + gradients + optimizer state).

    python scripts/bench/benchmarks.py train-cost step --ks 0 4 --batch 8 --repeats 5
    python scripts/bench/benchmarks.py train-cost memory --batch 256 --mini-batches 8 32 128 --max-length 32

After ``step`` / ``memory`` with --json, and in mode ``record`` (which measures nothing), it rewrites its
BENCHMARKS.md section record (scripts/bench/results/train-cost.json) from --step-json and --memory-json.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
from pathlib import Path

import torch
from benchmarks import RUNNER_COMMAND, Table, finish_run, stored_results
from harness import Subparsers, add_threads, bench_parser, in_fresh_process, print_result, rotation, seconds, status_mib

from hf_dumpembed.data.corpora import TRAIN_COLLECTION

logger = logging.getLogger("bench_train_cost")
SECTION, ORDER, TITLE = "train-cost", 70, "Training cost: step time K = 4 vs K = 0, and GradCache memory"


def triplets(folder: str, count: int) -> list[tuple[str, str, str]]:
    """(docstring, function source, another function's source) from a BEIR training folder."""
    from hf_dumpembed.data.beir import load_beir

    data = load_beir(folder, "train")
    pairs = [(data.queries[q], data.document_text(d)) for q, judged in data.qrels.items() for d in judged][:count + 1]
    return [(q, d, pairs[i + 1][1]) for i, (q, d) in enumerate(pairs[:count])]


def build_model(out: Path, k: int, max_length: int) -> Path:
    from hf_dumpembed.model.builder import BuildOptions, build
    from hf_dumpembed.training.trainer import resolve_backbone

    folder = out / f"minilm-K{k}-len{max_length}"
    if not (folder / "modules.json").exists():
        build(resolve_backbone("embedded:encoder"), folder,
              BuildOptions(num_dump_tokens=k, pooling="mean", max_seq_length=max_length), overwrite=True)
    return folder


def train_step(model, loss_fn, optimizer, batch: list[tuple[str, str, str]]) -> float:  # noqa: ANN001
    """Seconds of one optimizer step on ``batch``."""
    def step() -> None:
        loss_fn([model.tokenize([row[i] for row in batch]) for i in range(3)], None).backward()
        optimizer.step()
        optimizer.zero_grad()

    return seconds(step)


def bench_step(args: argparse.Namespace) -> dict:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import CachedMultipleNegativesRankingLoss

    out = Path(args.out)
    rows = triplets(args.train, args.batch * (args.repeats + 1))
    batches = [rows[i * args.batch:(i + 1) * args.batch] for i in range(args.repeats + 1)]
    setups = {}
    for k in args.ks:
        model = SentenceTransformer(str(build_model(out, k, args.max_length)), trust_remote_code=True, device="cpu")
        loss_fn = CachedMultipleNegativesRankingLoss(model, scale=20.0, mini_batch_size=args.mini_batch)
        setups[k] = (model, loss_fn, torch.optim.AdamW(model.parameters(), lr=1e-4))
    times: dict[int, list[float]] = {k: [] for k in args.ks}
    for repeat, batch in enumerate(batches):
        for k in rotation(args.ks, repeat):
            seconds = train_step(*setups[k], batch)
            if repeat > 0:  # the first batch warms up allocators and caches
                times[k].append(seconds)
            logger.info("repeat %d K=%d %.2f s", repeat, k, seconds)
    base_model = setups[args.ks[0]][0]
    masks = [base_model.tokenize([r[i] for r in rows])["attention_mask"] for i in range(3)]
    mean_length = float(torch.cat([m.sum(dim=1) for m in masks]).float().mean())
    base = statistics.median(times[args.ks[0]])
    result = {"mean_length_K0": mean_length, "batch": args.batch, "mini_batch": args.mini_batch,
              "max_length": args.max_length, "repeats": args.repeats, "threads": torch.get_num_threads(),
              "models": {}}
    for k in args.ks:
        median = statistics.median(times[k])
        paired = [t / b for t, b in zip(times[k], times[args.ks[0]], strict=True)]  # same batch, adjacent in time
        result["models"][k] = {"median_s": median, "ratio_of_medians": median / base,
                               "median_paired_ratio": statistics.median(paired), "paired_ratios": paired,
                               "goal": 1 + 1.5 * k / mean_length, "times": times[k]}
    return result


def memory_child(args: argparse.Namespace) -> dict:
    """One configuration in this fresh process: peak RSS added by one training step."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import (
        CachedMultipleNegativesRankingLoss,
        MultipleNegativesRankingLoss,
    )

    model = SentenceTransformer(str(build_model(Path(args.out), args.ks[0], args.max_length)),
                                trust_remote_code=True, device="cpu")
    rows = triplets(args.train, args.batch)
    if args.mini_batch == 0:
        loss_fn = MultipleNegativesRankingLoss(model, scale=20.0)
    else:
        loss_fn = CachedMultipleNegativesRankingLoss(model, scale=20.0, mini_batch_size=args.mini_batch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS (Linux >= 4.0)
    before = status_mib("VmRSS")
    wall = train_step(model, loss_fn, optimizer, rows)
    peak = status_mib("VmHWM")
    return {"loss": "plain" if args.mini_batch == 0 else f"cached mbs={args.mini_batch}", "batch": args.batch,
            "rss_before_mib": before, "peak_mib": peak, "step_peak_added_mib": peak - before, "step_s": wall}


def bench_memory(args: argparse.Namespace) -> list[dict]:
    build_model(Path(args.out), args.ks[0], args.max_length)  # once, outside the measured processes
    results = []
    for mini_batch in [0, *args.mini_batches]:
        results.append(in_fresh_process(
            "train-cost", "memory-child", "--mini-batch", str(mini_batch), "--batch", str(args.batch), "--max-length",
            str(args.max_length), "--ks", str(args.ks[0]), "--train", args.train, "--out", args.out, "--threads",
            str(args.threads)))
        logger.info("%s", results[-1])
    return results


def step_table(step: dict) -> Table:
    """Median seconds per step, the median of the paired (same batch) ratios to the first K, and the goal."""
    base = min(step["models"], key=int)
    rows = []
    for k, model in step["models"].items():
        spread = (f"{min(model['paired_ratios']):.2f}–{max(model['paired_ratios']):.2f}" if k != base else None)
        rows.append([f"all-MiniLM-L6-v2 K = {k}", model["median_s"], model["median_paired_ratio"], spread,
                     model["goal"]])
    return Table(columns=["model", "median s/step", f"median of paired ratios (K / K={base}, same batch)",
                          "paired ratios range", "goal 1 + 1.5·K/L"], rows=rows, caption="Step time:",
                 formats={"median s/step": 2, f"median of paired ratios (K / K={base}, same batch)": 3,
                          "goal 1 + 1.5·K/L": 3})


def memory_table(memory: list[dict]) -> Table:
    """Peak memory added by one step: the plain loss, then the cached loss by descending mini-batch size."""
    plain = next(r for r in memory if r["loss"] == "plain")
    cached = sorted((r for r in memory if r["loss"] != "plain"), key=lambda r: -int(r["loss"].split("=")[1]))
    rows = [["MultipleNegativesRankingLoss (plain)", "–", plain["step_peak_added_mib"], 1.0]]
    rows += [["CachedMultipleNegativesRankingLoss", int(r["loss"].split("=")[1]), r["step_peak_added_mib"],
              r["step_peak_added_mib"] / plain["step_peak_added_mib"]] for r in cached]
    return Table(columns=["loss", "mini_batch_size", "peak added by the step (MiB)", "vs plain"], rows=rows,
                 caption="Memory:", formats={"peak added by the step (MiB)": 0, "vs plain": 2})


def write_section(step_json: Path, memory_json: Path, fresh: bool, replaces: str | None = None) -> None:
    step, memory = stored_results(step_json, memory_json)
    tables = ([step_table(step)] if step else []) + ([memory_table(memory)] if memory else [])
    finish_run(SECTION, tables, title=TITLE, order=ORDER, measured=fresh, add_command=fresh, replaces=replaces)


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run, log_level=logging.INFO)
    parser.add_argument("mode", choices=["step", "memory", "memory-child", "record"],
                        help="record: rewrite the section record from --step-json and --memory-json only")
    parser.add_argument("--ks", type=int, nargs="+", default=[0, 4])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--mini-batch", type=int, default=16)
    parser.add_argument("--mini-batches", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    add_threads(parser, default=1)
    parser.add_argument("--train", default=f"data/{TRAIN_COLLECTION}")
    parser.add_argument("--out", default="runs/bench_train_cost")
    parser.add_argument("--json", default=None, help="also write the result here")
    parser.add_argument("--step-json", type=Path, default=Path("runs/bench_train_cost/step9.json"),
                        help="step results the section record is built from (a `step --json` run replaces it)")
    parser.add_argument("--memory-json", type=Path, default=Path("runs/bench_train_cost/memory.json"),
                        help="memory results the section record is built from (a `memory --json` run replaces it)")


def run(args: argparse.Namespace) -> None:
    if args.mode == "record":
        write_section(args.step_json, args.memory_json, fresh=False)
        return
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.mode == "memory-child":
        print_result(memory_child(args))
        return
    result = {"step": bench_step, "memory": bench_memory}[args.mode](args)
    text = json.dumps(result, indent=2)
    sys.stdout.write(text + "\n")
    if args.json:
        Path(args.json).write_text(text + "\n")
        paths = {"step_json": args.step_json, "memory_json": args.memory_json, f"{args.mode}_json": Path(args.json)}
        write_section(**paths, fresh=True, replaces=f"{RUNNER_COMMAND} train-cost {args.mode} ")
