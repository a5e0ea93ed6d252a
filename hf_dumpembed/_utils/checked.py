"""Options and config sections checked by pydantic, whose errors read as one sentence naming the field.

pydantic's ValidationError is a multi-line report ("1 validation error for BuildOptions ..."); the command line
prints an error as ``hf-dumpembed CMD: error: MESSAGE``, so `complaint` turns pydantic's first complaint into one
sentence that names the field (dotted inside a section: ``training.batch_size``, ``data[0].format``), what is allowed
(the type, the range or the choices the field's annotation declares) and the value given. `checked_options` makes a
frozen option dataclass whose invalid values raise `OptionError` with that sentence; the training config
(`hf_dumpembed.training.config`) raises its `ConfigError` with the same one.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

from pydantic import ConfigDict, ValidationError
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic.fields import FieldInfo

T = TypeVar("T", bound=type)

# What a type error says the field must be (pydantic's error type -> the words after the field's name); a string
# must be non-empty where the section's config says so (``str_min_length``), a mapping names its key and value types.
TYPE_WORDS = {
    "int_type": "must be an integer", "float_type": "must be a number", "bool_type": "must be true or false",
    "bool_parsing": "must be true or false", "string_type": "must be a string",
    "string_too_short": "must be a non-empty string", "dict_type": "must be a mapping",
    "dataclass_type": "must be a mapping of keys to values",
}
_PLURALS = {str: "strings", int: "integers", float: "numbers", bool: "booleans"}
RANGE_ERRORS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")
UNKNOWN_ERRORS = ("unexpected_keyword_argument", "extra_forbidden")
_BOUND_WORDS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}


class OptionError(ValueError):
    """An option value that cannot be used; the message names the field, what is allowed and the value."""


def _strip(annotation: Any) -> tuple[Any, list[Any]]:
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
        annotation, _ = _strip(annotation)
        if not dataclasses.is_dataclass(annotation):
            return None, []
        try:
            annotation = typing.get_type_hints(annotation, include_extras=True)[part]
        except (KeyError, NameError, TypeError):
            return None, []
        annotation, metadata = _strip(annotation)
    return annotation, metadata


def choices(annotation: Any) -> tuple[Any, ...]:
    """The values a ``Literal`` or an `enum.Enum` annotation allows (None left out)."""
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return tuple(member.value for member in annotation)
    return tuple(a for arg in typing.get_args(annotation) for a in (typing.get_args(arg) or [arg])
                 if a is not type(None))


def bounds(metadata: list[Any], ctx: Mapping[str, Any]) -> str:
    """A field's range in words (``> 0``, ``>= 1``, ``in [0, 1)``) from its ``Field(gt=..., ...)`` metadata, or
    from the one bound pydantic names in ``ctx``."""
    found: dict[str, Any] = {}
    for item in metadata:  # annotated_types' Gt, Ge, Lt, Le (as Field(...) stores them) carry the bound by name
        for constraint in (item.metadata if isinstance(item, FieldInfo) else [item]):
            found.update({key: getattr(constraint, key) for key in _BOUND_WORDS
                          if getattr(constraint, key, None) is not None})
    found = found or {key: ctx[key] for key in _BOUND_WORDS if key in ctx}
    low = next(((key, found[key]) for key in ("gt", "ge") if key in found), None)
    high = next(((key, found[key]) for key in ("lt", "le") if key in found), None)
    if low and high:
        return f"in {'[' if low[0] == 'ge' else '('}{low[1]}, {high[1]}{']' if high[0] == 'le' else ')'}"
    if not (low or high):
        return "in its range"
    key, value = low or high
    return f"{_BOUND_WORDS[key]} {value}"


def type_words(kind: str, schema: Any, loc: tuple) -> str:
    """`TYPE_WORDS[kind]` for the field at ``loc``, made precise by its annotation and its section's config."""
    if kind == "string_type":
        section, _ = field_annotation(schema, loc[:-1])
        if (getattr(section, "__pydantic_config__", None) or {}).get("str_min_length"):
            return TYPE_WORDS["string_too_short"]
    if kind == "dict_type":
        annotation, _ = field_annotation(schema, loc)
        plurals = [_PLURALS.get(_strip(arg)[0]) for arg in typing.get_args(annotation)]
        if len(plurals) == 2 and all(plurals):
            return f"must be a mapping of {plurals[0]} to {plurals[1]}"
    return TYPE_WORDS[kind]


def dotted(where: str, loc: tuple) -> str:
    """``data[0].mining.batch_size`` for ``where="data[0]"`` and ``loc=("mining", "batch_size")``."""
    key = where
    for part in loc:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    return key


def _value_at(raw: Any, loc: tuple, default: Any) -> Any:
    """The input at ``loc`` inside ``raw`` (``default`` when ``raw`` does not hold it, e.g. a positional argument)."""
    try:
        for part in loc:
            raw = raw[part]
    except (KeyError, IndexError, TypeError):
        return default
    return raw


def complaint(error: ValidationError, schema: Any, messages: Mapping[str, str] | None = None, where: str = "",
              raw: Any = None, noun: str = "key") -> str:
    """pydantic's first complaint about an instance of dataclass ``schema`` (built from ``raw``) as one sentence.

    ``messages[key]`` (formatted with ``value``) words a field's type or range itself; a check that raised
    ValueError speaks for itself; unknown keys are listed with the allowed ones (``noun``: what a key is called);
    else the sentence names the field's type, range or choices as its annotation declares them.
    """
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
    if len(loc) > 1 and typing.get_origin(field_annotation(schema, loc[:-1])[0]) is dict:  # a bad entry: the mapping
        loc, kind, value = loc[:-1], "dict_type", _value_at(raw, loc[:-1], value)
    key = dotted(where, loc)
    if messages and key in messages:
        return messages[key].format(value=value)
    if kind == "value_error":
        return str(first["ctx"]["error"])
    if kind == "missing":
        return f"{key} is required."
    annotation, metadata = field_annotation(schema, loc)
    if kind in ("literal_error", "enum"):
        return f"{key} must be one of {choices(annotation)}; got {value!r}."
    if kind in RANGE_ERRORS:
        return f"{key} must be {bounds(metadata, first.get('ctx', {}))}; got {value!r}."
    if kind in TYPE_WORDS:
        return f"{key} {type_words(kind, schema, loc)}; got {value!r}."
    return f"{key}: {first['msg']}; got {value!r}."


def checked_options(messages: Mapping[str, str]) -> Callable[[T], T]:
    """Make ``cls`` a frozen pydantic dataclass (same keyword constructor, defaults and attributes) whose invalid
    values and unknown keywords raise `OptionError`: `complaint`'s sentence, or ``messages[field]`` (a sentence with
    a ``{value!r}`` slot) for a field that words its own."""

    def decorate(cls: T) -> T:
        checked = pydantic_dataclass(frozen=True, config=ConfigDict(arbitrary_types_allowed=True, extra="forbid"))(cls)
        init = checked.__init__

        @functools.wraps(init)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            try:
                init(self, *args, **kwargs)
            except ValidationError as error:
                raise OptionError(complaint(error, checked, messages, raw=kwargs, noun="option")) from None

        checked.__init__ = __init__
        return checked

    return decorate
