"""Query- and document-side tokenizer files of an ONNX export: its tokenizer.json with the prompt's token ids in the
post-processor's template, so a client that reads only a tokenizer file feeds the graph the prompted text.

A prompt is text put before the input; a template can only insert fixed ids. The two agree when the prompt tokenizes
the same whatever text follows it: ``tokenize(prompt + text) == prompt ids + tokenize(text)`` inside the same special
tokens. WordPiece with a prompt ending in a space or punctuation (``query: ``) usually does; byte-level BPE with a
trailing space does not (the space belongs to the next word: ``Ġhow``), nor a prompt that ends inside a word. The
exporter checks the equality (ids, attention mask, type ids, truncation included) on `CHECK_TEXTS` and writes a
side's file only where it holds; elsewhere the manifest says why, and clients prepend the prompt string.
"""

from __future__ import annotations

import copy
import json
import logging
import string
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# side -> the file written for it beside tokenizer.json
PROMPT_TOKENIZER_FILES = {"query": "tokenizer_query.json", "document": "tokenizer_document.json"}
# The template's name for the prompt's ids (a key of TemplateProcessing's special_tokens, not a vocabulary token).
PROMPT_PIECE = "<dumpembed-prompt>"
# Texts the equality is checked on: empty, one character, sentences, leading / trailing blanks, punctuation, digits,
# case, accents, other scripts, a line break, one far over any model's limit (truncation); then every printable ASCII
# character and a few others, each before a few words, since a merge across the prompt's end depends on the first
# characters of the text.
BASE_TEXTS = (
    "",
    "x",
    "A man is eating food.",
    "how do I read a file line by line?",
    " leading space",
    "trailing space ",
    "  two spaces",
    ":colon first",
    "-dash first",
    "(brackets) and 'quotes', \"double\"",
    "123 numbers 4.5",
    "UPPER lower MiXeD",
    "Ünïcödé façade naïve café — 東京 😀",
    "line one\nline two",
    "\ttab first",
    "word",
    "the quick brown fox jumps over the lazy dog and reads a file line by line " * 80,
)
FIRST_CHARACTERS = string.printable + "éÉ—東😀\u00a0"
FOLLOWING_WORDS = ("hello world", "The end", "a", "1990s", "http://example.org")
CHECK_TEXTS = BASE_TEXTS + tuple(first + word for first in FIRST_CHARACTERS for word in FOLLOWING_WORDS)


@dataclass(frozen=True)
class PromptTokenizer:
    """One side's outcome: the file written (None: refused, ``reason`` says why) and the prompt's ids."""

    side: str
    prompt: str
    file: str | None
    ids: list[int] | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The manifest entry (without the side, its key there)."""
        entry = asdict(self)
        del entry["side"]
        return entry


def template_processor(tokenizer_json: dict[str, Any]) -> dict[str, Any] | None:
    """The TemplateProcessing post-processor of a tokenizer.json (top level or inside a Sequence), None if none."""
    processor = tokenizer_json.get("post_processor") or {}
    candidates = [processor, *processor.get("processors", [])] if processor.get("type") == "Sequence" else [processor]
    return next((p for p in candidates if p.get("type") == "TemplateProcessing"), None)


def with_prompt_ids(tokenizer_json: dict[str, Any], ids: list[int], tokens: list[str]) -> dict[str, Any]:
    """A copy of ``tokenizer_json`` whose template puts ``ids`` right before each text (``$A``, and ``$B`` of a
    pair), after the template's leading special tokens (BOS / [CLS], the [DUMP] tokens)."""
    result = copy.deepcopy(tokenizer_json)
    processor = template_processor(result)
    if not ids:
        return result
    for form in ("single", "pair"):
        pieces = []
        for piece in processor.get(form) or []:
            sequence = piece.get("Sequence")
            if sequence is not None:
                pieces.append({"SpecialToken": {"id": PROMPT_PIECE, "type_id": sequence.get("type_id", 0)}})
            pieces.append(piece)
        processor[form] = pieces
    processor["special_tokens"][PROMPT_PIECE] = {"id": PROMPT_PIECE, "ids": list(ids), "tokens": list(tokens)}
    return result


