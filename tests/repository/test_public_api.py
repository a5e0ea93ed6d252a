"""The package root exposes a small public API, every name of it resolves, and `projections` exports no maths."""

from __future__ import annotations

import importlib

import hf_dumpembed

PUBLIC = {"DumpEmbedModel", "DumpEmbedConfig", "build", "BuildOptions", "fit_projections", "FitOptions",
          "export_stock_st", "check_load_paths", "quantize", "compile_model"}


def test_the_root_exports_the_public_api_and_nothing_else() -> None:
    assert set(hf_dumpembed.__all__) == PUBLIC | {"__version__"}
    for name in PUBLIC:
        assert callable(getattr(hf_dumpembed, name)), name


def test_root_names_are_the_objects_of_their_modules() -> None:
    from hf_dumpembed.export.stock import export_stock_st
    from hf_dumpembed.model.builder import build
    from hf_dumpembed.remote import DumpEmbedModel

    assert hf_dumpembed.build is build
    assert hf_dumpembed.export_stock_st is export_stock_st
    assert hf_dumpembed.DumpEmbedModel is DumpEmbedModel


def test_an_unknown_root_name_is_an_attribute_error() -> None:
    try:
        hf_dumpembed.build_dump_model  # noqa: B018 - internal: imported from hf_dumpembed.model.builder
    except AttributeError as error:
        assert "build_dump_model" in str(error)
    else:
        raise AssertionError("internal names are not part of the root API")


def test_projections_exports_no_maths_internals() -> None:
    projections = importlib.import_module("hf_dumpembed.projections")
    maths = {"gamma_map", "pca_map", "whiten_map", "eigendecompose", "spectemp_curve", "fit_spectemp", "gram_basis",
             "svd_basis", "StreamingStats", "Spectrum", "LinearMap", "truncate_map"}
    assert not maths & set(projections.__all__)
