"""Package attributes that import their module on first use (the command line starts without torch)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_attributes(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that resolves ``exports[name]`` (a module relative to ``package``) on first use."""

    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(importlib.import_module(f".{exports[name]}", package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
