"""pydantic's errors as one line: the field, pydantic's own message and the value, with a validator's or a field's
own sentence, a bounded field's whole range and an unknown field's allowed names where they say more;
`checked_options` raises it as `OptionError` (options), the training config as its `ConfigError`
(tests/training/test_config.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Annotated, ClassVar, Literal

import pytest
from pydantic import ConfigDict, Field, StrictFloat, StrictInt, StrictStr, TypeAdapter, ValidationError, model_validator

from hf_dumpembed._utils.checked import OptionError, checked_options, complaint


class Colour(str, enum.Enum):
    RED = "red"
    BLUE = "blue"


@checked_options({"size": "size must be a whole number of bytes; got {value!r}."})
class Options:
    name: StrictStr
    count: Annotated[StrictInt, Field(ge=1)] = 1
    ratio: Annotated[StrictFloat, Field(ge=0, lt=1)] | None = None
    rate: Annotated[StrictFloat, Field(gt=0)] = 1.0
    kind: Literal["a", "b"] = "a"
    colour: Colour = Colour.RED
    size: Annotated[StrictInt, Field(ge=0)] = 0

    @model_validator(mode="after")
    def _named(self) -> Options:
        if self.name == "nobody":
            raise ValueError("name 'nobody' is reserved; choose another.")
        return self


@pytest.mark.parametrize(("kwargs", "sentence"), [
    ({"count": "2"}, "count: Input should be a valid integer; got '2'."),
    ({"count": 0}, "count must be >= 1; got 0."),
    ({"ratio": 1.0}, "ratio must be in [0, 1); got 1.0."),
    ({"ratio": -0.5}, "ratio must be in [0, 1); got -0.5."),
    ({"rate": 0}, "rate must be > 0; got 0."),
    ({"kind": "c"}, "kind: Input should be 'a' or 'b'; got 'c'."),
    ({"colour": "green"}, "colour: Input should be 'red' or 'blue'; got 'green'."),
    ({"size": -1}, "size must be a whole number of bytes; got -1."),  # the field's own sentence wins
    ({"size": 1.5}, "size must be a whole number of bytes; got 1.5."),
    ({"name": 5}, "name: Input should be a valid string; got 5."),
    ({"name": "nobody"}, "name 'nobody' is reserved; choose another."),  # a check that raised speaks for itself
    ({"nmae": "x"}, "unknown option(s) ['nmae']; allowed options: ['colour', 'count', 'kind', 'name', 'rate', "
                    "'ratio', 'size']."),
])
def test_each_complaint_is_one_line_naming_the_field(kwargs: dict, sentence: str) -> None:
    with pytest.raises(OptionError) as info:
        Options(**{"name": "x", **kwargs})
    assert str(info.value) == sentence
    assert isinstance(info.value, ValueError)


def test_a_missing_field_and_the_frozen_defaults() -> None:
    with pytest.raises(OptionError, match=r"^name: Field required\.$"):
        Options()
    options = Options(name="x")
    assert (options.count, options.colour) == (1, Colour.RED)
    with pytest.raises(AttributeError):
        options.count = 2  # type: ignore[misc]


_SECTION = ConfigDict(extra="forbid", str_min_length=1)


@dataclass(frozen=True)
class Inner:
    __pydantic_config__: ClassVar[ConfigDict] = _SECTION

    path: StrictStr
    columns: dict[StrictStr, StrictStr] | None = None
    batch: Annotated[StrictInt, Field(gt=0)] = 8


@dataclass(frozen=True)
class Outer:
    __pydantic_config__: ClassVar[ConfigDict] = _SECTION

    inner: Inner = field(default_factory=lambda: Inner(path="p"))


def _sentence(schema: type, raw: dict, where: str = "") -> str:
    try:
        TypeAdapter(schema).validate_python(raw)
    except ValidationError as error:
        return complaint(error, schema, where=where)
    raise AssertionError(f"{raw} was accepted")


def test_sections_name_the_dotted_key() -> None:
    assert _sentence(Outer, {"inner": {"path": "p", "batch": 0}}) == "inner.batch must be > 0; got 0."
    assert _sentence(Inner, {"path": ""}, where="data[2]") == (
        "data[2].path: String should have at least 1 character; got ''.")
    assert _sentence(Inner, {}, where="data[0]") == "data[0].path: Field required."
    assert _sentence(Outer, {"inner": {"path": "p", "size": 1}}) == (
        "inner: unknown key(s) ['size']; allowed keys: ['batch', 'columns', 'path'].")
    # a bad entry of a mapping is named by its key
    assert _sentence(Inner, {"path": "p", "columns": {"anchor": 5}}) == (
        "columns.anchor: Input should be a valid string; got 5.")
    assert _sentence(Outer, {"inner": []}) == "inner: Input should be a dictionary or an instance of Inner; got []."
