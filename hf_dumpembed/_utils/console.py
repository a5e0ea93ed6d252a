"""What the command line shows the user (results and step headers go to stdout; logs go to stderr)."""

from __future__ import annotations

import sys


def say(line: str) -> None:
    """Write one line to stdout and flush, so progress shows at once even when piped."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
