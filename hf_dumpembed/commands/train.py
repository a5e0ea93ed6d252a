"""``hf-dumpembed train CONFIG [--resume]``: fine-tune a DumpEmbed model as one YAML file describes."""

from __future__ import annotations

import argparse
import os

from . import add_command, add_trust_flag

DESCRIPTION = """\
Fine-tune a DumpEmbed model with the [DUMP] paper's recipe: InfoNCE on cosine similarity (scale 20) with
in-batch and hard negatives, GradCache (CachedMultipleNegativesRankingLoss), no-duplicates batches, lr 1e-4
with linear warmup, 1 epoch. CONFIG (YAML) fully determines the run: the backbone and K (or an existing
DumpEmbed folder), the data (jsonl, a saved HF dataset, a BEIR folder with mined hard negatives, or the
paper's RLHN/MLDR layouts), hyperparameters, seed and output folder. See scripts/configs/ for examples.

The output is a DumpEmbed model folder (AutoModel, SentenceTransformer, export-st and card accept it) with
config.training_info filled and training/{config.yaml,environment.json,data_files.json} inside; checkpoints
go to <output>.checkpoints/. After a kill, the same command with --resume continues from the last checkpoint
(optimizer, scheduler, sampler position, random states) and ends with the same number of steps.

Several devices: torchrun --nproc_per_node N -m hf_dumpembed.cli train CONFIG (or accelerate launch
--multi_gpu on GPUs);
in-batch negatives are gathered across devices and only rank 0 writes.
"""


def _train(args: argparse.Namespace) -> None:
    from .._utils.console import say
    from ..training import load_config, train

    overrides = {key: getattr(args, key) for key in ("seed", "output") if getattr(args, key) is not None}
    config = load_config(args.config, overrides)
    out = train(config, resume=args.resume, trust_remote_code=args.trust_remote_code)
    if int(os.environ.get("RANK", "0")) == 0:  # under torchrun only rank 0 writes, and says so
        say(f"Wrote {out}")


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "train", "fine-tune a DumpEmbed model from a YAML run config", DESCRIPTION)
    parser.add_argument("config", help="YAML run config (see scripts/configs/*.yaml)")
    add_trust_flag(parser)
    parser.add_argument("--resume", action="store_true",
                        help="continue from the last checkpoint in the run's checkpoint folder")
    parser.add_argument("--seed", type=int, default=None, help="override the config's seed")
    parser.add_argument("--output", default=None, help="override the config's output folder")
    parser.set_defaults(func=_train)
