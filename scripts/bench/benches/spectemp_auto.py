"""SpecTemp auto mode vs PCA, the reference rule, prefix truncation and the oracle γ*, per held-out set.

Same setting as the projection-quality bench (its cached embeddings are reused): the embedded all-MiniLM-L6-v2 as
a DumpEmbed K=0 mean-pooling folder, fitted on data/StdlibCodeTrain, evaluated on ManPages, PyFAQ and StdlibCode.
Auto mode runs exactly what `hf-dumpembed fit --method spectemp --mode auto` runs after its encoding pass
(`build_pseudo_queries`, the pseudo-query texts encoded, `select_auto` on the corpus spectrum), here on the cached
corpus vectors, which are the ones the fit's pass would produce. It sees no held-out text or label. The oracle
γ*(k) maximises the held-out mean over the grid 0..1 step 0.05 of the paper's (centred) map — an upper bound for
the reference family, not a method; auto may also choose the uncentred map or prefix truncation.

    python scripts/bench/benchmarks.py spectemp-auto          # writes scripts/bench/results/spectemp-auto.json
    python scripts/bench/benchmarks.py spectemp-auto --seeds 1999 5 2026   # pseudo-query samples (first recorded)

Figures: scripts/bench/figures/spectemp_auto_gamma.png (γ(k), reference rule vs auto) and
spectemp_auto_pseudo_ndcg.png (pseudo-query nDCG@10 vs γ at k = 32, 64, 128, 256).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from benchmarks import RESULTS_DIR, Table, finish_run, run_or_rerecord, say
from harness import Subparsers, bench_parser

from benches import projection_quality as quality
from hf_dumpembed.projections.corpus import read_corpus
from hf_dumpembed.projections.encode import encode_texts
from hf_dumpembed.projections.maths import reference_maps
from hf_dumpembed.projections.maths.auto_selection import (
    DEFAULT_RULE_WEIGHT,
    ORACLE_GRID,
    UNCENTRED,
    AutoSelection,
    choose,
    select_auto,
)
from hf_dumpembed.projections.maths.pseudo_queries import DEFAULT_MAX_PAIRS, build_pseudo_queries
from hf_dumpembed.projections.maths.reference_maps import LinearMap
from hf_dumpembed.projections.methods.spectemp import auto_reference_curve
from hf_dumpembed.projections.plots import plot_gamma, plot_pseudo_scores

DIMS = (32, 64, 128, 256, 384)
FIGURES = Path("scripts/bench/figures")
SECTION = ("spectemp-auto", 21, "SpecTemp auto mode: γ(k) chosen from the fit corpus alone (pseudo-queries)")


def timed_encode(model, tokenizer, texts: list[str], cache: Path, batch_size: int) -> tuple[np.ndarray, float]:
    """Vectors in input order, cached as .npy with the seconds the encoding took in a sidecar .json."""
    seconds_file = cache.with_suffix(".seconds.json")
    if cache.exists() and seconds_file.exists():
        return np.load(cache), json.loads(seconds_file.read_text())["seconds"]
    started = time.perf_counter()
    vectors = encode_texts(model, tokenizer, texts, batch_size, desc=cache.stem)
    wall = time.perf_counter() - started
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.save(cache, vectors)
    seconds_file.write_text(json.dumps({"seconds": wall, "texts": len(texts)}))
    return vectors, wall


def heldout_grids(spectrum, sets: dict, cache: Path) -> dict[int, dict[float, dict[str, float]]]:
    """Held-out nDCG@10 of γ-whitening for every γ of the oracle grid at every k of DIMS (cached as JSON)."""
    if cache.exists():
        stored = json.loads(cache.read_text())
        return {int(k): {float(g): v for g, v in grid.items()} for k, grid in stored.items()}
    grids = {}
    for k in DIMS:
        grids[k] = {g: quality.ndcg(sets, reference_maps.gamma_map(spectrum, k, g)) for g in ORACLE_GRID}
        say(f"held-out γ grid at k={k} done")
    cache.write_text(json.dumps({str(k): {str(g): v for g, v in grid.items()} for k, grid in grids.items()}))
    return grids


# The score's variants, each without the saturation check (so they show what the scores alone would choose); the
# signals alone use their own γ (rule weight 0), as the auto mode did before 2026-12-01.
NEVER = 2.0  # a saturation threshold no inverse-cloze nDCG@10 reaches
BEFORE_SATURATION = "auto before 2026-12-06: the same, no saturation check (w = 0.5)"
ABLATIONS = {
    BEFORE_SATURATION: {},
    "cloze + fidelity, score's γ (w = 0; auto before 2026-12-01)": {"rule_weight": 0.0},
    "cloze + fidelity, rule's γ above the knee (w = 1)": {"rule_weight": 1.0},
    "inverse cloze only (w = 0)": {"weights": (1.0, 0.0), "rule_weight": 0.0},
    "fidelity only (w = 0)": {"weights": (0.0, 1.0), "rule_weight": 0.0},
    "cloze + fidelity, centred maps only (w = 0)": {"centred_only": True, "rule_weight": 0.0},
    "inverse cloze only, centred maps only (w = 0)": {"weights": (1.0, 0.0), "centred_only": True,
                                                       "rule_weight": 0.0},
}
MAIN_ROUTE = "auto: cloze + fidelity, γ half way to the rule's above the knee (w = 0.5), rule kept if saturated"


def ablation(selection: AutoSelection, weights: tuple[float, float] = (1.0, 1.0),
             centred_only: bool = False, rule_weight: float = DEFAULT_RULE_WEIGHT,
             saturation: float = NEVER) -> AutoSelection:
    """The same candidate scores, another combination, candidate set, weight of the rule's γ or saturation
    threshold (default: no saturation check)."""
    keep = [i for i, c in enumerate(selection.candidates) if not (centred_only and c.startswith(UNCENTRED))]
    return choose(selection.ks, [selection.candidates[i] for i in keep], selection.cloze[:, keep],
                  selection.fidelity[:, keep], selection.reference_gamma, selection.tolerance,
                  selection.num_queries, weights, rule_weight, identity_cloze=selection.identity_cloze,
                  saturation=saturation)


def evaluate_choice(selection: AutoSelection, k: int, spectrum, sets: dict, memo: dict) -> tuple[str, float | None,
                                                                                                dict]:
    """Route, γ and held-out scores of a selection's map at k (memoised on route and γ)."""
    route = selection.route_at(k)
    gamma = None if route == "prefix" else round(float(selection.gamma[k - 1]), 6)
    key = (k, route, gamma)
    if key not in memo:
        if route == "prefix":
            linear = reference_maps.truncate_map(spectrum.dim, k)
        else:
            linear = reference_maps.gamma_map(spectrum, k, gamma)
            if route == "uncentred":
                linear = LinearMap(np.zeros(spectrum.dim), linear.matrix)
        memo[key] = quality.ndcg(sets, linear)
    return route, gamma, memo[key]


