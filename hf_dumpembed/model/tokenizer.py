"""Extend a tokenizer with K special tokens ``[DUMP1]..[DUMPK]`` prepended by its own post-processor.

The prefix lives in ``tokenizer.json`` (a ``TemplateProcessing`` post-processor), not in Python code, so
every runtime that reads ``tokenizer.json`` (transformers, sentence-transformers, TEI, tokenizers) adds
it, and truncation never cuts it: the template's tokens count as special tokens.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Tokenizer, models, processors
from transformers import PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

SUPPORTED_TOKENIZERS = ("WordPiece (BERT family), byte-level BPE (GPT-2, Llama-3, Qwen, ModernBERT), SentencePiece "
                        "Unigram (XLM-RoBERTa, T5) and SentencePiece BPE with byte fallback (Llama-2, Mistral, Gemma)")
# Post-processors whose special-token layout a TemplateProcessing can restate (the others, e.g. ByteLevel, are kept).
_TEMPLATE_LIKE = ("TemplateProcessing", "BertProcessing", "RobertaProcessing")
_PROBE_A = "hello world"
_PROBE_B = "second text"
# tokenizer_config.json keys that make transformers regenerate the post-processor on load (dropping the prefix).
_TEMPLATE_REBUILDING_KEYS = ("add_bos_token", "add_eos_token", "add_prefix_space", "chat_template")


@dataclass(frozen=True)
class DumpTokens:
    """Where the [DUMP] tokens are: their ids in order and the position of [DUMP1] after the first real token."""

    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    offset: int
    kind: str  # a `tokenizer_kind`: "wordpiece", "byte-level-bpe", "sentencepiece-bpe" or "unigram"


def dump_token_names(num_dump_tokens: int) -> list[str]:
    """``["[DUMP1]", ..., "[DUMPK]"]``."""
    return [f"[DUMP{i}]" for i in range(1, num_dump_tokens + 1)]


def _find_types(node: Any, found: set[str]) -> set[str]:
    """Collect every ``"type"`` value in a tokenizer.json sub-tree (pre-tokenizers may be nested Sequences)."""
    if isinstance(node, dict):
        if isinstance(node.get("type"), str):
            found.add(node["type"])
        for value in node.values():
            _find_types(value, found)
    elif isinstance(node, list):
        for value in node:
            _find_types(value, found)
    return found


def tokenizer_kind(tokenizer: PreTrainedTokenizerBase) -> str:
    """The tokenizer family: ``wordpiece``, ``byte-level-bpe``, ``sentencepiece-bpe`` (Metaspace or byte fallback:
    Llama-2, Mistral, Gemma) or ``unigram`` (XLM-R, T5); a clear error for anything else."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ValueError(
            f"{type(tokenizer).__name__} has no tokenizers backend (tokenizer.json); [DUMP] tokens need a fast "
            f"tokenizer. Supported: {SUPPORTED_TOKENIZERS}. Convert it with transformers' fast tokenizer class "
            "(e.g. AutoTokenizer.from_pretrained(..., use_fast=True)) and save it."
        )
    spec = json.loads(backend.to_str())
    model_type = spec["model"]["type"]
    pre = _find_types(spec.get("pre_tokenizer"), set())
    processor = _find_types(spec.get("post_processor"), set())
    unknown = processor - set(_TEMPLATE_LIKE) - {"ByteLevel", "Sequence"}
    if unknown:
        raise ValueError(f"Tokenizer post-processor {sorted(unknown)} not supported: the [DUMP] prefix is written as a "
                         "TemplateProcessing next to ByteLevel only. Save the tokenizer with a TemplateProcessing "
                         "post-processor and build from that folder.")
    if model_type == "WordPiece":
        return "wordpiece"
    if model_type == "Unigram":
        return "unigram"
    if model_type == "BPE":
        return "byte-level-bpe" if "ByteLevel" in pre else "sentencepiece-bpe"
    raise ValueError(
        f"Tokenizer type not supported: model {model_type!r} with pre-tokenizer {sorted(pre) or ['none']}. "
        f"[DUMP] tokens are implemented for {SUPPORTED_TOKENIZERS}; other tokenizers are refused rather than built "
        "silently wrong."
    )


def _with_template(tokenizer: PreTrainedTokenizerBase, template: processors.TemplateProcessing) -> None:
    """Put ``template`` in place of the tokenizer's special-token post-processor, keeping whatever else it runs
    (a ByteLevel offset step, alone or in a Sequence), so only the special tokens change."""
    backend = tokenizer.backend_tokenizer
    spec = json.loads(backend.to_str())
    probe = Tokenizer(models.WordLevel({"a": 0}, unk_token="a"))
    probe.post_processor = template
    new = json.loads(probe.to_str())["post_processor"]
    old = spec.get("post_processor")
    if old is None or old.get("type") in _TEMPLATE_LIKE:
        combined = new
    elif old.get("type") == "Sequence":
        steps = [step for step in old["processors"] if step.get("type") not in _TEMPLATE_LIKE]
        combined = {**old, "processors": [*steps, new]}
    else:  # ByteLevel alone: offsets first, then the specials
        combined = {"type": "Sequence", "processors": [old, new]}
    spec["post_processor"] = combined
    backend.post_processor = Tokenizer.from_str(json.dumps(spec)).post_processor


def _template_from_encoding(encoding: Any, dump_tokens: list[str]) -> list[str]:
    """Rewrite a probe encoding as a TemplateProcessing template, inserting the DUMP tokens before ``$A``."""
    template: list[str] = []
    previous_sequence: int | None = None
    for token, type_id, sequence_id, is_special in zip(
        encoding.tokens, encoding.type_ids, encoding.sequence_ids, encoding.special_tokens_mask, strict=True
    ):
        if is_special or sequence_id is None:
            template.append(f"{token}:{type_id}")
            previous_sequence = None
            continue
        if sequence_id == previous_sequence:
            continue
        if sequence_id == 0:
            template.extend(f"{name}:0" for name in dump_tokens)
        template.append(f"${'A' if sequence_id == 0 else 'B'}:{type_id}")
        previous_sequence = sequence_id
    return template


