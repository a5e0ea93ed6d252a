"""``hf-dumpembed fit MODEL OUT --method ...``: fit a post-hoc projection into a new model folder."""

from __future__ import annotations

import argparse
import os
import textwrap
from typing import TYPE_CHECKING, Any

from .._utils.checked import strip_annotation
from ..projections.registry import METHODS
from ..remote.configuration_dumpembed import PROMPT_MODES
from . import add_command, add_trust_flag
from .arguments import FiniteFloat

if TYPE_CHECKING:
    from ..projections.methods.base import ProjectionMethod

HELP_WIDTH, HELP_INDENT = 114, 18  # the method entries' width and where their text starts

_DESCRIPTION = """\
Fit a post-hoc linear projection on a DumpEmbed model and write OUT, a new model folder whose projection
(mean + matrix, applied to the L2-normalised pooled embedding, then L2 again) holds the fitted map. MODEL is
only read (OUT may not lie inside MODEL or the corpus, nor contain them). Provenance (method, mode, k, γ, knee, τ,
corpus name / relative path + sha256, number of texts, date) goes to config.projection_info, plots to OUT/plots/.
A second fit to the same OUT while this one runs fails at once; non-finite corpus statistics are refused.

Methods ({corpus_methods} are fitted on the embeddings of --corpus; the others need no corpus):
{method_lines}

One folder, many dimensions: {any_k_methods} store their spectrum, so
any k can be picked at load time and equals a fit at that k:
  AutoModel.from_pretrained(OUT, trust_remote_code=True, projection_dim=128)
  SentenceTransformer(OUT, trust_remote_code=True, model_kwargs={{"projection_dim": 128}})

Quantized outputs: with --corpus (any method) OUT also gets quantization.json, the int8 ranges and binary
thresholds of its vectors on the corpus at each selectable k; hf_dumpembed.quantize(embeddings, OUT,
precision="int8"|"ubinary"|...) uses them (sentence-transformers' encode(precision=...) would take the ranges
from each batch).

--prompt {prompt_modes} (causal LMs) stores a zero-shot prompt the model composes around every text, in
every load path: PromptEOL (template, last token) or ECHO (text twice, mean over the second copy).

Corpus: a .jsonl file (a "text" field, or BEIR title/text), a .txt file (one text per line), a BEIR folder
(its corpus.jsonl) or a folder written by datasets' save_to_disk. Several processes:
  torchrun --nproc_per_node N -m hf_dumpembed.cli fit ...   (each rank encodes a shard; rank 0 writes)
"""


def _names(methods: list[type[ProjectionMethod]]) -> str:
    names = [m.name for m in methods]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def _method_lines() -> str:
    """One help entry per method of the vocabulary, its text wrapped beside the name."""
    lines = []
    for method in METHODS.values():
        wrapped = textwrap.wrap(method.help, width=HELP_WIDTH - HELP_INDENT)
        lines.append(f"  {method.name:<{HELP_INDENT - 3}} {wrapped[0]}")
        lines += [" " * HELP_INDENT + line for line in wrapped[1:]]
    return "\n".join(lines)


def description() -> str:
    """``fit --help``'s text, from the methods."""
    return _DESCRIPTION.format(
        corpus_methods=_names([m for m in METHODS.values() if m.needs_corpus]), method_lines=_method_lines(),
        any_k_methods=_names([m for m in METHODS.values() if m.any_k]), prompt_modes="|".join(PROMPT_MODES))


def _option_flags() -> dict[str, dict[str, Any]]:
    """One flag per method-specific option (``--name``), its type, choices and help from the pydantic field of the
    first method that declares it; the default None lets the method's own default apply."""
    flags: dict[str, dict[str, Any]] = {}
    for method in METHODS.values():
        for name, field in method.Options.__pydantic_fields__.items():
            if name in flags:
                continue
            extra = field.json_schema_extra or {}
            kind, _ = strip_annotation(field.annotation)
            flag: dict[str, Any] = {"help": field.description, "default": None}
            if kind is bool:
                flag["action"] = "store_true"
            elif "choices" in extra:
                flag["choices"] = list(extra["choices"])
            else:
                flag["type"] = FiniteFloat(*_bounds(field)) if kind is float else kind
                flag["metavar"] = extra.get("metavar", name.upper())
            flags[name] = flag
    return flags


def _bounds(field: Any) -> tuple[float | None, float | None]:
    """A float field's (ge, le) bounds from its metadata."""
    low = next((item.ge for item in field.metadata if getattr(item, "ge", None) is not None), None)
    high = next((item.le for item in field.metadata if getattr(item, "le", None) is not None), None)
    return low, high


def _fit(args: argparse.Namespace) -> None:
    from .._utils.console import say
    from ..projections.fit import FitOptions, fit_projection

    given = {name: getattr(args, name) for name in _option_flags() if getattr(args, name) not in (None, False)}
    options = FitOptions(
        method=args.method, dim=args.dim, seed=args.seed, max_texts=args.max_texts, batch_size=args.batch_size,
        prompt=args.prompt, lm_head=args.lm_head, text_column=args.text_column, plots=not args.no_plots, **given)
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        import torch.distributed as dist

        dist.init_process_group("gloo")
    try:
        out = fit_projection(args.model, args.out, options, corpus=args.corpus, overwrite=args.overwrite,
                             trust_remote_code=args.trust_remote_code)
    finally:
        if distributed:
            dist.destroy_process_group()
    if not distributed or int(os.environ.get("RANK", "0")) == 0:
        say(f"Wrote {out}")


def register(commands: argparse._SubParsersAction) -> None:
    parser = add_command(commands, "fit", "fit a post-hoc projection (SpecTemp, EmbedFilter, PCA, ...) into a new "
                         "model folder", description())
    parser.add_argument("model", help="a DumpEmbed model folder (never modified)")
    parser.add_argument("out", help="the new model folder (must not exist or be empty, unless --overwrite)")
    parser.add_argument("--method", required=True, choices=list(METHODS),
                        help="projection method (see above)")
    parser.add_argument("--dim", type=int, default=None, metavar="K",
                        help="output dimension k (EmbedFilter: band width m); required except for embedfilter")
    for name, flag in _option_flags().items():
        parser.add_argument(f"--{name.replace('_', '-')}", **flag)
    parser.add_argument("--corpus", default=None, metavar="PATH",
                        help=f"texts to fit on ({', '.join(m.name for m in METHODS.values() if m.needs_corpus)}) and, "
                        "for any method, to calibrate the quantized outputs (quantization.json): .jsonl, .txt, BEIR "
                        "folder, saved dataset")
    parser.add_argument("--text-column", default=None, help="text column of a saved HF dataset (default: text)")
    parser.add_argument("--max-texts", type=int, default=1_000_000,
                        help="fit on a seeded sample of at most this many texts (default: 1000000, as the authors)")
    parser.add_argument("--seed", type=int, default=1999,
                        help="seed of random-truncate / random-project and of the corpus sample (default: 1999)")
    parser.add_argument("--batch-size", type=int, default=32, help="encoding batch size (default: 32)")
    parser.add_argument("--prompt", choices=list(PROMPT_MODES), default=None,
                        help="compose a zero-shot prompt inside the model (causal LMs)")
    parser.add_argument("--lm-head", default=None, metavar="PATH",
                        help="EmbedFilter on an untied LM: the original causal-LM folder holding lm_head.weight")
    parser.add_argument("--no-plots", action="store_true",
                        help="do not write plots/*.png (they need matplotlib, checked before anything is encoded)")
    parser.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    add_trust_flag(parser)
    parser.set_defaults(func=_fit)
