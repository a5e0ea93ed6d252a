"""Quantized outputs: `fit` stores int8 ranges and binary thresholds (quantization.json); `quantize` reuses them
bit for bit (any batch, after a reload, through every way of naming the model); verify and push check the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from sentence_transformers.util import quantize_embeddings

from hf_dumpembed import quantize
from hf_dumpembed.model.quantization import (
    CALIBRATION_FILE,
    CalibrationError,
    calibration_problems,
    projection_fingerprint,
    read_calibration,
)
from hf_dumpembed.projections import quantization_ranges
from hf_dumpembed.projections.fit import FitOptions, fit_projection
from tests.support.fit_fixtures import corpus_texts, write_corpus

TEXTS = ["A man is eating food.", "hello world second text", "Open the file, read every line.",
         "A monkey plays drums.", "The girl is carrying a baby."]


@pytest.fixture(scope="module")
def fitted(llama_dump_model: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """SpecTemp at k = 16 and truncation at k = d = 32 fitted with a corpus; EmbedFilter without one."""
    root = tmp_path_factory.mktemp("quantized")
    corpus = write_corpus(root / "texts.txt")
    quiet = {"progress": False, "plots": False}
    return {
        "corpus": corpus,
        "spectemp": fit_projection(llama_dump_model, root / "spectemp16",
                                   FitOptions(method="spectemp", mode="reference", dim=16, **quiet), corpus=corpus),
        "truncate": fit_projection(llama_dump_model, root / "truncate32",
                                   FitOptions(method="truncate", dim=32, **quiet), corpus=corpus),
        "embedfilter": fit_projection(llama_dump_model, root / "embedfilter",
                                      FitOptions(method="embedfilter", **quiet)),
    }


def _st(folder: Path, k: int | None = None):
    from sentence_transformers import SentenceTransformer

    kwargs = {"model_kwargs": {"projection_dim": k}} if k else {}
    return SentenceTransformer(str(folder), trust_remote_code=True, **kwargs)


def test_fit_stores_the_calibration_of_its_final_outputs(fitted) -> None:
    folder = fitted["spectemp"]
    config = json.loads((folder / "config.json").read_text())
    stored = read_calibration(folder)
    assert stored.dims == config["projection_info"]["selectable_dims"] == [16, 32]
    for k in stored.dims:
        ranges, threshold = stored.at(k)
        assert ranges.shape == (2, k) and ranges.dtype == np.float32 and bool((ranges[0] < ranges[1]).all())
        assert threshold.shape == (k,) and threshold.dtype == np.float32
    assert stored.info["projection_sha256"] == projection_fingerprint(folder)
    assert stored.info["corpus"]["sha256"] == config["projection_info"]["corpus"]["sha256"]
    assert stored.info["num_texts"] == len(corpus_texts())
    # The ranges are those of what the folder outputs at k (here k = 32, recomposed at load time) on the corpus.
    outputs = _st(folder, 32).encode(corpus_texts(), convert_to_numpy=True)
    low = quantization_ranges.INT8_PERCENTILE
    percentiles = np.percentile(outputs, [low, 100 - low], axis=0)
    np.testing.assert_allclose(stored.at(32)[0], percentiles, atol=1e-5)
    rule = np.median(outputs, axis=0) if quantization_ranges.BINARY_THRESHOLD == "median" else np.zeros(32)
    np.testing.assert_allclose(stored.at(32)[1], rule, atol=1e-5)


def test_quantize_reuses_the_stored_calibration_bit_for_bit(fitted) -> None:
    from transformers import AutoModel

    folder = fitted["spectemp"]
    model = _st(folder)
    embeddings = model.encode(TEXTS, convert_to_numpy=True)
    ranges, threshold = read_calibration(folder).at(16)
    int8 = quantize(embeddings, folder, precision="int8")
    np.testing.assert_array_equal(int8, quantize_embeddings(embeddings, "int8", ranges=ranges))
    np.testing.assert_array_equal(quantize(embeddings, folder, "ubinary"),
                                  quantize_embeddings(embeddings - threshold, "ubinary"))
    if quantization_ranges.BINARY_THRESHOLD == "zero":  # the fit's default: sentence-transformers' own signs
        assert not threshold.any()
        np.testing.assert_array_equal(quantize(embeddings, folder, "binary"), quantize_embeddings(embeddings, "binary"))
    # Twice, through the loaded models, one text at a time, from a tensor: the same codes.
    automodel = AutoModel.from_pretrained(folder, trust_remote_code=True)
    for source in (folder, str(folder), model, automodel):
        np.testing.assert_array_equal(quantize(embeddings, source, "int8"), int8)
    np.testing.assert_array_equal(np.stack([quantize(e, folder, "int8") for e in embeddings]), int8)
    import torch

    np.testing.assert_array_equal(quantize(torch.from_numpy(embeddings), folder, "int8"), int8)
    # After a reload of the folder in a new model: the same vectors, the same codes.
    again = _st(folder).encode(TEXTS, convert_to_numpy=True)
    np.testing.assert_array_equal(quantize(again, folder, "int8"), quantize(embeddings, folder, "int8"))


@pytest.mark.parametrize(("precision", "dtype", "width"), [("int8", np.int8, 16), ("uint8", np.uint8, 16),
                                                           ("binary", np.int8, 2), ("ubinary", np.uint8, 2),
                                                           ("float32", np.float32, 16)])
def test_shapes_and_dtypes(fitted, precision: str, dtype: type, width: int) -> None:
    embeddings = _st(fitted["spectemp"]).encode(TEXTS, convert_to_numpy=True)
    codes = quantize(embeddings, fitted["spectemp"], precision)
    assert codes.shape == (len(TEXTS), width) and codes.dtype == dtype
    assert quantize(embeddings[0], fitted["spectemp"], precision).shape == (width,)


def test_every_calibrated_dimension_and_a_clear_error_for_others(fitted) -> None:
    folder = fitted["spectemp"]
    wide = _st(folder, 32).encode(TEXTS, convert_to_numpy=True)
    assert quantize(wide, folder, "ubinary").shape == (len(TEXTS), 4)
    narrow = _st(folder, 8).encode(TEXTS, convert_to_numpy=True)
    with pytest.raises(CalibrationError, match=r"covers output dimensions \[16, 32\], not 8.*--dim 8"):
        quantize(narrow, folder, "int8")
    assert quantize(narrow, folder, "float32").dtype == np.float32  # nothing to calibrate


def test_bad_precision_and_folders_without_calibration(fitted, llama_dump_model: Path) -> None:
    embeddings = _st(fitted["spectemp"]).encode(TEXTS, convert_to_numpy=True)
    with pytest.raises(ValueError, match=r"precision must be one of \('float32', 'int8', 'uint8', 'binary', "
                                         r"'ubinary'\); got 'int4'"):
        quantize(embeddings, fitted["spectemp"], "int4")
    for folder in (llama_dump_model, fitted["embedfilter"]):  # built only; fitted without a corpus
        assert not (folder / CALIBRATION_FILE).exists()
        with pytest.raises(CalibrationError, match="no quantization.json.*hf-dumpembed fit .*--corpus"):
            quantize(embeddings, folder, "int8")
    with pytest.raises(ValueError, match="float array of shape"):
        quantize(np.zeros((2, 16), dtype=np.int8), fitted["spectemp"], "int8")


def test_corpus_calibrates_methods_that_fit_no_statistics(fitted, llama_dump_model: Path) -> None:
    """truncate --dim d with a corpus: the model's own vectors, now with a calibration."""
    folder = fitted["truncate"]
    assert read_calibration(folder).dims == [32]
    assert json.loads((folder / "config.json").read_text())["projection_info"]["corpus"] is None
    raw = _st(llama_dump_model).encode(TEXTS, convert_to_numpy=True)
    np.testing.assert_allclose(_st(folder).encode(TEXTS, convert_to_numpy=True), raw, atol=1e-6)
    assert quantize(raw, folder, "binary").shape == (len(TEXTS), 4)


