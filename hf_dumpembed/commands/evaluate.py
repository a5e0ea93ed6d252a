"""``hf-dumpembed eval | submission | report``: evaluation, leaderboard kit, result tables."""

from __future__ import annotations

import argparse

from .._utils.console import say
from ..data.corpora import HELD_OUT
from . import add_command, add_trust_flag

EVAL_DESCRIPTION = f"""\
Evaluate MODEL with mteb through its stock sentence-transformers wrapper (trust_remote_code=True), print
nDCG@10 / Recall@10 / MRR@10 per task, and write mteb's results layout under
RESULTS_DIR/results/<org>__<name>/<revision>/<Task>.json (+ model_meta.json with the model's full ModelMeta).

--task takes (repeatable):
  PATH                      any BEIR-style folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)
  {" | ".join(HELD_OUT)}
                            a collection built by `python scripts/build_datasets.py` under --data-dir
  NQHardNegatives, HotpotQAHardNegatives, QuoraRetrievalHardNegatives, DBPediaHardNegatives,
  MSMARCOHardNegatives, WikipediaRetrievalMultilingual (English subset), LEMB* ...
                            official mteb tasks, unchanged; they need the Hub dataset (or its cache):
                            offline and not cached is a clear error
  dump-standard | dump-longembed | dump-paper | local
                            groups: the [DUMP] paper's standard set, its LongEmbed set, both, the local collections

The model is filed under --model-name (default: the Hub id of a Hub-cache snapshot, else local/<folder>)
and --revision (default: the snapshot commit, else a sha1 of config.json + weights, so results of different
weights never mix). Existing results are kept unless --overwrite.
"""


def _eval(args: argparse.Namespace) -> None:
    import torch

    from ..evaluation import run_eval

    if args.threads:
        torch.set_num_threads(args.threads)
    run = run_eval(
        args.model,
        args.task,
        results_dir=args.results_dir,
        data_dir=args.data_dir,
        model_name=args.model_name,
        revision=args.revision,
        batch_size=args.batch_size,
        overwrite=args.overwrite,
        trust_remote_code=args.trust_remote_code,
    )
    say(run.table())


def _submission(args: argparse.Namespace) -> None:
    from ..evaluation.submission import SubmissionOptions, write_submission

    options = SubmissionOptions(
        name=args.model_name,
        revision=args.revision,
        release_date=args.release_date,
        license=args.license,
        languages=tuple(args.language) if args.language else None,
        reference=args.reference,
        public_training_code=args.training_code,
        public_training_data=args.training_data,
        contacts=tuple(args.contact) if args.contact else None,
    )
    out = write_submission(args.model, args.results, args.out, options, overwrite=args.overwrite)
    say(f"Wrote {out}: model_meta.py (for the embeddings-benchmark/mteb PR), model_meta.json, results/ (for the "
        "embeddings-benchmark/results PR)")
    if (out / "WARNING.txt").exists():
        say((out / "WARNING.txt").read_text().strip())


REPORT_DESCRIPTION = """\
Turn results into the markdown tables of BENCHMARKS.md: one row per method (and output dimension k), one
column per task plus the mean over tasks, each cell mean ± std over seeds (the sample std of the per-seed
values; one value when there is one seed). INPUT is any mix of
  - an mteb results folder written by `hf-dumpembed eval` (method = model name; a trailing -seedN in the name
    is the seed; k = the model's embed_dim);
  - a JSON file of rows: a list, {"rows": [...]}, or an object whose values hold "rows"; a row has "method",
    optional "k" and "seed", and either "task" + the metric (or "value") or one numeric column per task.
"""


def _report(args: argparse.Namespace) -> None:
    from ..evaluation.report import check_report_target, load_records, markdown_table, write_report

    if not args.inputs:
        raise ValueError("give INPUT (mteb results folders and/or JSON row files).")
    if args.out:
        check_report_target(args.out, args.inputs, args.overwrite)  # before reading anything
    renames = dict(item.split("=", 1) for item in args.rename or [] if "=" in item)
    bad = [item for item in args.rename or [] if "=" not in item]
    if bad:
        raise ValueError(f"--rename takes OLD=NEW; got {bad[0]!r}.")
    records = load_records(args.inputs, args.metric)
    if renames:
        from dataclasses import replace

        records = [replace(r, method=renames.get(r.method, r.method)) for r in records]
    baseline = renames.get(args.baseline, args.baseline) if args.baseline else None
    table = markdown_table(records, tasks=args.tasks, digits=args.digits, baseline=baseline)
    if args.out:
        write_report(table, args.out, args.inputs, args.overwrite)  # a failed write leaves the old file (or none)
        say(f"Wrote {args.out}")
    say(table.rstrip("\n"))