def add_dump_tokens(tokenizer: PreTrainedTokenizerBase, num_dump_tokens: int) -> DumpTokens:
    """Add ``[DUMP1]..[DUMPK]`` as special tokens and make the post-processor prepend them (in place).

    The tokens go right after the special tokens the tokenizer already puts in front ([CLS] for BERT, BOS for
    Llama-3), or first when it puts none (GPT-2, Qwen2, SmolLM2). K = 0 rebuilds the same template with no
    DUMP tokens, so the baseline goes through the same code path.
    """
    if not isinstance(num_dump_tokens, int) or num_dump_tokens < 0:
        raise ValueError(f"num_dump_tokens must be an integer >= 0; got {num_dump_tokens!r}.")
    kind = tokenizer_kind(tokenizer)
    names = dump_token_names(num_dump_tokens)
    vocab = tokenizer.get_vocab()
    if "[DUMP1]" in vocab:
        raise ValueError(
            "This tokenizer already has [DUMP] tokens (it comes from a DumpEmbed model); build from the original "
            "backbone instead."
        )
    backend = tokenizer.backend_tokenizer
    # Fixed-length padding or truncation baked into tokenizer.json would apply in every runtime; the caller
    # (transformers, sentence-transformers, TEI) decides those per call.
    backend.no_padding()
    backend.no_truncation()
    single = backend.encode(_PROBE_A, add_special_tokens=True)
    pair = backend.encode(_PROBE_A, _PROBE_B, add_special_tokens=True)
    offset = next(i for i, s in enumerate(single.sequence_ids) if s is not None)
    specials = {
        token: token_id
        for encoding in (single, pair)
        for token, token_id, is_special in zip(encoding.tokens, encoding.ids, encoding.special_tokens_mask, strict=True)
        if is_special
    }
    if names:
        tokenizer.add_special_tokens(
            {"extra_special_tokens": [AddedToken(n, special=True, normalized=False) for n in names]},
            replace_extra_special_tokens=False,
        )
    ids = [tokenizer.convert_tokens_to_ids(n) for n in names]
    specials.update(zip(names, ids, strict=True))
    template = processors.TemplateProcessing(
        single=_template_from_encoding(single, names),
        pair=_template_from_encoding(pair, names),
        special_tokens=list(specials.items()),
    )
    _with_template(tokenizer, template)
    check_dump_prefix(tokenizer, tuple(ids), offset)
    return DumpTokens(tokens=tuple(names), ids=tuple(ids), offset=offset, kind=kind)


def check_dump_prefix(tokenizer: PreTrainedTokenizerBase, ids: tuple[int, ...], offset: int) -> None:
    """Raise RuntimeError unless ``tokenizer`` puts exactly ``ids`` at ``offset`` (single and pair inputs)."""
    for args in ((_PROBE_A,), (_PROBE_A, _PROBE_B)):
        input_ids = tokenizer(*args)["input_ids"]
        found = tuple(input_ids[offset : offset + len(ids)])
        if found != ids:
            raise RuntimeError(
                f"The tokenizer does not prepend the [DUMP] tokens: expected {list(ids)} at position {offset}, "
                f"got {input_ids}. This is a bug in hf_dumpembed for {type(tokenizer).__name__}; please report it."
            )


def save_dump_tokenizer(tokenizer: PreTrainedTokenizerBase, out_dir: str | Path, max_length: int | None) -> None:
    """Save the tokenizer so that reloading keeps the post-processor, and every file states one length.

    ``max_length`` (the folder's max_seq_length, [DUMP] and special tokens counted) is written as
    ``model_max_length`` and ``max_length`` in tokenizer_config.json and as the truncation of tokenizer.json, with no
    fixed padding: runtimes that read only tokenizer.json (a bare `tokenizers` load feeding onnxruntime, fastembed,
    TEI) truncate where sentence-transformers does. transformers and sentence-transformers set truncation per call,
    so the value in tokenizer.json changes nothing for them. Stale lengths a source or a training run left in the
    files (all-MiniLM-L6-v2's ``max_length: 128``, a fixed-length padding) are replaced.
    """
    out_dir = Path(out_dir)
    if max_length is not None:
        tokenizer.model_max_length = max_length
    tokenizer.save_pretrained(out_dir)
    config_path = out_dir / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    for key in _TEMPLATE_REBUILDING_KEYS:
        config.pop(key, None)
    # A model-specific class (BertTokenizer, ...) rebuilds its own template on load and drops the prefix.
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config["model_input_names"] = list(tokenizer.model_input_names)
    length = max_length if max_length is not None else config.get("model_max_length")
    if isinstance(length, int) and length < 10**6:
        config["model_max_length"] = config["max_length"] = length
    else:
        config.pop("max_length", None)
    config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    tokenizer_path = out_dir / "tokenizer.json"
    spec = json.loads(tokenizer_path.read_text(encoding="utf-8"))
    spec["padding"] = None
    spec["truncation"] = None if not (isinstance(length, int) and length < 10**6) else {
        "direction": "Left" if tokenizer.truncation_side == "left" else "Right", "max_length": length,
        "strategy": "LongestFirst", "stride": 0}
    tokenizer_path.write_text(json.dumps(spec, indent=2, ensure_ascii=False), encoding="utf-8")
    for stray in ("chat_template.jinja", "chat_template.json"):
        (out_dir / stray).unlink(missing_ok=True)
