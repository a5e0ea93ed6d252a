"""`fit --method spectemp` in auto mode (the default): folders, load-time k, the card, too few pseudo-queries, n ≤ d."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from hf_dumpembed.projections.fit import FitOptions, fit_projection
from hf_dumpembed.projections.maths.pseudo_queries import build_pseudo_queries
from tests.support.fit_fixtures import corpus_texts


def _paragraphs() -> list[str]:
    """Two-sentence texts: each sentence of the fit corpus followed by another."""
    sentences = corpus_texts()
    return [f"{a} {b}" for a, b in zip(sentences, sentences[7:] + sentences[:7], strict=True)]


def test_auto_folder_load_time_k_equals_fit_at_k(llama_dump_model, tmp_path) -> None:
    from transformers import AutoModel

    corpus = tmp_path / "paragraphs.txt"
    corpus.write_text("\n".join(_paragraphs()))
    options = {"method": "spectemp", "mode": "auto", "progress": False, "plots": True}
    fit16 = fit_projection(llama_dump_model, tmp_path / "a16", FitOptions(dim=16, **options), corpus=corpus)
    fit8 = fit_projection(llama_dump_model, tmp_path / "a8", FitOptions(dim=8, **options | {"plots": False}),
                          corpus=corpus)
    info = json.loads((fit16 / "config.json").read_text())["projection_info"]
    assert info["params"]["mode"] == "auto" and info["selection"] == "auto"
    assert info["params"]["route"] in ("centred", "uncentred", "prefix")
    auto = info["params"]["auto"]
    assert auto["pseudo_queries"] == len(build_pseudo_queries(_paragraphs())) == 208
    assert auto["corpus_encode_seconds"] > 0
    assert auto["selection_seconds"] >= 0 and auto["pseudo_query_encode_seconds"] > 0
    assert "plots/pseudo_query_ndcg.png" in info["plots"] and (fit16 / "plots/pseudo_query_ndcg.png").exists()
    chosen = AutoModel.from_pretrained(fit16, trust_remote_code=True, projection_dim=8)
    fitted = AutoModel.from_pretrained(fit8, trust_remote_code=True)
    assert torch.equal(chosen.projection.matrix, fitted.projection.matrix)
    assert torch.equal(chosen.projection.mean, fitted.projection.mean)
    fitted_info = json.loads((fit8 / "config.json").read_text())["projection_info"]
    assert chosen.config.projection_info["params"]["gamma"] == fitted_info["params"]["gamma"]
    assert chosen.config.projection_info["params"]["route"] == fitted_info["params"]["route"]


def test_auto_needs_enough_pseudo_queries(llama_dump_model, tmp_path) -> None:
    few = tmp_path / "few.txt"
    few.write_text("\n".join(_paragraphs()[:6]))
    with pytest.raises(ValueError, match="only 6 pseudo-queries"):
        fit_projection(llama_dump_model, tmp_path / "few", FitOptions(method="spectemp", dim=8, mode="auto"),
                       corpus=few)
    single = tmp_path / "single.txt"
    single.write_text("\n".join(corpus_texts()))  # one sentence per text: nothing to split
    with pytest.raises(ValueError, match="only 0 pseudo-queries"):
        fit_projection(llama_dump_model, tmp_path / "single", FitOptions(method="spectemp", dim=8, mode="auto"),
                       corpus=single)


def test_mode_options() -> None:
    assert FitOptions(method="spectemp", dim=4).params.mode == "auto"  # the default; the paper's rule on request
    assert FitOptions(method="spectemp", dim=4, mode="reference").params.mode == "reference"
    assert FitOptions(method="spectemp", dim=4, robust=True).params.mode == "robust"
    assert FitOptions(method="spectemp", dim=4, mode="robust").params.robust
    with pytest.raises(ValueError, match="contradicts"):
        FitOptions(method="spectemp", dim=4, mode="auto", robust=True)
    with pytest.raises(ValueError, match="mode must be one of"):
        FitOptions(method="spectemp", dim=4, mode="oracle")
    with pytest.raises(ValueError, match="spectemp only"):
        FitOptions(method="pca", dim=4, mode="auto")


def test_auto_folder_card_shows_the_choice(llama_dump_model, tmp_path) -> None:
    corpus = tmp_path / "paragraphs.txt"
    corpus.write_text("\n".join(_paragraphs()))
    out = fit_projection(llama_dump_model, tmp_path / "card",
                         FitOptions(method="spectemp", dim=8, mode="auto", progress=False, plots=False), corpus=corpus)
    card = (Path(out) / "README.md").read_text()
    assert "| mode | auto |" in card and "auto: choice per k" in card and "inverse-cloze" in card
    auto = json.loads((Path(out) / "config.json").read_text())["projection_info"]["params"]["auto"]
    assert 0.0 <= auto["identity_cloze"] < auto["saturation"] == 0.95  # random tiny model: far from saturated
    assert f"| auto: pseudo-queries saturated? | no: the unprojected model's inverse-cloze nDCG@10 is " \
           f"{auto['identity_cloze']:.3f} (< 0.95) |" in card


def test_auto_with_fewer_texts_than_dimensions_corrects_the_robust_rule(llama_dump_model, tmp_path) -> None:
    few = tmp_path / "few.txt"
    few.write_text("\n".join(_paragraphs()[:20]))  # 20 texts, d = 32: rank ≤ 19
    with pytest.warns(UserWarning, match="rank"):
        out = fit_projection(llama_dump_model, tmp_path / "few-auto",
                             FitOptions(method="spectemp", dim=8, mode="auto", progress=False, plots=False), corpus=few)
    info = json.loads((out / "config.json").read_text())["projection_info"]
    assert info["params"]["auto"]["base_mode"] == "robust" and info["params"]["used_rank"] <= 19
    assert info["params"]["auto"]["pseudo_queries"] == len(build_pseudo_queries(_paragraphs()[:20]))


def test_fit_defaults_to_auto_and_reference_keeps_the_papers_rule(llama_dump_model, tmp_path) -> None:
    """`fit --method spectemp` without --mode runs auto mode; `--mode reference` runs the paper's rule (its γ at k is
    the rule's γ, which auto records as reference_gamma); each folder's config and card name the mode that ran."""
    from hf_dumpembed.cli import main as cli_main

    corpus = tmp_path / "paragraphs.txt"
    corpus.write_text("\n".join(_paragraphs()))
    common = ["--method", "spectemp", "--dim", "8", "--corpus", str(corpus), "--no-plots"]
    cli_main(["fit", str(llama_dump_model), str(tmp_path / "default"), *common])
    cli_main(["fit", str(llama_dump_model), str(tmp_path / "reference"), *common, "--mode", "reference"])
    default = json.loads((tmp_path / "default" / "config.json").read_text())["projection_info"]
    reference = json.loads((tmp_path / "reference" / "config.json").read_text())["projection_info"]
    assert (default["params"]["mode"], default["selection"]) == ("auto", "auto") and default["params"]["auto"]["ks"]
    assert (reference["params"]["mode"], reference["selection"]) == ("reference", "spectral")
    assert "auto" not in reference["params"]
    # the same corpus pass, the paper's γ(8)
    assert reference["params"]["gamma"] == pytest.approx(default["params"]["reference_gamma"])
    default_card = (tmp_path / "default" / "README.md").read_text()
    reference_card = (tmp_path / "reference" / "README.md").read_text()
    assert "The projection is SpecTemp, auto mode (ours" in default_card and "| mode | auto |" in default_card
    assert "The projection is SpecTemp, reference mode (the paper's rule)" in reference_card
    assert "| mode | reference |" in reference_card and "auto mode" not in reference_card
