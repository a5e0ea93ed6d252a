"""The decoder prefix cache of a DumpEmbed model (remote code: imports only torch and transformers).

Every row of a causal backbone starts with the same tokens (BOS, the K [DUMP] tokens, a prompt's opening), whose
states do not depend on the text after them: `PrefixCacheMixin` computes their keys and values once and runs the
backbone only on the rest of each row, at inference. `DumpEmbedModel` (``modeling_dumpembed.py``) inherits it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer
from transformers.modeling_outputs import BaseModelOutput
from transformers.utils import logging

logger = logging.get_logger(__name__)


def first_token_index(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index of the first non-padding token of each row (0 under right padding). Defined here, below the modeling
    file that imports it (its pooling uses it too), so that the imports between the two run one way."""
    return (attention_mask.cumsum(dim=1) == 0).sum(dim=1)


# Prefix caching (causal backbones, inference only; see `PrefixCacheMixin.prefix_cached_forward`).
# Distinct prefixes kept per model: the [DUMP] lead, each prompt's opening, ... (least recently used dropped first).
PREFIX_CACHE_ENTRIES = 8
# The first cached batch of a model is also run uncached and must agree to this tolerance, relative to the size of
# its states (the check catches a backbone that does not take a key/value cache exactly; rounding passes).
PREFIX_CACHE_CHECK_TOLERANCE = {torch.float16: 2e-2, torch.bfloat16: 2e-2}
PREFIX_CACHE_CHECK_DEFAULT = 1e-4
_CAUSAL_ARCHITECTURE_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def is_causal_backbone(config) -> bool:
    """Whether every token of the backbone sees only the tokens before it, so that the states of a row's first
    tokens do not depend on the rest: a causal-LM architecture, ``is_decoder``, or a model type with a causal-LM head
    and no masked-LM head (the package's decoder rule), unless the config makes the attention bidirectional."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_MASKED_LM_MAPPING_NAMES,
    )

    if getattr(config, "use_bidirectional_attention", False) or not getattr(config, "is_causal", True):
        return False
    if any(arch.endswith(_CAUSAL_ARCHITECTURE_SUFFIXES) for arch in getattr(config, "architectures", None) or []):
        return True
    if getattr(config, "is_decoder", False):
        return True
    model_type = getattr(config, "model_type", None)
    return model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES


def leading_tokens(input_ids: torch.Tensor, attention_mask: torch.Tensor, width: int) -> torch.Tensor:
    """(batch, width): each row's first ``width`` real tokens, under left or right padding."""
    offsets = torch.arange(width, device=input_ids.device)[None, :]
    index = (first_token_index(attention_mask)[:, None] + offsets).clamp(max=input_ids.shape[1] - 1)
    return input_ids.gather(1, index)


def common_prefix_length(tokens: torch.Tensor) -> int:
    """How many leading columns of ``tokens`` (batch, width) are the same in every row."""
    same = (tokens == tokens[:1]).all(dim=0)
    return int(same.long().cumprod(dim=0).sum())


