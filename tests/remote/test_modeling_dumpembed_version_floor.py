"""The remote code's transformers floor: transformers' own `require_version`, with a hint naming what to do; stated in
the model card too."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys

import pytest
import transformers.utils.versions

from hf_dumpembed.export.stock import export_stock_st
from hf_dumpembed.model.card import render_card
from hf_dumpembed.remote.configuration_dumpembed import MIN_TRANSFORMERS, TRANSFORMERS_REQUIREMENT


def _check(monkeypatch, version: str) -> None:
    """The floor check of the configuration file, with ``version`` as the installed transformers."""
    monkeypatch.setattr(importlib.metadata, "version", lambda name: version if name == "transformers" else "0")
    transformers.utils.versions.require_version(TRANSFORMERS_REQUIREMENT)


@pytest.mark.parametrize("version", ["4.57.6", "5.19.2", "4.9.0", "4.57.1", "5.2rc1", "5.2", "5.19.99", "5"])
def test_old_transformers_get_an_error_naming_the_version(monkeypatch, version):
    with pytest.raises(ImportError, match=rf"found transformers=={version}"):
        _check(monkeypatch, version)


@pytest.mark.parametrize("version", [MIN_TRANSFORMERS, MIN_TRANSFORMERS + ".0", MIN_TRANSFORMERS + ".0rc1",
                                     MIN_TRANSFORMERS + ".0.dev0", "5.21rc1", "5.24.0", "5.30.0.dev0", "5.24.0+cpu",
                                     "6.0.0"])
def test_supported_versions_and_pre_releases_of_the_floor_pass(monkeypatch, version):
    _check(monkeypatch, version)


def test_saved_code_checks_the_version_before_importing_new_names(bert_dump_model, tmp_path):
    """The copy in a saved folder stops with the hint where an old transformers is installed (a fake 4.57.6: its
    distribution metadata and `transformers.utils.versions`, nothing else, ahead of the real one on the path)."""
    fake = tmp_path / "fake"
    (fake / "transformers" / "utils").mkdir(parents=True)
    (fake / "transformers" / "__init__.py").write_text('__version__ = "4.57.6"\n')
    (fake / "transformers" / "utils" / "__init__.py").write_text("")
    shutil.copy(transformers.utils.versions.__file__, fake / "transformers" / "utils" / "versions.py")
    (fake / "transformers-4.57.6.dist-info").mkdir()
    (fake / "transformers-4.57.6.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: transformers\nVersion: 4.57.6\n")
    code = (bert_dump_model / "configuration_dumpembed.py").read_text()
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={"PYTHONPATH": str(fake), "PATH": ""}, cwd=tmp_path)
    assert result.returncode != 0
    assert f"ImportError: {TRANSFORMERS_REQUIREMENT} is required" in result.stderr, result.stderr[-2000:]
    assert f"This DumpEmbed model's code needs transformers >= {MIN_TRANSFORMERS}" in result.stderr
    assert "pip install -U" in result.stderr and "export-st" in result.stderr


def test_cards_state_the_supported_versions(bert_dump_model, tmp_path):
    assert f"needs **transformers >= {MIN_TRANSFORMERS}**" in render_card(bert_dump_model)
    stock = export_stock_st(bert_dump_model, tmp_path / "stock")
    card = render_card(stock, source=bert_dump_model)
    assert "sentence-transformers 3.4 or newer and transformers 4.57 or newer" in card and MIN_TRANSFORMERS not in card
