"""Extend a tokenizer with K special tokens ``[DUMP1]..[DUMPK]`` prepended by its own post-processor.

The prefix lives in ``tokenizer.json`` (a ``TemplateProcessing`` post-processor), not in Python code, so
every runtime that reads ``tokenizer.json`` (transformers, sentence-transformers, TEI, tokenizers, fastembed) adds
it, and truncation never cuts it: the template's tokens count as special tokens.

Only the post-processor changes, so it works for the subword models of every major family (`SUPPORTED_TOKENIZERS`).
The new template is read off the source's own encodings of two probe inputs (single and pair), so whatever the source
adds in front (``[CLS]``, ``<s>``, ``<bos>``) and behind (``[SEP]``, ``</s>``, ``<|endoftext|>``) stays where it was;
the normalizer, pre-tokenizer, model and decoder are not touched. Every rewrite is checked: with the [DUMP] tokens
taken out, the new encodings must equal the source's, token for token (ids, type ids, special-token mask).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, models, processors
from transformers import PreTrainedTokenizerBase

from .tokenizer_bounds import json_items

logger = logging.getLogger(__name__)

SUPPORTED_TOKENIZERS = (
    "any fast tokenizer (tokenizer.json): WordPiece (BERT), byte-level BPE (GPT-2, Llama-3, Qwen, ModernBERT), "
    "SentencePiece Unigram (XLM-R, T5) and SentencePiece BPE with byte fallback (Llama-2, Mistral, Gemma)"
)
# Inputs the rewrite is verified on (with the [DUMP] tokens removed, each must encode exactly as in the source); the
# first two (single and pair) are the probes the template is read off.
_CHECK_INPUTS: tuple[tuple[str, ...], ...] = (
    ("hello world",), ("hello world", "second text"), (" leading space",), ("Ünïcödé café 東京 😀",),
    ("x", "tabs\tand\nlines"),
)
# tokenizer_config.json keys that make transformers regenerate the post-processor on load (dropping the prefix).
_TEMPLATE_REBUILDING_KEYS = ("add_bos_token", "add_eos_token", "add_prefix_space", "chat_template")
# Per-call settings transformers leaves behind in tokenizer_config.json (from a tokenizer.json that carried them).
_PER_CALL_KEYS = ("stride", "truncation_strategy", "pad_to_multiple_of")
# Post-processors that carry the special-token template, which the rewrite replaces.
_TEMPLATE_TYPES = ("TemplateProcessing", "BertProcessing", "RobertaProcessing")
# SentencePiece model files: they cannot hold the [DUMP] tokens or the template, so a saved folder must not offer
# them to runtimes that prefer them over tokenizer.json (llama.cpp's converter, slow tokenizers).
_SENTENCEPIECE_FILES = ("sentencepiece.bpe.model", "spiece.model", "tokenizer.model", "sentencepiece.model")
# A model_max_length at or above this is transformers' "no limit" placeholder (VERY_LARGE_INTEGER), not a length.
_NO_LIMIT = 10**9
# The tokenizer class every saved tokenizer_config.json names: the fast tokenizer over the folder's tokenizer.json.
TOKENIZER_CLASS = "PreTrainedTokenizerFast"


class UnsupportedTokenizerError(ValueError):
    """The tokenizer cannot carry the [DUMP] prefix in its tokenizer.json; the message says why and what to do."""


@dataclass(frozen=True)
class DumpTokens:
    """Where the [DUMP] tokens are: their ids in order, the position of [DUMP1], and what the template adds.

    ``leading`` / ``appended`` are the ids of the special tokens the post-processor puts before the [DUMP] tokens
    and after the text of a single input (e.g. ``(cls,)`` / ``(sep,)`` for BERT, ``()`` / ``(eos,)`` for T5 and
    Qwen3-Embedding): a last-token pooling reads ``appended[-1]`` when there is one.
    """

    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    offset: int
    kind: str  # a `tokenizer_kind`: "wordpiece", "byte-level-bpe", "sentencepiece-bpe" or "unigram"
    leading: tuple[int, ...] = ()
    appended: tuple[int, ...] = ()


def dump_token_names(num_dump_tokens: int) -> list[str]:
    """``["[DUMP1]", ..., "[DUMPK]"]``."""
    return [f"[DUMP{i}]" for i in range(1, num_dump_tokens + 1)]


def tokenizer_kind(tokenizer: PreTrainedTokenizerBase) -> str:
    """The tokenizer family: ``wordpiece``, ``byte-level-bpe``, ``sentencepiece-bpe`` (any other BPE: Metaspace or
    byte fallback, as Llama-2, Mistral, Gemma) or ``unigram`` (XLM-R, T5). Raise `UnsupportedTokenizerError` (a
    ValueError) without a tokenizers backend, for another model type (WordLevel), or for a post-processor the
    [DUMP] template cannot be merged into."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if not isinstance(backend, Tokenizer):
        raise UnsupportedTokenizerError(
            f"{type(tokenizer).__name__} has no tokenizers backend (tokenizer.json), so the [DUMP] prefix has no "
            "post-processor to live in. Load a fast tokenizer (AutoTokenizer.from_pretrained(..., use_fast=True); "
            "transformers 5 converts a SentencePiece .model file when the `sentencepiece` package is installed), "
            "or convert this one with transformers.convert_slow_tokenizer.convert_slow_tokenizer and wrap it in "
            "PreTrainedTokenizerFast(tokenizer_object=...). Supported: " + SUPPORTED_TOKENIZERS + "."
        )
    spec = json.loads(backend.to_str())
    _check_post_processor(spec.get("post_processor"))
    model = spec["model"]
    # every "type" of the pre-tokenizer (it may be nested Sequences)
    pre = {value for _, key, value in json_items(spec.get("pre_tokenizer")) if key == "type" and isinstance(value, str)}
    kinds = {"WordPiece": "wordpiece", "Unigram": "unigram",
             "BPE": "byte-level-bpe" if "ByteLevel" in pre else "sentencepiece-bpe"}
    if model["type"] in kinds:
        return kinds[model["type"]]
    raise UnsupportedTokenizerError(
        f"Tokenizer type not supported: model {model['type']!r} with pre-tokenizer {sorted(pre) or ['none']}. "
        f"[DUMP] tokens are implemented and checked for {SUPPORTED_TOKENIZERS}; other tokenizer models are "
        "refused rather than built silently wrong. Use the backbone's subword tokenizer (WordPiece, BPE or Unigram "
        "in its tokenizer.json)."
    )