def token_count(tokenizer, texts: list[str]) -> int:
    """Tokens the model reads for ``texts`` (truncated to its maximum length, special tokens included)."""
    return sum(len(ids) for ids in tokenizer(texts, truncation=True)["input_ids"])


def measure(args: argparse.Namespace) -> dict:
    model, tokenizer = quality.encoder_model(args.model)
    corpus = read_corpus(args.data / quality.FIT_SET)
    cache = quality.ROOT / "cache" / args.tag
    train, corpus_seconds = timed_encode(model, tokenizer, corpus.texts, cache / f"{quality.FIT_SET}-corpus.npy",
                                         args.batch_size)
    sets = quality.encode_sets(model, tokenizer, args.data, args.tag, args.batch_size)
    spectrum = quality.corpus_spectrum(train)
    d = spectrum.dim
    curve = auto_reference_curve(spectrum)
    runs = []
    for seed in args.seeds:
        pairs = build_pseudo_queries(corpus.texts, args.pseudo_queries, seed)
        queries, query_seconds = timed_encode(model, tokenizer, pairs.queries,
                                              cache / f"pseudo-queries-{args.pseudo_queries}-{seed}.npy",
                                              args.batch_size)
        started = time.perf_counter()
        selection = select_auto(spectrum, queries.astype(np.float64), train[pairs.indices].astype(np.float64),
                                curve.gamma)
        runs.append({"seed": seed, "selection": selection, "pairs": pairs, "query_seconds": query_seconds,
                     "select_seconds": time.perf_counter() - started})
        chosen = dict(zip(selection.ks.tolist(), selection.chosen, strict=True))
        say(f"seed {seed}: {len(pairs)} pseudo-queries, chosen {chosen}")
    main_run = runs[0]
    grids = heldout_grids(spectrum, sets, cache / f"heldout-grid-{corpus.sha256[:12]}.json")
    rows = []
    memo: dict = {}
    for k in DIMS:
        grid = grids[k]
        oracle = max(grid, key=lambda g: (grid[g]["mean"], -g))
        reference = quality.ndcg(sets, reference_maps.gamma_map(spectrum, k, float(curve.gamma[k - 1])))
        truncation = quality.ndcg(sets, reference_maps.truncate_map(d, k))
        per_seed = [evaluate_choice(one["selection"], k, spectrum, sets, memo) for one in runs]
        route, gamma, scores = per_seed[0]
        rows += [
            {"k": k, "method": "auto", "route": route, "gamma": gamma, **scores,
             "saturated": main_run["selection"].saturated,
             "seeds_mean": float(np.mean([s[2]["mean"] for s in per_seed])),
             "seeds_min": float(np.min([s[2]["mean"] for s in per_seed]))},
            {"k": k, "method": "reference", "gamma": float(curve.gamma[k - 1]), **reference},
            {"k": k, "method": "PCA", "gamma": 0.0, **grid[0.0]},
            {"k": k, "method": "prefix truncation", "gamma": None, **truncation},
            {"k": k, "method": "oracle γ*", "gamma": oracle, **grid[oracle]},
        ]
        say(f"k={k}: auto {scores['mean']:.4f} ({route}, γ {gamma}) reference {reference['mean']:.4f} "
            f"PCA {grid[0.0]['mean']:.4f} truncation {truncation['mean']:.4f} oracle {grid[oracle]['mean']:.4f}")
    ablations = []
    for name, variant in ABLATIONS.items():
        selection = ablation(main_run["selection"], **variant)
        for k in DIMS:
            route, gamma, scores = evaluate_choice(selection, k, spectrum, sets, memo)
            ablations.append({"k": k, "route": name, "map": route, "gamma": gamma, **scores})
    FIGURES.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.model is None else f"_{args.tag}"
    plot_gamma(curve, FIGURES / f"spectemp_auto_gamma{suffix}.png", auto=main_run["selection"])
    plot_pseudo_scores(main_run["selection"], FIGURES / f"spectemp_auto_pseudo_ndcg{suffix}.png")
    return {
        "model": "all-MiniLM-L6-v2 (DumpEmbed K=0, mean pooling)" if args.model is None else args.tag,
        "fit_texts": len(corpus.texts), "fit_sha256": corpus.sha256, "knee": curve.knee,
        "pseudo_queries": len(main_run["pairs"]), "pseudo_query_candidates": main_run["pairs"].candidates,
        "seeds": list(args.seeds), "corpus_encode_seconds": corpus_seconds,
        "pseudo_query_encode_seconds": main_run["query_seconds"], "selection_seconds": main_run["select_seconds"],
        "selection_seconds_all_seeds": [one["select_seconds"] for one in runs],
        "corpus_tokens": token_count(tokenizer, corpus.texts),
        "pseudo_query_tokens": token_count(tokenizer, main_run["pairs"].queries),
        "auto": {str(one["seed"]): one["selection"].summary() for one in runs}, "rows": rows,
        "main_route": MAIN_ROUTE, "ablations": ablations,
    }


