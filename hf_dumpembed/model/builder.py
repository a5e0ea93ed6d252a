"""Build a DumpEmbed model folder from any encoder or decoder backbone (local folder or Hub id)."""

from __future__ import annotations

import json
import logging
from enum import Enum
from pathlib import Path
from typing import Annotated, Literal

import torch
from pydantic import BeforeValidator, Field, StrictInt, model_validator
from sentence_transformers.util import load_file_path
from transformers import AutoTokenizer, PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

from .._utils.atomic import output_lock
from .._utils.checked import checked_options
from .._utils.folders import check_output_dir, staged_output
from .._utils.public_paths import public_path
from ..data.assets import embedded_hub_id
from ..data.corpora.stdlib_code import train_split_texts
from ..remote import DumpEmbedConfig, DumpEmbedModel
from ..remote.configuration_dumpembed import POOLING_MODES
from ..remote.modeling_dumpembed import DumpDense, DumpProjection, backbone_class
from .backbone import DTYPES, is_decoder_backbone
from .card import write_card
from .dump_match import DEFAULT_MATCH_MAX_LENGTH, DEFAULT_MATCH_STEPS, match_dump_rows
from .embeddings import DumpInit, copy_source_token_id, grow_embeddings, init_dump_rows, resolve_init
from .source_stack import SourceStack, read_source_stack
from .st_files import DEFAULT_PROMPTS, write_sentence_transformers_files
from .tokenizer import add_dump_tokens, save_dump_tokenizer

logger = logging.getLogger(__name__)

# Far above any useful K (the [DUMP] paper uses 1-16): a typo like 100000 fails before anything is loaded.
MAX_DUMP_TOKENS = 1024


# The pooling modes, derived from their one definition in the remote config (every stock sentence-transformers mode
# and mean_no_dump): Pooling.CLS == "cls", Pooling.LAST == "last", Pooling.MEAN_NO_DUMP == "mean_no_dump", ...
Pooling = Enum("Pooling", {mode.upper(): mode for mode in POOLING_MODES}, type=str)
Pooling.__doc__ = "Pooling of the backbone's last hidden states (see DumpEmbedConfig's `pooling`)."


# The sentence each invalid option raises (pydantic checks the types and ranges; see `checked_options`).
_OPTION_MESSAGES = {
    "num_dump_tokens": f"num_dump_tokens must be an integer between 0 and {MAX_DUMP_TOKENS} (the [DUMP] paper uses "
                       "1-16); got {value!r}.",
    "pooling": f"pooling must be one of {tuple(mode.value for mode in Pooling)}; got {{value!r}}.",
    "init": f"init must be one of {tuple(init.value for init in DumpInit)}; got {{value!r}}.",
    "dtype": f"dtype must be one of {tuple(DTYPES)} or None (the source's own); got {{value!r}}.",
    **{name: f"{name} must be a non-negative integer; got {{value!r}}." for name in
       ("max_seq_length", "seed", "match_steps")},
}
_Count = Annotated[StrictInt, Field(ge=0)]


def _auto_is_none(value: object) -> object:
    """``--pooling auto`` is the builder's default choice (None)."""
    return None if value == "auto" else value


def _prompt_mode(value: object) -> str | None:
    """A prompt name as its `PromptMode` value, with prompt_mode's error listing the choices."""
    from .prompting import prompt_mode

    return None if value is None else prompt_mode(value).value