def register(commands: argparse._SubParsersAction) -> None:
    evaluate = add_command(commands, "eval", "evaluate a model with mteb (local BEIR folders or official tasks)",
                           EVAL_DESCRIPTION)
    evaluate.add_argument("model", help="a DumpEmbed model folder")
    evaluate.add_argument("--task", action="append", required=True, metavar="PATH_OR_NAME",
                          help="task to run (repeatable); see above")
    evaluate.add_argument("--results-dir", default="results", help="mteb results folder (default: results)")
    evaluate.add_argument("--data-dir", default="data", help="where the built collections are (default: data)")
    evaluate.add_argument("--model-name", default=None, help="org/name to file results under")
    evaluate.add_argument("--revision", default=None, help="revision to file results under (Hub commit sha)")
    evaluate.add_argument("--batch-size", type=int, default=32, help="encode batch size (default: 32)")
    evaluate.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    evaluate.add_argument("--overwrite", action="store_true", help="re-run tasks that already have results")
    add_trust_flag(evaluate)
    evaluate.set_defaults(func=_eval)

    submission = commands.add_parser(
        "submission", help="write the MTEB leaderboard submission kit (ModelMeta + results folder)",
        description="From MODEL and its mteb results under RESULTS, write OUT/model_meta.py (a ModelMeta for the "
        "embeddings-benchmark/mteb PR: loader = stock SentenceTransformerEncoderWrapper with trust_remote_code, "
        "training_datasets from config.training_info, adapted_from = config.base_model), OUT/model_meta.json and "
        "OUT/results/<org>__<name>/<revision>/ (for the embeddings-benchmark/results PR). Name and revision must "
        "be those the results were filed under (same defaults as `eval`). Only official mteb tasks with all their "
        "evaluation splits are packaged: results of local tasks (BEIR folders, the built collections) are refused.",
    )
    submission.add_argument("model", help="a DumpEmbed model folder")
    submission.add_argument("--results", required=True, help="the results folder `hf-dumpembed eval` wrote")
    submission.add_argument("out", help="output folder")
    submission.add_argument("--model-name", default=None, help="org/name on the Hub")
    submission.add_argument("--revision", default=None, help="the Hub commit sha (40 hex) of the pushed model")
    submission.add_argument("--release-date", default=None, help="YYYY-MM-DD (default: training date, else today)")
    submission.add_argument("--license", default=None, help="licence id (default: README front matter, else the "
                            "embedded backbone's)")
    submission.add_argument("--language", action="append", default=None, help="mteb language code, e.g. eng-Latn "
                            "(repeatable; default: from the card / backbone)")
    submission.add_argument("--reference", default=None, help="model page URL (default: the Hub page)")
    submission.add_argument("--training-code", default=None, help="URL of the public training code")
    submission.add_argument("--training-data", default=None, help="URL of the public training data")
    submission.add_argument("--contact", action="append", default=None, help="GitHub handle (repeatable)")
    submission.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    submission.set_defaults(func=_submission)

    report = add_command(commands, "report", "markdown tables (method x task x k, mean ± std over seeds) from results",
                         REPORT_DESCRIPTION)
    report.add_argument("inputs", nargs="*", metavar="INPUT", help="mteb results folders and/or JSON row files")
    report.add_argument("--metric", default="ndcg_at_10", help="score key (default: ndcg_at_10)")
    report.add_argument("--tasks", nargs="+", default=None, help="columns, in order (default: all, sorted)")
    report.add_argument("--baseline", default=None, help="method whose mean the others are compared with (%%)")
    report.add_argument("--rename", action="append", default=None, metavar="OLD=NEW",
                        help="display name for a method (repeatable)")
    report.add_argument("--digits", type=int, default=4, help="decimals (default: 4)")
    report.add_argument("--out", default=None, help="also write the table to this file, a new one unless --overwrite "
                        "(never inside a model folder or an INPUT)")
    report.add_argument("--overwrite", action="store_true", help="replace --out when it exists")
    report.set_defaults(func=_report)
