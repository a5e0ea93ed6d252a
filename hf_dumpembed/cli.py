"""The ``hf-dumpembed`` command: one subcommand per library function, each a thin layer over it."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from . import commands as command_modules

DESCRIPTION = """\
Build, train, fit, evaluate and publish DumpEmbed text-embedding models: a tokenizer that prepends K trainable
[DUMP] tokens, any transformers backbone, pooling, a stored linear projection (SpecTemp, EmbedFilter, PCA, ...)
and L2 normalisation, in one folder that loads identically through AutoModel (trust_remote_code=True),
SentenceTransformer and MTEB. Typical order: build -> train -> fit -> eval -> card -> push.
"""

# Subcommand groups, in the order `--help` lists them: each module's register() adds its subparsers.
COMMAND_GROUPS = ("model", "onnx", "evaluate", "analyze", "fit", "publish", "quickstart", "train")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hf-dumpembed", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for group in COMMAND_GROUPS:
        importlib.import_module(f"{command_modules.__name__}.{group}").register(commands)
    return parser


# What to do after Ctrl-C, per command.
RESUME_HINTS = {
    "quickstart": "run the same command again to resume (finished steps are skipped, training continues from its "
                  "last checkpoint)",
    "train": "run it again with --resume to continue from the last checkpoint",
}


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    # Our own progress at INFO; third-party chatter (sentence-transformers, mteb) only from WARNING up.
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("hf_dumpembed").setLevel(logging.DEBUG if args.verbose else logging.INFO)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        args.func(args)
    except (ValueError, FileExistsError, OSError, ImportError) as error:
        # User errors (bad flags, existing folders, missing packages): the message says what to do.
        raise SystemExit(f"hf-dumpembed {args.command}: error: {error}") from None
    except KeyboardInterrupt:
        hint = RESUME_HINTS.get(args.command, "outputs are written only when complete: nothing half-written is left")
        sys.stderr.write(f"\nhf-dumpembed {args.command}: interrupted; {hint}.\n")
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
