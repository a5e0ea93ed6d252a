"""Every float option of every command refuses NaN, infinities and out-of-range values while the command line is
parsed (one shared ``type=``, ``hf_dumpembed.commands.arguments.FiniteFloat``), with argparse's one-line error
naming the flag and the range it accepts."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hf_dumpembed.cli import build_parser, main
from hf_dumpembed.commands.arguments import FiniteFloat
from hf_dumpembed.export.openvino_int8_static import SMOOTH_QUANT_OFF

NON_FINITE = ("nan", "inf", "-inf", "NaN", "Infinity", "-Infinity")


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
              ) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (sub)command's parser with the words that select it, nested subparsers included."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield from _commands(subparser, (*path, name))


def _dummy(action: argparse.Action) -> list[str]:
    """Values that satisfy ``action`` (its first choice, else "1"), as many as its nargs needs."""
    value = str(next(iter(action.choices))) if action.choices else "1"
    count = {None: 1, "?": 0, "*": 0, "+": 1}.get(action.nargs, action.nargs)
    return [value] * count


def minimal_argv(path: tuple[str, ...], parser: argparse.ArgumentParser) -> list[str]:
    """The shortest command line ``parser`` accepts: its required positionals and required options, dummy values."""
    argv = list(path)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.default == argparse.SUPPRESS:
            continue
        if not action.option_strings and action.required:
            argv += _dummy(action)
        elif action.option_strings and action.required:
            argv += [action.option_strings[-1], *_dummy(action)]
    return argv


def _float_options() -> list[tuple[tuple[str, ...], argparse.ArgumentParser, argparse.Action]]:
    """Every action of every command whose value is a float: a ``FiniteFloat`` type, ``float`` itself, or any
    other type that turns "nan" into a float."""
    found = []
    for path, parser in _commands(build_parser()):
        for action in parser._actions:
            if action.type is None or isinstance(action, argparse._SubParsersAction):
                continue
            if isinstance(action.type, FiniteFloat) or action.type is float:
                found.append((path, parser, action))
                continue
            try:
                parsed = action.type("nan")
            except (ValueError, TypeError, argparse.ArgumentTypeError):
                continue
            if isinstance(parsed, float):
                found.append((path, parser, action))
    return found


FLOAT_OPTIONS = _float_options()
IDS = [f"{' '.join(path)} {action.option_strings[-1]}" for path, _, action in FLOAT_OPTIONS]

# The flags this test knows, with the range each accepts (the walk below finds them and any added later).
KNOWN = {
    "verify --tolerance": "a finite number >= 0",
    "export-onnx --int8-smooth-quant": "a finite number in [0, 1] or 'off'",
    "export-onnx --int8-accuracy-control": "a finite number in (0, 1)",
    "serve-bench --seconds": "a finite number >= 0",
    "fit --gamma": "a finite number in [0, 1]",
}


def test_the_walk_finds_every_known_float_option_with_its_range():
    """The walk is not vacuous: it finds each float option named above, each with the range chosen for it."""
    allowed = {name: action.type.allowed for name, (_, _, action) in zip(IDS, FLOAT_OPTIONS, strict=True)
               if isinstance(action.type, FiniteFloat)}
    assert {name: allowed.get(name) for name in KNOWN} == KNOWN


@pytest.mark.parametrize(("path", "parser", "action"), FLOAT_OPTIONS, ids=IDS)
def test_every_float_option_uses_the_shared_validator(path, parser, action):
    assert isinstance(action.type, FiniteFloat), (
        f"{' '.join(path)} {action.option_strings[-1]} parses floats without "
        "hf_dumpembed.commands.arguments.FiniteFloat: use it, with the range the option accepts")


@pytest.mark.parametrize(("path", "parser", "action"), FLOAT_OPTIONS, ids=IDS)
def test_every_float_option_refuses_nan_and_infinities(path, parser, action, capsys):
    """Each value, given as ``--flag=VALUE`` (``--flag -inf`` would be read as an unknown option), exits 2 with
    one error line naming the flag, the range and the value."""
    argv = minimal_argv(path, parser)
    top = build_parser()
    top.parse_args(argv)  # the minimal command line alone parses: a failure below is the flag's
    flag = action.option_strings[-1]
    for value in NON_FINITE:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            top.parse_args([*argv, f"{flag}={value}"])
        assert exit_info.value.code == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last == f"hf-dumpembed {' '.join(path)}: error: argument {'/'.join(action.option_strings)}: must be " \
                       f"{action.type.allowed}; got {value!r}"


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize(("argv", "value"), [
    (["serve-bench", "EXPORT", "--seconds", "-1"], None),
    (["serve-bench", "EXPORT", "--seconds", "-0.001"], None),
    (["serve-bench", "EXPORT", "--seconds", "two"], None),
    (["serve-bench", "EXPORT", "--seconds", "0"], 0.0),  # no time asked: the 3 minimum repeats only
    (["serve-bench", "EXPORT", "--seconds", "2.5"], 2.5),
    (["verify", "MODEL", "--tolerance", "-0.000001"], None),
    (["verify", "MODEL", "--tolerance", "0"], 0.0),
    (["verify", "MODEL", "--tolerance", "1e-3"], 1e-3),
    (["fit", "M", "O", "--method", "gamma", "--gamma", "1.5"], None),
    (["fit", "M", "O", "--method", "gamma", "--gamma", "-0.5"], None),
    (["fit", "M", "O", "--method", "gamma", "--gamma", "0"], 0.0),
    (["fit", "M", "O", "--method", "gamma", "--gamma", "1"], 1.0),
    (["export-onnx", "M", "O", "--int8-accuracy-control", "0"], None),
    (["export-onnx", "M", "O", "--int8-accuracy-control", "1"], None),
    (["export-onnx", "M", "O", "--int8-accuracy-control", "0.002"], 0.002),
    (["export-onnx", "M", "O", "--int8-smooth-quant", "-1"], None),  # NNCF's "off" value only through the word
    (["export-onnx", "M", "O", "--int8-smooth-quant", "1.01"], None),
    (["export-onnx", "M", "O", "--int8-smooth-quant", "0.5"], 0.5),
    (["export-onnx", "M", "O", "--int8-smooth-quant", "OFF"], SMOOTH_QUANT_OFF),
])
def test_the_range_of_each_float_option(argv, value, capsys):
    """Values at and beyond each bound: refused (None) with the flag named, or parsed to the float given."""
    flag, text = argv[-2:]
    if value is None:
        with pytest.raises(SystemExit) as exit_info:
            _parse(*argv)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert f"argument {flag}: must be a finite number" in err and err.rstrip().endswith(f"; got {text!r}")
    else:
        parsed = getattr(_parse(*argv), flag.lstrip("-").replace("-", "_"))
        assert parsed == value and isinstance(parsed, float)


def test_serve_bench_seconds_nan_stops_before_anything_runs(tmp_path, capsys):
    """The command as typed: refused by the parser, so nothing is opened or timed (the folder does not exist)."""
    with pytest.raises(SystemExit) as exit_info:
        main(["serve-bench", str(tmp_path / "missing"), "--seconds", "nan"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "hf-dumpembed serve-bench: error: argument --seconds: must be a finite number >= 0; got 'nan'")


@pytest.mark.parametrize(("validator", "allowed"), [
    (FiniteFloat(), "a finite number"),
    (FiniteFloat(0), "a finite number >= 0"),
    (FiniteFloat(0, min_inclusive=False), "a finite number > 0"),
    (FiniteFloat(maximum=1, max_inclusive=False), "a finite number < 1"),
    (FiniteFloat(0, 1, max_inclusive=False), "a finite number in [0, 1)"),
    (FiniteFloat(0.5, 2, words={"off": -1.0, "auto": 0.0}), "a finite number in [0.5, 2], 'off' or 'auto'"),
])
def test_the_validator_says_what_it_accepts(validator, allowed):
    assert validator.allowed == allowed
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be .*; got 'nan'$"):
        validator("nan")


def test_the_validator_refuses_bounds_that_cannot_be_met():
    with pytest.raises(ValueError, match="minimum"):
        FiniteFloat(math.inf)
    with pytest.raises(ValueError, match="above maximum"):
        FiniteFloat(1, 0)


@given(st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.booleans())
def test_the_validator_accepts_exactly_the_finite_floats_in_range(value, low_in, high_in):
    """Any float, written as Python writes it: parsed back to itself when finite and in range, else refused."""
    validator = FiniteFloat(-1.0, 1.0, min_inclusive=low_in, max_inclusive=high_in)
    inside = math.isfinite(value) and (-1.0 <= value if low_in else -1.0 < value) \
        and (value <= 1.0 if high_in else value < 1.0)
    if inside:
        assert validator(repr(value)) == value
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"got {repr(value)!r}")):
            validator(repr(value))
