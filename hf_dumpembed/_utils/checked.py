"""Options and config sections checked by pydantic, each error one line naming the field.

`complaint` gives pydantic's first error as ``key: pydantic's message; got value.`` (the key dotted inside a section:
``training.batch_size``, ``data[0].format``). Where that says less than the schema knows, the line says it instead: a
validator's own sentence, a field's own sentence (``messages``), the whole range of a bounded field, the allowed
names beside an unknown one. `checked_options` makes a frozen option dataclass whose invalid values raise
`OptionError` with that line; the training config (`hf_dumpembed.training.config`) raises its `ConfigError`.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

from pydantic import ConfigDict, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic.fields import FieldInfo

T = TypeVar("T", bound=type)
_BOUNDS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
RANGE_ERRORS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")
UNKNOWN_ERRORS = ("unexpected_keyword_argument", "extra_forbidden")


class OptionError(ValueError):
    """An option value that cannot be used; the message names the field, what is allowed and the value."""


def strip_annotation(annotation: Any) -> tuple[Any, list[Any]]:
    """(the type inside ``Annotated[...]`` and ``X | None``, the metadata met on the way)."""
    metadata: list[Any] = []
    while True:
        if typing.get_origin(annotation) is Annotated:
            annotation, *extra = typing.get_args(annotation)
            metadata += extra
            continue
        options = [a for a in typing.get_args(annotation) if a is not type(None)]
        if type(None) in typing.get_args(annotation) and len(options) == 1:  # X | None: X
            annotation = options[0]
            continue
        return annotation, metadata


def field_annotation(schema: Any, loc: tuple) -> tuple[Any, list[Any]]:
    """The annotation at ``loc`` inside dataclass ``schema`` (following field annotations) and its metadata; (None,
    []) where ``loc`` leaves the dataclasses (a list index, a mapping's key, a union member)."""
    annotation, metadata = schema, []
    for part in loc:
        annotation, _ = strip_annotation(annotation)
        if not dataclasses.is_dataclass(annotation):
            return None, []
        try:
            annotation = typing.get_type_hints(annotation, include_extras=True)[part]
        except (KeyError, NameError, TypeError):
            return None, []
        annotation, metadata = strip_annotation(annotation)
    return annotation, metadata


def _range(metadata: list[Any], ctx: Mapping[str, Any]) -> str:
    """A field's whole range (``in [0, 1)``, ``>= 1``) from its ``Field(ge=..., lt=...)``, else the bound pydantic
    names in ``ctx``."""
    constraints = [c for item in metadata for c in (item.metadata if isinstance(item, FieldInfo) else [item])]
    found = {key: getattr(c, key) for c in constraints for key in _BOUNDS if getattr(c, key, None) is not None}
    found = found or {key: ctx[key] for key in _BOUNDS if key in ctx}
    low = next(((key, found[key]) for key in ("gt", "ge") if key in found), None)
    high = next(((key, found[key]) for key in ("lt", "le") if key in found), None)
    if low and high:
        return f"in {'[' if low[0] == 'ge' else '('}{low[1]}, {high[1]}{']' if high[0] == 'le' else ')'}"
    key, value = low or high or ("", "in its range")
    return f"{_BOUNDS.get(key, '')} {value}".strip()


def dotted(where: str, loc: tuple) -> str:
    """``data[0].mining.batch_size`` for ``where="data[0]"`` and ``loc=("mining", "batch_size")``."""
    key = where
    for part in loc:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    return key


def complaint(error: ValidationError, schema: Any, messages: Mapping[str, str] | None = None, where: str = "",
              noun: str = "key") -> str:
    """pydantic's first complaint about an instance of dataclass ``schema`` as one line (see the module's
    docstring); ``messages[key]`` is a sentence with a ``{value!r}`` slot, ``noun`` what a key is called."""
    errors = error.errors()
    unknown = [e for e in errors if e["type"] in UNKNOWN_ERRORS]
    if unknown:
        parent = tuple(unknown[0]["loc"][:-1])
        names = sorted(str(e["loc"][-1]) for e in unknown if tuple(e["loc"][:-1]) == parent)
        allowed = sorted(field.name for field in dataclasses.fields(field_annotation(schema, parent)[0]))
        prefix = f"{dotted(where, parent)}: " if dotted(where, parent) else ""
        return f"{prefix}unknown {noun}(s) {names}; allowed {noun}s: {allowed}."
    first = errors[0]
    loc, kind, value = tuple(first["loc"]), first["type"], first.get("input")
    key = dotted(where, loc)
    if messages and key in messages:
        return messages[key].format(value=value)
    if kind == "value_error":
        return str(first["ctx"]["error"])
    if kind in RANGE_ERRORS:
        return f"{key} must be {_range(field_annotation(schema, loc)[1], first.get('ctx', {}))}; got {value!r}."
    if kind == "missing":
        return f"{key}: {first['msg']}."
    return f"{key}: {first['msg']}; got {value!r}."


def checked_options(messages: Mapping[str, str]) -> Callable[[T], T]:
    """Make ``cls`` a frozen pydantic dataclass (same keyword constructor, defaults and attributes) whose invalid
    values and unknown keywords raise `OptionError`: `complaint`'s line, or ``messages[field]`` (a sentence with
    a ``{value!r}`` slot) for a field that words its own."""

    def decorate(cls: T) -> T:
        checked = pydantic_dataclass(frozen=True, config=ConfigDict(arbitrary_types_allowed=True, extra="forbid"))(cls)
        init = checked.__init__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                init(self, *args, **kwargs)
            except ValidationError as error:
                raise OptionError(complaint(error, checked, messages, noun="option")) from None

        checked.__init__ = __init__
        return checked

    return decorate