def rest_inputs(input_ids: torch.Tensor, attention_mask: torch.Tensor, length: int
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's real tokens after its first ``length``, right-padded: (ids, mask), both (batch, longest rest)."""
    counts = attention_mask.long().sum(dim=1) - length
    offsets = torch.arange(int(counts.max()), device=input_ids.device)[None, :]
    index = (first_token_index(attention_mask)[:, None] + length + offsets).clamp(max=input_ids.shape[1] - 1)
    return input_ids.gather(1, index), (offsets < counts[:, None]).to(attention_mask.dtype)


def place_states(prefix: torch.Tensor, rest: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(batch, seq, hidden) token states laid out as ``attention_mask`` lays out the rows (either padding side):
    each row's first P real positions take the shared ``prefix`` states (P, hidden), its other real positions the
    ``rest`` states (batch, S, hidden, right-padded, as `rest_inputs` made them); padding positions are zeros."""
    batch, seq = attention_mask.shape
    length = prefix.shape[0]
    relative = torch.arange(seq, device=rest.device)[None, :] - first_token_index(attention_mask)[:, None]
    real = attention_mask.bool()
    in_prefix, in_rest = real & (relative < length), real & (relative >= length)
    out = rest.new_zeros(batch, seq, rest.shape[-1])
    out[in_prefix] = prefix.to(rest.dtype)[relative[in_prefix]]
    rows = torch.arange(batch, device=rest.device)[:, None].expand(batch, seq)
    out[in_rest] = rest[rows[in_rest], relative[in_rest] - length]
    return out


def states_agree(cached: torch.Tensor, plain: torch.Tensor, attention_mask: torch.Tensor) -> bool:
    """Whether the cached forward's states equal the plain forward's at every real position, up to rounding
    (`PREFIX_CACHE_CHECK_TOLERANCE` times the largest state, at least 1)."""
    real = attention_mask.bool()
    a, b = cached[real].float(), plain[real].float()
    tolerance = PREFIX_CACHE_CHECK_TOLERANCE.get(plain.dtype, PREFIX_CACHE_CHECK_DEFAULT)
    scale = max(1.0, float(b.abs().max())) if b.numel() else 1.0
    return bool(torch.isfinite(a).all()) and (not a.numel() or float((a - b).abs().max()) <= tolerance * scale)


@dataclass
class PrefixStates:
    """What the backbone computed for one constant prefix (batch 1): each layer's keys and values (1, heads, P,
    head_dim), the final token states (P, hidden) and every layer's token states (for ``output_hidden_states``)."""

    keys_values: list[tuple[torch.Tensor, torch.Tensor]]
    last_hidden_state: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None


class PrefixCacheMixin:
    """The prefix cache of `DumpEmbedModel` (inherited before `PreTrainedModel`). It reads the model's
    ``backbone``, ``config`` (``prefix_cache``, ``dump_token_offset``, ``num_dump_tokens``, ``prompt_mode``,
    ``prompt_token_ids``, ``text_config``) and ``training``, and keeps its own state in the ``_prefix_cache*``
    attributes `init_prefix_cache` sets."""

    def init_prefix_cache(self) -> None:
        """Set the cache's state: empty, not yet checked against the plain forward, no backbone verdict yet."""
        self._prefix_cache_off: str | None = None  # why this backbone cannot use the prefix cache, once found
        self._cache_arguments: tuple[str, bool] | None = None  # the backbone's cache keyword, cache_position taken
        self._prefix_cache_checked = False  # the first cached batch is compared with the plain forward
        self._prefix_cache_notes: set[str] = set()
        self.clear_prefix_cache()

    def clear_prefix_cache(self) -> None:
        """Drop the cached prefix states; the next inference batch computes them again. Weight changes made with
        tensor operations (optimizer steps, ``load_state_dict``, ``copy_``, ``.to()``) are noticed without this
        (the cache is keyed on each tensor's storage and version counter), and ``train()`` clears it; a write
        through ``tensor.data`` is not noticed: call this after one."""
        self._prefix_cache: dict[tuple[int, ...], PrefixStates] = {}
        self._prefix_cache_signature: tuple | None = None

    def train(self, mode: bool = True):
        """`nn.Module.train`; entering training drops the prefix cache (training never uses it). Switching to
        evaluation mode, which sentence-transformers does on every ``encode``, keeps it."""
        if mode:
            self.clear_prefix_cache()
        return super().train(mode)

    def _note_plain_forward(self, reason: str, level: str = "warning") -> None:
        """Log, once per model and reason, why batches run the plain (uncached) forward."""
        if reason not in self._prefix_cache_notes:
            self._prefix_cache_notes.add(reason)
            getattr(logger, level)("DumpEmbed prefix cache not used, the plain forward runs (same vectors): %s",
                                   reason)

    def _prefix_cache_unsupported(self) -> str | None:
        """Why this backbone cannot reuse prefix states at all (None: it can; the first use is still checked).
        Also finds, once, the name its forward takes the cache under (``cache`` from transformers 5.24 on,
        ``past_key_values`` before) and whether it takes ``cache_position``."""
        if self._prefix_cache_off is None and self._cache_arguments is None:
            parameters = inspect.signature(self.backbone.forward).parameters
            if not is_causal_backbone(self.backbone.config):
                self._prefix_cache_off = "the backbone is not causal (an encoder or a bidirectional decoder), so " \
                                         "the states of the first tokens depend on the text."
            elif not ({"cache", "past_key_values"} & set(parameters)) or "position_ids" not in parameters:
                self._prefix_cache_off = (f"{type(self.backbone).__name__}.forward takes no key/value cache and "
                                          "position ids.")
            else:
                self._cache_arguments = ("cache" if "cache" in parameters else "past_key_values",
                                         "cache_position" in parameters)
        return self._prefix_cache_off

    def constant_prefix_length(self) -> int:
        """How many tokens every row starts with by construction: the template's lead (BOS, [CLS]) and the K
        [DUMP] tokens, then, with a ``prompt_mode``, the prompt's opening that `compose_prompt` puts after them."""
        length = self.config.dump_token_offset + self.config.num_dump_tokens
        if self.config.prompt_mode is not None:
            length += len((self.config.prompt_token_ids or {}).get("prefix") or [])
        return length

    def _cacheable_prefix(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[int, ...]:
        """The token ids whose states this batch takes from the cache (empty: none). Several rows: all the tokens
        they have in common at the start (at least the constant prefix, else the batch is refused as one whose rows
        do not share it), leaving every row one token of its own. One row: the longest cached prefix it starts
        with, else its constant prefix when its lead is the backbone's BOS (``dump_token_offset`` of them)."""
        shortest = int(attention_mask.long().sum(dim=1).min()) - 1
        if shortest < 1:
            return ()
        tokens = leading_tokens(input_ids, attention_mask, shortest)
        constant = min(self.constant_prefix_length(), shortest)
        if tokens.shape[0] > 1:
            length = common_prefix_length(tokens)
            if length < constant:
                self._note_plain_forward(
                    f"the rows do not share their first {constant} tokens (BOS, [DUMP] tokens, prompt opening); "
                    "the tokenizer's template seems to put text before the [DUMP] prefix.")
                return ()
            return tuple(tokens[0, :length].tolist())
        row = tokens[0].tolist()
        cached = [key for key in self._prefix_cache if len(key) <= len(row) and tuple(row[: len(key)]) == key]
        if cached:
            return max(cached, key=len)
        offset = self.config.dump_token_offset
        expected = [self.config.text_config.bos_token_id] * offset
        if row[:offset] != expected:
            self._note_plain_forward(f"the row's first {offset} token(s) {row[:offset]} are not the backbone's "
                                     f"BOS {expected}, so they may be text.")
            return ()
        return tuple(row[:constant])

    def _weights_signature(self) -> tuple | None:
        """Storage and version counter of every backbone tensor (changes with any in-place update, ``.to()``,
        ``load_state_dict``); None for inference tensors, which keep no version counter."""
        try:
            return tuple((t.data_ptr(), t._version) for t in [*self.backbone.parameters(), *self.backbone.buffers()])
        except RuntimeError:
            return None

    def _prefix_states(self, key: tuple[int, ...], like: torch.Tensor) -> PrefixStates | None:
        """The cached states of prefix ``key`` (computed now if missing: one batch-1 forward); None when the
        backbone's cache is not a plain key/value cache (sliding-window, recurrent or hybrid layers)."""
        if key in self._prefix_cache:
            self._prefix_cache[key] = self._prefix_cache.pop(key)  # most recently used last
            return self._prefix_cache[key]
        ids = torch.tensor([key], dtype=like.dtype, device=like.device)
        with torch.inference_mode(False), torch.no_grad():  # plain tensors, usable outside inference mode too
            outputs = self.backbone(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True,
                                    output_hidden_states=True, return_dict=True)
        cache = getattr(outputs, "cache", None) or getattr(outputs, "past_key_values", None)
        layers = getattr(cache, "layers", None)
        if not isinstance(cache, DynamicCache) or not layers or any(type(layer) is not DynamicLayer
                                                                    or layer.keys is None for layer in layers):
            self._prefix_cache_off = (f"{type(self.backbone).__name__} keeps no plain key/value cache "
                                      f"({type(cache).__name__}; sliding-window, recurrent or hybrid layers).")
            return None
        hidden = getattr(outputs, "hidden_states", None)
        states = PrefixStates(keys_values=[(layer.keys, layer.values) for layer in layers],
                              last_hidden_state=outputs.last_hidden_state[0],
                              hidden_states=tuple(h[0] for h in hidden) if hidden else None)
        if len(self._prefix_cache) >= PREFIX_CACHE_ENTRIES:
            del self._prefix_cache[next(iter(self._prefix_cache))]
        self._prefix_cache[key] = states
        return states

    def _run_after_prefix(self, prefix: PrefixStates, length: int, input_ids: torch.Tensor,
                          attention_mask: torch.Tensor, want_hidden: bool) -> BaseModelOutput | None:
        """The backbone on each row's tokens after the ``length`` cached ones (right-padded; positions counted on
        from ``length``; the mask covers the cached prefix and the rest), its states put back in the caller's
        layout. None when per-layer states were asked for and cannot be rebuilt."""
        rest_ids, rest_mask = rest_inputs(input_ids, attention_mask, length)
        batch, width = rest_ids.shape
        positions = torch.arange(length, length + width, device=rest_ids.device)
        cache = DynamicCache(ddp_cache_data=[(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1))
                                             for k, v in prefix.keys_values])
        cache_name, takes_cache_position = self._cache_arguments
        kwargs = {cache_name: cache}
        if takes_cache_position:
            kwargs["cache_position"] = positions
        rest = self.backbone(
            input_ids=rest_ids, attention_mask=torch.cat([rest_mask.new_ones(batch, length), rest_mask], dim=1),
            position_ids=positions[None, :].expand(batch, -1), use_cache=True, output_attentions=False,
            output_hidden_states=want_hidden, return_dict=True, **kwargs,
        )
        hidden_states = None
        if want_hidden:
            if prefix.hidden_states is None or len(prefix.hidden_states) != len(rest.hidden_states or ()):
                self._note_plain_forward("the backbone's per-layer states could not be rebuilt.")
                return None
            hidden_states = tuple(place_states(p, r, attention_mask)
                                  for p, r in zip(prefix.hidden_states, rest.hidden_states, strict=True))
        return BaseModelOutput(last_hidden_state=place_states(prefix.last_hidden_state, rest.last_hidden_state,
                                                              attention_mask), hidden_states=hidden_states)

    def prefix_cached_forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                              output_attentions: bool | None, output_hidden_states: bool | None,
                              plain) -> BaseModelOutput | None:
        """The backbone's outputs on ``input_ids`` with the states of the tokens every row starts with (BOS, the
        [DUMP] tokens, a prompt's opening) reused from the prefix cache, or None where the plain forward must run.

        A causal backbone computes those tokens' keys and values the same way whatever text follows, so they are
        computed once (per prefix, kept while the weights stay the same), expanded over the batch as a
        ``DynamicCache``, and the backbone runs only on each row's remaining tokens (right-padded after the
        prefix, positions counted on from it, a 2-D mask over prefix + rest). ``last_hidden_state`` (and
        ``hidden_states``) are put back in the caller's layout, either padding side; padding positions hold zeros.
        None (the plain forward) under training or with gradients on (the [DUMP] rows are trained), with
        ``config.prefix_cache`` false, when attention maps are asked for, for a backbone that is not causal or
        keeps another kind of cache (logged once), and for rows that share no constant prefix. The first cached
        batch of a model is also run by ``plain`` (the uncached backbone) and compared; a disagreement switches the
        cache off for the model (logged) and returns the plain outputs.
        """
        if (not self.config.prefix_cache or self.training or torch.is_grad_enabled()
                or torch.compiler.is_compiling() or torch.jit.is_tracing()):
            return None
        reason = self._prefix_cache_unsupported()
        if reason is not None:
            self._note_plain_forward(reason, "info" if "not causal" in reason else "warning")
            return None
        config = self.backbone.config
        if output_attentions or (output_attentions is None and getattr(config, "output_attentions", False)):
            self._note_plain_forward("attention maps were asked for (output_attentions).", "info")
            return None
        key = self._cacheable_prefix(input_ids, attention_mask)
        if not key:
            return None
        signature = self._weights_signature()
        if signature is None:
            self._note_plain_forward("the backbone's weights are inference tensors (created under "
                                     "torch.inference_mode), whose changes cannot be detected.")
            return None
        if signature != self._prefix_cache_signature:
            self.clear_prefix_cache()
            self._prefix_cache_signature = signature
        prefix = self._prefix_states(key, input_ids)
        if prefix is None:
            self._note_plain_forward(self._prefix_cache_off)
            return None
        want_hidden = output_hidden_states if output_hidden_states is not None else bool(
            getattr(config, "output_hidden_states", False))
        outputs = self._run_after_prefix(prefix, len(key), input_ids, attention_mask, want_hidden)
        if outputs is None:
            return None
        if not self._prefix_cache_checked:
            reference = plain()
            if not states_agree(outputs.last_hidden_state, reference.last_hidden_state, attention_mask):
                self._prefix_cache_off = (f"{type(self.backbone).__name__} gave other states with the cached "
                                          "prefix than without it; the cache is off for this model.")
                self._note_plain_forward(self._prefix_cache_off)
                self.clear_prefix_cache()
                return reference
            self._prefix_cache_checked = True
        return outputs


__all__ = ["PrefixCacheMixin", "PrefixStates", "first_token_index", "is_causal_backbone"]
