"""StdlibCode: the first paragraph of a function's docstring → the function's source without its docstring.

Source: the CPython standard library of the running interpreter (``sysconfig.get_paths()["stdlib"]``), parsed
with ``ast``. Functions are grouped by top-level module (``email``, ``asyncio``, ``json.py`` ...) and whole modules
go to the test split or the train split, so the two never share a module; on top of that, any query text or
document text that occurs in both splits is dropped from the train split. Queries whose text occurs more than once
(ambiguous) are dropped. The test split's corpus also holds the undocumented functions of its modules as
distractors; the train split's corpus holds the positives only.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
import random
import re
import sysconfig
import textwrap
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# Tests, demos, the IDE and vendored/third-party-ish trees: not "library functions with docstrings".
EXCLUDED_TOP_LEVEL = frozenset(
    {"test", "tests", "turtledemo", "site-packages", "dist-packages", "ensurepip", "__pycache__",
     "pydoc_data", "this.py", "antigravity.py", "__phello__", "__hello__.py"}
)
MIN_QUERY_WORDS = 4
MIN_BODY_LINES = 3
MAX_DOCUMENT_CHARS = 4000


@dataclass(frozen=True)
class CodeFunction:
    """One function: where it is, its docstring's first paragraph (or "") and its source without the docstring."""

    module: str
    qualname: str
    summary: str
    code: str


def stdlib_root() -> Path:
    """The standard library folder of the running interpreter."""
    return Path(sysconfig.get_paths()["stdlib"])


def top_level_module(path: Path, root: Path) -> str:
    """``email`` for ``email/mime/text.py``; ``json`` for ``json/__init__.py``; ``heapq`` for ``heapq.py``."""
    return path.relative_to(root).parts[0].removesuffix(".py")


def first_paragraph(docstring: str) -> str:
    """The docstring's first paragraph, whitespace collapsed."""
    paragraph = inspect.cleandoc(docstring).split("\n\n")[0]
    return re.sub(r"\s+", " ", paragraph).strip()