def test_a_refit_never_keeps_the_source_calibration(fitted, tmp_path: Path) -> None:
    out = fit_projection(fitted["spectemp"], tmp_path / "band",
                         FitOptions(method="embedfilter", progress=False, plots=False))
    assert not (out / CALIBRATION_FILE).exists()


def test_verify_and_push_check_the_file(fitted, tmp_path: Path) -> None:
    from hf_dumpembed.export.verify import check_load_paths
    from hf_dumpembed.model.folder_schema import FolderShape, folder_deviations
    from hf_dumpembed.publishing.push_checks import FolderReport, static_checks

    folder = fitted["spectemp"]
    report = check_load_paths(folder, TEXTS, include_mteb=False)
    assert report.ok and report.calibrated_dims == [16, 32]
    assert "quantization calibration: ok" in report.describe()
    assert folder_deviations(folder) == []  # quantization.json is a file the writers produce
    published = FolderReport(folder, kind=FolderShape.DUMPEMBED)
    assert CALIBRATION_FILE in static_checks(folder, published)
    assert not [p for p in published.problems if CALIBRATION_FILE in p]
    # Another folder's calibration: measured on another projection.
    stale = tmp_path / "stale"
    shutil.copytree(fitted["truncate"], stale)
    shutil.copyfile(folder / CALIBRATION_FILE, stale / CALIBRATION_FILE)
    problems = calibration_problems(stale)
    assert len(problems) == 1 and "another projection" in problems[0]
    report = check_load_paths(stale, TEXTS, include_mteb=False)
    assert not report.ok and "quantization calibration: FAIL" in report.describe()
    published = FolderReport(stale, kind=FolderShape.DUMPEMBED)
    static_checks(stale, published)
    assert any("another projection" in p for p in published.problems)
    # A damaged file names the field.
    payload = json.loads((folder / CALIBRATION_FILE).read_text())
    payload["dims"]["16"]["binary_threshold"] = payload["dims"]["16"]["binary_threshold"][:3]
    damaged = tmp_path / "damaged"
    shutil.copytree(folder, damaged)
    (damaged / CALIBRATION_FILE).write_text(json.dumps(payload))
    assert calibration_problems(damaged) == [f"{damaged / CALIBRATION_FILE}: dims.16.binary_threshold must be a list "
                                             "of 16 finite numbers"]