def table(results: dict) -> Table:
    columns = ["k", "method", "γ", *quality.EVAL_SETS, "mean", "Δ vs best baseline", "Δ vs oracle"]
    rows = []
    for k in DIMS:
        at_k = {r["method"]: r for r in results["rows"] if r["k"] == k}
        best = max(at_k[m]["mean"] for m in ("reference", "PCA", "prefix truncation"))
        for method in ("auto", "reference", "PCA", "prefix truncation", "oracle γ*"):
            row = at_k[method]
            gamma = "—" if row.get("gamma") is None else f"{row['gamma']:.2f}"
            label = method
            if method == "auto":
                label = f"**auto** ({row['route']}{'; saturated: the rule' if row.get('saturated') else ''})"
            if method == "oracle γ*":
                label = "*oracle γ\\* (chosen on the held-out mean)*"
            deltas = [100 * (row["mean"] - best), 100 * (row["mean"] - at_k["oracle γ*"]["mean"])] \
                if method == "auto" else [None, None]
            rows.append([k, label, gamma, *(row[n] for n in quality.EVAL_SETS), row["mean"], *deltas])
    return Table(columns=columns, rows=rows,
                 formats={**{n: 4 for n in (*quality.EVAL_SETS, "mean")}, "Δ vs best baseline": 2,
                          "Δ vs oracle": 2})


def ablation_table(results: dict) -> Table:
    """Held-out mean nDCG@10 of each scoring route at each k (the map it chose in brackets); the routes are the
    record's own (records measured before a route was added or removed keep theirs)."""
    main = results.get("main_route", "auto: cloze + fidelity, γ half way to the rule's above the knee (w = 0.5, kept)")
    by_route: dict[str, dict] = {}
    for row in results["rows"]:
        if row["method"] == "auto":
            by_route.setdefault(main, {})[row["k"]] = row | {"map": row["route"]}
    for row in results.get("ablations", []):
        by_route.setdefault(row["route"], {})[row["k"]] = row
    columns = ["route", *(f"k = {k}" for k in DIMS)]
    rows = []
    for name, at_k in by_route.items():
        cells = []
        for k in DIMS:
            row = at_k[k]
            mark = "u" if row["map"] == "uncentred" else ""
            what = "prefix" if row["map"] == "prefix" else f"{mark}{row['gamma']:.2f}"
            cells.append(f"{row['mean']:.4f} ({what})")
        rows.append([name, *cells])
    return Table(columns=columns, rows=rows)


