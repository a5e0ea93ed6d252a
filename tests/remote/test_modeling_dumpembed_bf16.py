"""docs/serving.md, "torch in bf16": both documented loads put the backbone in bfloat16, keep the stored projection
in fp32, and give vectors close to the fp32 load's. Closeness is asserted before any fitted head: a head fitted on
this tiny random model's few texts centres away almost all of its (anisotropic) signal and so magnifies the rounding;
the real folder's SpecTemp head is measured in BENCHMARKS.md ("CPU serving"), 0.9999 min cosine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from sentence_transformers import SentenceTransformer
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed.projections.fit import FitOptions, fit_projection
from tests.support.fit_fixtures import write_corpus

TEXTS = ["How do I read a file line by line in Python?", "a", "Dense retrieval ranks passages by cosine. " * 8]


@pytest.fixture(scope="module")
def pca_folder(bert_dump_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bf16")
    return fit_projection(bert_dump_model, root / "pca", FitOptions(method="pca", dim=16, progress=False, plots=False),
                          corpus=write_corpus(root / "texts.txt"))


def _automodel_vectors(folder: Path, **kwargs) -> tuple[np.ndarray, torch.nn.Module]:
    model = AutoModel.from_pretrained(folder, trust_remote_code=True, **kwargs).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    with torch.inference_mode():
        out = model(**tokenizer(TEXTS, padding=True, return_tensors="pt")).sentence_embedding
    return out.float().numpy(), model


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_automodel_in_bf16_rounds_only_the_backbone(bert_dump_model: Path) -> None:
    fp32, _ = _automodel_vectors(bert_dump_model)
    bf16, model = _automodel_vectors(bert_dump_model, dtype=torch.bfloat16)
    assert next(model.backbone.parameters()).dtype == torch.bfloat16
    assert bf16.dtype == np.float32 and bf16.shape == fp32.shape
    assert not np.array_equal(bf16, fp32)  # the backbone's rounding did change
    assert _cosines(bf16, fp32).min() >= 0.999


def test_a_fitted_head_stays_fp32_under_a_bf16_load(pca_folder: Path) -> None:
    vectors, model = _automodel_vectors(pca_folder, dtype=torch.bfloat16)
    assert next(model.backbone.parameters()).dtype == torch.bfloat16
    assert {buffer.dtype for buffer in model.projection.buffers()} == {torch.float32}
    assert vectors.shape == (len(TEXTS), 16) and np.isfinite(vectors).all()


def test_sentence_transformers_in_bf16_gives_the_automodel_bf16_vectors(bert_dump_model: Path) -> None:
    st = SentenceTransformer(str(bert_dump_model), trust_remote_code=True, model_kwargs={"dtype": torch.bfloat16})
    vectors = np.asarray(st.encode(TEXTS, batch_size=len(TEXTS)), dtype=np.float32)
    reference, _ = _automodel_vectors(bert_dump_model, dtype=torch.bfloat16)
    assert _cosines(vectors, reference).min() >= 0.9999
    fp32 = SentenceTransformer(str(bert_dump_model), trust_remote_code=True).encode(TEXTS, batch_size=len(TEXTS))
    assert not np.array_equal(vectors, fp32) and _cosines(vectors, np.asarray(fp32)).min() >= 0.999
