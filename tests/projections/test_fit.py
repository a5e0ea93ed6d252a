"""`hf-dumpembed fit`: fitted folders load identically everywhere, k at load time, provenance, bad inputs."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from huggingface_hub.errors import StrictDataclassError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers import AutoModel, AutoTokenizer

from hf_dumpembed.cli import main as cli_main
from hf_dumpembed.export.stock import export_stock_st
from hf_dumpembed.export.verify import check_load_paths, encode_with_automodel, encode_with_sentence_transformers
from hf_dumpembed.projections.corpus import read_corpus, sha256_files
from hf_dumpembed.projections.fit import FitOptions, fit_projection, load_for_fit
from hf_dumpembed.projections.maths.band_basis import gram_basis
from hf_dumpembed.projections.unembedding import find_unembedding
from tests.projections.test_fit_independent import reference_knee_and_gamma
from tests.support.fit_fixtures import corpus_texts, folder_digest, write_corpus

TEXTS = ["A man is eating food.", "hello world second text", "Open the file, read every line.", "A monkey plays drums."]

SCHEMA_KEYS = {"method", "params", "dim", "seed", "corpus", "fitted_at", "plots", "selection", "max_dim"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("corpus") / "texts.txt")


@pytest.fixture(scope="module")
def spectemp_folders(llama_dump_model: Path, corpus: Path, tmp_path_factory: pytest.TempPathFactory):
    """SpecTemp (reference mode) fitted at k=16 and at k=8 on the tiny Llama; the source digest before fitting."""
    before = folder_digest(llama_dump_model)
    root = tmp_path_factory.mktemp("fits")
    fit16 = fit_projection(llama_dump_model, root / "st16",
                           FitOptions(method="spectemp", dim=16, mode="reference", progress=False), corpus=corpus)
    fit8 = fit_projection(llama_dump_model, root / "st8",
                          FitOptions(method="spectemp", dim=8, mode="reference", progress=False), corpus=corpus)
    return before, fit16, fit8


def _info(folder: Path) -> dict:
    return json.loads((folder / "config.json").read_text())["projection_info"]


def test_spectemp_folder_same_vectors_everywhere_with_provenance(spectemp_folders, llama_dump_model, corpus,
                                                                 tmp_path) -> None:
    before, fit16, _ = spectemp_folders
    assert folder_digest(llama_dump_model) == before, "the source folder must never be modified"
    stock = export_stock_st(fit16, tmp_path / "stock")
    report = check_load_paths(fit16, TEXTS, stock_export_dir=stock, include_mteb=False)
    assert report.dimension == 16
    assert report.ok, report.describe()
    info = _info(fit16)
    assert SCHEMA_KEYS <= set(info)
    assert info["method"] == "spectemp" and info["params"]["mode"] == "reference" and info["dim"] == 16
    # Named by name and sha256, never by an absolute path of this machine (the corpus lies outside the cwd), and by
    # its path relative to the fitted folder (both lie in the test's temporary tree).
    assert info["corpus"] == {"path": corpus.name, "name": corpus.name, "sha256": sha256_files([corpus]),
                              "num_texts": len(corpus_texts()),
                              "folder_path": os.path.relpath(corpus, fit16.resolve())}
    assert (fit16 / info["corpus"]["folder_path"]).resolve() == corpus.resolve()
    assert not Path(info["source_model"]).is_absolute()
    knee, gamma16 = reference_knee_and_gamma(llama_dump_model, 16)
    assert info["params"]["knee"] == knee and info["params"]["gamma"] == pytest.approx(gamma16, abs=1e-6)
    for plot in info["plots"]:
        assert (fit16 / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert {"plots/spectrum.png", "plots/snr.png", "plots/gamma.png"} == set(info["plots"])
    # The stored map is SpecTemp's for k=16: (x_unit − μ) W_16, W_16 = U_16 diag((λ + 1e-6)^(−γ/2)).
    model = AutoModel.from_pretrained(fit16, trust_remote_code=True)
    p = model.projection
    expected = p.basis[:, :16].double() * (p.eigenvalues[:16].double() + 1e-6) ** (-info["params"]["gamma"] / 2)
    assert torch.allclose(p.matrix.double(), expected, rtol=1e-6, atol=0)


def test_choosing_k_at_load_time_equals_fitting_at_k(spectemp_folders) -> None:
    from sentence_transformers import SentenceTransformer

    _, fit16, fit8 = spectemp_folders
    chosen = AutoModel.from_pretrained(fit16, trust_remote_code=True, projection_dim=8)
    fitted = AutoModel.from_pretrained(fit8, trust_remote_code=True)
    assert torch.equal(chosen.projection.matrix, fitted.projection.matrix)
    assert chosen.config.projection_info["dim"] == 8
    assert chosen.config.projection_info["params"]["gamma"] == pytest.approx(_info(fit8)["params"]["gamma"])
    with pytest.raises(StrictDataclassError, match="projection_dim must be between 1 and"):
        AutoModel.from_pretrained(fit16, trust_remote_code=True, projection_dim=33)
    reference = encode_with_automodel(fit8, TEXTS)
    tokenizer = AutoTokenizer.from_pretrained(fit16, trust_remote_code=True)
    with torch.inference_mode():
        got = chosen(**tokenizer(TEXTS, padding=True, return_tensors="pt")).sentence_embedding.numpy()
    assert np.abs(got - reference).max() <= 1e-6
    for kwargs in ({"model_kwargs": {"projection_dim": 8}}, {"config_kwargs": {"projection_dim": 8}}):
        st = SentenceTransformer(str(fit16), trust_remote_code=True, **kwargs)
        assert np.abs(st.encode_document(TEXTS) - reference).max() <= 1e-6, kwargs


def test_saving_a_model_loaded_at_another_k_writes_a_folder_of_that_k(spectemp_folders, tmp_path) -> None:
    """A k = 16 fit loaded at k = 8 and saved reloads at k = 8 (recorded dim 8) with the same matrix and vectors."""
    _, fit16, _ = spectemp_folders
    chosen = AutoModel.from_pretrained(fit16, trust_remote_code=True, projection_dim=8)
    saved = tmp_path / "k8"
    chosen.save_pretrained(saved)
    for item in fit16.iterdir():  # the tokenizer and sentence-transformers files travel with the weights
        if item.is_file() and not (saved / item.name).exists():
            shutil.copyfile(item, saved / item.name)
    reloaded = AutoModel.from_pretrained(saved, trust_remote_code=True)
    assert reloaded.config.projection_dim == 8 and reloaded.config.projection_info["dim"] == 8
    assert torch.equal(reloaded.projection.matrix, chosen.projection.matrix)
    tokenizer = AutoTokenizer.from_pretrained(str(saved), trust_remote_code=True)
    with torch.inference_mode():
        batch = tokenizer(TEXTS, padding=True, return_tensors="pt")
        assert torch.equal(reloaded(**batch).sentence_embedding, chosen(**batch).sentence_embedding)
    assert encode_with_automodel(saved, TEXTS).shape == (len(TEXTS), 8)

def test_projection_dim_on_a_fixed_projection_is_a_clear_error(llama_dump_model, tmp_path) -> None:
    with pytest.raises(ValueError, match="stores no spectrum"):
        AutoModel.from_pretrained(llama_dump_model, trust_remote_code=True, projection_dim=8)
    out = fit_projection(llama_dump_model, tmp_path / "rp",
                         FitOptions(method="random-project", dim=8, seed=5, progress=False))
    with pytest.raises(ValueError, match="fixed output dimension"):
        AutoModel.from_pretrained(out, trust_remote_code=True, projection_dim=4)
    info = _info(out)
    assert info["seed"] == 5 and info["corpus"] is None and info["selectable_dims"] == [8]


@pytest.mark.parametrize("method,extra", [("whiten", {}), ("pca", {}), ("gamma", {"gamma": 0.3}),
                                          ("truncate", {}), ("random-truncate", {"seed": 2026})])
def test_baseline_folders_match_their_stock_export(method, extra, llama_dump_model, corpus, tmp_path) -> None:
    out = fit_projection(llama_dump_model, tmp_path / method, FitOptions(method=method, dim=12, progress=False,
                                                                          plots=False, **extra), corpus=corpus)
    stock = export_stock_st(out, tmp_path / "stock")
    a = encode_with_automodel(out, TEXTS)
    b = encode_with_sentence_transformers(stock, TEXTS, trust_remote_code=False)
    assert a.shape == (len(TEXTS), 12)
    assert np.abs(a - b).max() <= 1e-5
    assert _info(out)["params"].get("gamma") == {"whiten": 1.0, "pca": 0.0, "gamma": pytest.approx(0.3)}.get(method)


def test_embedfilter_folder_excludes_dump_rows_and_selects_band_at_load(llama_dump_model, tmp_path) -> None:
    out = fit_projection(llama_dump_model, tmp_path / "ef", FitOptions(method="embedfilter", ratio=2, progress=False))
    info = _info(out)
    params = info["params"]
    assert info["dim"] == 16 and params["ratio"] == 2 and params["unembedding"] == "tied input embeddings"
    model = AutoModel.from_pretrained(out, trust_remote_code=True)
    dump_ids = model.config.dump_token_ids
    assert params["excluded_rows"] == len(dump_ids) == 3
    weight = model.get_input_embeddings().weight.detach()
    _, basis = gram_basis(weight, exclude_rows=dump_ids)
    band = basis[:, 8:24]
    stored = model.projection.matrix.double().numpy()
    assert np.allclose(stored @ stored.T, band @ band.T, atol=1e-5)
    assert np.allclose(stored.T @ stored, np.eye(16), atol=1e-5)
    assert not model.projection.mean.any()
    narrow = AutoModel.from_pretrained(out, trust_remote_code=True, projection_dim=8)
    assert torch.equal(narrow.projection.matrix, model.projection.basis[:, 12:20])
    report = check_load_paths(out, TEXTS, stock_export_dir=export_stock_st(out, tmp_path / "stock"),
                              include_mteb=False)
    assert report.ok, report.describe()


def test_embedfilter_needs_a_causal_lm_head(bert_dump_model, llama_dump_model, tmp_path) -> None:
    with pytest.raises(ValueError, match="causal LM"):
        fit_projection(bert_dump_model, tmp_path / "ef", FitOptions(method="embedfilter", progress=False))
    assert not (tmp_path / "ef").exists()
    model, _ = load_for_fit(llama_dump_model)
    model.config.text_config.tie_word_embeddings = False
    with pytest.raises(ValueError, match="--lm-head"):
        find_unembedding(model)


@pytest.mark.parametrize("mode", ["prompteol", "echo"])
def test_prompt_modes_work_through_automodel_and_sentence_transformers(mode, llama_dump_model, tmp_path) -> None:
    out = fit_projection(llama_dump_model, tmp_path / mode,
                         FitOptions(method="embedfilter", ratio=1, prompt=mode, progress=False, plots=False))
    model = AutoModel.from_pretrained(out, trust_remote_code=True)
    tokenizer = AutoTokenizer.from_pretrained(out, trust_remote_code=True)
    batch = tokenizer(TEXTS[:2], padding=True, return_tensors="pt")
    composed, mask, pool_mask = model.compose_prompt(batch["input_ids"], batch["attention_mask"])
    decoded = tokenizer.decode(composed[1][mask[1].bool()], skip_special_tokens=True)
    expected = {"prompteol": f'Summarize the sentence: "{TEXTS[1]}" in one word:"',
                "echo": f"Rewrite the following paragraph: {TEXTS[1]}. The rewritten paragraph: {TEXTS[1]}"}[mode]
    assert decoded == expected
    if mode == "echo":
        second = tokenizer.decode(composed[1][pool_mask[1].bool()], skip_special_tokens=True)
        assert second.strip() == TEXTS[1]
    else:
        assert pool_mask is None and model.config.pooling == "last"
    auto = encode_with_automodel(out, TEXTS)
    single = np.concatenate([encode_with_automodel(out, [t]) for t in TEXTS])
    assert np.abs(auto - single).max() <= 1e-5  # padding does not leak into the prompt
    assert np.abs(encode_with_sentence_transformers(out, TEXTS) - auto).max() <= 1e-6
    with pytest.raises(ValueError, match="stock"):
        export_stock_st(out, tmp_path / "stock")


def test_bad_inputs(llama_dump_model, corpus, tmp_path) -> None:
    for dim in (0, -3):
        with pytest.raises(ValueError, match="positive integer"):
            FitOptions(method="spectemp", dim=dim)
    with pytest.raises(ValueError, match="between 1 and the embedding dimension 32"):
        fit_projection(llama_dump_model, tmp_path / "big", FitOptions(method="pca", dim=33, progress=False),
                       corpus=corpus)
    with pytest.raises(ValueError, match="needs --dim"):
        FitOptions(method="spectemp")
    with pytest.raises(ValueError, match="method must be one of"):
        FitOptions(method="ica", dim=4)
    with pytest.raises(ValueError, match=r"robust \(--robust\) applies"):
        FitOptions(method="pca", dim=4, robust=True)
    with pytest.raises(ValueError, match="--corpus"):
        fit_projection(llama_dump_model, tmp_path / "nocorpus", FitOptions(method="spectemp", dim=4))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n\n")
    with pytest.raises(ValueError, match="no non-blank text"):
        fit_projection(llama_dump_model, tmp_path / "e", FitOptions(method="spectemp", dim=4), corpus=empty)
    with pytest.raises(FileNotFoundError):
        read_corpus(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="must differ"):
        fit_projection(llama_dump_model, llama_dump_model, FitOptions(method="truncate", dim=4))
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "file").write_text("x")
    with pytest.raises(FileExistsError):
        fit_projection(llama_dump_model, tmp_path / "taken", FitOptions(method="truncate", dim=4))
    assert (tmp_path / "taken" / "file").read_text() == "x"
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir()), "no staging folder left behind"


def test_fewer_texts_than_dimensions_works_with_a_warning(llama_dump_model, tmp_path) -> None:
    few = tmp_path / "few.txt"
    few.write_text("\n".join(corpus_texts()[:20]))
    with pytest.warns(UserWarning, match="rank"):
        out = fit_projection(llama_dump_model, tmp_path / "robust",
                             FitOptions(method="spectemp", dim=8, robust=True, progress=False, plots=False),
                             corpus=few)
    info = _info(out)
    assert info["params"]["used_rank"] <= 19 and info["corpus"]["num_texts"] == 20
    assert np.isfinite(encode_with_automodel(out, TEXTS)).all()


def test_corpus_readers_and_hashes(tmp_path) -> None:
    from datasets import Dataset

    texts = corpus_texts()[:30]
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("\n".join(json.dumps({"text": t}) for t in texts))
    beir = tmp_path / "beir"
    beir.mkdir()
    (beir / "corpus.jsonl").write_text("\n".join(json.dumps({"_id": str(i), "title": "T", "text": t})
                                                 for i, t in enumerate(texts)))
    Dataset.from_dict({"text": texts}).save_to_disk(str(tmp_path / "hf"))
    assert read_corpus(jsonl).texts == texts
    assert read_corpus(jsonl).sha256 == sha256_files([jsonl])
    assert read_corpus(beir).texts == [f"T {t}" for t in texts]
    assert read_corpus(tmp_path / "hf").texts == texts
    sample = read_corpus(jsonl, max_texts=10, seed=1)
    assert len(sample.texts) == 10 and set(sample.texts) <= set(texts)
    assert sample.provenance()["sampled_from"] == 30
    assert read_corpus(jsonl, max_texts=10, seed=1).texts == sample.texts
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine"}\n{"body": "no text"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        read_corpus(bad)
    with pytest.raises(ValueError, match="cannot read a corpus"):
        read_corpus(tmp_path)


def test_cli_fit_writes_a_folder(llama_dump_model, tmp_path, capsys) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cli_main(["fit", str(llama_dump_model), str(tmp_path / "cli"), "--method", "truncate", "--dim", "10",
                  "--no-plots"])
    assert "Wrote" in capsys.readouterr().out
    assert _info(tmp_path / "cli")["method"] == "truncate"
    assert encode_with_automodel(tmp_path / "cli", TEXTS).shape == (len(TEXTS), 10)
    with pytest.raises(SystemExit, match="needs --dim"):
        cli_main(["fit", str(llama_dump_model), str(tmp_path / "cli2"), "--method", "pca"])


def test_fit_without_matplotlib_fails_before_encoding_anything(llama_dump_model, corpus, tmp_path,
                                                               monkeypatch) -> None:
    """The default fit writes plots: with matplotlib unimportable it stops before loading the model or encoding a
    text, names the fix (the `plots` extra, or --no-plots), and leaves nothing behind; --no-plots fits without it."""
    import sys

    import hf_dumpembed.projections.fit as fit_module

    ran: list[str] = []

    def must_not_run(name):  # noqa: ANN001, ANN202
        def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            ran.append(name)
            raise AssertionError(f"{name} ran before the missing matplotlib was reported")
        return spy

    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    monkeypatch.setattr(fit_module, "load_for_fit", must_not_run("load_for_fit"))
    monkeypatch.setattr(fit_module, "encode_corpus", must_not_run("encode_corpus"))
    monkeypatch.setattr(fit_module, "read_corpus", must_not_run("read_corpus"))
    outs = tmp_path / "outs"
    with pytest.raises(ImportError, match=r"pip install 'hf_dumpembed\[plots\]'.*--no-plots"):
        fit_projection(llama_dump_model, outs / "api", FitOptions(method="pca", dim=8, progress=False), corpus=corpus)
    with pytest.raises(SystemExit, match=r"hf-dumpembed fit: error: plots need matplotlib.*--no-plots"):
        cli_main(["fit", str(llama_dump_model), str(outs / "cli"), "--method", "spectemp", "--mode", "reference",
                  "--dim", "8", "--corpus", str(corpus)])
    assert ran == [] and not outs.exists()
    monkeypatch.undo()  # the real loaders again (matplotlib stays unimportable below)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = fit_projection(llama_dump_model, outs / "no-plots", FitOptions(method="pca", dim=8, progress=False,
                                                                           plots=False), corpus=corpus)
    assert _info(out)["plots"] == [] and not (out / "plots").exists()


def test_recorded_fit_corpus_is_read_again_and_checked(tmp_path, monkeypatch):
    """export-onnx's default calibration: the corpus a folder records, refused when absent, missing or changed."""
    from hf_dumpembed.projections.corpus import recorded_fit_corpus

    monkeypatch.chdir(tmp_path)
    (tmp_path / "texts.txt").write_text("first text\nsecond text\n")
    folder = tmp_path / "model"
    folder.mkdir()

    def record(corpus: dict | None) -> None:
        (folder / "config.json").write_text(json.dumps({"projection_info": {"corpus": corpus}}))

    record(None)
    with pytest.raises(ValueError, match="records no fit corpus"):
        recorded_fit_corpus(folder)
    record(read_corpus("texts.txt").provenance())
    assert recorded_fit_corpus(folder).texts == ["first text", "second text"]
    (tmp_path / "texts.txt").write_text("first text\nchanged\n")
    with pytest.raises(ValueError, match="has changed since"):
        recorded_fit_corpus(folder)
    (tmp_path / "texts.txt").unlink()
    with pytest.raises(ValueError, match="which is not here"):
        recorded_fit_corpus(folder)


