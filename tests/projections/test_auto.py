"""SpecTemp auto mode: pseudo-query builder, the per-k choice, its stored form and load-time k."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from hf_dumpembed.evaluation import retrieval_metrics
from hf_dumpembed.projections.auto import REFERENCE, k_grid, select_auto
from hf_dumpembed.projections.fit import FitOptions, fit_projection
from hf_dumpembed.projections.methods.spectemp import auto_projection
from hf_dumpembed.projections.pseudo import build_pseudo_queries, first_segment, paired_ndcg_at_10
from hf_dumpembed.projections.spectemp import spectemp_curve
from hf_dumpembed.projections.stats import StreamingStats, eigendecompose
from hf_dumpembed.remote.modeling_dumpembed import DumpProjection
from tests.support.fit_fixtures import corpus_texts


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_first_segment_rules() -> None:
    assert first_segment("def parse(text):\n    return text.split()") == "def parse(text):"
    assert first_segment("Open the file first. Then read each line.") == "Open the file first."
    assert first_segment("One sentence only.") is None  # nothing left to be the document
    assert first_segment("{\n  x = 1\n}") is None  # too short to say anything
    long = " ".join(f"w{i}" for i in range(100)) + ". Rest."
    assert len(first_segment(long).split()) == 48


def test_pseudo_queries_are_deterministic_and_never_meet_their_own_text() -> None:
    base = [f"def function_{i}(x):\n    return x + {i}" for i in range(60)]
    texts = base + base[:10] + ["def function_0(x):\n    return 'other body'"] + ["too short"]
    first = build_pseudo_queries(texts, max_pairs=25, seed=3)
    again = build_pseudo_queries(texts, max_pairs=25, seed=3)
    assert np.array_equal(first.indices, again.indices) and first.queries == again.queries
    assert len(first) == 25 and first.candidates == 60  # 10 copies, 1 repeated query and 1 short text left out
    chosen = [texts[i] for i in first.indices]
    assert len(set(chosen)) == len(chosen) and len(set(first.queries)) == len(first.queries)
    assert all(q == first_segment(texts[i]) for q, i in zip(first.queries, first.indices, strict=True))
    assert list(first.indices) == sorted(first.indices)
    everything = build_pseudo_queries(texts, max_pairs=1000)
    assert len(everything) == 60 and max(everything.indices) < 60  # the copies (indices ≥ 60) never appear
    with pytest.raises(ValueError, match="max_pairs"):
        build_pseudo_queries(texts, max_pairs=0)


def test_paired_ndcg_equals_mteb_metric() -> None:
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((40, 12))
    queries = docs + 1.2 * rng.standard_normal((40, 12))
    ids = [f"d{i}" for i in range(40)]
    expected = retrieval_metrics(queries, docs, [f"q{i}" for i in range(40)], ids,
                                 {f"q{i}": {f"d{i}": 1} for i in range(40)}, k_values=(1, 3, 5, 10))["ndcg_at_10"]
    assert paired_ndcg_at_10(queries, docs).mean() == pytest.approx(expected, abs=1e-5)


def _spectrum_and_pairs(seed: int = 0, n: int = 400, d: int = 16):
    """Docs whose first 4 dimensions are loud noise, independent between a query and its document; the other
    12 carry the shared signal at a low variance. Whitening (γ near 1) finds the pairs, PCA (γ = 0) does not."""
    rng = np.random.default_rng(seed)
    signal = 0.3 * rng.standard_normal((n, d - 4))
    docs = np.hstack([3.0 * rng.standard_normal((n, 4)), signal])
    queries = np.hstack([3.0 * rng.standard_normal((n, 4)), signal + 0.05 * rng.standard_normal((n, d - 4))])
    docs, queries = _unit(docs), _unit(queries)
    spectrum = eigendecompose(StreamingStats(d).update(docs))
    return spectrum, queries, docs


def test_auto_equals_reference_when_the_grid_holds_only_the_reference() -> None:
    spectrum, queries, docs = _spectrum_and_pairs()
    reference = spectemp_curve(spectrum.eigenvalues, "reference", spectrum.count).gamma
    chosen = select_auto(spectrum, queries, docs, reference, grid=(), prefix=False)
    assert chosen.chosen == [REFERENCE] * len(chosen.ks)
    assert np.array_equal(chosen.gamma, reference) and not chosen.routes.any()
    assert chosen.candidates == [REFERENCE]


def test_auto_follows_its_scores() -> None:
    spectrum, queries, docs = _spectrum_and_pairs()
    pca = select_auto(spectrum, queries, docs, np.zeros(spectrum.dim), ks=[16])
    scores = dict(zip(pca.candidates, pca.cloze[0] + pca.fidelity[0], strict=True))
    assert pca.chosen[0] == max(scores, key=scores.get) and pca.smoothed.shape == (1, len(pca.candidates))
    # The inverse-cloze task alone sees that whitening finds the pairs and PCA does not.
    cloze = dict(zip(pca.candidates, pca.cloze[0], strict=True))
    assert cloze["1.00"] > cloze["0.00"] + 0.1
    # A reference rule that is beaten is replaced; one that wins is kept.
    worst = min((c for c in scores if c[0].isdigit()), key=scores.get)
    beaten = select_auto(spectrum, queries, docs, np.full(spectrum.dim, float(worst)), ks=[16])
    assert beaten.chosen[0] != REFERENCE and beaten.route_at(16) in ("centred", "uncentred", "prefix")
    kept = select_auto(spectrum, queries, docs, np.full(spectrum.dim, 0.5), ks=[16], tolerance=10.0)
    assert kept.chosen == [REFERENCE] and kept.gamma[15] == 0.5
    with pytest.raises(ValueError, match="pseudo-queries"):
        select_auto(spectrum, queries[:5], docs[:5], np.zeros(spectrum.dim))


def test_auto_shrinks_the_score_gamma_towards_the_rule_only_where_the_rule_is_below_one() -> None:
    """γ at a grid k is (1 − w) γ_score + w γ_ref where γ_ref(k) < 1 and the score's γ where the rule saturates at 1;
    the route and the label stay the score's. Break tried: shrinking at saturated k too (fails the k = 4 check)
    and swapping w and 1 − w (fails the k = 8 check)."""
    spectrum, queries, docs = _spectrum_and_pairs()
    d = spectrum.dim
    rule = np.full(d, 0.8)
    rule[:4] = 1.0  # saturated for k <= 4, informative above
    ks = [4, 8, d]
    free = select_auto(spectrum, queries, docs, rule, ks=ks, rule_weight=0.0)
    half = select_auto(spectrum, queries, docs, rule, ks=ks)
    quarter = select_auto(spectrum, queries, docs, rule, ks=ks, rule_weight=0.25)
    assert half.chosen == free.chosen == quarter.chosen and np.array_equal(half.routes, free.routes)
    gammas = [float(label.removeprefix("u")) for label in free.chosen]
    assert all(label[-4:-3].isdigit() for label in free.chosen)  # grid candidates on this fixture
    assert free.gamma[3] == half.gamma[3] == pytest.approx(gammas[0])  # saturated: the score's γ
    assert half.gamma[7] == pytest.approx(0.5 * gammas[1] + 0.5 * 0.8)
    assert quarter.gamma[7] == pytest.approx(0.75 * gammas[1] + 0.25 * 0.8)
    assert free.gamma[d - 1] == pytest.approx(gammas[2]) and half.summary()["rule_weight"] == 0.5
    with pytest.raises(ValueError, match="rule_weight"):
        select_auto(spectrum, queries, docs, rule, ks=ks, rule_weight=1.5)


def test_k_grid() -> None:
    assert list(k_grid(384)) == [8, 16, 32, 64, 128, 256, 384]
    assert list(k_grid(10)) == [8, 10]


def test_stored_auto_projection_recomposes_every_k_bit_for_bit() -> None:
    spectrum, queries, docs = _spectrum_and_pairs(d=24)
    reference = spectemp_curve(spectrum.eigenvalues, "reference", spectrum.count).gamma
    selection = select_auto(spectrum, queries, docs, reference)
    routes = np.zeros(24, dtype=np.int64)
    routes[8:12] = 1  # uncentred
    routes[18:] = 2  # prefix truncation: all three routes in one stored form
    selection = type(selection)(**{**selection.__dict__, "routes": routes})
    stored = auto_projection(spectrum, selection, 20)
    assert torch.equal(stored.mean, torch.zeros(24)) and torch.equal(stored.matrix, torch.eye(24, 20))
    loaded = DumpProjection(24, 20, selection="auto")
    loaded.load_state_dict(stored.state_dict())
    for k in (1, 5, 9, 12, 13, 18, 19, 24):
        loaded.select(k)
        fitted = auto_projection(spectrum, selection, k)
        assert torch.equal(loaded.matrix, fitted.matrix) and torch.equal(loaded.mean, fitted.mean), k
    loaded.select(13)
    assert loaded.route(13) == "centred" and torch.equal(loaded.mean, torch.from_numpy(spectrum.mean).float())
    loaded.select(9)
    assert loaded.route(9) == "uncentred" and not loaded.mean.any() and loaded.matrix.shape == (24, 9)
    assert not torch.equal(loaded.matrix, torch.eye(24, 9))


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
    assert info["mode"] == "auto" and info["selection"] == "auto"
    assert info["route"] in ("centred", "uncentred", "prefix")
    auto = info["auto"]
    assert auto["pseudo_queries"] == len(build_pseudo_queries(_paragraphs())) == 208
    assert auto["corpus_encode_seconds"] > 0
    assert auto["selection_seconds"] >= 0 and auto["pseudo_query_encode_seconds"] > 0
    assert "plots/pseudo_query_ndcg.png" in info["plots"] and (fit16 / "plots/pseudo_query_ndcg.png").exists()
    chosen = AutoModel.from_pretrained(fit16, trust_remote_code=True, projection_dim=8)
    fitted = AutoModel.from_pretrained(fit8, trust_remote_code=True)
    assert torch.equal(chosen.projection.matrix, fitted.projection.matrix)
    assert torch.equal(chosen.projection.mean, fitted.projection.mean)
    fitted_info = json.loads((fit8 / "config.json").read_text())["projection_info"]
    assert chosen.config.projection_info["gamma"] == fitted_info["gamma"]
    assert chosen.config.projection_info["route"] == fitted_info["route"]


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
    assert FitOptions(method="spectemp", dim=4).mode == "auto"  # the default; the paper's rule on request
    assert FitOptions(method="spectemp", dim=4, mode="reference").mode == "reference"
    assert FitOptions(method="spectemp", dim=4, robust=True).mode == "robust"
    assert FitOptions(method="spectemp", dim=4, mode="robust").robust
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


def test_fidelity_is_one_for_the_full_dimensional_map_and_lower_after_truncation() -> None:
    from hf_dumpembed.projections.auto import fidelity_ndcg_at_10, neighbour_labels

    rng = np.random.default_rng(1)
    docs = _unit(rng.standard_normal((60, 16)))
    labels = neighbour_labels(docs)
    assert labels.shape == (60, 10) and not (labels == np.arange(60)[:, None]).any()  # never itself
    assert np.allclose(fidelity_ndcg_at_10(docs, labels), 1.0)
    assert fidelity_ndcg_at_10(docs[:, :4], labels).mean() < 0.8


def test_auto_with_fewer_texts_than_dimensions_corrects_the_robust_rule(llama_dump_model, tmp_path) -> None:
    few = tmp_path / "few.txt"
    few.write_text("\n".join(_paragraphs()[:20]))  # 20 texts, d = 32: rank ≤ 19
    with pytest.warns(UserWarning, match="rank"):
        out = fit_projection(llama_dump_model, tmp_path / "few-auto",
                             FitOptions(method="spectemp", dim=8, mode="auto", progress=False, plots=False), corpus=few)
    info = json.loads((out / "config.json").read_text())["projection_info"]
    assert info["auto"]["base_mode"] == "robust" and info["used_rank"] <= 19
    assert info["auto"]["pseudo_queries"] == len(build_pseudo_queries(_paragraphs()[:20]))


def test_one_pass_scores_equal_the_per_candidate_metrics() -> None:
    """The fused scorer (one 2m × m product per candidate) gives the numbers of `paired_ndcg_at_10` and
    `fidelity_ndcg_at_10` run on each candidate's projected vectors. Break tried: ranking the positive with `>`
    instead of `>=` (ties no longer count against it) and dropping the diagonal exclusion of the fidelity scores;
    both changed the arrays."""
    from hf_dumpembed.projections.auto import (
        UNCENTRED,
        candidate_labels,
        fidelity_ndcg_at_10,
        neighbour_labels,
        score_candidates,
    )
    from hf_dumpembed.projections.linear import SPECTRAL_EPS

    rng = np.random.default_rng(4)
    docs = _unit(rng.standard_normal((80, 16)) @ rng.standard_normal((16, 16)) + 0.3)
    queries = _unit(docs + 0.8 * rng.standard_normal((80, 16)))
    stats = StreamingStats(16)
    stats.update(docs)
    spectrum = eigendecompose(stats)
    reference = np.linspace(1.0, 0.0, 16)
    labels = candidate_labels((0.0, 0.5, 1.0))
    ks = np.array([4, 8, 16])
    cloze, fidelity = score_candidates(spectrum, queries, docs, ks, reference, labels)
    neighbours = neighbour_labels(docs)
    for row, k in enumerate(ks):
        for col, label in enumerate(labels):
            if label == "prefix":
                q, d = queries[:, :k], docs[:, :k]
            else:
                gamma = reference[k - 1] if label == REFERENCE else float(label.lstrip(UNCENTRED))
                shift = 0.0 if label.startswith(UNCENTRED) else spectrum.mean
                scale = (spectrum.eigenvalues[:k] + SPECTRAL_EPS) ** (-gamma / 2)
                q = (queries - shift) @ spectrum.eigenvectors[:, :k] * scale
                d = (docs - shift) @ spectrum.eigenvectors[:, :k] * scale
            assert cloze[row, col] == pytest.approx(paired_ndcg_at_10(q, d).mean(), abs=1e-9), (k, label)
            assert fidelity[row, col] == pytest.approx(fidelity_ndcg_at_10(d, neighbours).mean(), abs=1e-9), (k, label)


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
    assert (default["mode"], default["selection"]) == ("auto", "auto") and default["auto"]["ks"]
    assert (reference["mode"], reference["selection"]) == ("reference", "spectral") and "auto" not in reference
    assert reference["gamma"] == pytest.approx(default["reference_gamma"])  # the same corpus pass, the paper's γ(8)
    default_card = (tmp_path / "default" / "README.md").read_text()
    reference_card = (tmp_path / "reference" / "README.md").read_text()
    assert "The projection is SpecTemp, auto mode (ours" in default_card and "| mode | auto |" in default_card
    assert "The projection is SpecTemp, reference mode (the paper's rule)" in reference_card
    assert "| mode | reference |" in reference_card and "auto mode" not in reference_card