def summary_tables(named: dict[str, dict]) -> list[Table]:
    """Across models (``named``: label -> a run's results): the rule, PCA, auto before and after the saturation
    check per k; then, per group (the label's part before ": "), auto − rule before and after (mean and min)."""
    columns = ["model", "inverse cloze, unprojected", "k", "reference", "PCA", "auto before", "auto",
               "before − rule", "auto − rule"]
    rows, deltas = [], {}
    for label, results in named.items():
        first = next(iter(results["auto"].values()))  # the reported pseudo-query sample's selection summary
        saturated = " (saturated)" if first["identity_cloze"] >= first["saturation"] else ""
        cloze_cell = f"{first['identity_cloze']:.3f}{saturated}"
        for k in DIMS[:-1]:
            at_k = {r["method"]: r["mean"] for r in results["rows"] if r["k"] == k}
            before = next(r["mean"] for r in results["ablations"] if r["k"] == k and r["route"] == BEFORE_SATURATION)
            gaps = (100 * (before - at_k["reference"]), 100 * (at_k["auto"] - at_k["reference"]))
            deltas.setdefault(label.partition(": ")[0], {}).setdefault(k, []).append(gaps)
            rows.append([label, cloze_cell, k, at_k["reference"], at_k["PCA"], before, at_k["auto"], *gaps])
    per_model = Table(columns=columns, rows=rows, formats={"reference": 4, "PCA": 4, "auto before": 4, "auto": 4,
                                                            "before − rule": 2, "auto − rule": 2})
    group_rows = []
    for group, by_k in deltas.items():
        for k, gaps in by_k.items():
            before, after = np.array(gaps).T
            group_rows.append([group, len(gaps), k, before.mean(), before.min(), after.mean(), after.min()])
    groups = Table(columns=["models", "count", "k", "before − rule, mean", "before − rule, min", "auto − rule, mean",
                            "auto − rule, min"], rows=group_rows,
                   formats={c: 2 for c in ("before − rule, mean", "before − rule, min", "auto − rule, mean",
                                           "auto − rule, min")})
    return [per_model, groups]


def write_summary(pairs: list[str], section: str, order: float | None) -> None:
    """The cross-model record from earlier runs' results (``LABEL=PATH`` each), re-derived without measuring."""
    named = {}
    for pair in pairs:
        label, sep, path = pair.rpartition("=")
        if not sep or not Path(path).is_file():
            raise SystemExit(f"--summary-of takes LABEL=PATH pairs of existing result files; got {pair!r}.")
        named[label] = json.loads(Path(path).read_text())
    title = "SpecTemp auto with the saturation check: every model, every k, before and after"
    finish_run(section, summary_tables(named), title=title, order=23.0 if order is None else order,
               measured=True, date=max(r["date"] for r in named.values()))


def write(results: dict, fresh: bool, section: str = SECTION[0], order: int | None = None) -> None:
    _, default_order, title = SECTION
    if section != SECTION[0]:
        default_order, title = default_order + 1, f"{title}: {results['model']}"
    if (RESULTS_DIR / f"{section}.json").is_file():
        title = None  # a re-measured section keeps its title and, without --order, its place
    elif order is None:
        order = default_order
    tables = [table(results)] + ([ablation_table(results)] if results.get("ablations") else [])
    finish_run(section, tables, title=title, order=order, measured=fresh, date=results["date"])


def register(subparsers: Subparsers) -> None:
    parser = bench_parser(subparsers, __name__, __doc__, run)
    quality.add_fit_arguments(parser, quality.ROOT / "spectemp_auto.json")
    parser.add_argument("--pseudo-queries", type=int, default=DEFAULT_MAX_PAIRS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1999, 5, 2026],
                        help="pseudo-query sample seeds; the first one is the reported auto row, all enter "
                        "seeds_mean / seeds_min")
    parser.add_argument("--model", type=Path, default=None,
                        help="a DumpEmbed folder to fit (default: all-MiniLM-L6-v2 built as K=0, mean pooling)")
    parser.add_argument("--tag", default="minilm", help="cache folder and figure suffix for --model")
    parser.add_argument("--section", default=SECTION[0], help="the BENCHMARKS.md section record to write")
    parser.add_argument("--order", type=float, default=None,
                        help="render position of a new --section (default: 21 for the main one, 22 for others)")
    parser.add_argument("--summary-of", nargs="+", metavar="LABEL=PATH", default=None,
                        help="measure nothing: write --section as the cross-model table of these earlier --output "
                        "files (labels 'group: member' are also summarised per group)")


def run(args: argparse.Namespace) -> None:
    if args.summary_of:
        write_summary(args.summary_of, args.section, args.order)
        return
    run_or_rerecord(args, measure, lambda results, fresh: write(results, fresh, args.section, args.order))
