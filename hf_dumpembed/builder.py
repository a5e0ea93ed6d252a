"""Build a DumpEmbed model folder from any encoder or decoder backbone (local folder or Hub id)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import torch
from sentence_transformers.util import load_file_path
from transformers import AutoModel, AutoTokenizer, PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

from .assets import embedded_hub_id
from .atomic import output_lock
from .card import write_card
from .embeddings import DumpInit, grow_embeddings, init_dump_rows
from .folders import check_output_dir, staged_output
from .public_paths import public_path
from .remote import DumpEmbedConfig, DumpEmbedModel
from .remote.modeling_dumpembed import DumpProjection
from .st_files import write_sentence_transformers_files
from .tokenizer import add_dump_tokens, save_dump_tokenizer

logger = logging.getLogger(__name__)

_CAUSAL_ARCHITECTURE_SUFFIXES = ("ForCausalLM", "LMHeadModel")
# Far above any useful K (the [DUMP] paper uses 1-16): a typo like 100000 fails before anything is loaded.
MAX_DUMP_TOKENS = 1024


class Pooling(str, Enum):
    """Pooling of the backbone's last hidden states: [CLS] (encoders), last token (decoders) or mean."""

    CLS = "cls"
    LAST = "last"
    MEAN = "mean"


@dataclass(frozen=True)
class BuildOptions:
    """What `build_dump_model` makes of a backbone.

    Args:
        num_dump_tokens: K, the number of [DUMP] tokens (0 = the plain baseline through the same code).
        pooling: None picks `cls` for encoders and `last` for decoders.
        init: how the [DUMP] embedding rows start (see `DumpInit`).
        max_seq_length: longest tokenized input, [DUMP] tokens included; None takes the backbone's
            sentence-transformers setting, else the tokenizer's `model_max_length` capped at the position limit.
        normalize: L2-normalise the output embedding.
        seed: seed of the [DUMP] row initialisation noise.
        prompt: compose a zero-shot prompt (``prompteol`` or ``echo``) around every text inside the model
            (causal LMs; PromptEOL pools the last token).
    """

    num_dump_tokens: int = 4
    pooling: Pooling | None = None
    init: DumpInit = DumpInit.MEAN
    max_seq_length: int | None = None
    normalize: bool = True
    seed: int = 0
    prompt: str | None = None

    def __post_init__(self) -> None:
        if (isinstance(self.num_dump_tokens, bool) or not isinstance(self.num_dump_tokens, int)
                or not 0 <= self.num_dump_tokens <= MAX_DUMP_TOKENS):
            raise ValueError(f"num_dump_tokens must be an integer between 0 and {MAX_DUMP_TOKENS} (the [DUMP] paper "
                             f"uses 1-16); got {self.num_dump_tokens!r}.")
        for name in ("max_seq_length", "seed"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be a non-negative integer; got {value!r}.")
        if self.pooling is not None:
            object.__setattr__(self, "pooling", _choice(Pooling, self.pooling, "pooling"))
        object.__setattr__(self, "init", _choice(DumpInit, self.init, "init"))
        if self.prompt is not None:
            from .prompting import prompt_mode

            object.__setattr__(self, "prompt", prompt_mode(self.prompt).value)
        if self.max_seq_length is not None and self.max_seq_length <= self.num_dump_tokens + 2:
            raise ValueError(
                f"max_seq_length={self.max_seq_length} leaves no room for text after {self.num_dump_tokens} "
                "[DUMP] tokens and the special tokens; use a larger value."
            )


def _choice(enum: type[Enum], value: object, name: str) -> Enum:
    try:
        return enum(value)
    except ValueError:
        allowed = tuple(member.value for member in enum)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}.") from None


def is_decoder_backbone(config: PretrainedConfig) -> bool:
    """True for causal LMs (Llama, Qwen2, GPT-2, ...), judged by the architectures the checkpoint was saved as."""
    architectures = getattr(config, "architectures", None) or []
    if any(arch.endswith(_CAUSAL_ARCHITECTURE_SUFFIXES) for arch in architectures):
        return True
    return bool(getattr(config, "is_decoder", False))


def _default_max_seq_length(
    backbone: str, tokenizer: PreTrainedTokenizerBase, config: PretrainedConfig, revision: str | None
) -> int:
    """sentence-transformers' `max_seq_length` of the backbone if it has one, else the tokenizer/position limit."""
    st_config = load_file_path(backbone, "sentence_bert_config.json", revision=revision)
    if st_config is not None:
        value = json.loads(Path(st_config).read_text()).get("max_seq_length")
        if value:
            return int(value)
    limits = [tokenizer.model_max_length, getattr(config, "max_position_embeddings", None)]
    finite = [int(x) for x in limits if x is not None and x < 1_000_000]
    return min(finite) if finite else 512


