"""Encode throughput of DumpEmbed folders next to vanilla sentence-transformers, on real text, side by side.

Models (all from the embedded all-MiniLM-L6-v2): the original as sentence-transformers ships it (mean pooling),
DumpEmbed K=0 and K=4 through SentenceTransformer(trust_remote_code=True), and the K=4 stock export. Each
repeat encodes the same texts with every model in a rotated order; we report the median time and its ratio to
the vanilla model measured in the same run. Texts: first paragraphs of CPython stdlib docstrings (real
human-written English, present on every machine).

    python scripts/bench/benchmarks.py encode --texts 1024 --repeats 5 --output runs/bench_encode.json

It writes its BENCHMARKS.md section record (scripts/bench/results/encode.json) when it finishes;
--record-only rewrites that record's table from an existing --output file without measuring anything.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from benchmarks import Table, add_output_arguments, finish_run, run_or_rerecord, say
from harness import Subparsers, add_threads, bench_parser, interleaved, load_recorded, medians, seconds
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


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    parser.add_argument("--texts", type=int, default=1024, help="number of texts (default: 1024)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per model (default: 5)")
    parser.add_argument("--batch-size", type=int, default=32)
    add_threads(parser)
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> None:
    run_or_rerecord(args, measure, record)


def record(result: dict, fresh: bool) -> None:
    finish_run(SECTION, record_tables(result), title=TITLE, order=ORDER, measured=fresh, result=result, show=True,
               summary=f"{result['texts']} stdlib docstrings, mean {result['mean_tokens_k0']:.1f} tokens with K=0 "
                       f"specials; {result['repeats']} repeats, batch {result['batch_size']}, {result['threads']} "
                       "threads")
    say(f"Expected K=4 overhead from sequence length alone: ×{result['expected_ratio_k4']:.3f}")


def models(work: Path) -> dict[str, SentenceTransformer]:
    """The vanilla model and the DumpEmbed folders built from it under ``work``, vanilla first."""
    encoder = default_encoder_path()
    k0 = build(encoder, work / "k0", BuildOptions(num_dump_tokens=0))
    k4 = build(encoder, work / "k4", BuildOptions(num_dump_tokens=4))
    stock = export_stock_st(k4, work / "k4-stock")
    return {
        "all-MiniLM-L6-v2 (vanilla ST)": SentenceTransformer(str(encoder)),
        "DumpEmbed K=0": SentenceTransformer(str(k0), trust_remote_code=True),
        "DumpEmbed K=4": SentenceTransformer(str(k4), trust_remote_code=True),
        "DumpEmbed K=4 stock export": SentenceTransformer(str(stock)),
    }


def measure(args: argparse.Namespace) -> dict:
    """Every model encodes the same texts once per repeat, interleaved; medians and the ratio to vanilla."""
    texts = stdlib_docstrings(args.texts)
    loaded = models(Path(tempfile.mkdtemp(prefix="bench-encode-")))
    lengths = [len(ids) for ids in loaded["DumpEmbed K=0"].tokenizer(texts, truncation=True,
                                                                       max_length=256)["input_ids"]]
    mean_length = statistics.mean(lengths)
    for model in loaded.values():  # warm-up
        model.encode(texts[: args.batch_size], batch_size=args.batch_size)
    result = {"threads": args.threads, "texts": len(texts), "repeats": args.repeats,
              "batch_size": args.batch_size, "mean_tokens_k0": mean_length, "expected_ratio_k4": 1 + 4 / mean_length}
    with load_recorded(result):
        times = interleaved({name: lambda model=model: seconds(lambda: model.encode(texts, batch_size=args.batch_size))
                             for name, model in loaded.items()}, args.repeats)
    median = medians(times)
    baseline = next(iter(median.values()))
    result["rows"] = [{"model": name, "median_s": m, "texts_per_s": len(texts) / m, "ratio_vs_vanilla": m / baseline}
                      for name, m in median.items()]
    return result