def _check_post_processor(node: dict[str, Any] | None) -> None:
    """Refuse post-processor shapes the rewrite cannot merge the [DUMP] template into."""
    if node is None:
        return
    kind = node.get("type")
    if kind == "Sequence":
        inner = node.get("processors", [])
        templates = [p.get("type") for p in inner if p.get("type") in _TEMPLATE_TYPES]
        unknown = [p.get("type") for p in inner if p.get("type") not in (*_TEMPLATE_TYPES, "ByteLevel")]  # Sequence too
        if len(templates) > 1 or unknown:
            raise UnsupportedTokenizerError(
                f"The tokenizer's post-processor is a Sequence of {[p.get('type') for p in inner]}; the [DUMP] "
                "template can be merged into a Sequence holding at most one TemplateProcessing/BertProcessing/"
                "RobertaProcessing next to ByteLevel steps, not into this one. Replace it with one "
                "TemplateProcessing that adds the same special tokens (tokenizer.backend_tokenizer.post_processor "
                "= tokenizers.processors.TemplateProcessing(...)) and build again."
            )
    elif kind not in (*_TEMPLATE_TYPES, "ByteLevel"):
        raise UnsupportedTokenizerError(
            f"The tokenizer's post-processor type {kind!r} is not one the [DUMP] template can be merged into "
            f"(TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel or a Sequence of those). Replace it "
            "with a TemplateProcessing that adds the same special tokens and build again."
        )


