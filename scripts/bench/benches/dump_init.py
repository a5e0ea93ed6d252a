"""Untrained [DUMP] models: what each initialisation x pooling costs the source model before any training.

Builds all-MiniLM-L6-v2 with K = 0 and with K = 4 under every [DUMP] row init (mean / cls / normal with three
noise seeds each; the exact copies sep and token:<the most-attended ordinary token>, which carry no noise), encodes
the held-out collections (ManPages, PyFAQ, StdlibCode; nothing here is trained) once per model and pools the same
token states three ways: [CLS], the mean over every token (sentence-transformers' mean) and the mean without the
[DUMP] slots. Scores are nDCG@10 from mteb's metric code on the stored vectors. The most-attended token is measured
on the training collection (StdlibCodeTrain queries), never on the evaluation text.

    python scripts/bench/benchmarks.py dump-init --data-dir data --out runs/bench_dump_init

The table (and the section record scripts/bench/results/dump-init.json) gives, per init x pooling, the held-out
mean nDCG@10 (mean ± std over init seeds) and its relative change against K = 0 with the same pooling.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from benchmarks import Table, finish_run, relative_change, render_table, spread
from harness import Subparsers, add_threads, bench_parser
from tqdm.auto import tqdm

from hf_dumpembed.data.corpora import EVAL_COLLECTIONS, TRAIN_COLLECTION
from hf_dumpembed.model.prompting import PROMPT_MODES

logger = logging.getLogger("bench_dump_init")
TASKS = EVAL_COLLECTIONS
ENCODER_POOLINGS = ("cls", "mean", "mean_no_dump")
SEEDED_INITS = ("mean", "cls", "normal")
POOLINGS = ENCODER_POOLINGS  # the decoder study (--backbone decoder) pools the last token only


def variants(sink_token: str | None, seeds: list[int], decoder: bool, match_steps: int = 0,
             dump_on_top: bool = False) -> list[tuple[str, int, str, str | None, int]]:
    """(name, K, init, init_token, seed) of every model of the study (decoders: no [CLS] to copy). With
    ``match_steps``: K0 and the [SEP] copy matched to K=0 for that many steps, one model per seed (``dump_on_top``:
    names ending in -ontop, read at K more tokens; and K0-short, K = 0 read 4 tokens shorter: what the text of a
    K = 4 model got when its prefix took 4 of the positions)."""
    if match_steps:
        suffix = "-ontop" if dump_on_top else ""
        short = [("K0-short", 0, "sep", None, 0)] if dump_on_top else []
        return [("K0", 0, "sep", None, 0), *short] + [(f"K4-sep+match{match_steps}-seed{seed}{suffix}", 4,
                                                       f"sep+match{match_steps}", None, seed) for seed in seeds]
    inits = [i for i in SEEDED_INITS if not (decoder and i == "cls")]
    rows = [("K0", 0, "sep", None, 0), ("K4-sep", 4, "sep", None, 0)]
    # seed-major, so that one seed of every init is in before the repeats
    rows += [(f"K4-{init}-seed{seed}", 4, init, None, seed) for seed in seeds for init in inits]
    if sink_token:
        rows.insert(2 + len(inits), (f"K4-token:{sink_token}", 4, "token", sink_token, 0))
    return rows


def pooled_vectors(model, tokenizer, texts: list[str], max_length: int, batch_size: int) -> dict[str, np.ndarray]:
    """Unit-length pooled vectors of ``texts`` for every pooling mode, from one backbone pass (length-sorted)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    hidden = model.config.hidden_size
    modes = POOLINGS if model.config.pooling != "last" else ("last",)
    out = {mode: np.zeros((len(texts), hidden), dtype=np.float32) for mode in modes}
    for start in range(0, len(texts), batch_size):
        rows = order[start : start + batch_size]
        batch = tokenizer([texts[i] for i in rows], padding=True, truncation=True, max_length=max_length,
                          return_tensors="pt")
        with torch.inference_mode():
            if modes == ("last",):  # the model's own forward: prompt composition (if any) and last-token pooling
                out["last"][rows] = F.normalize(model(**batch).pooled_embedding, dim=-1).numpy()
                continue
            states = model.backbone(**batch).last_hidden_state
        for mode in modes:
            out[mode][rows] = F.normalize(model.pool(states, batch["attention_mask"], mode), dim=-1).numpy()
    return out


