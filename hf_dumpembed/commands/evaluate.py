"""``hf-dumpembed eval | submission | analyze | report``: evaluation, leaderboard kit, token analysis, tables."""

from __future__ import annotations

import argparse

from ..console import say

EVAL_DESCRIPTION = """\
Evaluate MODEL with mteb through its stock sentence-transformers wrapper (trust_remote_code=True), print
nDCG@10 / Recall@10 / MRR@10 per task, and write mteb's results layout under
RESULTS_DIR/results/<org>__<name>/<revision>/<Task>.json (+ model_meta.json with the model's full ModelMeta).

--task takes (repeatable):
  PATH                      any BEIR-style folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)
  ManPages | PyFAQ | StdlibCode | WikiLong
                            a collection built by `python scripts/build_datasets.py` under --data-dir
  NQHardNegatives, HotpotQAHardNegatives, QuoraRetrievalHardNegatives, DBPediaHardNegatives,
  MSMARCOHardNegatives, WikipediaRetrievalMultilingual (English subset), LEMB* ...
                            official mteb tasks, unchanged; they need the Hub dataset (or its cache):
                            offline and not cached is a clear error
  dump-standard | dump-longembed | dump-paper | local
                            groups: the [DUMP] paper's standard set, its LongEmbed set, both, the local four

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
    )
    say(run.table())


def _submission(args: argparse.Namespace) -> None:
    from ..submission import SubmissionOptions, write_submission

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


def register(commands: argparse._SubParsersAction) -> None:
    evaluate = commands.add_parser(
        "eval", help="evaluate a model with mteb (local BEIR folders or official tasks)",
        description=EVAL_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
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
    evaluate.set_defaults(func=_eval)

    submission = commands.add_parser(
        "submission", help="write the MTEB leaderboard submission kit (ModelMeta + results folder)",
        description="From MODEL and its mteb results under RESULTS, write OUT/model_meta.py (a ModelMeta for the "
        "embeddings-benchmark/mteb PR: loader = stock SentenceTransformerEncoderWrapper with trust_remote_code, "
        "training_datasets from config.training_info, adapted_from = config.base_model), OUT/model_meta.json and "
        "OUT/results/<org>__<name>/<revision>/ (for the embeddings-benchmark/results PR). Name and revision must "
        "be those the results were filed under (same defaults as `eval`).",
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
