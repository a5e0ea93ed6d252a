"""Write the BENCHMARKS.md records of the evaluation on the local collections and of the token-level analysis.

Both sections come from outputs the CLI already wrote (nothing is computed here):

* ``eval-local``: the collections (counts, use and checksums from ``data/<Name>/manifest.json``, mean document
  length from the corpus) and the nDCG@10 table of the mteb results folder that ``hf-dumpembed eval`` wrote, made
  by the report tool (``hf_dumpembed.evaluation.report``: mean ± std over seeds, change against --baseline);
* ``analysis``: mean final-layer norms per token group and stopword attention from the ``analysis.json`` files
  that ``hf-dumpembed analyze`` wrote.

    python scripts/bench/benchmarks.py eval-local
    python scripts/bench/benchmarks.py render
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from benchmarks import Table, finish_run
from harness import Subparsers, bench_parser

from hf_dumpembed.data.beir import document_text, load_corpus
from hf_dumpembed.data.corpora import COLLECTION_NAMES, HELD_OUT, TRAIN_COLLECTION
from hf_dumpembed.evaluation.report import load_records, summary_table

COLLECTIONS = COLLECTION_NAMES
TASKS = HELD_OUT
BASELINE = f"K=0 fine-tuned ({TRAIN_COLLECTION}, 9 steps)"
RENAMES = {
    "local/minilm-mean-base": "all-MiniLM-L6-v2 as DumpEmbed K=0 (untrained)",
    "local/minilm-mean-dump4": "DumpEmbed K=4 (untrained)",
    "local/K0": BASELINE,
    "local/K4": f"K=4 fine-tuned ({TRAIN_COLLECTION}, 9 steps)",
}
EVAL_SECTION = ("eval-local", 90, "Retrieval quality on the local real-text collections (issue 5)")
ANALYSIS_SECTION = ("analysis", 100, "Token-level analysis ([DUMP] paper Fig. 2; EmbedFilter paper Fig. 1)")


def collections_table(data: Path) -> Table:
    rows = []
    for name in COLLECTIONS:
        manifest = json.loads((data / name / "manifest.json").read_text())
        lengths = [len(document_text(doc)) for doc in load_corpus(data / name).values()]
        rows.append([f"`{name}`", manifest["split"], manifest["counts"]["queries"], manifest["counts"]["documents"],
                     statistics.mean(lengths), manifest["source"]["use"], f"`{manifest['sha256'][:16]}…`"])
    return Table(columns=["collection", "split", "queries", "documents", "mean doc chars", "use",
                          "sha256 (first 16)"], rows=rows, formats={"mean doc chars": 0},
                 caption="Collections (`data/<Name>/manifest.json`):")


def results_table(results: Path, tasks: list[str], baseline: str, renames: dict[str, str]) -> Table:
    from dataclasses import replace

    records = [replace(r, method=renames.get(r.method, r.method)) for r in load_records([results])]
    header, rows = summary_table(records, tasks, baseline)
    digits = {name: 4 for name in (*tasks, "mean")}
    return Table(columns=header, rows=rows, formats={**digits, header[-1]: "+.2%"},
                 caption="nDCG@10 by mteb (`hf-dumpembed report` on the results folder; several seeds: mean ± sample "
                 "std):")


def analysis_table(folders: list[Path]) -> Table:
    rows = []
    width = 0
    for folder in folders:
        for label, model in json.loads((folder / "analysis.json").read_text())["models"].items():
            dumps = [f"dump{i}" for i in range(1, model["num_dump_tokens"] + 1)]
            width = max(width, len(dumps))
            norms, attention = model["norms"], model["attention_from_stopwords"]
            rows.append([f"{label}, {model['pooling']} pooling", norms["cls"],
                         [norms[d] for d in dumps] or "–", norms["stopwords"], norms["other"], attention["cls"],
                         [attention[d] for d in dumps] or "–"])
    dump_group = f"D1..D{width}"
    return Table(columns=["model", "norm [CLS]", f"norm {dump_group}", "norm stopwords", "norm other",
                          "attn stopwords→[CLS]", f"attn stopwords→{dump_group}"], rows=rows,
                 formats={"norm [CLS]": 2, f"norm {dump_group}": 2, "norm stopwords": 2, "norm other": 2,
                          "attn stopwords→[CLS]": 0, f"attn stopwords→{dump_group}": 0})


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    parser.add_argument("--data", type=Path, default=Path("data"), help="the built collections (default: data)")
    parser.add_argument("--results", type=Path, default=Path("runs/eval/results"),
                        help="the mteb results folder `hf-dumpembed eval` wrote (default: runs/eval/results)")
    parser.add_argument("--analysis", type=Path, nargs="+",
                        default=[Path("runs/eval/analysis-trained"), Path("runs/eval/analysis-minilm")],
                        help="`hf-dumpembed analyze` output folders, in table order")


def run(args: argparse.Namespace) -> None:
    section, order, title = EVAL_SECTION
    finish_run(section, [collections_table(args.data), results_table(args.results, list(TASKS), BASELINE, RENAMES)],
               title=title, order=order, measured=False, add_command=True)
    section, order, title = ANALYSIS_SECTION
    finish_run(section, [analysis_table(args.analysis)], title=title, order=order, measured=False)
