"""Bounds on a folder's ``tokenizer.json`` before any library parses it: a hostile tokenizer costs seconds, not minutes.

Three limits, each far above the published tokenizers (Gemma 3's 262k-entry, 33 MB file is the largest in the model
zoo), checked on any local folder before it is loaded:

* the file's size (`MAX_TOKENIZER_BYTES`): the Rust parser reads all of it into memory first (a 64 MB file with three
  million extra entries took 78 s to load);
* the vocabulary (`MAX_VOCABULARY`): model vocab entries plus added tokens;
* every regular expression (normalizer, pre-tokenizer, decoder): a group repeated without bound whose body can match
  in several ways (it holds an unbounded repeat or an alternation), as in ``(a+)+$``, is the pattern class that makes
  a backtracking engine (tokenizers uses Oniguruma) take exponential time, ending in a Rust panic. Published
  pre-tokenizers (GPT-2, Llama 3, Qwen, o200k) repeat single tokens and character classes only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TOKENIZER_FILE = "tokenizer.json"
MAX_TOKENIZER_BYTES = 48 * 1024**2
MAX_VOCABULARY = 1_000_000


class TokenizerBoundError(ValueError):
    """A tokenizer.json past one of the bounds: refused before any library parses it."""


def require_bounded_tokenizer(folder: str | Path) -> None:
    """Refuse (TokenizerBoundError, naming the file and the bound) a ``tokenizer.json`` in ``folder`` that is too
    large, has too many entries or a regular expression of the catastrophic-backtracking class; nothing without
    one passes."""
    path = Path(folder) / TOKENIZER_FILE
    if not path.is_file():
        return
    size = path.stat().st_size
    if size > MAX_TOKENIZER_BYTES:
        raise TokenizerBoundError(f"{path}: {size / 1024**2:.0f} MB is over the {MAX_TOKENIZER_BYTES // 1024**2} MB "
                                  "a tokenizer.json may have here (published ones are under 35 MB); it is not loaded.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise TokenizerBoundError(f"{path}: is not readable JSON ({error}).") from None
    if not isinstance(data, dict):
        raise TokenizerBoundError(f"{path}: is a JSON {type(data).__name__}, not a tokenizer.")
    entries = vocabulary_size(data)
    if entries > MAX_VOCABULARY:
        raise TokenizerBoundError(f"{path}: {entries:,} vocabulary entries is over the {MAX_VOCABULARY:,} a tokenizer "
                                  "may have here; it is not loaded.")
    for where, key, pattern in json_items(data):
        group = backtracking_group(pattern) if key == "Regex" and isinstance(pattern, str) else None
        if group is not None:
            raise TokenizerBoundError(
                f"{path} [{where or key}]: the regular expression {pattern!r} repeats a group that can match in "
                f"several ways ({group!r}), which takes exponential time on some texts; it is not loaded. Fix the "
                "pattern (repeat single characters or classes) or use the source's tokenizer.")


def vocabulary_size(data: dict[str, Any]) -> int:
    """Entries of the model's vocabulary (a dict or a list of pieces) plus the added tokens."""
    model = data.get("model") if isinstance(data.get("model"), dict) else {}
    vocab = model.get("vocab")
    added = data.get("added_tokens")
    return (len(vocab) if isinstance(vocab, (dict, list)) else 0) + (len(added) if isinstance(added, list) else 0)


def json_items(value: Any, where: str = "") -> Iterator[tuple[str, str, Any]]:
    """(dotted location of the object, key, value) of every key at any depth of a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield where, str(key), item
            yield from json_items(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from json_items(item, f"{where}[{index}]")


def backtracking_group(pattern: str) -> str | None:
    """The first group of ``pattern`` repeated without bound (``*``, ``+``, ``{n,}``) whose body holds an unbounded
    repeat or an alternation (None when there is none). Escapes and character classes are skipped as units."""
    stack: list[tuple[int, bool]] = []  # (start, body can match in several ways)
    for i, char in _metacharacters(pattern):
        if char == "(":
            stack.append((i, False))
        elif char == ")" and stack:
            start, ambiguous = stack.pop()
            unbounded, after = _unbounded_repeat(pattern, i + 1)
            if unbounded and ambiguous:
                return pattern[start:after]
            if (ambiguous or unbounded) and stack:  # the enclosing group's body can now match in several ways
                stack[-1] = (stack[-1][0], True)
        elif stack and (char in "|*+" or (char == "{" and _unbounded_repeat(pattern, i)[0])):
            stack[-1] = (stack[-1][0], True)
    return None


def _metacharacters(pattern: str) -> Iterator[tuple[int, str]]:
    """(index, character) of every character of ``pattern`` outside escapes and (nested) character classes."""
    depth, i = 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            depth, i = depth + 1, i + 1
            i += pattern[i:i + 1] == "^"
            i += pattern[i:i + 1] == "]"  # a leading ] is a literal
            continue
        if char == "]" and depth:
            depth -= 1
        elif not depth:
            yield i, char
        i += 1


def _unbounded_repeat(pattern: str, at: int) -> tuple[bool, int]:
    """Whether a repeat without upper bound (``*``, ``+``, ``{n,}``) starts at ``at``, and the index after it."""
    if pattern[at:at + 1] in ("*", "+"):
        return True, at + 1
    if pattern[at:at + 1] == "{":
        close = pattern.find("}", at)
        body = pattern[at + 1:close] if close > 0 else ""
        if body.endswith(",") and body[:-1].isdigit():
            return True, close + 1
    return False, at
