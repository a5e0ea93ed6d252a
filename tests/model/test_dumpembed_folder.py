"""A damaged safetensors file is refused by name before anything loads, on the Python API as on the command line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hf_dumpembed.model.dumpembed_folder import DamagedWeightsError, require_dumpembed_folder
from tests.support.card_fixtures import copy_model


def _truncated(source: Path, target: Path) -> Path:
    folder = copy_model(source, target)
    weights = folder / "model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)
    return folder


@pytest.mark.parametrize("entry", ["require_dumpembed_folder", "check_load_paths", "fit_projection",
                                   "export_stock_st", "run_eval"])
def test_a_truncated_weights_file_is_one_error_naming_it(entry: str, bert_dump_model: Path, tmp_path: Path) -> None:
    """A truncated weights file is one error naming the file, not safetensors' own SafetensorError."""
    from hf_dumpembed.evaluation import run_eval
    from hf_dumpembed.export.stock import export_stock_st
    from hf_dumpembed.export.verify import check_load_paths
    from hf_dumpembed.projections.fit import FitOptions, fit_projection

    folder = _truncated(bert_dump_model, tmp_path / "model")
    call = {
        "require_dumpembed_folder": lambda: require_dumpembed_folder(folder),
        "check_load_paths": lambda: check_load_paths(folder),
        "fit_projection": lambda: fit_projection(folder, tmp_path / "out", FitOptions(method="truncate", dim=8)),
        "export_stock_st": lambda: export_stock_st(folder, tmp_path / "out"),
        "run_eval": lambda: run_eval(folder, ["unused"], results_dir=tmp_path / "out"),
    }[entry]
    with pytest.raises(DamagedWeightsError, match=r"model\.safetensors is damaged .*rebuild or re-download it"):
        call()
    assert not (tmp_path / "out").exists()
