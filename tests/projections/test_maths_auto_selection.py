"""SpecTemp auto mode's choice per k: it follows its label-free scores, keeps the rule when the grid is empty or the
pseudo-queries are saturated, shrinks the score's γ towards the rule, and its one-pass scorer equals the
per-candidate metrics."""

from __future__ import annotations

import numpy as np
import pytest

from hf_dumpembed.projections.maths.auto_selection import REFERENCE, k_grid, select_auto
from hf_dumpembed.projections.maths.gamma_curve import spectemp_curve
from hf_dumpembed.projections.maths.spectrum import eigendecompose
from hf_dumpembed.projections.maths.statistics import StreamingStats
from tests.support.ranking_oracles import fidelity_ndcg_at_10, paired_ndcg_at_10
from tests.support.spectra import pseudo_query_pairs, unit_rows


def test_auto_equals_reference_when_the_grid_holds_only_the_reference() -> None:
    spectrum, queries, docs = pseudo_query_pairs()
    reference = spectemp_curve(spectrum.eigenvalues, "reference", spectrum.count).gamma
    chosen = select_auto(spectrum, queries, docs, reference, grid=(), prefix=False)
    assert chosen.chosen == [REFERENCE] * len(chosen.ks)
    assert np.array_equal(chosen.gamma, reference) and not chosen.routes.any()
    assert chosen.candidates == [REFERENCE]


def test_auto_follows_its_scores() -> None:
    spectrum, queries, docs = pseudo_query_pairs()
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
    the route and the label stay the score's."""
    spectrum, queries, docs = pseudo_query_pairs()
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


def test_fidelity_is_one_for_the_full_dimensional_map_and_lower_after_truncation() -> None:
    from hf_dumpembed.projections.maths.auto_selection import neighbour_labels

    rng = np.random.default_rng(1)
    docs = unit_rows(rng.standard_normal((60, 16)))
    labels = neighbour_labels(docs)
    assert labels.shape == (60, 10) and not (labels == np.arange(60)[:, None]).any()  # never itself
    assert np.allclose(fidelity_ndcg_at_10(docs, labels), 1.0)
    assert fidelity_ndcg_at_10(docs[:, :4], labels).mean() < 0.8


def test_one_pass_scores_equal_the_per_candidate_metrics() -> None:
    """The fused scorer (one 2m × m product per candidate) gives the numbers of `paired_ndcg_at_10` and
    `fidelity_ndcg_at_10` run on each candidate's projected vectors."""
    from hf_dumpembed.projections.maths.auto_selection import (
        UNCENTRED,
        candidate_labels,
        neighbour_labels,
        score_candidates,
    )
    from hf_dumpembed.projections.maths.spectrum import SPECTRAL_EPS

    rng = np.random.default_rng(4)
    docs = unit_rows(rng.standard_normal((80, 16)) @ rng.standard_normal((16, 16)) + 0.3)
    queries = unit_rows(docs + 0.8 * rng.standard_normal((80, 16)))
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
            assert cloze[row, col] == pytest.approx(paired_ndcg_at_10(q, d), abs=1e-9), (k, label)
            assert fidelity[row, col] == pytest.approx(fidelity_ndcg_at_10(d, neighbours), abs=1e-9), (k, label)


def test_saturated_pseudo_queries_keep_the_rule_at_every_k() -> None:
    """When the unprojected model finds the texts from their first lines almost perfectly (inverse cloze >= the
    saturation threshold), the scores cannot choose and the reference rule's map is kept at every k."""
    from hf_dumpembed.projections.maths.auto_selection import DEFAULT_SATURATION

    spectrum, queries, docs = pseudo_query_pairs()
    d = spectrum.dim
    rule = np.linspace(1.0, 0.2, d)
    free = select_auto(spectrum, queries, docs, rule, saturation=1.01)
    assert not free.saturated and any(label != REFERENCE for label in free.chosen)
    identity = float(paired_ndcg_at_10(queries, docs).mean())
    assert free.identity_cloze == pytest.approx(identity, abs=1e-6) and identity < DEFAULT_SATURATION
    assert free.summary()["identity_cloze"] == round(identity, 4) and free.summary()["saturation"] == 1.01
    kept = select_auto(spectrum, queries, docs, rule, saturation=identity - 1e-6)
    assert kept.saturated and kept.chosen == [REFERENCE] * len(kept.ks)
    assert np.allclose(kept.gamma, rule) and not kept.routes.any()  # the rule's γ(k), centred, at every k
    assert np.array_equal(kept.cloze, free.cloze)  # still scored and recorded
    easy = select_auto(spectrum, queries, queries, rule)  # each pseudo-query is its own text: nDCG@10 = 1
    assert easy.identity_cloze == 1.0 and easy.saturated and set(easy.chosen) == {REFERENCE}