def score_model(name: str, k: int, init: str, token: str | None, seed: int, args: argparse.Namespace,
                collections: dict) -> dict[str, dict[str, float]]:
    """nDCG@10 per pooling and task of one untrained model."""
    from hf_dumpembed.data.assets import default_decoder_path, default_encoder_path
    from hf_dumpembed.evaluation.metrics import retrieval_metrics
    from hf_dumpembed.model.builder import BuildOptions, build_dump_model

    decoder = args.backbone == "decoder"
    max_length = args.max_length + (k if name.endswith("-ontop") else 0)  # the same text as K = 0 reads
    max_length -= 4 if name == "K0-short" else 0
    init, _, match = init.partition("+match")
    options = BuildOptions(num_dump_tokens=k, pooling="last" if decoder else "mean", init=init, init_token=token,
                           seed=seed, prompt=args.prompt, match_steps=int(match or 0))
    model, tokenizer = build_dump_model(default_decoder_path() if decoder else default_encoder_path(), options)
    model.eval()
    if decoder:
        tokenizer.padding_side = "left"
    scores: dict[str, dict[str, float]] = {mode: {} for mode in (("last",) if decoder else POOLINGS)}
    for task, data in collections.items():
        query_ids, doc_ids = list(data.queries), list(data.corpus)
        queries = pooled_vectors(model, tokenizer, [data.queries[i] for i in query_ids], max_length, args.batch)
        docs = pooled_vectors(model, tokenizer, [data.document_text(i) for i in doc_ids], max_length, args.batch)
        for mode in scores:
            metrics = retrieval_metrics(queries[mode], docs[mode], query_ids, doc_ids, data.qrels)
            scores[mode][task] = float(metrics["ndcg_at_10"])
    logger.info("%s: %s", name, {m: round(statistics.mean(s.values()), 4) for m, s in scores.items()})
    return scores


def sink_token(args: argparse.Namespace, out: Path) -> str:
    """The ordinary (non-special) token the source's heads attend to most, measured on training queries."""
    cached = out / "sinks.json"
    if not cached.exists():
        from hf_dumpembed.analysis.token_stats import attention_sinks
        from hf_dumpembed.data.assets import default_encoder_path
        from hf_dumpembed.data.beir import load_beir
        from hf_dumpembed.model.builder import BuildOptions, build

        folder = build(default_encoder_path(), out / "K0-model", BuildOptions(num_dump_tokens=0), overwrite=True)
        train = load_beir(Path(args.data_dir) / TRAIN_COLLECTION, split="train")
        texts = [train.queries[i] for i in sorted(train.queries)[: args.sink_texts]]
        cached.write_text(json.dumps(attention_sinks(folder, texts, max_length=args.max_length, top=20), indent=1))
    sinks = json.loads(cached.read_text())
    logger.info("most-attended tokens: %s", [(s["token"], round(s["attention"], 4)) for s in sinks[:8]])
    return _cached_sink(out)


def _cached_sink(out: Path) -> str | None:
    """The most-attended ordinary token recorded in ``out/sinks.json`` (None before it is measured)."""
    cached = out / "sinks.json"
    if not cached.exists():
        return None
    return next((s["token"] for s in json.loads(cached.read_text()) if not s["special"]), None)


