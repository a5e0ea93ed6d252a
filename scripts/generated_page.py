"""What the page-rendering scripts share: write a generated page, or check it (``--check``) and show how it is stale.

Used by ``scripts/cli_reference.py`` (docs/cli.md) and ``scripts/architecture.py`` (docs/architecture.md).
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable
from pathlib import Path


def stale_diff(expected: str, actual: str, source: str, page: str, lines: int = 40) -> str:
    """The first ``lines`` lines of a unified diff from the render of ``source`` to ``page`` ('' when equal)."""
    diff = list(difflib.unified_diff(expected.splitlines(), actual.splitlines(), f"render of the {source}", page,
                                     lineterm="", n=1))
    return "\n".join(diff[:lines]) + ("\n..." if len(diff) > lines else "")


def write_or_check(page: Path, render: Callable[[str], str], *, source: str, regenerate: str, doc: str,
                   argv: list[str] | None = None) -> int:
    """The scripts' ``main``: ``render(current page text)`` written to ``page``, or with ``--check`` compared with
    it (exit 1 and a diff when stale)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help=f"write nothing; exit 1 when {page.name} is stale")
    args = parser.parse_args(argv)
    actual = page.read_text(encoding="utf-8") if page.is_file() else ""
    expected = render(actual)
    if args.check:
        if actual != expected:
            print(f"{page.name} is not the render of the {source}; run `{regenerate}`.\n"  # noqa: T201
                  + stale_diff(expected, actual, source, page.name))
            return 1
        return 0
    page.write_text(expected, encoding="utf-8")
    print(f"wrote {page.name}")  # noqa: T201
    return 0
