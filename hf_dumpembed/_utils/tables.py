"""The tables the package prints and writes: markdown (cards, reports, BENCHMARKS.md, the logit lens) and aligned
plain text (the console), and the one "change against a baseline" they show."""

from __future__ import annotations

import math
from collections.abc import Sequence


def render_markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A markdown table (no trailing newline); cells are text, already escaped by the caller."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def render_text(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """An aligned plain-text table: the first column left-aligned, the others right-aligned, a dashed rule."""
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths,
                                                                                               strict=True)))

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *[line(r) for r in rows]])


def relative_change(value: float | None, reference: float | None) -> float | None:
    """``value / reference − 1`` (0.01 = +1%); None when either is missing or the reference is 0 or NaN."""
    if value is None or reference is None or reference == 0 or math.isnan(reference):
        return None
    return value / reference - 1


def percent(change: float | None) -> str:
    """A relative change as ``+1.23%`` (empty for None)."""
    return "" if change is None else f"{100 * change:+.2f}%"