def _without_docstring(source_lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    start = (node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1
    lines = source_lines[start : node.end_lineno]
    body0 = node.body[0]
    if isinstance(body0, ast.Expr) and isinstance(body0.value, ast.Constant) and isinstance(body0.value.value, str):
        cut_from, cut_to = body0.lineno - 1 - start, body0.end_lineno - start
        lines = lines[:cut_from] + lines[cut_to:]
    return textwrap.dedent("\n".join(lines)).strip() if lines else ""


def dotted_name(path: Path, root: Path) -> str:
    """``email.mime.text`` for ``email/mime/text.py``; ``json`` for ``json/__init__.py``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def iter_functions(path: Path, module: str, dotted: str) -> Iterator[CodeFunction]:
    """Every (async) function and method of a file (``dotted:Class.method``); unparsable files yield nothing."""
    try:
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return
    source_lines = source.splitlines()

    def visit(node: ast.AST, prefix: str) -> Iterator[CodeFunction]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                docstring = ast.get_docstring(child, clean=False)
                code = _without_docstring(source_lines, child)
                body_lines = [line for line in code.splitlines()[1:] if line.strip()]
                if len(body_lines) >= MIN_BODY_LINES:
                    yield CodeFunction(
                        module=module,
                        qualname=f"{dotted}:{prefix}{child.name}",
                        summary=first_paragraph(docstring) if docstring else "",
                        code=code[:MAX_DOCUMENT_CHARS],
                    )
            elif isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.")

    yield from visit(tree, "")


def collect_functions(root: Path) -> list[CodeFunction]:
    """All usable functions under ``root`` (excluded trees skipped), in path order."""
    functions: list[CodeFunction] = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if (
            parts[0] in EXCLUDED_TOP_LEVEL
            or parts[0].startswith("config-")
            or any(part in {"test", "tests", "idle_test", "__pycache__"} for part in parts)
        ):
            continue
        functions.extend(iter_functions(path, top_level_module(path, root), dotted_name(path, root)))
    # The same qualname can occur twice in one file (e.g. platform-specific definitions): keep the first.
    unique: dict[str, CodeFunction] = {}
    for function in functions:
        unique.setdefault(function.qualname, function)
    return list(unique.values())


@dataclass(frozen=True)
class StdlibSplits:
    """The two splits as (corpus, queries, qrels) triples plus the module names of each."""

    test: tuple[dict[str, dict[str, str]], dict[str, str], dict[str, dict[str, int]]]
    train: tuple[dict[str, dict[str, str]], dict[str, str], dict[str, dict[str, int]]]
    test_modules: list[str]
    train_modules: list[str]


def split_stdlib(
    functions: list[CodeFunction],
    test_queries: int = 500,
    test_documents: int = 3500,
    train_pairs: int = 4000,
    seed: int = 0,
) -> StdlibSplits:
    """Assign whole modules to test (in a seeded hash order) until it holds ``test_documents`` functions; the rest
    are train modules. Sample ``test_queries`` test queries and up to ``train_pairs`` train pairs (seeded)."""
    summary_counts = Counter(f.summary.lower() for f in functions if f.summary)
    code_counts = Counter(f.code for f in functions)
    by_module: dict[str, list[CodeFunction]] = {}
    for function in functions:
        if code_counts[function.code] == 1:  # drop code that occurs twice anywhere (copies, trivial wrappers)
            by_module.setdefault(function.module, []).append(function)
    order = sorted(by_module, key=lambda m: hashlib.sha256(f"{seed}:{m}".encode()).hexdigest())
    test_modules: list[str] = []
    count = 0
    for module in order:
        if count >= test_documents:
            break
        test_modules.append(module)
        count += len(by_module[module])
    train_modules = [m for m in order if m not in set(test_modules)]

    def pairs(modules: list[str]) -> list[CodeFunction]:
        return [
            f for m in sorted(modules) for f in by_module[m]
            if len(f.summary.split()) >= MIN_QUERY_WORDS and summary_counts[f.summary.lower()] == 1
        ]

    rng = random.Random(seed)
    test_pool = pairs(test_modules)
    test_chosen = sorted(rng.sample(test_pool, min(test_queries, len(test_pool))), key=lambda f: f.qualname)
    test_corpus = {f.qualname: {"title": "", "text": f.code} for m in sorted(test_modules) for f in by_module[m]}
    test_texts = {f.summary.lower() for f in test_pool} | {d["text"] for d in test_corpus.values()}
    train_pool = [f for f in pairs(train_modules) if f.summary.lower() not in test_texts and f.code not in test_texts]
    train_chosen = sorted(rng.sample(train_pool, min(train_pairs, len(train_pool))), key=lambda f: f.qualname)

    def triple(chosen: list[CodeFunction], corpus: dict[str, dict[str, str]] | None):
        corpus = corpus if corpus is not None else {f.qualname: {"title": "", "text": f.code} for f in chosen}
        queries = {f"q:{f.qualname}": f.summary for f in chosen}
        qrels = {f"q:{f.qualname}": {f.qualname: 1} for f in chosen}
        return corpus, queries, qrels

    return StdlibSplits(
        test=triple(test_chosen, test_corpus),
        train=triple(train_chosen, None),
        test_modules=sorted(test_modules),
        train_modules=sorted(train_modules),
    )


@functools.cache
def train_split_texts(seed: int = 0) -> tuple[str, ...]:
    """The train split's queries and function sources from the running interpreter's standard library (no
    download; never a test-split module): the default unlabeled text of `build --match-steps`. Computed once per
    process (parsing the standard library takes seconds)."""
    corpus, queries, _ = split_stdlib(collect_functions(stdlib_root()), seed=seed).train
    return tuple([queries[q] for q in sorted(queries)] + [corpus[d]["text"] for d in sorted(corpus)])
