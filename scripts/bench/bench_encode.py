"""Encode throughput of DumpEmbed folders next to vanilla sentence-transformers, on real text, side by side.

Models (all from the embedded all-MiniLM-L6-v2): the original as sentence-transformers ships it (mean pooling),
DumpEmbed K=0 and K=4 through SentenceTransformer(trust_remote_code=True), and the K=4 stock export. Each
repeat encodes the same texts with every model in a rotated order; we report the median time and its ratio to
the vanilla model measured in the same run. Texts: first paragraphs of CPython stdlib docstrings (real
human-written English, present on every machine).

    python scripts/bench/bench_encode.py --texts 1024 --repeats 5 --output runs/bench_encode.json

It writes its BENCHMARKS.md section record (scripts/bench/results/encode.json) when it finishes;
--record-only rewrites that record's table from an existing --output file without measuring anything.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from datetime import date
from pathlib import Path

import torch
from benchmarks import Table, add_output_arguments, finish_run, record_only, say
from sentence_transformers import SentenceTransformer

from hf_dumpembed.data.assets import default_encoder_path
from hf_dumpembed.data.sample_texts import stdlib_docstrings
from hf_dumpembed.export.stock import export_stock_st
from hf_dumpembed.model.builder import BuildOptions, build

SECTION, ORDER, TITLE = "encode", 10, "Encode throughput: DumpEmbed vs vanilla sentence-transformers"


def record_tables(result: dict) -> list[Table]:
    """The section's table from the raw results (medians, throughput, ratio to vanilla in the same run)."""
    return [Table(columns=["model", "median s", "texts/s", "time ratio vs vanilla"],
                  rows=[[r["model"], r["median_s"], r["texts_per_s"], r["ratio_vs_vanilla"]] for r in result["rows"]],
                  formats={"median s": 2, "texts/s": 0, "time ratio vs vanilla": 3})]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--texts", type=int, default=1024, help="number of texts (default: 1024)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per model (default: 5)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: 2)")
    add_output_arguments(parser)
    args = parser.parse_args()
    if record_only(args, SECTION, record_tables, TITLE, ORDER):
        return
    torch.set_num_threads(args.threads)

    texts = stdlib_docstrings(args.texts)
    work = Path(tempfile.mkdtemp(prefix="bench-encode-"))
    encoder = default_encoder_path()
    k0 = build(encoder, work / "k0", BuildOptions(num_dump_tokens=0))
    k4 = build(encoder, work / "k4", BuildOptions(num_dump_tokens=4))
    stock = export_stock_st(k4, work / "k4-stock")
    models = {
        "all-MiniLM-L6-v2 (vanilla ST)": SentenceTransformer(str(encoder)),
        "DumpEmbed K=0": SentenceTransformer(str(k0), trust_remote_code=True),
        "DumpEmbed K=4": SentenceTransformer(str(k4), trust_remote_code=True),
        "DumpEmbed K=4 stock export": SentenceTransformer(str(stock)),
    }
    k0_tokenizer = models["DumpEmbed K=0"].tokenizer
    lengths = [len(ids) for ids in k0_tokenizer(texts, truncation=True, max_length=256)["input_ids"]]
    mean_length = statistics.mean(lengths)
    for model in models.values():  # warm-up
        model.encode(texts[: args.batch_size], batch_size=args.batch_size)
    times: dict[str, list[float]] = {name: [] for name in models}
    names = list(models)
    for repeat in range(args.repeats):
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            started = time.perf_counter()
            models[name].encode(texts, batch_size=args.batch_size)
            times[name].append(time.perf_counter() - started)
    baseline = statistics.median(times[names[0]])
    rows = [
        {"model": name, "median_s": statistics.median(t), "texts_per_s": len(texts) / statistics.median(t),
         "ratio_vs_vanilla": statistics.median(t) / baseline}
        for name, t in times.items()
    ]
    result = {
        "date": date.today().isoformat(), "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "threads": args.threads, "texts": len(texts), "repeats": args.repeats, "batch_size": args.batch_size,
        "mean_tokens_k0": mean_length, "expected_ratio_k4": 1 + 4 / mean_length, "rows": rows,
    }
    finish_run(SECTION, record_tables(result), title=TITLE, order=ORDER, output=args.output, result=result,
               summary=f"{len(texts)} stdlib docstrings, mean {mean_length:.1f} tokens with K=0 specials; "
                       f"{args.repeats} repeats, batch {args.batch_size}, {args.threads} threads", show=True)
    say(f"Expected K=4 overhead from sequence length alone: ×{result['expected_ratio_k4']:.3f}")


if __name__ == "__main__":
    main()