def prompt_ids(tokenizer: Any, prompt: str) -> tuple[list[int], list[str]]:
    """The ids (and tokens) ``prompt`` gives before a text: those of ``prompt + text`` in front of the text's own,
    for the first check text that has any (a Metaspace tokenizer's prompt then loses its lone trailing ``▁``); the
    prompt alone where no text gives such a split (the check then refuses it)."""
    for text in BASE_TEXTS[2:]:
        whole = tokenizer.encode(prompt + text, add_special_tokens=False)
        rest = tokenizer.encode(text, add_special_tokens=False).ids
        if rest and whole.ids[-len(rest) :] == rest:
            cut = len(whole.ids) - len(rest)
            return whole.ids[:cut], whole.tokens[:cut]
    alone = tokenizer.encode(prompt, add_special_tokens=False)
    return alone.ids, alone.tokens


def first_difference(tokenizer: Any, prompted: Any, prompt: str) -> str | None:
    """Where tokenizing ``prompt + text`` with ``tokenizer`` and ``text`` with ``prompted`` (the template-inserted
    prompt) differ on `CHECK_TEXTS` (ids, attention mask, type ids, as one padded batch), as one phrase showing the
    tokens around the first difference; None when they agree on every text."""
    expected = tokenizer.encode_batch([prompt + text for text in CHECK_TEXTS])
    found = prompted.encode_batch(list(CHECK_TEXTS))
    for text, want, got in zip(CHECK_TEXTS, expected, found, strict=True):
        if all(getattr(want, field) == getattr(got, field) for field in ("ids", "attention_mask", "type_ids")):
            continue
        want_tokens, got_tokens = unpadded_tokens(want), unpadded_tokens(got)
        at = next(
            (i for i, pair in enumerate(zip(want_tokens, got_tokens, strict=False)) if pair[0] != pair[1]),
            min(len(want_tokens), len(got_tokens)),
        )
        window = slice(max(at - 2, 0), at + 4)
        shown = text if len(text) < 40 else text[:37] + "..."
        return (
            f"on the text {shown!r}, prompt + text gives the tokens {want_tokens[window]} where the prompt's ids "
            f"and then the text give {got_tokens[window]}"
        )
    return None


def unpadded_tokens(encoding: Any) -> list[str]:
    """An encoding's tokens without its padding."""
    return [token for token, mask in zip(encoding.tokens, encoding.attention_mask, strict=True) if mask]


def prompt_tokenizer(tokenizer_path: Path, side: str, prompt: str) -> tuple[PromptTokenizer, dict | None]:
    """``side``'s outcome and, where the template gives exactly the prompted text's tokens, the tokenizer.json
    content to write."""
    from tokenizers import Tokenizer

    def refused(reason: str, ids: list[int] | None = None) -> tuple[PromptTokenizer, None]:
        return PromptTokenizer(side, prompt, None, ids, reason=reason), None

    content = json.loads(tokenizer_path.read_text(encoding="utf-8"))
    if template_processor(content) is None:
        return refused("its tokenizer.json has no TemplateProcessing post-processor to put the prompt's ids in: "
                       f"prepend the prompt string to each {side} before tokenizing")
    tokenizer = Tokenizer.from_str(json.dumps(content))
    ids, tokens = prompt_ids(tokenizer, prompt)
    prompted_content = with_prompt_ids(content, ids, tokens)
    problem = first_difference(tokenizer, Tokenizer.from_str(json.dumps(prompted_content)), prompt)
    if problem is not None:
        return refused(f"the prompt {prompt!r} does not tokenize the same whatever text follows it ({problem}), so "
                       "no fixed ids in the template give the model's tokens: prepend the prompt string to each "
                       f"{side} before tokenizing with tokenizer.json", ids)
    return PromptTokenizer(side, prompt, PROMPT_TOKENIZER_FILES[side], ids), prompted_content


def write_prompt_tokenizers(folder: Path, prompts: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Write ``folder``'s tokenizer_query.json / tokenizer_document.json (``prompts``: the text before a query /
    a document) where the prompt tokenizes independently of the text; side -> manifest entry (file None: refused,
    with the reason)."""
    entries = {}
    for side, file in PROMPT_TOKENIZER_FILES.items():
        outcome, content = prompt_tokenizer(folder / "tokenizer.json", side, prompts.get(side, ""))
        if content is not None:
            (folder / file).write_text(json.dumps(content, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        else:
            logger.warning("%s not written: %s.", file, outcome.reason)
        entries[side] = outcome.to_dict()
    return entries