def table(results: dict[str, dict], names: list[tuple]) -> Table:
    """Per init x pooling: held-out mean nDCG@10 (mean ± std over seeds), per-task means, change vs K=0."""
    rows = []
    inits: dict[str, list[str]] = {}
    for name, k, init, token, _ in names:
        shown = init if init != "token" else f"token {token!r}"
        label = "K=0 (the source itself)" if k == 0 else f"K=4 init {shown}"
        label = "K=0 read 4 tokens shorter" if name == "K0-short" else label
        label += f", +{k} positions (text as K=0)" if name.endswith("-ontop") else ""
        inits.setdefault(label, []).append(name)
    for mode in results["K0"]:
        base = statistics.mean(results["K0"][mode].values())
        for label, members in inits.items():
            if label.startswith("K=0") and mode == "mean_no_dump":
                continue  # the same as mean when K = 0
            done = [m for m in members if m in results]
            if not done:
                continue
            means = [statistics.mean(results[m][mode].values()) for m in done]
            per_task = [statistics.mean(results[m][mode][t] for m in done) for t in TASKS]
            change = [relative_change(mean, base) for mean in means]
            rows.append([mode, label, len(done), *per_task, spread(means), statistics.mean(change)])
    return Table(columns=["pooling", "model", "seeds", *TASKS, "mean", "change vs K=0 (same pooling)"], rows=rows,
                 formats={**{t: 4 for t in TASKS}, "mean": 4, "change vs K=0 (same pooling)": "+.2%"})


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run, log_level=logging.INFO)
    parser.add_argument("--data-dir", default="data", help="folder of the built collections")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="noise seeds of mean/cls/normal")
    parser.add_argument("--max-length", type=int, default=128, help="tokens per text (the training recipe's)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--sink-texts", type=int, default=300, help="training queries the sink is measured on")
    add_threads(parser)
    parser.add_argument("--backbone", choices=["encoder", "decoder"], default="encoder",
                        help="the embedded all-MiniLM-L6-v2, or SmolLM2-135M-Instruct (last-token pooling, on "
                        "samples of the collections: --max-queries / --max-documents)")
    parser.add_argument("--prompt", choices=PROMPT_MODES, default=None, help="decoders: zero-shot prompt")
    parser.add_argument("--max-queries", type=int, default=100)
    parser.add_argument("--max-documents", type=int, default=300)
    parser.add_argument("--match-steps", type=int, default=0,
                        help="score only K0 and the sep init matched to K=0 for this many steps (`build "
                        "--match-steps`, default text: the stdlib train split), one model per --seeds")
    parser.add_argument("--dump-on-top", action="store_true",
                        help="with --match-steps: the K = 4 models read --max-length + 4 tokens, i.e. the same "
                        "text as K = 0 (the build default since 2026-12-01); otherwise the [DUMP] tokens take 4 of "
                        "the --max-length positions")
    parser.add_argument("--out", default="runs/bench_dump_init")
    parser.add_argument("--no-record", action="store_true", help="do not write the BENCHMARKS.md section record")
    parser.add_argument("--table-only", action="store_true",
                        help="tabulate (and record) the models already scored under --out; compute nothing")


def run(args: argparse.Namespace) -> None:
    if args.dump_on_top and not args.match_steps:
        raise SystemExit("dump-init: --dump-on-top needs --match-steps")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from hf_dumpembed.data.beir import load_beir

    collections = {task: load_beir(Path(args.data_dir) / task) for task in TASKS}
    decoder = args.backbone == "decoder"
    if decoder:
        from hf_dumpembed.evaluation.cached import subsample

        collections = {task: subsample(data, args.max_queries, args.max_documents, seed=0)
                       for task, data in collections.items()}
    if decoder or args.match_steps:
        sink = None
    else:
        sink = sink_token(args, out) if not args.table_only else _cached_sink(out)
    names = variants(sink, args.seeds, decoder, args.match_steps, args.dump_on_top)
    results_file = out / "results.json"
    results = json.loads(results_file.read_text()) if results_file.exists() else {}
    for name, k, init, token, seed in tqdm(names, desc="models", unit="model", disable=args.table_only):
        if name not in results and not args.table_only:
            results[name] = score_model(name, k, init, token, seed, args, collections)
            results_file.write_text(json.dumps(results, indent=1) + "\n")
    result = table(results, names)
    sys.stdout.write(render_table(result) + "\n")
    (out / "table.md").write_text(render_table(result) + "\n")
    if not args.no_record:
        section = "dump-init" if not decoder else "dump-init-decoder"
        section += "-match" if args.match_steps else ""
        section += "-ontop" if args.dump_on_top else ""
        order = 48 if args.dump_on_top else 47 if args.match_steps else (46 if decoder else 45)
        finish_run(section, [result], order=order, add_command=True,
                   title="Untrained [DUMP] models: initialisation x pooling (K = 4 vs K = 0)"
                   + (" — SmolLM2-135M-Instruct" if decoder else "")
                   + (" — [DUMP] rows matched to K = 0" if args.match_steps else "")
                   + (", [DUMP] tokens on top of the text" if args.dump_on_top else ""))
