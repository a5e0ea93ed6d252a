"""Real texts every machine has, for timing: the running interpreter's standard library, read with ``ast``.

Short texts are the first paragraphs of function docstrings (about 15-25 tokens); long texts are whole function
sources of at least 800 characters (hundreds of tokens). Both come in sorted file order, so every run on one
interpreter gets the same texts. ``serve-bench`` and the speed benches time on them; quality is measured on the
held-out collections elsewhere, never on these.
"""

from __future__ import annotations

import ast
import sysconfig
from collections.abc import Iterator
from pathlib import Path

LONG_MIN_CHARS = 800


def stdlib_functions() -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(file source, function node) for every function of the stdlib's top-level modules, in sorted file order."""
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield source, node


def stdlib_docstrings(limit: int) -> list[str]:
    """First paragraphs (over 20 characters) of function docstrings from the stdlib, at most ``limit``."""
    texts: list[str] = []
    for _, node in stdlib_functions():
        doc = ast.get_docstring(node)
        if doc:
            paragraph = " ".join(doc.split("\n\n")[0].split())
            if len(paragraph) > 20:
                texts.append(paragraph)
                if len(texts) == limit:
                    break
    return texts


def stdlib_sources(limit: int, min_chars: int = LONG_MIN_CHARS) -> list[str]:
    """Sources of stdlib functions of at least ``min_chars`` characters, at most ``limit``."""
    texts: list[str] = []
    for source, node in stdlib_functions():
        text = ast.get_source_segment(source, node) or ""
        if len(text) >= min_chars:
            texts.append(text)
            if len(texts) == limit:
                break
    return texts