@checked_options(_OPTION_MESSAGES)
class BuildOptions:
    """What `build_dump_model` makes of a backbone.

    Args:
        num_dump_tokens: K, the number of [DUMP] tokens (0 = the plain baseline through the same code).
        pooling: None (auto) takes the source's own sentence-transformers Pooling when it has one (a mean stays the
            stock mean, [DUMP] slots included, for K > 0), else `cls` for encoders and `last` for decoders.
        init: how the [DUMP] embedding rows start (see `DumpInit`).
        init_token: the vocabulary token whose row ``init="token"`` copies.
        max_seq_length: longest tokenized input, [DUMP] and special tokens included; None takes the backbone's
            sentence-transformers setting (else the tokenizer's `model_max_length` capped at the position limit)
            plus K, so that the [DUMP] tokens do not shorten the text (as far as the position limit allows).
        normalize: L2-normalise the output embedding; None (auto) follows the source: a sentence-transformers
            source normalises when its stack ends in Normalize, any other backbone normalises.
        dtype: the backbone's weights in the folder (``float32``, ``bfloat16``, ``float16``); None keeps the
            source's own dtype. The [DUMP] rows follow the backbone; the projection stays fp32.
        seed: seed of the [DUMP] row initialisation noise.
        prompt: compose a zero-shot prompt (``prompteol`` or ``echo``) around every text inside the model
            (causal LMs; PromptEOL pools the last token).
        match_steps: after the init, fit the K rows for this many steps so the model's text-token states match
            the K = 0 source's (`dump_match`; backbone frozen); 0 = off; None (auto) = `DEFAULT_MATCH_STEPS` for
            encoders with K > 0, 0 for decoders (`resolve_match_steps`; BENCHMARKS.md, "Untrained [DUMP] models").
        match_texts: unlabeled texts for ``match_steps``; None = the train split of the running Python's standard
            library (docstrings and function sources, never a StdlibCode test module).
    """

    num_dump_tokens: Annotated[StrictInt, Field(ge=0, le=MAX_DUMP_TOKENS)] = 4
    pooling: Annotated[Pooling | None, BeforeValidator(_auto_is_none)] = None
    init: DumpInit = DumpInit.AUTO
    init_token: str | None = None
    max_seq_length: _Count | None = None
    normalize: bool | None = None
    dtype: Literal[tuple(DTYPES)] | None = None  # type: ignore[valid-type]
    seed: _Count = 0
    prompt: Annotated[str | None, BeforeValidator(_prompt_mode)] = None
    match_steps: _Count | None = None
    match_texts: tuple[str, ...] | None = None

    @model_validator(mode="after")
    def _room_for_text(self) -> BuildOptions:
        if self.max_seq_length is not None and self.max_seq_length <= self.num_dump_tokens + 2:
            raise ValueError(
                f"max_seq_length={self.max_seq_length} leaves no room for text after {self.num_dump_tokens} "
                "[DUMP] tokens and the special tokens; use a larger value."
            )
        return self


DEFAULT_OPTIONS = BuildOptions()  # the defaults of `build` and `build_dump_model` (frozen, so one shared value)


def choose_pooling(options: BuildOptions, stack: SourceStack | None, decoder: bool) -> tuple[Pooling, str]:
    """(pooling, why): the explicit option, else the source's own sentence-transformers pooling, else cls/last."""
    if options.pooling is not None:
        return options.pooling, "set explicitly"
    source = None if stack is None else Pooling(stack.pooling)
    # With K > 0, a source's mean stays the stock mean over every token, [DUMP] slots included, so the folder has a
    # stock export (TEI, Infinity, vLLM); it is level with mean_no_dump after training (BENCHMARKS.md).
    if source is Pooling.MEAN and options.num_dump_tokens > 0:
        return Pooling.MEAN, ("the source's sentence-transformers Pooling: mean, over every token, the [DUMP] slots "
                              "included, as stock sentence-transformers computes it, so the folder has a stock export")
    if source is not None:
        return source, f"the source's sentence-transformers Pooling: {source.value}"
    if decoder:
        return Pooling.LAST, "no sentence-transformers Pooling in the source; a decoder pools its last token"
    return Pooling.CLS, "no sentence-transformers Pooling in the source; an encoder pools [CLS]"


def source_max_seq_length(
    stack: SourceStack | None, tokenizer: PreTrainedTokenizerBase, config: PretrainedConfig
) -> int:
    """sentence-transformers' `max_seq_length` of the source: its legacy sentence_bert_config.json value, else
    (sentence-transformers 5+ keeps it in the tokenizer) the tokenizer's `model_max_length` within the position
    limit."""
    if stack is not None and stack.max_seq_length:
        return stack.max_seq_length
    limits = [tokenizer.model_max_length, getattr(config, "max_position_embeddings", None)]
    finite = [int(x) for x in limits if x is not None and x < 1_000_000]
    return min(finite) if finite else 512


def default_max_seq_length(source_length: int, num_dump_tokens: int, position_limit: int | None) -> int:
    """The source's own length plus the K [DUMP] tokens (within the position limit), so that the prefix does not
    shorten the text (BENCHMARKS.md, "Untrained [DUMP] models")."""
    wanted = source_length + num_dump_tokens
    return wanted if position_limit is None else min(wanted, max(position_limit, source_length))


def ensure_pad_token(tokenizer: PreTrainedTokenizerBase) -> None:
    """Batched encoding needs a pad token; decoders often have none, so reuse EOS (pooling ignores padding)."""
    if tokenizer.pad_token is not None:
        return
    if tokenizer.eos_token is None:
        raise ValueError("The tokenizer has neither a pad token nor an EOS token to pad with; set tokenizer.pad_token.")
    tokenizer.pad_token = tokenizer.eos_token
    logger.info("The tokenizer has no pad token; padding with its EOS token %r", tokenizer.eos_token)


