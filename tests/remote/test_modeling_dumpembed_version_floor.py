"""The remote code's transformers floor: a clear ImportError naming the version, stated in the model card too."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from hf_dumpembed.export.stock import export_stock_st
from hf_dumpembed.model.card import render_card
from hf_dumpembed.remote.configuration_dumpembed import MIN_TRANSFORMERS, check_transformers_version, release_numbers

NEED = ".".join(map(str, MIN_TRANSFORMERS))
# The check compares a given version string by hand, not with transformers.utils.versions.require_version: that
# reads the installed distribution's metadata (these tests and a shadowing old transformers could not be checked),
# refuses pre-releases of the floor (5.20rc1) and words its own message; packaging is not imported (the remote code
# imports only torch and transformers).


@pytest.mark.parametrize("version", ["4.57.6", "5.19.2", "4.9.0", "4.57.1", "5.2rc1", "5.2", "5.19.99", "5", "?"])
def test_old_transformers_get_an_error_naming_the_version(version):
    with pytest.raises(ImportError, match=rf"needs transformers >= {NEED}; transformers {re.escape(version)} is "
                                          "installed") as e:
        check_transformers_version(version)
    assert "pip install -U" in str(e.value) and "export-st" in str(e.value)


@pytest.mark.parametrize("version", [NEED, NEED + ".0", NEED + ".0rc1", NEED + ".0.dev0", "5.21rc1", "5.24.0",
                                     "5.30.0.dev0", "5.24.0+cpu", "6.0.0"])
def test_supported_versions_pass(version):
    check_transformers_version(version)


@pytest.mark.parametrize(("version", "numbers"), [("5.2rc1", (5, 2)), ("5.20.0.dev0", (5, 20, 0)),
                                                  ("4.57.1", (4, 57, 1)), ("5.21", (5, 21)), ("1!5.24.0", (5, 24, 0)),
                                                  ("v5.24.0.post1", (5, 24, 0)), ("unknown", ())])
def test_versions_are_read_by_their_release_numbers(version, numbers):
    """Fails on main: "5.2rc1" read as (5, 21), its pre-release digits glued to the minor version, and passed."""
    assert release_numbers(version) == numbers


def test_saved_code_checks_the_version_before_importing_new_names(bert_dump_model, tmp_path):
    """The copy in a saved folder raises the clear error where SubConfigSpec is missing (a fake old transformers)."""
    fake = tmp_path / "fake" / "transformers"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('__version__ = "4.57.6"\n')
    code = (bert_dump_model / "configuration_dumpembed.py").read_text()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={"PYTHONPATH": str(fake.parent), "PATH": ""}, cwd=tmp_path)
    assert result.returncode != 0
    assert f"ImportError: This DumpEmbed model's code needs transformers >= {NEED}" in result.stderr


def test_cards_state_the_supported_versions(bert_dump_model, tmp_path):
    assert f"needs **transformers >= {NEED}**" in render_card(bert_dump_model)
    stock = export_stock_st(bert_dump_model, tmp_path / "stock")
    card = render_card(stock, source=bert_dump_model)
    assert "sentence-transformers 3.4 or newer and transformers 4.57 or newer" in card and NEED not in card
