"""`hf-dumpembed quickstart`: the main job, end to end on the embedded models."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..data.corpora import COLLECTIONS, EVAL_COLLECTIONS, TRAIN_COLLECTION
from . import add_command

_HELD_OUT = ", ".join(EVAL_COLLECTIONS[:-1]) + " and " + EVAL_COLLECTIONS[-1]
_FROM_DEBIAN = "/".join(c.name for c in COLLECTIONS if c.name in EVAL_COLLECTIONS and not c.offline)
DESCRIPTION = f"""\
The whole workflow on the embedded models, on this machine, with no Hugging Face Hub access:

  1. builds the real-text collections ({TRAIN_COLLECTION} for training; {_HELD_OUT} held out;
     {_FROM_DEBIAN} come from Debian packages and are skipped, with the reason, where apt-get cannot fetch them);
  2. builds a K=0 baseline and a K=4 [DUMP] model from all-MiniLM-L6-v2 and fine-tunes both with one recipe
     (InfoNCE + GradCache, hard negatives mined once, same data order);
  3. fits SpecTemp (auto mode, fit's default, and the paper's rule) and PCA at the same k on the training corpus;
  4. evaluates base / [DUMP] / [DUMP]+SpecTemp auto / [DUMP]+SpecTemp paper rule / [DUMP]+PCA on the held-out
     sets (nDCG@10 with mteb's scoring, results filed in mteb's layout) and measures encode speed side by side;
  5. prints one table, writes plots and summary.json, renders the model card, checks AutoModel,
     SentenceTransformer, MTEB and the stock export give the same vectors, and runs push --dry-run;
  6. with --decoder: SmolLM2-135M-Instruct zero-shot with PromptEOL, with and without EmbedFilter.

About 6 minutes on 2 idle CPU cores, --decoder adds ~2.5 (--fast: about 1.5, on samples of the held-out sets
and 4 training steps; its numbers are a smoke test, not a measurement). Every step is saved when it finishes:
run the same command again after an interruption and finished steps are skipped (training continues from its
last checkpoint). Results: OUTPUT_DIR/summary.json, OUTPUT_DIR/plots/, OUTPUT_DIR/results/ (mteb layout).
"""


def _quickstart(args: argparse.Namespace) -> None:
    from transformers.utils import logging as transformers_logging

    from ..quickstart import QuickstartOptions, run_quickstart

    transformers_logging.disable_progress_bar()  # per-model "Loading weights" bars; the steps show their own
    run_quickstart(QuickstartOptions(
        output_dir=Path(args.output_dir), num_dump_tokens=args.dump_tokens, fast=args.fast, decoder=args.decoder,
        data_dir=Path(args.data_dir) if args.data_dir else None, repo_id=args.repo_id, overwrite=args.overwrite,
    ))


def register(commands: argparse._SubParsersAction) -> None:
    from ..quickstart.options import DEFAULT_REPO_ID

    parser = add_command(commands, "quickstart",
                         "the main job: train, fit, evaluate, verify and stage a model end to end", DESCRIPTION)
    parser.add_argument("--output-dir", default="hf-dumpembed-quickstart",
                        help="where models, results and plots go (default: ./hf-dumpembed-quickstart)")
    parser.add_argument("--fast", action="store_true",
                        help="small budget (~1.5 min): sampled evaluation sets, 4 training steps, no hard negatives")
    parser.add_argument("--decoder", action="store_true",
                        help="also run SmolLM2-135M-Instruct zero-shot (PromptEOL, with and without EmbedFilter)")
    parser.add_argument("--dump-tokens", type=int, default=4, metavar="K",
                        help="[DUMP] tokens of the compared model (default: 4; the baseline is K=0)")
    parser.add_argument("--data-dir", default=None,
                        help="where the real-text collections are built or reused (default: OUTPUT_DIR/data; "
                             "`python scripts/build_datasets.py` builds them into ./data)")
    parser.add_argument("--repo-id", default=DEFAULT_REPO_ID,
                        help=f"Hub repo the dry-run push stages for (default: {DEFAULT_REPO_ID}); nothing is sent")
    parser.add_argument("--overwrite", action="store_true",
                        help="redo every step instead of resuming (replaces OUTPUT_DIR's earlier results)")
    parser.set_defaults(func=_quickstart)