def refuse_dumpembed_source(backbone: str | Path, revision: str | None = None) -> None:
    """Raise ValueError when ``backbone`` is a DumpEmbed folder already (build from its original backbone)."""
    config_file = load_file_path(str(backbone), "config.json", revision=revision)
    if config_file is not None:
        config = json.loads(Path(config_file).read_text(encoding="utf-8"))
        if config.get("model_type") == DumpEmbedConfig.model_type:
            raise ValueError(f"{str(backbone)!r} is already a DumpEmbed model; build from its original backbone "
                             "instead.")


def load_backbone(backbone: str | Path, revision: str | None = None, dtype: str | None = None,
                  subfolder: str = "") -> tuple[torch.nn.Module, PreTrainedTokenizerBase]:
    """Load the backbone (AutoModel, safetensors only, in ``dtype`` or the source's own) and its tokenizer from a
    local folder or a Hub id. ``subfolder`` is where a sentence-transformers source keeps its transformer."""
    name = str(backbone)
    if "/" in name and not Path(name).exists() and (name.startswith((".", "/", "~")) or name.count("/") > 1):
        raise FileNotFoundError(f"{name}: no such folder. Give an existing local model folder or a Hub id "
                                "(owner/name).")
    folder = str(Path(name) / subfolder) if subfolder else name
    try:
        config_dict, _ = PretrainedConfig.get_config_dict(folder, revision=revision)
        if config_dict.get("model_type") == DumpEmbedConfig.model_type:
            raise ValueError(f"{name!r} is already a DumpEmbed model; build from its original backbone instead.")
        # trust_remote_code=False, said explicitly: a source's own Python never runs (and nothing asks on a tty).
        tokenizer = AutoTokenizer.from_pretrained(folder, revision=revision, trust_remote_code=False)
        model_class = backbone_class(config_dict.get("architectures"))
        model = model_class.from_pretrained(folder, revision=revision, dtype=DTYPES[dtype] if dtype else "auto",
                                            use_safetensors=True, trust_remote_code=False)
    except OSError as error:
        raise OSError(
            f"Could not load the backbone {name!r}: {error}\nGive a local model folder with model.safetensors "
            "(pickled weights are never loaded: re-save the model with save_pretrained), or a Hub id on a machine "
            "that can reach the Hub (HF_HUB_OFFLINE must be unset)."
        ) from error
    except ValueError as error:
        if "trust_remote_code" in str(error) or "custom code" in str(error):
            raise ValueError(
                f"{name!r} needs its own modeling code (trust_remote_code), which DumpEmbed does not wrap: a folder "
                "must load with transformers' own classes so that it stays self-contained. Use a checkpoint of the "
                f"same model in a transformers architecture if one exists. ({error})"
            ) from None
        raise
    return model, tokenizer


def wrap_backbone(config: DumpEmbedConfig, backbone: PreTrainedModel,
                  dense: tuple[torch.Tensor, torch.Tensor] | None = None) -> DumpEmbedModel:
    """A `DumpEmbedModel` around an already loaded backbone, without allocating a second copy of its weights;
    ``dense`` is the source's folded Dense map (weight (in, out), bias) when it has one."""
    with torch.device("meta"):
        model = DumpEmbedModel(config)
    model.backbone = backbone
    model.projection = DumpProjection(config.embedding_size, config.projection_dim)
    if dense is not None:
        model.pooled_dense = DumpDense(*dense[0].shape)
        model.pooled_dense.weight.copy_(dense[0])
        model.pooled_dense.bias.copy_(dense[1])
    return model.eval()


def source_settings(stack: SourceStack | None, tokenizer: PreTrainedTokenizerBase, hidden_size: int
                    ) -> dict[str, object]:
    """The config fields that carry a sentence-transformers source's behaviour over: prompts (text after the [DUMP]
    tokens; `DEFAULT_PROMPTS` for a source without any), default prompt, similarity, ``include_prompt`` (with each
    prompt's tokens, for sentence-transformers' prompt_length rule) and the Dense layers."""
    if stack is None:
        return {"prompts": dict(DEFAULT_PROMPTS)}
    if stack.dense and stack.dense[0].in_features != hidden_size:
        raise ValueError(f"the source's first Dense layer reads {stack.dense[0].in_features} features; its backbone "
                         f"gives {hidden_size}.")
    excluded = [] if stack.include_prompt else prompt_token_ids(tokenizer, stack.prompts.values())
    return {
        "prompts": dict(stack.prompts) or dict(DEFAULT_PROMPTS), "default_prompt_name": stack.default_prompt_name,
        "similarity_fn_name": stack.similarity_fn_name, "include_prompt": stack.include_prompt,
        "prompt_token_ids_excluded": excluded, "dense_layers": [layer.describe() for layer in stack.dense],
    }


