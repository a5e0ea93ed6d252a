"""Frozen option dataclasses that pydantic checks, with errors that read as one sentence.

pydantic's ValidationError is a multi-line report ("1 validation error for BuildOptions ..."); the command line
prints an error as ``hf-dumpembed CMD: error: MESSAGE``, so `checked_options` turns the first complaint into an
`OptionError` (a ValueError) whose message names the field, the allowed values and the value given.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import ConfigDict, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass

T = TypeVar("T", bound=type)


class OptionError(ValueError):
    """An option value that cannot be used; the message names the field, what is allowed and the value."""


def first_complaint(error: ValidationError, messages: Mapping[str, str]) -> str:
    """pydantic's first complaint as one sentence: ``messages[field]`` (formatted with ``value``) for a field's
    type or range, the raised message for a check that raised ValueError, else pydantic's own words."""
    first = error.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    if field in messages:
        return messages[field].format(value=first.get("input"))
    if first["type"] == "value_error":
        return str(first["ctx"]["error"])
    return f"{field}: {first['msg']}; got {first.get('input')!r}."


def checked_options(messages: Mapping[str, str]) -> Callable[[T], T]:
    """Make ``cls`` a frozen pydantic dataclass (same keyword constructor, defaults and attributes) whose invalid
    values raise `OptionError` with ``messages[field]`` (a sentence with a ``{value!r}`` slot)."""

    def decorate(cls: T) -> T:
        checked = pydantic_dataclass(frozen=True, config=ConfigDict(arbitrary_types_allowed=True))(cls)
        init = checked.__init__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                init(self, *args, **kwargs)
            except ValidationError as error:
                raise OptionError(first_complaint(error, messages)) from None

        checked.__init__ = __init__
        return checked

    return decorate
