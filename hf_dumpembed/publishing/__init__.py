"""Publishing a model folder: checks of the folder as a user receives it, staging and upload to the Hub."""

from __future__ import annotations

from .._utils.lazy import lazy_attributes

_LAZY = {"push_folder": "hub", "PushResult": "hub", "check_folder": "push_checks", "PublishRefused": "push_checks"}
__all__ = list(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