def _template_from_encoding(encoding: Any, dump_tokens: list[str], append: str | None = None) -> list[str]:
    """Rewrite a probe encoding as a TemplateProcessing template, inserting the DUMP tokens before ``$A``.

    ``append`` (a special token's string) is added after each sequence unless the source already puts it there.
    """
    template: list[str] = []
    previous_sequence: int | None = None
    last_type = 0

    def close_sequence(next_token: str | None) -> None:
        if append is not None and previous_sequence is not None and next_token != append:
            template.append(f"{append}:{last_type}")

    for token, type_id, sequence_id, is_special in zip(
        encoding.tokens, encoding.type_ids, encoding.sequence_ids, encoding.special_tokens_mask, strict=True
    ):
        if is_special or sequence_id is None:
            close_sequence(token)
            template.append(f"{token}:{type_id}")
            previous_sequence = None
            continue
        if sequence_id == previous_sequence:
            continue
        close_sequence(None)
        if sequence_id == 0:
            template.extend(f"{name}:0" for name in dump_tokens)
        template.append(f"${'A' if sequence_id == 0 else 'B'}:{type_id}")
        previous_sequence, last_type = sequence_id, type_id
    close_sequence(None)
    return template


def _processor_from_json(node: dict[str, Any]) -> Any:
    """Deserialize one post-processor node (tokenizers has no per-component ``from_str``)."""
    shell = json.loads(Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")).to_str())
    shell["post_processor"] = node
    return Tokenizer.from_str(json.dumps(shell)).post_processor


def _merge_template(source: dict[str, Any] | None, template: dict[str, Any]) -> Any:
    """The source post-processor with its template step replaced by ``template`` (ByteLevel steps kept as they are).

    A RobertaProcessing becomes ``ByteLevel(trim_offsets, add_prefix_space) + template``: the same ids, and the same
    offset trimming it did.
    """
    if source is None:
        steps: list[dict[str, Any]] = [template]
    elif source["type"] == "Sequence":
        steps = [template if p["type"] in _TEMPLATE_TYPES else p for p in source["processors"]]
        if not any(p["type"] in _TEMPLATE_TYPES for p in source["processors"]):
            steps.append(template)
    elif source["type"] == "ByteLevel":
        steps = [source, template]
    elif source["type"] == "RobertaProcessing":
        steps = [{"type": "ByteLevel", "add_prefix_space": source.get("add_prefix_space", True),
                  "trim_offsets": source.get("trim_offsets", True), "use_regex": True}, template]
    else:
        steps = [template]
    node = steps[0] if len(steps) == 1 else {"type": "Sequence", "processors": steps}
    return _processor_from_json(node)


def _encode_all(backend: Tokenizer) -> list[Any]:
    return [backend.encode(*args, add_special_tokens=True) for args in _CHECK_INPUTS]


def _rows(encoding: Any) -> list[tuple[int, int, int, int]]:
    return list(zip(encoding.ids, encoding.type_ids, encoding.special_tokens_mask, encoding.attention_mask,
                    strict=True))


def _is_source_plus(new_rows: list[tuple[int, ...]], old_rows: list[tuple[int, ...]], extra_id: int | None) -> bool:
    """Whether ``new_rows`` is ``old_rows`` with only special ``extra_id`` tokens inserted (none when None)."""
    i = j = 0
    while i < len(new_rows):
        if j < len(old_rows) and new_rows[i] == old_rows[j]:
            i, j = i + 1, j + 1
        elif extra_id is not None and new_rows[i][0] == extra_id and new_rows[i][2] == 1:
            i += 1
        else:
            return False
    return j == len(old_rows)


def _verify_rewrite(before: list[Any], after: list[Any], dump_ids: tuple[int, ...], offset: int,
                    appended_id: int | None) -> None:
    """Raise RuntimeError unless each new encoding is the source's with only the [DUMP] tokens (and, when asked,
    the appended EOS) inserted: ids, type ids, special-token mask and attention mask."""
    k = len(dump_ids)
    for args, old, new in zip(_CHECK_INPUTS, before, after, strict=True):
        rows = _rows(new)
        if tuple(new.ids[offset : offset + k]) != dump_ids:
            problem = f"expected the [DUMP] ids {list(dump_ids)} at position {offset}"
        elif _is_source_plus(rows[:offset] + rows[offset + k :], _rows(old), appended_id):
            continue
        else:
            problem = "the rest of the encoding differs from the source tokenizer's"
        raise RuntimeError(
            f"The [DUMP] template does not reproduce the source tokenization of {args!r}: {problem} (source "
            f"{old.ids}, with [DUMP] {new.ids}). This is a bug in hf_dumpembed for this tokenizer; please report "
            "it with the tokenizer's tokenizer.json."
        )


def add_dump_tokens(tokenizer: PreTrainedTokenizerBase, num_dump_tokens: int, append_eos: bool = False) -> DumpTokens:
    """Add ``[DUMP1]..[DUMPK]`` as special tokens and make the post-processor prepend them (in place).

    The tokens go right after the special tokens the tokenizer already puts in front ([CLS] for BERT, ``<s>`` for
    XLM-R and Llama-2, ``<bos>`` for Gemma), or first when it puts none (GPT-2, Qwen, T5). Tokens the template
    appends (``[SEP]``, T5's ``</s>``, Qwen3-Embedding's ``<|endoftext|>``) stay. K = 0 rebuilds the same template
    with no DUMP tokens, so the baseline goes through the same code path and tokenizes exactly as the source.

    ``append_eos=True`` appends the tokenizer's EOS after each sequence when the source template closes the input
    with no special token (Mistral/Llama embedders such as e5-mistral-7b-instruct pool that last token).
    `DumpTokens.appended` says what the final template appends.
    """
    if not isinstance(num_dump_tokens, int) or isinstance(num_dump_tokens, bool) or num_dump_tokens < 0:
        raise ValueError(f"num_dump_tokens must be an integer >= 0; got {num_dump_tokens!r}.")
    kind = tokenizer_kind(tokenizer)
    names = dump_token_names(num_dump_tokens)
    if "[DUMP1]" in tokenizer.get_vocab():
        raise ValueError(
            "This tokenizer already has [DUMP] tokens (it comes from a DumpEmbed model); build from the original "
            "backbone instead."
        )
    backend = tokenizer.backend_tokenizer
    # Fixed-length padding or truncation left in the backend (from tokenizer.json or an earlier call) would
    # change the probes; the caller decides those per call, and save_dump_tokenizer writes the folder's length.
    backend.no_padding()
    backend.no_truncation()
    source_processor = json.loads(backend.to_str()).get("post_processor")
    before = _encode_all(backend)
    single, pair = before[0], before[1]
    offset = next(i for i, s in enumerate(single.sequence_ids) if s is not None)
    specials: dict[str, int] = {}
    for encoding in (single, pair):
        for token, token_id, is_special in zip(encoding.tokens, encoding.ids, encoding.special_tokens_mask,
                                               strict=True):
            if is_special and specials.setdefault(token, token_id) != token_id:
                raise UnsupportedTokenizerError(
                    f"The tokenizer's post-processor adds two different ids ({specials[token]}, {token_id}) for "
                    f"{token!r}; a TemplateProcessing cannot express that. Give each special token one id."
                )
    closed = any(single.special_tokens_mask[i] for i in range(_last_text(single) + 1, len(single)))
    append = None  # a source that already closes each input with a special token keeps its template as it is
    if append_eos and not closed:
        if tokenizer.eos_token is None:
            raise ValueError("append_eos=True needs an EOS token; the tokenizer has none (set tokenizer.eos_token).")
        append = str(tokenizer.eos_token)
        specials.setdefault(append, tokenizer.convert_tokens_to_ids(append))
    if names:
        tokenizer.add_special_tokens(
            {"extra_special_tokens": [AddedToken(n, special=True, normalized=False) for n in names]},
            replace_extra_special_tokens=False,
        )
    ids = [tokenizer.convert_tokens_to_ids(n) for n in names]
    specials.update(zip(names, ids, strict=True))
    template = processors.TemplateProcessing(
        single=_template_from_encoding(single, names, append),
        pair=_template_from_encoding(pair, names, append),
        special_tokens=list(specials.items()),
    )
    tokenizer.backend_tokenizer.post_processor = _merge_template(source_processor, json.loads(template.__getstate__()))
    after = _encode_all(tokenizer.backend_tokenizer)
    _verify_rewrite(before, after, tuple(ids), offset, specials[append] if append is not None else None)
    check_dump_prefix(tokenizer, tuple(ids), offset)
    new_ids = after[0].ids  # the single input's, with the [DUMP] tokens
    return DumpTokens(tokens=tuple(names), ids=tuple(ids), offset=offset, kind=kind,
                      leading=tuple(new_ids[:offset]), appended=tuple(new_ids[_last_text(after[0]) + 1 :]))


def _last_text(encoding: Any) -> int:
    """Index of the last text (non-template) token of a single-input encoding."""
    return max(i for i, s in enumerate(encoding.sequence_ids) if s is not None)


def check_dump_prefix(tokenizer: PreTrainedTokenizerBase, ids: tuple[int, ...], offset: int) -> None:
    """Raise RuntimeError unless ``tokenizer`` puts exactly ``ids`` at ``offset`` (single and pair inputs)."""
    for args in _CHECK_INPUTS[:2]:
        input_ids = tokenizer(*args)["input_ids"]
        found = tuple(input_ids[offset : offset + len(ids)])
        if found != ids:
            raise RuntimeError(
                f"The tokenizer does not prepend the [DUMP] tokens: expected {list(ids)} at position {offset}, "
                f"got {input_ids}. This is a bug in hf_dumpembed for {type(tokenizer).__name__}; please report it."
            )


def save_dump_tokenizer(tokenizer: PreTrainedTokenizerBase, out_dir: str | Path, max_length: int | None) -> None:
    """Save the tokenizer so that reloading keeps the post-processor and every file states one length.

    ``max_length`` (the model's ``max_seq_length``, [DUMP] and special tokens included; None keeps the tokenizer's
    ``model_max_length``) is written three times, all equal: ``model_max_length`` and ``max_length`` in
    tokenizer_config.json, and the truncation of tokenizer.json (longest-first, on the tokenizer's
    ``truncation_side``), which runtimes that read only tokenizer.json (onnxruntime behind a bare
    ``tokenizers.Tokenizer``, TEI) apply. Padding is not written (a batch's padding is the caller's choice), and
    whatever an earlier call left in the backend's truncation or padding is not saved.
    """
    out_dir = Path(out_dir)
    first_dump_id = tokenizer.get_vocab().get("[DUMP1]")
    if first_dump_id is not None and first_dump_id not in tokenizer("x")["input_ids"]:
        raise RuntimeError(
            "The tokenizer has [DUMP] tokens but its post-processor no longer adds them (something reset it: "
            "setting add_bos_token/add_eos_token/bos_token/eos_token regenerates the template). Set those before "
            "add_dump_tokens, not after."
        )
    if max_length is not None:
        tokenizer.model_max_length = max_length
    limit = int(tokenizer.model_max_length) if tokenizer.model_max_length < _NO_LIMIT else None
    backend = tokenizer.backend_tokenizer
    truncation, padding = backend.truncation, backend.padding
    backend.no_padding()
    if limit is None:
        backend.no_truncation()
    else:
        backend.enable_truncation(max_length=limit, stride=0, strategy="longest_first",
                                  direction=tokenizer.truncation_side)
    try:
        tokenizer.save_pretrained(out_dir)
    finally:  # put back the in-memory truncation and padding changed for writing the file
        if truncation is None:
            backend.no_truncation()
        else:
            backend.enable_truncation(**truncation)
        if padding is None:
            backend.no_padding()
        else:
            backend.enable_padding(**padding)
    config_path = out_dir / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    # *_file keys name the source's files (a local path): not ours.
    for key in [key for key in config if key in (*_TEMPLATE_REBUILDING_KEYS, *_PER_CALL_KEYS) or key.endswith("_file")]:
        config.pop(key)
    if limit is None:
        config.pop("max_length", None)
    else:
        config["max_length"] = limit
    # A model-specific class (BertTokenizer, ...) rebuilds its own template on load and drops the prefix.
    config["tokenizer_class"] = TOKENIZER_CLASS
    config["model_input_names"] = list(tokenizer.model_input_names)
    # PreTrainedTokenizerFast pads on the right unless told: keep the source's side (Llama, Gemma, Qwen: left).
    config["padding_side"] = tokenizer.padding_side
    config["truncation_side"] = tokenizer.truncation_side
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    for stray in ("chat_template.jinja", "chat_template.json", *_SENTENCEPIECE_FILES):
        (out_dir / stray).unlink(missing_ok=True)
