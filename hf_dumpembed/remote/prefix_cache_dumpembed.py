"""The decoder prefix cache `DumpEmbedModel` inherits (remote code: torch and transformers only): every row of a
causal backbone starts with the same tokens (BOS, the K [DUMP] tokens, a prompt's opening), whose states do not depend
on the text after them, so at inference their keys and values are computed once and the backbone runs on the rest."""

from __future__ import annotations

import inspect
from typing import NamedTuple

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer
from transformers.modeling_outputs import BaseModelOutput
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES, MODEL_FOR_MASKED_LM_MAPPING_NAMES
from transformers.utils import logging

logger = logging.get_logger(__name__)

PREFIX_CACHE_ENTRIES = 8  # distinct prefixes kept per model, the least recently used dropped first
# The first cached batch of a model is also run uncached and must agree to this tolerance times its largest state (at
# least 1): rounding passes, a backbone that does not take a key/value cache exactly does not.
PREFIX_CACHE_CHECK_TOLERANCE = {torch.float16: 2e-2, torch.bfloat16: 2e-2}
PREFIX_CACHE_CHECK_DEFAULT = 1e-4
_CAUSAL_ARCHITECTURE_SUFFIXES = ("ForCausalLM", "LMHeadModel")


def first_token_index(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index of the first non-padding token of each row (0 under right padding)."""
    return (attention_mask.cumsum(dim=1) == 0).sum(dim=1)


def is_causal_backbone(config) -> bool:
    """Whether each token of the backbone sees only the tokens before it (the package's decoder rule): a causal-LM
    architecture, ``is_decoder``, or a model type with a causal-LM head and no masked-LM head, unless the config makes
    the attention bidirectional."""
    if getattr(config, "use_bidirectional_attention", False) or not getattr(config, "is_causal", True):
        return False
    if any(arch.endswith(_CAUSAL_ARCHITECTURE_SUFFIXES) for arch in getattr(config, "architectures", None) or []):
        return True
    model_type = getattr(config, "model_type", None)
    return bool(getattr(config, "is_decoder", False)) or (
        model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES)


def place_states(prefix: torch.Tensor, rest: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(batch, seq, hidden) states in the caller's layout (either padding side): each row's first P real positions
    take the shared ``prefix`` states (P, hidden), its other real positions the right-padded ``rest`` states (batch,
    S, hidden); padding positions are zeros."""
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


class PrefixStates(NamedTuple):
    """One constant prefix's states (batch 1): each layer's keys and values (1, heads, P, head_dim), the final token
    states (P, hidden) and every layer's token states (for ``output_hidden_states``)."""

    keys_values: list[tuple[torch.Tensor, torch.Tensor]]
    last_hidden_state: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None


class PrefixCacheMixin:
    """The prefix cache of `DumpEmbedModel` (inherited before `PreTrainedModel`): reads the model's ``backbone``,
    ``config`` and ``training``; keeps its state in the ``_prefix_cache*`` attributes `init_prefix_cache` sets."""

    def init_prefix_cache(self) -> None:
        """An empty cache, not yet checked against the plain forward, no verdict on the backbone yet."""
        self._prefix_cache_off: str | None = None  # why this backbone cannot use the cache, once found
        self._cache_arguments: tuple[str, bool] | None = None  # its forward's cache keyword, cache_position taken
        self._prefix_cache_checked = False  # the first cached batch is compared with the plain forward
        self._prefix_cache_notes: set[str] = set()
        self.clear_prefix_cache()

    def clear_prefix_cache(self) -> None:
        """Drop the cached states. Weight changes made with tensor operations (optimizer steps, ``load_state_dict``,
        ``copy_``, ``.to()``) are noticed without this (each tensor's storage and version counter are compared);
        a write through ``tensor.data`` is not: call this after one."""
        self._prefix_cache: dict[tuple[int, ...], PrefixStates] = {}
        self._prefix_cache_signature: tuple | None = None

    def train(self, mode: bool = True):
        """`nn.Module.train`; entering training drops the cache (evaluation mode, set by every encode, keeps it)."""
        if mode:
            self.clear_prefix_cache()
        return super().train(mode)

    def constant_prefix_length(self) -> int:
        """How many tokens every row starts with by construction: the lead (BOS, [CLS]), the K [DUMP] tokens and,
        with a ``prompt_mode``, the prompt's opening that `compose_prompt` puts after them."""
        length = self.config.dump_token_offset + self.config.num_dump_tokens
        if self.config.prompt_mode is not None:
            length += len((self.config.prompt_token_ids or {}).get("prefix") or [])
        return length

    def prefix_cached_forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                              output_attentions: bool | None, output_hidden_states: bool | None,
                              plain) -> BaseModelOutput | None:
        """The backbone's outputs with the states of the rows' common first tokens taken from the cache, in the
        caller's layout (zeros at padding); None where ``plain`` must run: training or gradients on, the switch off,
        attention maps asked for, a backbone that is not causal or keeps another cache, rows sharing no constant
        prefix (each reason logged once). The first cached batch is checked against ``plain``: a disagreement turns
        the cache off for the model."""
        if (not self.config.prefix_cache or self.training or torch.is_grad_enabled()
                or torch.compiler.is_compiling() or torch.jit.is_tracing()):
            return None
        if self._unsupported() is not None:
            self._note(self._prefix_cache_off, "info" if "not causal" in self._prefix_cache_off else "warning")
            return None
        config = self.backbone.config
        if output_attentions or (output_attentions is None and getattr(config, "output_attentions", False)):
            self._note("attention maps were asked for (output_attentions).", "info")
            return None
        key = self._cacheable_prefix(input_ids, attention_mask)
        if not key:
            return None
        tensors = (*self.backbone.parameters(), *self.backbone.buffers())
        try:  # storage and version of every backbone tensor: any in-place update, .to(), load_state_dict changes it
            signature = tuple((t.data_ptr(), t._version) for t in tensors)
        except RuntimeError:  # inference tensors keep no version counter
            self._note("the backbone's weights are inference tensors (created under torch.inference_mode), whose "
                       "changes cannot be detected.")
            return None
        if signature != self._prefix_cache_signature:
            self.clear_prefix_cache()
            self._prefix_cache_signature = signature
        prefix = self._prefix_states(key, input_ids)
        if prefix is None:
            self._note(self._prefix_cache_off)
            return None
        want_hidden = output_hidden_states if output_hidden_states is not None else bool(
            getattr(config, "output_hidden_states", False))
        outputs = self._run_after_prefix(prefix, len(key), input_ids, attention_mask, want_hidden)
        if outputs is None or self._prefix_cache_checked:
            return outputs
        reference = plain()
        if not self._states_agree(outputs.last_hidden_state, reference.last_hidden_state, attention_mask):
            self._prefix_cache_off = (f"{type(self.backbone).__name__} gave other states with the cached prefix "
                                      "than without it; the cache is off for this model.")
            self._note(self._prefix_cache_off)
            self.clear_prefix_cache()
            return reference
        self._prefix_cache_checked = True
        return outputs

    def _note(self, reason: str, level: str = "warning") -> None:
        """Log, once per model and reason, why batches run the plain (uncached) forward."""
        if reason not in self._prefix_cache_notes:
            self._prefix_cache_notes.add(reason)
            getattr(logger, level)("DumpEmbed prefix cache not used, the plain forward runs (same vectors): %s",
                                   reason)

    def _unsupported(self) -> str | None:
        """Why this backbone cannot reuse prefix states at all (None: it can). Also finds, once, the name its forward
        takes the cache under (``cache`` from transformers 5.24 on, ``past_key_values`` before) and whether it takes
        ``cache_position``."""
        if self._prefix_cache_off is None and self._cache_arguments is None:
            parameters = inspect.signature(self.backbone.forward).parameters
            if not is_causal_backbone(self.backbone.config):
                self._prefix_cache_off = ("the backbone is not causal (an encoder or a bidirectional decoder), so the "
                                          "states of the first tokens depend on the text.")
            elif not ({"cache", "past_key_values"} & set(parameters)) or "position_ids" not in parameters:
                self._prefix_cache_off = (f"{type(self.backbone).__name__}.forward takes no key/value cache and "
                                          "position ids.")
            else:
                self._cache_arguments = ("cache" if "cache" in parameters else "past_key_values",
                                         "cache_position" in parameters)
        return self._prefix_cache_off

    def _cacheable_prefix(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[int, ...]:
        """The token ids whose states this batch takes from the cache (empty: none). Several rows: every token they
        share at the start (at least the constant prefix, else none), leaving each row one token of its own. One row:
        the longest cached prefix it starts with, else its constant prefix when its lead is the backbone's BOS."""
        shortest = int(attention_mask.long().sum(dim=1).min()) - 1
        if shortest < 1:
            return ()
        offsets = torch.arange(shortest, device=input_ids.device)[None, :]
        index = (first_token_index(attention_mask)[:, None] + offsets).clamp(max=input_ids.shape[1] - 1)
        tokens = input_ids.gather(1, index)  # each row's first `shortest` real tokens
        constant = min(self.constant_prefix_length(), shortest)
        if tokens.shape[0] > 1:
            length = int((tokens == tokens[:1]).all(dim=0).long().cumprod(dim=0).sum())
            if length < constant:
                self._note(f"the rows do not share their first {constant} tokens (BOS, [DUMP] tokens, prompt "
                           "opening); the tokenizer's template seems to put text before the [DUMP] prefix.")
                return ()
            return tuple(tokens[0, :length].tolist())
        row = tokens[0].tolist()
        cached = [key for key in self._prefix_cache if len(key) <= len(row) and tuple(row[: len(key)]) == key]
        if cached:
            return max(cached, key=len)
        offset = self.config.dump_token_offset
        expected = [self.config.text_config.bos_token_id] * offset
        if row[:offset] != expected:
            self._note(f"the row's first {offset} token(s) {row[:offset]} are not the backbone's BOS {expected}, so "
                       "they may be text.")
            return ()
        return tuple(row[:constant])

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
        if len(self._prefix_cache) >= PREFIX_CACHE_ENTRIES:
            del self._prefix_cache[next(iter(self._prefix_cache))]
        self._prefix_cache[key] = PrefixStates([(layer.keys, layer.values) for layer in layers],
                                               outputs.last_hidden_state[0],
                                               tuple(h[0] for h in hidden) if hidden else None)
        return self._prefix_cache[key]

    def _run_after_prefix(self, prefix: PrefixStates, length: int, input_ids: torch.Tensor,
                          attention_mask: torch.Tensor, want_hidden: bool) -> BaseModelOutput | None:
        """The backbone on each row's tokens after the ``length`` cached ones (right-padded, positions counted on
        from ``length``, the mask over prefix and rest), its states put back in the caller's layout; None when
        per-layer states were asked for and cannot be rebuilt."""
        counts = attention_mask.long().sum(dim=1) - length
        offsets = torch.arange(int(counts.max()), device=input_ids.device)[None, :]
        index = (first_token_index(attention_mask)[:, None] + length + offsets).clamp(max=input_ids.shape[1] - 1)
        rest_ids, rest_mask = input_ids.gather(1, index), (offsets < counts[:, None]).to(attention_mask.dtype)
        batch, width = rest_ids.shape
        positions = torch.arange(length, length + width, device=rest_ids.device)
        cache_name, takes_cache_position = self._cache_arguments
        kwargs = {cache_name: DynamicCache(ddp_cache_data=[(k.expand(batch, -1, -1, -1), v.expand(batch, -1, -1, -1))
                                                            for k, v in prefix.keys_values])}
        if takes_cache_position:
            kwargs["cache_position"] = positions
        rest = self.backbone(
            input_ids=rest_ids, attention_mask=torch.cat([rest_mask.new_ones(batch, length), rest_mask], dim=1),
            position_ids=positions[None, :].expand(batch, -1), use_cache=True, output_attentions=False,
            output_hidden_states=want_hidden, return_dict=True, **kwargs)
        hidden_states = None
        if want_hidden:
            if prefix.hidden_states is None or len(prefix.hidden_states) != len(rest.hidden_states or ()):
                self._note("the backbone's per-layer states could not be rebuilt.")
                return None
            hidden_states = tuple(place_states(p, r, attention_mask)
                                  for p, r in zip(prefix.hidden_states, rest.hidden_states, strict=True))
        return BaseModelOutput(last_hidden_state=place_states(prefix.last_hidden_state, rest.last_hidden_state,
                                                              attention_mask), hidden_states=hidden_states)

    @staticmethod
    def _states_agree(cached: torch.Tensor, plain: torch.Tensor, attention_mask: torch.Tensor) -> bool:
        """Whether the cached forward's states equal the plain forward's at every real position, to rounding."""
        real = attention_mask.bool()
        a, b = cached[real].float(), plain[real].float()
        tolerance = PREFIX_CACHE_CHECK_TOLERANCE.get(plain.dtype, PREFIX_CACHE_CHECK_DEFAULT)
        scale = max(1.0, float(b.abs().max())) if b.numel() else 1.0
        return bool(torch.isfinite(a).all()) and (not a.numel() or float((a - b).abs().max()) <= tolerance * scale)


__all__ = ["PrefixCacheMixin", "PrefixStates", "first_token_index", "is_causal_backbone"]
