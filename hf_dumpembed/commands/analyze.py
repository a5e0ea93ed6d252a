"""``hf-dumpembed analyze``: token-level norms and attention, and the decoder logit lens."""

from __future__ import annotations

import argparse

from .._utils.console import say
from . import add_command, add_trust_flag

ANALYZE_DESCRIPTION = """\
Token-level analysis of MODEL (and --compare OTHER, side by side), the [DUMP] paper's Figure 2: for each
token group ([CLS]/BOS, each [DUMP_i], stopwords from the bundled NLTK English list, other text tokens,
trailing specials) the mean L2 norm of the final-layer hidden states, and the last-layer attention from
stopword tokens to [CLS]/BOS and to each [DUMP_i], averaged over heads and tokens, reported x1e5 (eager
attention, one text at a time, the model's own tokenizer). For decoders also the logit lens (EmbedFilter
paper, Figure 1): the top vocabulary tokens of the pooled state through the unembedding matrix, before and
after EmbedFilter (middle band of its spectrum, ratio --ratio).

Writes OUT/analysis.json, OUT/token_statistics.png and, for decoders, OUT/logit_lens.md.
"""


def _analyze(args: argparse.Namespace) -> None:
    import torch

    from ..analysis import analyze, describe
    from ..analysis.texts import read_texts

    if args.threads:
        torch.set_num_threads(args.threads)
    models = [args.model, *(args.compare or [])]
    labels = args.label or None
    texts = read_texts(args.texts, args.max_texts)
    result = analyze(models, texts, args.out, labels=labels, max_length=args.max_length, ratio=args.ratio,
                     plot=not args.no_plot, sinks=args.sinks, trust_remote_code=args.trust_remote_code)
    say(describe(result, labels or [p.rstrip("/").split("/")[-1] for p in models]))


def register(commands: argparse._SubParsersAction) -> None:
    analyze = add_command(commands, "analyze", "token-level analysis: group norms, stopword attention, decoder logit "
                          "lens", ANALYZE_DESCRIPTION)
    analyze.add_argument("model", help="a DumpEmbed model folder")
    analyze.add_argument("--compare", action="append", default=None, metavar="OTHER",
                         help="another model folder to show side by side (repeatable), e.g. the K=0 baseline")
    analyze.add_argument("--texts", required=True,
                         help="texts: a .txt file (one per line), a .jsonl file (text field) or a BEIR folder")
    analyze.add_argument("--out", default="analysis", help="output folder (default: analysis)")
    analyze.add_argument("--label", action="append", default=None,
                         help="display name per model, in order (default: folder names)")
    analyze.add_argument("--max-texts", type=int, default=200, help="use the first N texts (default: 200)")
    analyze.add_argument("--max-length", type=int, default=None, help="truncate texts to N tokens (default: the "
                         "tokenizer's limit)")
    analyze.add_argument("--ratio", type=int, default=2, help="EmbedFilter ratio τ for the logit lens (default: 2)")
    analyze.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    analyze.add_argument("--no-plot", action="store_true", help="skip the PNG (no matplotlib needed)")
    analyze.add_argument("--sinks", type=int, default=0, metavar="N",
                         help="also list the N tokens that receive the most last-layer attention per occurrence "
                         "(attention sinks; e.g. the token for `build --init token --init-token T`)")
    add_trust_flag(analyze)
    analyze.set_defaults(func=_analyze)