def test_a_recorded_fit_corpus_is_found_from_another_working_directory(tmp_path, monkeypatch):
    """The fit ran in tmp_path with data/texts.txt beside runs/model: read from elsewhere, the corpus is found beside
    a folder above the model (its sha256 decides), as export-onnx's default calibration needs."""
    from hf_dumpembed.projections.corpus import recorded_fit_corpus

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "texts.txt").write_text("first text\nsecond text\n")
    folder = tmp_path / "runs" / "model"
    folder.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    (folder / "config.json").write_text(json.dumps({"projection_info": {"corpus": read_corpus(
        "data/texts.txt").provenance()}}))
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "data").mkdir(parents=True)
    (elsewhere / "data" / "texts.txt").write_text("another text\n")  # same relative path, other content: skipped
    monkeypatch.chdir(elsewhere)
    corpus = recorded_fit_corpus(tmp_path / "runs" / "model")
    assert corpus.texts == ["first text", "second text"] and Path(corpus.path) == tmp_path / "data" / "texts.txt"


# Boundary checks: a bad parameter is refused with a message that names it.


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(dim=st.one_of(st.none(), st.integers(-5, 10**6), st.floats(), st.booleans()),
       gamma=st.one_of(st.none(), st.floats(allow_nan=True)),
       batch=st.one_of(st.integers(-5, 10**4), st.text(max_size=2)),
       method=st.sampled_from(["spectemp", "pca", "gamma", "truncate", "embedfilter", "bogus"]),
       ratio=st.one_of(st.none(), st.integers(-3, 8)))
def test_fit_options_accept_or_refuse_with_value_error(dim, gamma, batch, method, ratio):
    try:
        options = FitOptions(method=method, dim=dim, gamma=gamma, batch_size=batch, ratio=ratio)
    except ValueError:
        return
    assert options.batch_size >= 1
    assert options.dim is None or (isinstance(options.dim, int) and options.dim >= 1)
    assert 0.0 <= getattr(options.params, "gamma", 0.0) <= 1.0