def prompt_token_ids(tokenizer: PreTrainedTokenizerBase, prompts: object) -> list[list[int]]:
    """Each non-empty prompt as sentence-transformers measures it: tokenized alone with the special tokens (and the
    [DUMP] prefix), a trailing special token dropped."""
    special = set(tokenizer.all_special_ids)
    # sentence-transformers measures no prompt_length for an empty prompt
    encoded = [list(tokenizer(prompt)["input_ids"]) for prompt in prompts if prompt]
    return [ids[:-1] if ids and ids[-1] in special else ids for ids in encoded]


def build_dump_model(
    backbone: str | Path, options: BuildOptions = DEFAULT_OPTIONS, revision: str | None = None
) -> tuple[DumpEmbedModel, PreTrainedTokenizerBase]:
    """Wrap a backbone as a `DumpEmbedModel` with K [DUMP] tokens; returns the model and its tokenizer."""
    refuse_dumpembed_source(backbone, revision)
    stack = read_source_stack(backbone, revision)
    model, tokenizer = load_backbone(backbone, revision, options.dtype, stack.transformer_path if stack else "")
    if getattr(model.config, "is_encoder_decoder", False):
        raise ValueError(
            f"{backbone!r} is an encoder-decoder model ({model.config.model_type}); DumpEmbed wraps encoders and "
            "decoders only. Save its encoder on its own (e.g. T5EncoderModel) and build from that folder."
        )
    decoder = is_decoder_backbone(model.config)
    pooling, pooling_reason = choose_pooling(options, stack, decoder)
    logger.warning("Pooling: %s (%s)", pooling.value, pooling_reason)
    position_limit = getattr(model.config, "max_position_embeddings", None)
    max_seq_length = options.max_seq_length or default_max_seq_length(
        source_max_seq_length(stack, tokenizer, model.config), options.num_dump_tokens, position_limit)
    if position_limit is not None and max_seq_length > position_limit:
        raise ValueError(
            f"max_seq_length={max_seq_length} exceeds the backbone's position limit {position_limit}; "
            f"use --max-seq-length {position_limit} or less."
        )
    specials = tokenizer.num_special_tokens_to_add(pair=False)
    if options.num_dump_tokens + specials >= max_seq_length:
        raise ValueError(
            f"{options.num_dump_tokens} [DUMP] tokens + {specials} special token(s) leave no room for text in "
            f"max_seq_length={max_seq_length}: use at most {max(0, max_seq_length - specials - 1)} [DUMP] tokens "
            "(--dump-tokens) or a larger --max-seq-length."
        )
    ensure_pad_token(tokenizer)
    dump = add_dump_tokens(tokenizer, options.num_dump_tokens)
    if decoder and dump.offset == 0:
        logger.warning(NO_BOS_ADVICE, options.num_dump_tokens, tokenizer.bos_token or "TOKEN")
    if dump.ids:
        grow_embeddings(model, max(dump.ids) + 1)
    first_token_id = tokenizer("x")["input_ids"][0] if dump.offset > 0 else None
    init = resolve_init(options.init, decoder)
    copy_token_id = copy_source_token_id(tokenizer, init, options.init_token)
    init_dump_rows(model, list(dump.ids), init, first_token_id=first_token_id, seed=options.seed,
                   copy_token_id=copy_token_id)
    tokenizer.model_max_length = max_seq_length
    dump_init = init.value if init is not DumpInit.TOKEN else f"token:{options.init_token}"
    match_steps, match_reason = resolve_match_steps(options.match_steps, options.num_dump_tokens, decoder)
    if match_steps:
        logger.warning("Matching the [DUMP] rows to K=0: %d steps (%s)", match_steps, match_reason)
        dump_init += f"+match{match_steps}"

    base_model = embedded_hub_id(backbone) or public_path(backbone)
    model.config._name_or_path = base_model  # no local path in config.json
    config = DumpEmbedConfig(
        text_config=model.config,
        num_dump_tokens=options.num_dump_tokens,
        dump_token_ids=list(dump.ids),
        dump_token_offset=dump.offset,
        pooling=pooling.value,
        normalize=options.normalize if options.normalize is not None else (stack.normalize if stack else True),
        base_model=base_model,
        dump_init=dump_init,
        pooling_reason=pooling_reason,
        # sentence-transformers caps its length at this; a backbone with relative positions only (T5) has none,
        # so the folder states its own max_seq_length instead of None (which sentence-transformers cannot compare).
        max_position_embeddings=position_limit or max_seq_length,
        **source_settings(stack, tokenizer, model.config.hidden_size),
    )
    dump_model = wrap_backbone(config, model, stack.folded_dense() if stack else None)
    if match_steps:
        _match_rows(dump_model, tokenizer, backbone, revision, options, match_steps, stack,
                    max_length=min(DEFAULT_MATCH_MAX_LENGTH, max_seq_length - options.num_dump_tokens))
    if options.prompt is not None:
        from .prompting import set_prompt_mode

        set_prompt_mode(dump_model, tokenizer, options.prompt)
    logger.info(
        "Built DumpEmbed model: backbone %s (%s), K=%d at offset %d, pooling %s, max_seq_length %d",
        backbone, "decoder" if decoder else "encoder", options.num_dump_tokens, dump.offset, pooling.value,
        max_seq_length,
    )
    return dump_model, tokenizer


