"""Prefix caching at inference: encode time of SmolLM2 K = 4 with its cached prefix vs K = 0, and PromptEOL with and
without the cache, on short, medium and long texts, side by side.

Folders (built from the embedded SmolLM2-135M-Instruct, whose tokenizer adds no BOS): K = 0 (run uncached: it
has no constant first token, though a batch whose texts all start alike would cache those), K = 4 (BOS-less
[DUMP1..4] cached; also run with ``prefix_cache`` off), and K = 0 with the PromptEOL prompt (its opening
``Summarize the sentence: "`` cached; also run with the cache off). Every runtime is a SentenceTransformer
(``trust_remote_code=True``, ``encode``); the switch is ``config.prefix_cache`` of the loaded model. Texts: CPython
stdlib docstrings joined and cut to about 16, 64 and 256 tokens (0.75× to 1.25× of that, so batches are padded as
real ones are; the K = 0 tokenization, before specials and prompt), the same batches for every runtime. Each repeat
runs every runtime once per length in a rotated order; the tables give medians over repeats, the time ratio to
K = 0 (uncached) in the same run, and cached / uncached ratios of the same folder. The 1-minute load average is
recorded before and after.

    python scripts/bench/benchmarks.py prefix-cache --texts 128 --repeats 5 --output runs/bench_prefix_cache.json

It writes its BENCHMARKS.md section record (scripts/bench/results/prefix-cache.json) when it finishes (not with
--no-record, for smoke runs); --record-only rewrites that record's tables from an existing --output file.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import torch
from benchmarks import Table, add_output_arguments, finish_run, run_or_rerecord
from harness import Subparsers, add_threads, bench_parser, load_recorded, medians, rotation, seconds
from sentence_transformers import SentenceTransformer

from hf_dumpembed.data.assets import default_decoder_path
from hf_dumpembed.data.sample_texts import stdlib_docstrings
from hf_dumpembed.model.builder import BuildOptions, build

SECTION, ORDER, TITLE = "prefix-cache", 12, "Prefix caching: SmolLM2 K = 4 cached vs K = 0, PromptEOL cached vs not"
LENGTHS = {"short": 16, "medium": 64, "long": 256}
# runtime -> (folder, prefix_cache)
RUNTIMES = {
    "K=0 (no cache)": ("k0", False),
    "K=4, prefix cache": ("k4", True),
    "K=4, no cache": ("k4", False),
    "PromptEOL K=0, prefix cache": ("prompteol", True),
    "PromptEOL K=0, no cache": ("prompteol", False),
}
BASELINE = "K=0 (no cache)"


SPREAD = (0.75, 0.875, 1.0, 1.125, 1.25)  # text lengths around the target, so that batches hold padding as real ones do


def texts_of_length(tokenizer, tokens: int, count: int) -> list[str]:
    """``count`` texts of about ``tokens`` tokens (0.75× to 1.25×, cycling through `SPREAD`): stdlib docstrings joined
    into one token stream, cut into consecutive slices and decoded (re-tokenising a slice may give a token more or
    less)."""
    sizes = [max(1, round(tokens * SPREAD[i % len(SPREAD)])) for i in range(count)]
    stream: list[int] = []
    for paragraph in stdlib_docstrings(20 * count * max(1, tokens // 16)):
        stream += tokenizer(" " + paragraph, add_special_tokens=False)["input_ids"]
        if len(stream) >= sum(sizes):
            break
    if len(stream) < sum(sizes):
        raise SystemExit(f"the stdlib docstrings hold {len(stream)} tokens, fewer than the {sum(sizes)} needed.")
    starts = [sum(sizes[:i]) for i in range(count)]
    return [tokenizer.decode(stream[start : start + size]).strip() for start, size in zip(starts, sizes, strict=True)]


def inner_model(st: SentenceTransformer) -> torch.nn.Module:
    return next(m for m in st.modules() if type(m).__name__ == "DumpEmbedModel")


def encode(st: SentenceTransformer, cache: bool, texts: list[str], batch_size: int) -> float:
    """Seconds to encode ``texts`` with the prefix cache on or off."""
    inner_model(st).config.prefix_cache = cache
    return seconds(lambda: st.encode(texts, batch_size=batch_size))


def record_tables(result: dict) -> list[Table]:
    """Per length and runtime: median seconds, texts/s, time ratio vs K = 0 (uncached); cached / uncached ratios."""
    rows = [[r["length"], r["mean_tokens"], r["runtime"], r["median_s"], r["texts_per_s"], r["ratio_vs_k0"],
             r["prefix_tokens"]] for r in result["rows"]]
    main = Table(columns=["texts", "mean tokens (K = 0)", "runtime", "median s", "texts/s", "time ratio vs K=0",
                          "cached prefix tokens"], rows=rows,
                 formats={"mean tokens (K = 0)": 1, "median s": 3, "texts/s": 1, "time ratio vs K=0": 3})
    prompt = Table(columns=["texts", "PromptEOL cached / uncached (time)", "K=4 cached / K=4 uncached (time)"],
                   rows=[[r["length"], r["prompteol_cached_vs_uncached"], r["k4_cached_vs_uncached"]]
                         for r in result["ratios"]],
                   formats={"PromptEOL cached / uncached (time)": 3, "K=4 cached / K=4 uncached (time)": 3})
    return [main, prompt]


def measure(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-prefix-cache-") as work:  # three SmolLM2 folders, ~1.6 GB
        return measure_in(args, Path(work))


def measure_in(args: argparse.Namespace, work: Path) -> dict:
    decoder = default_decoder_path()
    folders = {
        "k0": build(decoder, work / "k0", BuildOptions(num_dump_tokens=0)),
        "k4": build(decoder, work / "k4", BuildOptions(num_dump_tokens=4)),
        "prompteol": build(decoder, work / "prompteol", BuildOptions(num_dump_tokens=0, prompt="prompteol")),
    }
    models = {name: SentenceTransformer(str(path), trust_remote_code=True) for name, path in folders.items()}
    tokenizer = models["k0"].tokenizer
    sets = {label: texts_of_length(tokenizer, tokens, args.texts) for label, tokens in LENGTHS.items()
            if label in args.lengths}
    mean_tokens = {label: statistics.mean(len(ids) for ids in tokenizer(texts)["input_ids"])
                   for label, texts in sets.items()}
    for folder, cache in RUNTIMES.values():  # warm-up: fills each cache and runs its one-time check
        encode(models[folder], cache, next(iter(sets.values()))[: args.batch_size], args.batch_size)
    result = {"model": str(decoder), "threads": args.threads, "texts": args.texts,
              "repeats": args.repeats, "batch_size": args.batch_size}
    times = {(label, name): [] for label in sets for name in RUNTIMES}
    with load_recorded(result):
        for repeat in range(args.repeats):
            for label, texts in sets.items():
                for name in rotation(list(RUNTIMES), repeat):
                    folder, cache = RUNTIMES[name]
                    times[(label, name)].append(encode(models[folder], cache, texts, args.batch_size))
    prefix_tokens = {folder: max((len(key) for key in inner_model(st)._prefix_cache), default=0)
                     for folder, st in models.items()}
    median = medians(times)
    rows, ratios = [], []
    for label in sets:
        base = median[(label, BASELINE)]
        for name, (folder, cache) in RUNTIMES.items():
            wall = median[(label, name)]
            rows.append({"length": label, "mean_tokens": mean_tokens[label], "runtime": name, "median_s": wall,
                         "texts_per_s": len(sets[label]) / wall, "ratio_vs_k0": wall / base,
                         "prefix_tokens": prefix_tokens[folder] if cache else 0, "times_s": times[(label, name)]})
        ratios.append({"length": label,
                       "prompteol_cached_vs_uncached": median[(label, "PromptEOL K=0, prefix cache")]
                       / median[(label, "PromptEOL K=0, no cache")],
                       "k4_cached_vs_uncached": median[(label, "K=4, prefix cache")]
                       / median[(label, "K=4, no cache")]})
    return {**result, "rows": rows, "ratios": ratios}


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    parser.add_argument("--texts", type=int, default=128, help="texts per length (default: 128)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per runtime and length (default: 5)")
    parser.add_argument("--batch-size", type=int, default=32)
    add_threads(parser)
    parser.add_argument("--lengths", nargs="+", choices=list(LENGTHS), default=list(LENGTHS),
                        help="text lengths to run (default: all)")
    parser.add_argument("--no-record", action="store_true", help="do not write the section record (smoke runs)")
    add_output_arguments(parser)


def run(args: argparse.Namespace) -> None:
    run_or_rerecord(args, measure, lambda result, fresh: finish_run(
        SECTION, record_tables(result), title=TITLE, order=ORDER, measured=fresh, result=result,
        record=not args.no_record, show=True, summary=f"{result['texts']} texts per length, {result['repeats']} "
        f"repeats, batch {result['batch_size']}, {result['threads']} threads"))
