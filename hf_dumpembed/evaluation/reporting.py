"""The public names for reporting a run outside the package (the repository's benchmark records, compatibility
matrix and mutation score use them): the machine and library versions a run used, the markdown table and the
relative change against a baseline that the package's own reports use, and the console line.

They are the package's one implementation of each (``hf_dumpembed/_utils``), so a benchmark section describes its
machine and renders its tables exactly as ``report``, the quickstart and the model card do.
"""

from __future__ import annotations

from .._utils.console import say
from .._utils.machine import describe_machine, machine_info
from .._utils.tables import relative_change, render_markdown

__all__ = ["describe_machine", "machine_info", "relative_change", "render_markdown", "say"]