# What build says of a decoder whose tokenizer puts no special token first (the controls in BENCHMARKS.md).
NO_BOS_ADVICE = (
    "This decoder's tokenizer adds no BOS: nothing constant opens an input (the attention sink's usual place) but "
    "the K=%d [DUMP] tokens. Measured on SmolLM2-135M-Instruct after one epoch (BENCHMARKS.md, 'Does the decoder "
    "gain need trainable [DUMP] tokens?'): one BOS token alone (--dump-tokens 1 --init token --init-token %s) gave "
    "about half of K=4's gain over K=0, four untrained [DUMP] tokens about 93%%, and one trained [DUMP] token "
    "(--dump-tokens 1) as much as four (101%%; two seeds each).")


def resolve_match_steps(match_steps: int | None, num_dump_tokens: int, decoder: bool) -> tuple[int, str]:
    """Steps of the [DUMP]-row match and why: the option as given, or the measured default (None)."""
    if num_dump_tokens == 0:
        return 0, "K = 0: no [DUMP] rows"
    if match_steps is not None:
        return match_steps, "as asked"
    if decoder:
        return 0, "default for decoders: their default init already matches K = 0 untrained"
    return DEFAULT_MATCH_STEPS, "default for encoders with K > 0; --match-steps 0 turns it off"


def _match_rows(model: DumpEmbedModel, tokenizer: PreTrainedTokenizerBase, backbone: str | Path,
                revision: str | None, options: BuildOptions, steps: int, stack: SourceStack | None,
                max_length: int) -> None:
    """Fit the [DUMP] rows to reproduce the K = 0 source (`dump_match.match_dump_rows`)."""
    source, source_tokenizer = load_backbone(backbone, revision, options.dtype, stack.transformer_path if stack else "")
    ensure_pad_token(source_tokenizer)
    source_tokenizer.padding_side = tokenizer.padding_side
    texts = list(options.match_texts) if options.match_texts is not None else train_split_texts()
    result = match_dump_rows(model, tokenizer, source, source_tokenizer, texts, steps=steps,
                             max_length=max_length, seed=options.seed)
    logger.warning("[DUMP] rows matched to K=0 on %d texts: state error %.5f -> %.5f over %d steps",
                   len(texts), result.first_loss, result.last_loss, result.steps)


def save_dump_model(
    model: DumpEmbedModel, tokenizer: PreTrainedTokenizerBase, out_dir: str | Path, overwrite: bool = False
) -> Path:
    """Write a complete model folder: config + code + safetensors + tokenizer + sentence-transformers files.

    The folder is written to a staging directory first and moved into place only when complete, so an error
    never leaves a half-written model behind (and an existing folder is never touched without `overwrite`).
    """
    with staged_output(out_dir, overwrite=overwrite) as staging:
        model.save_pretrained(staging, safe_serialization=True)
        save_dump_tokenizer(tokenizer, staging, max_length=tokenizer.model_max_length)
        write_sentence_transformers_files(staging, model.config)
        write_card(staging, model_id=public_path(out_dir))
    return Path(out_dir)


def build(
    backbone: str | Path,
    out_dir: str | Path,
    options: BuildOptions = DEFAULT_OPTIONS,
    revision: str | None = None,
    overwrite: bool = False,
) -> Path:
    """`build_dump_model` then `save_dump_model`: the `hf-dumpembed build` command."""
    check_output_dir(out_dir, overwrite, inputs=[backbone])  # fail before loading anything
    with output_lock(out_dir):  # one writer per output, from the start
        model, tokenizer = build_dump_model(backbone, options, revision)
        return save_dump_model(model, tokenizer, out_dir, overwrite=overwrite)
