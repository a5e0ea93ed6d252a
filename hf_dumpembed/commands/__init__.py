"""The ``hf-dumpembed`` subcommands, one module per verb group, each a thin layer over the library.

Each module defines ``register(commands)``, which adds its subparsers (with ``set_defaults(func=...)``) to the
``argparse`` subparsers object; ``cli.build_parser`` calls them in the order of ``cli.COMMAND_GROUPS``.
"""

from __future__ import annotations

import argparse

TRUST_HELP = ("run the folder's Python even when it is not hf_dumpembed's own remote code (default: refuse such a "
              "folder and name the files that differ). Only for folders whose author you trust")


def add_trust_flag(parser: argparse.ArgumentParser) -> None:
    """The ``--trust-remote-code`` flag of every command that loads a model folder."""
    parser.add_argument("--trust-remote-code", action="store_true", help=TRUST_HELP)


def add_command(commands: argparse._SubParsersAction, name: str, summary: str,
                description: str) -> argparse.ArgumentParser:
    """A subcommand listed with ``summary`` whose ``--help`` prints ``description`` with its line breaks kept."""
    return commands.add_parser(name, help=summary, description=description,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
