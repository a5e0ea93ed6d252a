"""Every name a package's ``__all__`` lists (resolved lazily by ``_utils.lazy``) imports."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = ["hf_dumpembed", "hf_dumpembed.model", "hf_dumpembed.export", "hf_dumpembed.projections",
            "hf_dumpembed.publishing"]


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError):
        importlib.import_module("hf_dumpembed.publishing").no_such_name  # noqa: B018