def test_stock_export_carries_the_calibration_of_its_dimension(fitted, tmp_path: Path) -> None:
    from hf_dumpembed.export.stock import export_stock_st

    stock = export_stock_st(fitted["spectemp"], tmp_path / "stock")
    stored = read_calibration(stock)
    assert stored.dims == [16]
    np.testing.assert_array_equal(stored.at(16)[0], read_calibration(fitted["spectemp"]).at(16)[0])
    assert calibration_problems(stock) == []


def test_card_shows_the_quantized_outputs(fitted) -> None:
    card = (fitted["spectemp"] / "README.md").read_text()
    assert "## Quantized outputs" in card and 'quantize(embeddings, "' in card
    assert "| 16 | 64 B | 16 B | 2 B | 2 B |" in card  # bytes only: a reference fit scores no pseudo-queries
    assert "## Quantized outputs" not in (fitted["embedfilter"] / "README.md").read_text()


def test_auto_fit_scores_the_frontier_on_its_pseudo_queries(llama_dump_model: Path, tmp_path: Path) -> None:
    from tests.support.ranking_oracles import paired_ndcg_at_10

    sentences = corpus_texts()
    corpus = tmp_path / "paragraphs.txt"
    corpus.write_text("\n".join(f"{a} {b}" for a, b in zip(sentences, sentences[7:] + sentences[:7], strict=True)))
    out = fit_projection(llama_dump_model, tmp_path / "auto",
                         FitOptions(method="spectemp", mode="auto", dim=16, progress=False, plots=False),
                         corpus=corpus)
    scored = read_calibration(out).info["pseudo_query_ndcg"]
    assert scored["queries"] > 100 and set(scored["dims"]) == {"16", "32"}
    for per_precision in scored["dims"].values():
        assert set(per_precision) == {"float32", "int8", "binary", "binary + rescore"}
        assert all(0 <= v <= 1 for v in per_precision.values())
    card = (out / "README.md").read_text()
    assert f"nDCG@10 on {scored['queries']} pseudo-queries" in card
    assert f"| 16 | {scored['dims']['16']['float32']:.3f} · 64 B |" in card
    # The float32 column is the pseudo-query score auto mode itself uses (paired nDCG@10).
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((40, 12)).astype(np.float32)
    queries = docs + 1.2 * rng.standard_normal((40, 12)).astype(np.float32)
    unit = [x / np.linalg.norm(x, axis=1, keepdims=True) for x in (queries, docs)]
    expected = paired_ndcg_at_10(queries, docs).mean()
    assert quantization_ranges._paired_ndcg(unit[0] @ unit[1].T) == pytest.approx(expected, abs=1e-6)


def test_the_documented_snippets_give_quantize_codes_without_the_package(fitted) -> None:
    """docs/serving.md's numpy and sentence-transformers lines (the same text the ONNX export's README prints) give
    `quantize`'s int8 codes and ubinary bytes, as printed, also for values outside the stored ranges (clipped) and
    on bucket edges."""
    import re

    from hf_dumpembed.model.quantization import NUMPY_SNIPPET, SENTENCE_TRANSFORMERS_SNIPPET

    folder = fitted["spectemp"]
    docs = (Path(__file__).resolve().parents[2] / "docs" / "serving.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", docs, re.S) if "quantization.json" in b]
    assert [b.strip() for b in blocks] == [NUMPY_SNIPPET.format(folder="minilm-spectemp"),
                                           SENTENCE_TRANSFORMERS_SNIPPET.format(folder="minilm-spectemp")]
    vectors = _st(folder).encode(TEXTS, convert_to_numpy=True)
    low, high = read_calibration(folder).at(16)[0]
    edges = np.stack([low, high, low + (high - low) / 255 * 7, low - 1, high + 1]).astype(np.float32)
    for embeddings in (vectors, edges, 3 * vectors):
        for block in blocks:
            namespace = {"embeddings": embeddings}
            exec(compile(block.replace("minilm-spectemp", str(folder)), "docs/serving.md", "exec"), namespace)
            np.testing.assert_array_equal(namespace["codes"], quantize(embeddings, folder, "int8"))
            if "bits" in namespace:
                np.testing.assert_array_equal(namespace["bits"], quantize(embeddings, folder, "ubinary"))
