"""Grow a backbone's input embedding matrix for the [DUMP] tokens and initialise their rows."""

from __future__ import annotations

from enum import Enum

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase


class DumpInit(str, Enum):
    """How the [DUMP] rows start.

    ``mean``: vocabulary mean + small noise; ``cls``: a copy of [CLS]/BOS + small noise; ``normal``: N(0, 0.02);
    ``sep``: an exact copy of the trailing special token ([SEP] for encoders, EOS for decoders), the token BERT's
    heads park attention on (Clark et al., 2019, "What Does BERT Look At?"); ``token``: an exact copy of one named
    vocabulary token (``init_token``, e.g. "." — the other attention sink Clark et al. found; `hf-dumpembed analyze`
    lists the tokens a model's heads attend to most); ``auto``: the measured least harmful start for the backbone
    kind (`resolve_init`).

    The one definition of the init modes, in ``build --init``'s order: the CLI's choices and help (`INIT_HELP`),
    `BuildOptions`, the training config's ``model.init`` and the card's texts (`INIT_CARD_TEXT`) derive from it;
    a new mode is a member, its two texts below and its rule in `init_dump_rows`, all in this file.
    """

    AUTO = "auto"
    SEP = "sep"
    MEAN = "mean"
    CLS = "cls"
    NORMAL = "normal"
    TOKEN = "token"


# The untrained start that cost the source least in BENCHMARKS.md ("Untrained [DUMP] models", where the figures
# are): an exact [SEP] copy for encoders (all-MiniLM-L6-v2); for decoders (SmolLM2-135M-Instruct, which adds no
# BOS, so the [DUMP] slots sit where the attention sink is) small N(0, 0.02) rows.
ENCODER_INIT = DumpInit.SEP
DECODER_INIT = DumpInit.NORMAL
# Each mode in `build --init`'s help.
INIT_HELP: dict[DumpInit, str] = {
    DumpInit.AUTO: f"the measured least harmful start: {ENCODER_INIT.value} for encoders, {DECODER_INIT.value} for "
                   "decoders",
    DumpInit.SEP: "exact copy of [SEP]/EOS, an attention sink",
    DumpInit.MEAN: "vocabulary mean + small noise",
    DumpInit.CLS: "copy of [CLS]/BOS + noise",
    DumpInit.NORMAL: "N(0, 0.02)",
    DumpInit.TOKEN: "exact copy of --init-token",
}
# Each recorded mode in the model card (`card.init_text`; ``auto`` is recorded as the mode it resolved to).
INIT_CARD_TEXT: dict[DumpInit, str] = {
    DumpInit.SEP: "exact copy of the [SEP]/EOS embedding row (an attention sink)",
    DumpInit.MEAN: "mean of the vocabulary embedding rows plus small Gaussian noise",
    DumpInit.CLS: "copy of the [CLS]/BOS embedding row plus small Gaussian noise",
    DumpInit.NORMAL: "N(0, 0.02)",
    DumpInit.TOKEN: "exact copy of the embedding row of the token {token!r}",
}


def resolve_init(init: DumpInit | str, decoder: bool) -> DumpInit:
    """``auto`` -> the measured default for encoders or decoders; any other init unchanged."""
    init = DumpInit(init)
    if init is DumpInit.AUTO:
        return DECODER_INIT if decoder else ENCODER_INIT
    return init


MEAN_NOISE_SCALE = 0.01  # noise std, relative to the per-dimension std of the vocabulary rows


def grow_embeddings(backbone: PreTrainedModel, num_tokens: int) -> None:
    """Make the input embedding matrix at least ``num_tokens`` rows; never shrink it."""
    if num_tokens > backbone.get_input_embeddings().weight.shape[0]:
        backbone.resize_token_embeddings(num_tokens, mean_resizing=False)


@torch.no_grad()
def init_dump_rows(
    backbone: PreTrainedModel,
    dump_ids: list[int],
    init: DumpInit | str = DumpInit.MEAN,
    first_token_id: int | None = None,
    seed: int = 0,
    copy_token_id: int | None = None,
) -> None:
    """Set the embedding rows of ``dump_ids`` in place, as ``init`` says (`DumpInit`; the noise: `MEAN_NOISE_SCALE`).

    ``cls`` copies the row of ``first_token_id`` ([CLS] or BOS); ``sep`` / ``token`` copy the row of
    ``copy_token_id`` ([SEP]/EOS, or the named token) exactly.
    """
    init = DumpInit(init)
    if not dump_ids:
        return
    weight = backbone.get_input_embeddings().weight
    if init in (DumpInit.SEP, DumpInit.TOKEN):
        if copy_token_id is None:
            raise ValueError(f"init={init.value!r} copies a token's row, but no token id was given.")
        weight[dump_ids] = weight[copy_token_id].detach().clone()[None, :].expand(len(dump_ids), -1)
        return
    generator = torch.Generator().manual_seed(seed)
    keep = torch.ones(weight.shape[0], dtype=torch.bool)
    keep[dump_ids] = False
    vocab_rows = weight[keep].double()
    noise_std = MEAN_NOISE_SCALE * vocab_rows.std(dim=0)
    noise = torch.randn(len(dump_ids), weight.shape[1], generator=generator, dtype=torch.float64) * noise_std
    if init is DumpInit.MEAN:
        rows = vocab_rows.mean(dim=0, keepdim=True) + noise
    elif init is DumpInit.CLS:
        if first_token_id is None:
            raise ValueError(
                "init='cls' copies the [CLS]/BOS row, but this tokenizer adds no leading special token; "
                "use init='mean' or init='normal'."
            )
        rows = weight[first_token_id].double()[None, :] + noise
    elif init is DumpInit.NORMAL:
        rows = torch.randn(len(dump_ids), weight.shape[1], generator=generator, dtype=torch.float64) * 0.02
    else:
        raise ValueError(f"init={init.value!r} has no row rule; resolve 'auto' first (`resolve_init`).")
    weight[dump_ids] = rows.to(weight.dtype)


def copy_source_token_id(
    tokenizer: PreTrainedTokenizerBase, init: DumpInit | str, init_token: str | None
) -> int | None:
    """The vocabulary id whose row ``sep`` / ``token`` inits copy (None for the other inits)."""
    init = DumpInit(init)
    if init is DumpInit.SEP:
        token_id = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
        if token_id is None:
            raise ValueError("init='sep' copies the [SEP]/EOS row, but this tokenizer has neither; use init='mean'.")
        return int(token_id)
    if init is DumpInit.TOKEN:
        if not init_token:
            raise ValueError("init='token' needs init_token, the vocabulary token to copy (e.g. '.').")
        token_id = tokenizer.convert_tokens_to_ids(init_token)
        if token_id is None or token_id == tokenizer.unk_token_id:
            raise ValueError(
                f"init_token={init_token!r} is not one token of this vocabulary; give a token exactly as the "
                "tokenizer spells it (e.g. '.' for BERT, 'Ġthe' for byte-level BPE)."
            )
        return int(token_id)
    if init_token:
        raise ValueError(f"init_token={init_token!r} is only used with init='token'; got init={init.value!r}.")
    return None
