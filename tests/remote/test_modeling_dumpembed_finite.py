"""Finite or refused: NaN/inf weights, missing or misshapen tensors and badly typed load-time options are errors that
name the tensor or option on every load path; comparisons in verify/push treat NaN as a failure; fit never writes
a non-finite map."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from huggingface_hub.errors import StrictDataclassError
from safetensors.torch import load_file, save_file

from hf_dumpembed.export.verify import ParityReport
from hf_dumpembed.model.folder_schema import FolderShape
from hf_dumpembed.projections.maths.spectrum import eigendecompose
from hf_dumpembed.projections.maths.statistics import StreamingStats
from hf_dumpembed.publishing.push_checks import FolderReport, compare_load_paths
from tests.support.card_fixtures import copy_model


def _damaged(model: Path, target: Path, edit) -> Path:
    folder = copy_model(model, target)
    tensors = load_file(str(folder / "model.safetensors"))
    edit(tensors)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


def _automodel(folder: Path, **kwargs):
    from transformers import AutoModel

    return AutoModel.from_pretrained(str(folder), trust_remote_code=True, **kwargs)


def _st(folder: Path, **kwargs):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), trust_remote_code=True, **kwargs)


def _embedding_key(tensors: dict) -> str:
    return next(k for k in tensors if k.endswith("word_embeddings.weight") or k.endswith("embed_tokens.weight"))


def _set(key: str, index, value: float):
    def edit(tensors: dict) -> None:
        name = _embedding_key(tensors) if key == "embeddings" else key
        tensors[name][index] = value
    return edit


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (_set("projection.mean", 0, float("nan")), "projection.mean"),
        (_set("projection.matrix", (0, 0), float("inf")), "projection.matrix"),
        (_set("embeddings", -1, float("nan")), "[DUMP4] embedding row"),
    ],
)
@pytest.mark.parametrize("load", [_automodel, _st])
def test_non_finite_weights_are_refused_at_load_naming_the_tensor(bert_dump_model, tmp_path, edit, named, load):
    folder = _damaged(bert_dump_model, tmp_path / "nan", edit)
    with pytest.raises(ValueError, match="non-finite values") as error:
        load(folder)
    assert named in str(error.value)


def test_a_missing_projection_tensor_is_an_error_not_the_identity(bert_dump_model, tmp_path):
    folder = _damaged(bert_dump_model, tmp_path / "missing", lambda t: t.pop("projection.matrix"))
    with pytest.raises(ValueError, match="lacks 1 tensor.*projection.matrix"):
        _automodel(folder)


def test_a_misshapen_tensor_is_an_error_naming_it(bert_dump_model, tmp_path):
    folder = _damaged(bert_dump_model, tmp_path / "shape",
                      lambda t: t.__setitem__("projection.mean", torch.zeros(3)))
    with pytest.raises(ValueError, match=r"projection.mean \(checkpoint \(3,\)"):
        _automodel(folder)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"projection_dim": "8"}, {"projection_dim": True}, {"projection_dim": 8.0}, {"normalize": "no"},
        {"pooling": 3}, {"num_dump_tokens": 1.5},
    ],
)
def test_from_pretrained_kwargs_are_type_checked(bert_dump_model, kwargs):
    with pytest.raises(StrictDataclassError, match=next(iter(kwargs))):
        _automodel(bert_dump_model, **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model_kwargs": {"projection_dim": True}},
        {"config_kwargs": {"projection_dim": 8.5}}, {"config_kwargs": {"normalize": 1}},
        {"config_kwargs": {"dump_token_offset": "1"}},
    ],
)
def test_sentence_transformers_kwargs_are_type_checked(bert_dump_model, kwargs):
    """The config's own annotations refuse ``config_kwargs``; ``model_kwargs`` reach the model's constructor."""
    with pytest.raises((StrictDataclassError, ValueError), match="projection_dim|normalize|dump_token_offset"):
        _st(bert_dump_model, **kwargs)


def test_output_loading_info_still_works(bert_dump_model):
    model, info = _automodel(bert_dump_model, output_loading_info=True)
    assert not info["missing_keys"] and type(model).__name__ == "DumpEmbedModel"


@pytest.mark.parametrize("tolerance", [float("nan"), -1.0, float("inf")])
def test_verify_refuses_a_tolerance_no_difference_can_meet_or_any_can(bert_dump_model, tolerance):
    from hf_dumpembed.export.verify import check_load_paths

    with pytest.raises(ValueError, match="tolerance must be a finite number >= 0"):
        check_load_paths(bert_dump_model, tolerance=tolerance)
    assert not ParityReport(max_abs_diff={"sentence-transformers": float("nan")}).ok


def test_push_comparison_treats_nan_as_a_failure():
    nan = [[float("nan"), 0.0]]
    out = {"leaked": False, "st_document": nan, "st_query": nan, "st_one_by_one": nan, "automodel": nan,
           "tokens": ["[CLS]"], "automodel_class": "DumpEmbedModel"}
    report = FolderReport(folder=Path("."), kind=FolderShape.DUMPEMBED)
    compare_load_paths(out, report)
    assert not report.ok
    assert any("NaN or infinite" in p for p in report.problems)
    assert any("max |Δ| nan" in p for p in report.problems)


def test_fit_refuses_non_finite_statistics():
    stats = StreamingStats(4).update(np.eye(4, dtype=np.float32))
    stats.sum_outer[0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        eigendecompose(stats)


def test_a_non_finite_recomposed_projection_is_refused(bert_dump_model, tmp_path):
    from hf_dumpembed.remote.modeling_dumpembed import DumpProjection

    projection = DumpProjection(4, 4, selection="spectral")
    projection.eigenvalues = torch.tensor([1.0, -1.0, 0.5, 0.1])
    projection.gammas = torch.full((4,), 0.5)
    with pytest.raises(ValueError, match="not finite"):
        projection.select(2)


def test_an_over_long_input_says_what_to_do(bert_dump_model):
    from tests.support.tiny_models import MAX_POSITIONS

    model = _automodel(bert_dump_model)
    cls_id = model.config.text_config.pad_token_id or 0  # any id: only the [DUMP] prefix after it is checked
    ids = torch.tensor([[cls_id, *model.config.dump_token_ids, *[5] * MAX_POSITIONS]])
    with pytest.raises(ValueError, match="truncation=True"):
        model(input_ids=ids, attention_mask=torch.ones_like(ids))