def ensure_pad_token(tokenizer: PreTrainedTokenizerBase) -> None:
    """Batched encoding needs a pad token; decoders often have none, so reuse EOS (pooling ignores padding)."""
    if tokenizer.pad_token is not None:
        return
    if tokenizer.eos_token is None:
        raise ValueError("The tokenizer has neither a pad token nor an EOS token to pad with; set tokenizer.pad_token.")
    tokenizer.pad_token = tokenizer.eos_token
    logger.info("The tokenizer has no pad token; padding with its EOS token %r", tokenizer.eos_token)


def load_backbone(backbone: str | Path, revision: str | None = None) -> tuple[torch.nn.Module, PreTrainedTokenizerBase]:
    """Load the backbone (AutoModel, float32) and its tokenizer from a local folder or a Hub id."""
    name = str(backbone)
    try:
        config_dict, _ = PretrainedConfig.get_config_dict(name, revision=revision)
        if config_dict.get("model_type") == DumpEmbedConfig.model_type:
            raise ValueError(f"{name!r} is already a DumpEmbed model; build from its original backbone instead.")
        tokenizer = AutoTokenizer.from_pretrained(name, revision=revision)
        model = AutoModel.from_pretrained(name, revision=revision, dtype=torch.float32)
    except OSError as error:
        raise OSError(
            f"Could not load the backbone {name!r}: {error}\nGive a local model folder, or a Hub id on a machine "
            "that can reach the Hub (HF_HUB_OFFLINE must be unset)."
        ) from error
    return model, tokenizer


def wrap_backbone(config: DumpEmbedConfig, backbone: PreTrainedModel) -> DumpEmbedModel:
    """A `DumpEmbedModel` around an already loaded backbone, without allocating a second copy of its weights."""
    with torch.device("meta"):
        model = DumpEmbedModel(config)
    model.backbone = backbone
    model.projection = DumpProjection(config.hidden_size, config.projection_dim)
    return model.eval()


def build_dump_model(
    backbone: str | Path, options: BuildOptions = BuildOptions(), revision: str | None = None
) -> tuple[DumpEmbedModel, PreTrainedTokenizerBase]:
    """Wrap a backbone as a `DumpEmbedModel` with K [DUMP] tokens; returns the model and its tokenizer."""
    model, tokenizer = load_backbone(backbone, revision)
    if getattr(model.config, "is_encoder_decoder", False):
        raise ValueError(
            f"{backbone!r} is an encoder-decoder model ({model.config.model_type}); DumpEmbed wraps encoders and "
            "decoders only. Save its encoder on its own (e.g. T5EncoderModel) and build from that folder."
        )
    decoder = is_decoder_backbone(model.config)
    pooling = options.pooling or (Pooling.LAST if decoder else Pooling.CLS)
    max_seq_length = options.max_seq_length or _default_max_seq_length(str(backbone), tokenizer, model.config, revision)

    position_limit = getattr(model.config, "max_position_embeddings", None)
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
    if dump.ids:
        grow_embeddings(model, max(dump.ids) + 1)
    first_token_id = tokenizer("x")["input_ids"][0] if dump.offset > 0 else None
    init_dump_rows(model, list(dump.ids), options.init, first_token_id=first_token_id, seed=options.seed)
    tokenizer.model_max_length = max_seq_length

    model.config._name_or_path = embedded_hub_id(backbone) or public_path(backbone)  # no local path in config.json
    config = DumpEmbedConfig(
        text_config=model.config,
        num_dump_tokens=options.num_dump_tokens,
        dump_token_ids=list(dump.ids),
        dump_token_offset=dump.offset,
        pooling=pooling.value,
        normalize=options.normalize,
        base_model=embedded_hub_id(backbone) or public_path(backbone),
        dump_init=options.init.value,
    )
    dump_model = wrap_backbone(config, model)
    if options.prompt is not None:
        from .prompting import set_prompt_mode

        set_prompt_mode(dump_model, tokenizer, options.prompt)
    logger.info(
        "Built DumpEmbed model: backbone %s (%s), K=%d at offset %d, pooling %s, max_seq_length %d",
        backbone, "decoder" if decoder else "encoder", options.num_dump_tokens, dump.offset, pooling.value,
        max_seq_length,
    )
    return dump_model, tokenizer


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
        write_sentence_transformers_files(staging)
        write_card(staging, model_id=public_path(out_dir))
    return Path(out_dir)


def build(
    backbone: str | Path,
    out_dir: str | Path,
    options: BuildOptions = BuildOptions(),
    revision: str | None = None,
    overwrite: bool = False,
) -> Path:
    """`build_dump_model` then `save_dump_model`: the `hf-dumpembed build` command."""
    check_output_dir(out_dir, overwrite, inputs=[backbone])  # fail before loading anything
    with output_lock(out_dir):  # one writer per output, from the start
        model, tokenizer = build_dump_model(backbone, options, revision)
        return save_dump_model(model, tokenizer, out_dir, overwrite=overwrite)
