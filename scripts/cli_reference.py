"""docs/cli.md, the command-line reference, rendered from the parser (``hf_dumpembed.cli.build_parser()``).

    python scripts/cli_reference.py           # rewrite docs/cli.md from the parser
    python scripts/cli_reference.py --check   # write nothing; exit 1, with a diff, when docs/cli.md is stale

Every subcommand gets its synopsis, its description and a table of its arguments and options (help text, value,
default, choices), in the order ``hf-dumpembed --help`` lists them. The page is repository tooling: the package never
reads it. ``tests/repository/test_cli_reference.py`` fails when docs/cli.md is not the render of today's parser.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated_page  # noqa: E402  (a sibling script)

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "cli.md"
REGENERATE = "python scripts/cli_reference.py"
PROG = "hf-dumpembed"


def subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """Subcommand name -> (its parser, its one-line help), in the order ``--help`` lists them."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}


def documented_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments a page documents: every action but ``--help`` and the subcommand dispatcher."""
    return [a for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and a.help != argparse.SUPPRESS]


def expanded_help(action: argparse.Action, prog: str) -> str:
    """The help text as ``--help`` prints it: ``%(default)s``-style fields filled in, ``%%`` as ``%``."""
    params = {key: value for key, value in vars(action).items() if value is not argparse.SUPPRESS}
    params["prog"] = prog
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(choice) for choice in params["choices"])
    return " ".join((action.help or "").split()) % params


def inline(text: str) -> str:
    """``text`` as inline markdown for a paragraph or a table cell: code spans kept as they are; outside them ``\\``,
    ``*``, ``<`` and ``>`` escaped (so ``plots/*.png`` and ``<output>`` print literally); ``|`` escaped everywhere."""
    text = " ".join(text.split())
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick: no code spans at all
        parts = [text.replace("`", "\\`")]
    out = []
    for number, part in enumerate(parts):
        if number % 2:
            out.append(f"`{part}`")
        else:
            for old, new in (("\\", "\\\\"), ("*", "\\*"), ("<", "&lt;"), (">", "&gt;")):
                part = part.replace(old, new)
            out.append(part)
    return "".join(out).replace("|", "\\|")


def metavar(action: argparse.Action) -> str:
    """The value an argument takes, as ``--help`` writes it (``K``, ``{a,b}``, ``X [X ...]``), a positional's name
    in capitals as the descriptions write it (``MODEL``, ``OUT``)."""
    if action.metavar is not None:
        name = action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    elif action.choices is not None:
        name = "{" + ",".join(str(choice) for choice in action.choices) + "}"
    else:
        name = action.dest.upper()
    nargs = action.nargs
    if nargs == "?":
        return f"[{name}]"
    if nargs == "*":
        return f"[{name} ...]"
    if nargs == "+":
        return f"{name} [{name} ...]"
    if isinstance(nargs, int):
        return " ".join([name] * nargs)
    return name


def takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def synopsis(name: str, parser: argparse.ArgumentParser) -> str:
    """``hf-dumpembed NAME [options] POSITIONALS --required-option VALUE``."""
    words = [PROG, name]
    actions = documented_actions(parser)
    if any(a.option_strings and not a.required for a in actions):
        words.append("[options]")
    for action in actions:
        if not action.option_strings:
            words.append(metavar(action))
        elif action.required:
            words.append(f"{action.option_strings[0]} {metavar(action)}" if takes_value(action)
                         else action.option_strings[0])
    return " ".join(words)


def value_cell(action: argparse.Action) -> str:
    if not takes_value(action):
        return "(flag)"
    if action.choices is not None:
        text = "one of " + ", ".join(f"`{choice}`" for choice in action.choices)
    else:
        text = f"`{metavar(action)}`"
    if isinstance(action, argparse._AppendAction):
        text += " (repeatable)"
    return text.replace("|", "\\|")


def default_cell(action: argparse.Action) -> str:
    if action.required:
        return "required"
    default = action.default
    if default is None or default is argparse.SUPPRESS or (not takes_value(action) and default is False):
        return ""
    if isinstance(default, (list, tuple)):
        default = " ".join(str(value) for value in default)
    return f"`{default}`".replace("|", "\\|")


def options_table(actions: list[argparse.Action], prog: str) -> str:
    rows = ["| option | value | default | what it does |", "|---|---|---|---|"]
    for action in actions:
        names = ", ".join(f"`{option}`" for option in action.option_strings)
        rows.append(f"| {names} | {value_cell(action)} | {default_cell(action)} | "
                    f"{inline(expanded_help(action, prog))} |")
    return "\n".join(rows)


def arguments_table(actions: list[argparse.Action], prog: str) -> str:
    rows = ["| argument | what it is |", "|---|---|"]
    rows += [f"| `{metavar(action)}` | {inline(expanded_help(action, prog))} |" for action in actions]
    return "\n".join(rows)


def description(parser: argparse.ArgumentParser) -> str:
    """A raw description (laid out by hand) in a fenced block, as ``--help`` prints it; any other as a paragraph."""
    text = (parser.description or "").strip("\n")
    if issubclass(parser.formatter_class, argparse.RawDescriptionHelpFormatter):
        return "```\n" + text.rstrip() + "\n```"
    return inline(text)


def render_command(name: str, parser: argparse.ArgumentParser) -> str:
    """One subcommand's section: heading, synopsis, description, arguments, options."""
    actions = documented_actions(parser)
    positionals = [a for a in actions if not a.option_strings]
    optionals = [a for a in actions if a.option_strings]
    parts = [f"## {PROG} {name}", f"```bash\n{synopsis(name, parser)}\n```"]
    if parser.description:
        parts.append(description(parser))
    if positionals:
        parts.append(arguments_table(positionals, parser.prog))
    if optionals:
        parts.append(options_table(optionals, parser.prog))
    return "\n\n".join(parts) + "\n"


def render_index(commands: dict[str, tuple[argparse.ArgumentParser, str]]) -> str:
    rows = ["| command | what it does |", "|---|---|"]
    rows += [f"| [`{name}`](#{PROG}-{name}) | {inline(help_text)} |" for name, (_, help_text) in commands.items()]
    return "\n".join(rows)


def render(parser: argparse.ArgumentParser) -> str:
    """The whole of docs/cli.md for ``parser`` (the top-level ``hf-dumpembed`` parser)."""
    commands = subcommands(parser)
    header = [
        f"# Command-line reference (`{PROG}`)",
        f"<!-- Generated from hf_dumpembed.cli.build_parser(); do not edit by hand. Regenerate: {REGENERATE} -->",
        f"Every subcommand of `{PROG}`, from the text `{PROG} COMMAND --help` prints: its synopsis, what it does, "
        "and each argument and option with its value, default and choices. `-h` / `--help` works everywhere; the "
        f"global options come before the subcommand (`{PROG} -v build ...`). How the commands fit together: the "
        "[README](../README.md#command-line).",
        description(parser),
        render_index(commands),
        "Global options:\n\n" + options_table(documented_actions(parser), parser.prog),
    ]
    sections = [render_command(name, sub) for name, (sub, _) in commands.items()]
    return "\n\n".join(header) + "\n\n" + "\n".join(sections)


def current_render() -> str:
    from hf_dumpembed.cli import build_parser

    return render(build_parser())


def stale_diff(expected: str, actual: str) -> str:
    """How docs/cli.md differs from the render of the parser (the head of a unified diff)."""
    return generated_page.stale_diff(expected, actual, "parser", "docs/cli.md")


def main(argv: list[str] | None = None) -> int:
    return generated_page.write_or_check(PAGE, lambda _page: current_render(), source="parser",
                                         regenerate=REGENERATE, doc=__doc__, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
