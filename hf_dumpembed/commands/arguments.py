"""Argument types shared by the subcommands' parsers (argparse ``type=`` callables).

Every float option of every command uses :class:`FiniteFloat`, so NaN, infinities and values out of the option's
range are refused while the command line is parsed, with argparse's one-line error naming the flag::

    hf-dumpembed serve-bench: error: argument --seconds: must be a finite number >= 0; got 'nan'
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping


def _number(value: float) -> str:
    return f"{value:g}"


class FiniteFloat:
    """An argparse ``type=``: a finite float within a range (each end open or closed, either end absent), or one
    of the ``words`` (case-insensitive), which stand for the float they map to (e.g. ``{"off": -1.0}``). NaN, ±inf
    and values outside the range are refused with an ``argparse.ArgumentTypeError`` that names the range."""

    def __init__(self, minimum: float | None = None, maximum: float | None = None, *, min_inclusive: bool = True,
                 max_inclusive: bool = True, words: Mapping[str, float] | None = None) -> None:
        for name, bound in (("minimum", minimum), ("maximum", maximum)):
            if bound is not None and not math.isfinite(bound):
                raise ValueError(f"{name} must be a finite number or None, not {bound!r}.")
        if minimum is not None and maximum is not None and not minimum <= maximum:
            raise ValueError(f"minimum {minimum!r} is above maximum {maximum!r}.")
        self.minimum, self.maximum = minimum, maximum
        self.min_inclusive, self.max_inclusive = min_inclusive, max_inclusive
        self.words = {word.lower(): value for word, value in (words or {}).items()}

    @property
    def allowed(self) -> str:
        """What the option accepts, in words: ``a finite number in [0, 1] or 'off'``."""
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            text = (f"in {'[' if self.min_inclusive else '('}{_number(low)}, {_number(high)}"
                    f"{']' if self.max_inclusive else ')'}")
        elif low is not None:
            text = f"{'>=' if self.min_inclusive else '>'} {_number(low)}"
        elif high is not None:
            text = f"{'<=' if self.max_inclusive else '<'} {_number(high)}"
        else:
            text = ""
        alternatives = [f"a finite number {text}".rstrip(), *map(repr, self.words)]
        return " or ".join([", ".join(alternatives[:-1]), alternatives[-1]]) if len(alternatives) > 1 \
            else alternatives[0]

    def contains(self, value: float) -> bool:
        """Whether ``value`` is finite and within the range."""
        if not math.isfinite(value):
            return False
        if self.minimum is not None and not (value >= self.minimum if self.min_inclusive else value > self.minimum):
            return False
        return self.maximum is None or (value <= self.maximum if self.max_inclusive else value < self.maximum)

    def __call__(self, text: str) -> float:
        word = text.strip().lower()
        if word in self.words:
            return self.words[word]
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not self.contains(value):
            raise argparse.ArgumentTypeError(f"must be {self.allowed}; got {text!r}")
        return value

    def __repr__(self) -> str:
        return f"FiniteFloat({self.allowed!r})"

