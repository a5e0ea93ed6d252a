"""`hf-dumpembed quickstart`: the whole workflow on the embedded models, every step resumable.

data -> fine-tune K = 0 and K = K [DUMP] (identical recipe) -> fit SpecTemp (auto mode, `fit`'s default, and the
paper's rule) and PCA at the same k -> evaluate on
held-out real text -> encode speed -> table, plots, summary -> model card -> verify load paths -> push --dry-run
(-> with --decoder: SmolLM2 zero-shot PromptEOL, with and without EmbedFilter).
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._utils.console import say
from .._utils.machine import describe_machine, machine_info
from ..data.assets import default_decoder_path, default_encoder_path
from ..data.beir import load_beir
from ..data.corpora import TRAIN_COLLECTION
from ..evaluation.results import card_evaluation
from ..export.stock import export_stock_st
from ..export.verify import ParityReport, check_load_paths
from ..model.builder import BuildOptions, build
from ..model.card import write_card
from ..model.exportable import stock_exportable
from ..model.projection_record import ProjectionInfo
from ..projections.fit import FitOptions, fit_projections
from ..projections.plots import plots_available
from ..publishing.hub import push_folder
from ..training.config import TrainConfig, config_from_dict
from ..training.trainer import last_complete_checkpoint, train
from .data import evaluation_folder, prepare_collections
from .evaluate import Row, RowResult, head_shortcut_error, measure_speed, score_rows
from .options import Budget, QuickstartOptions
from .steps import StepRecord, StepRunner, fresh_output
from .summary import plot_losses, plot_results, results_table, training_losses, write_summary

logger = logging.getLogger(__name__)

SHORTCUT_TOLERANCE = 1e-5
# The SpecTemp rows of the table, folder -> the SpecTemp mode fitted into it: "spectemp" is `fit`'s default (auto
# mode), the folder the card, the load-path check and the dry-run push use; "spectemp-reference" is the paper's rule
# at the same k, fitted from the same encoding pass.
SPECTEMP_FOLDER_MODES = {"spectemp": "auto", "spectemp-reference": "reference"}


def training_config(backbone: str, k: int, data: Path, output: Path, budget: Budget, seed: int,
                    mined: Path, overwrite: bool) -> TrainConfig:
    """The recipe both models are fine-tuned with (only K differs): InfoNCE + GradCache on StdlibCodeTrain."""
    raw: dict[str, Any] = {
        # pooling, [DUMP] init and match: the library's defaults (the fast budget matches for a few steps only); the
        # K [DUMP] tokens come on top of the text's positions, so both models read the same text
        "model": {"backbone": backbone, "num_dump_tokens": k, "init_seed": 0,
                  "max_seq_length": budget.max_seq_length + k, "match_steps": budget.match_steps},
        "data": {"path": str(data), "format": "beir", "split": "train", "num_negatives": budget.num_negatives,
                 "max_rows": budget.train_rows, "sample_seed": 0,
                 "mining": {"range_max": 50, "relative_margin": 0.05, "cache_dir": str(mined)}},
        "training": {"loss": "cached_mnrl", "scale": 20.0, "batch_size": budget.batch_size,
                     "mini_batch_size": budget.mini_batch_size, "learning_rate": 1e-4, "warmup_ratio": 0.05,
                     "epochs": 1.0, "max_steps": budget.steps, "precision": "auto", "save_steps": 5,
                     "logging_steps": 1},
        "seed": seed,
        "output": str(output),
        "overwrite": overwrite,
    }
    return config_from_dict(raw, source="quickstart recipe")


def fine_tune(config: TrainConfig, overwrite: bool) -> Path:
    """Train, continuing from the newest checkpoint of an interrupted run."""
    fresh_output(config.checkpoint_path, overwrite)
    return train(config, resume=last_complete_checkpoint(config.checkpoint_path) is not None)


def _label(k: int) -> str:
    return "base: K=0 fine-tuned" if k == 0 else f"[DUMP]: K={k} fine-tuned"


class Quickstart:
    """The steps of one quickstart run (see `run_quickstart`)."""

    def __init__(self, options: QuickstartOptions) -> None:
        self.options = options
        self.budget = options.work_budget
        self.out = options.output_dir
        self.k = options.num_dump_tokens
        self.encoder = options.encoder or str(default_encoder_path())
        self.sources: dict[str, Path] = {}  # held-out collection -> its folder
        self.tasks: dict[str, Path] = {}  # task name -> the folder evaluated (the collection or a sample of it)
        self.skipped: dict[str, str] = {}
        self.results: list[RowResult] = []
        self.decoder_results: list[RowResult] = []
        self.parity: dict[str, ParityReport] = {}
        self.records: list[StepRecord] = []  # what each step did in this run (ran, or skipped as done before)
        dim = self.budget.projection_dim
        out = self.out
        self.folders = {
            "k0": out / "minilm-k0", f"k{self.k}": out / f"minilm-k{self.k}",
            "spectemp": out / f"minilm-k{self.k}-spectemp{dim}",
            "spectemp-reference": out / f"minilm-k{self.k}-spectemp{dim}-reference",
            "pca": out / f"minilm-k{self.k}-pca{dim}",
            "stock": out / f"minilm-k{self.k}-spectemp{dim}-stock", "staging": out / "push-staging",
            "decoder": out / "smollm2-prompteol", "embedfilter": out / "smollm2-prompteol-embedfilter",
        }

    # ---- the plan ------------------------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """What the outputs depend on: a folder made with other settings is not resumed (--decoder only adds
        steps, so a run can be resumed with it)."""
        return {"budget": self.budget.__dict__, "num_dump_tokens": self.k, "encoder": self.encoder,
                "tasks": list(self.options.eval_tasks), "seed": self.options.seed,
                "spectemp_modes": dict(SPECTEMP_FOLDER_MODES)}

    def encoder_rows(self) -> list[Row]:
        k, dim, f = self.k, self.budget.projection_dim, self.folders
        return [
            Row("k0", _label(0), f["k0"], "k0", "quickstart/minilm-k0"),
            Row(f"k{k}", _label(k), f[f"k{k}"], f"k{k}", f"quickstart/minilm-k{k}"),
            Row("spectemp", f"[DUMP] + SpecTemp auto k={dim}", f["spectemp"], f"k{k}", self.options.repo_id),
            Row("spectemp-reference", f"[DUMP] + SpecTemp paper rule k={dim}", f["spectemp-reference"], f"k{k}",
                f"quickstart/minilm-k{k}-spectemp{dim}-reference"),
            Row("pca", f"[DUMP] + PCA k={dim}", f["pca"], f"k{k}", f"quickstart/minilm-k{k}-pca{dim}"),
        ]

    def decoder_rows(self) -> list[Row]:
        f = self.folders
        return [
            Row("decoder", "SmolLM2 PromptEOL (zero-shot)", f["decoder"], "decoder", "quickstart/smollm2-prompteol"),
            Row("embedfilter", "SmolLM2 PromptEOL + EmbedFilter τ=2", f["embedfilter"], "decoder",
                "quickstart/smollm2-prompteol-embedfilter"),
        ]

    # ---- steps ---------------------------------------------------------------------------------------------
    def prepare_data(self) -> None:
        data_dir = self.options.data_folder
        available, self.skipped = prepare_collections(data_dir, [TRAIN_COLLECTION, *self.options.eval_tasks])
        self.sources = {name: available[name] for name in self.options.eval_tasks if name in available}
        self.tasks = self.samples("eval-data", self.budget.eval_max_queries, self.budget.eval_max_documents)
        for name, reason in self.skipped.items():
            say(f"        {name}: skipped ({reason})")
        sizes = {name: load_beir(folder) for name, folder in self.tasks.items()}
        say(f"        training text: {available[TRAIN_COLLECTION]}; held-out evaluation text: "
            + ", ".join(f"{name} ({len(data.queries)} q / {len(data.corpus)} docs)" for name, data in sizes.items()))

    def train_config(self, k: int) -> TrainConfig:
        return training_config(self.encoder, k, self.options.data_folder / TRAIN_COLLECTION,
                               self.folders[f"k{k}"], self.budget, self.options.seed, self.out / "mined",
                               self.options.overwrite)

    def fit(self) -> None:
        b, k, f = self.budget, self.k, self.folders
        # one encoding pass for the three fits (auto mode also encodes its short pseudo-queries once); no fit plots
        # without matplotlib (the quickstart's other plots are skipped the same way)
        shared = {"dim": b.projection_dim, "max_texts": b.fit_max_texts, "seed": 1999,
                  "progress": self.options.progress, "plots": plots_available()}
        targets = {f[name]: FitOptions(method="spectemp", mode=mode, **shared)
                   for name, mode in SPECTEMP_FOLDER_MODES.items()}
        fit_projections(f[f"k{k}"], {**targets, f["pca"]: FitOptions(method="pca", **shared)},
                        corpus=self.options.data_folder / TRAIN_COLLECTION, overwrite=True)

    def evaluate(self, rows: list[Row], tasks: dict[str, Path]) -> list[RowResult]:
        scored = score_rows(rows, tasks, self.out / "eval-cache", self.out / "results", self.options.progress)
        return [scored[row.name] for row in rows]

    def sample_documents(self, count: int) -> list[str]:
        """The first ``count`` documents (in id order) of the first held-out task: the same texts for every model."""
        data = load_beir(next(iter(self.tasks.values())))
        return [data.document_text(d) for d in sorted(data.corpus)][:count]

    def verify(self) -> None:
        f = self.folders
        stock = None
        if stock_exportable(f["spectemp"]):
            stock = export_stock_st(f["spectemp"], f["stock"], overwrite=True)
        else:
            say("        no stock export: the mean without the [DUMP] slots has no stock sentence-transformers "
                "equivalent (serve with trust_remote_code=True)")
        self.parity["spectemp"] = check_load_paths(f["spectemp"], stock_export_dir=stock)
        say(self.parity["spectemp"].describe())
        if not self.parity["spectemp"].ok:
            raise RuntimeError(f"{f['spectemp']} gives different vectors through different load paths (above).")
        error = head_shortcut_error(f[f"k{self.k}"], f["spectemp"], self.sample_documents(32))
        say(f"        evaluation shortcut (SpecTemp head on the [DUMP] model's vectors vs the SpecTemp folder's own "
            f"vectors): max |diff| {error:.1e}")
        if error > SHORTCUT_TOLERANCE:
            raise RuntimeError(f"the SpecTemp folder's vectors differ from its head on {f[f'k{self.k}']}'s by "
                               f"{error:.1e}: the table would not describe the saved model.")

    def push_dry_run(self) -> None:
        staging = self.folders["staging"]
        fresh_output(staging, True)
        result = push_folder(self.folders["spectemp"], self.options.repo_id, dry_run=True, staging_dir=staging)
        say(result.listing())
        say(f"        nothing was sent. To publish: hf-dumpembed push {self.folders['spectemp']} YOUR-NAME/REPO "
            "(needs HF_TOKEN and network)")

    def build_decoder(self) -> None:
        backbone = self.options.decoder_backbone or str(default_decoder_path())
        options = BuildOptions(num_dump_tokens=0, prompt="prompteol",
                               max_seq_length=self.budget.decoder_max_seq_length)
        build(backbone, self.folders["decoder"], options, overwrite=True)
        fit_projections(self.folders["decoder"], {self.folders["embedfilter"]: FitOptions(
            method="embedfilter", ratio=2, progress=self.options.progress)}, overwrite=True)

    def samples(self, folder: str, max_queries: int | None, max_documents: int | None) -> dict[str, Path]:
        """Task name -> the held-out set itself, or its seeded sample under ``out/folder`` when limits are given."""
        samples = [evaluation_folder(source, self.out / folder, max_queries, max_documents, self.options.seed)
                   for source in self.sources.values()]
        return {sample.name: sample for sample in samples}


def run_quickstart(options: QuickstartOptions | None = None) -> Quickstart:
    """Run (or resume) the quickstart; returns the run with its results, parity reports and step timings."""
    options = options or QuickstartOptions()
    run = Quickstart(options)
    out, f, k, b = run.out, run.folders, run.k, run.budget
    started = time.perf_counter()
    total = 9 + (3 if options.decoder else 0)
    steps = StepRunner(out, run.settings(), total, options.overwrite)
    run.records = steps.records
    say(f"hf-dumpembed quickstart ({b.name} budget) -> {out}")

    record = steps.run("data", "Real-text collections (training: StdlibCodeTrain; held out: the others)",
                       [options.data_folder / TRAIN_COLLECTION], run.prepare_data)
    if record.skipped:
        run.prepare_data()  # the collections are there: this only finds them
    for kk in (0, k):
        config = run.train_config(kk)
        steps.run(f"train-k{kk}", f"Build and fine-tune K={kk} from all-MiniLM-L6-v2 ({b.train_rows} StdlibCodeTrain "
                  f"pairs, batch {b.batch_size}, {b.num_negatives} hard negative(s))", [f[f"k{kk}"]],
                  lambda config=config: fine_tune(config, options.overwrite))
    steps.run("fit", f"Fit SpecTemp (auto mode and the paper's rule) and PCA at k={b.projection_dim} on the "
              "training corpus (one encoding pass)", [f["spectemp"], f["spectemp-reference"], f["pca"]], run.fit)

    rows = run.encoder_rows()
    record = steps.run("evaluate", f"Evaluate {len(rows)} models on {', '.join(run.tasks)} (nDCG@10, mteb's "
                       "scoring; one encoding pass per backbone)", [out / "eval-cache"],
                       lambda: run.results.extend(run.evaluate(rows, run.tasks)))
    if record.skipped:
        run.results = run.evaluate(rows, run.tasks)  # scores from the stored encodings
    steps.run("speed", f"Measure encode speed side by side ({b.speed_texts} documents, {b.speed_repeats} "
              "repeat(s), models interleaved)", [out / "speed.json"],
              lambda: _save_speed(run, rows, b.speed_texts, out / "speed.json"))
    _load_speed(run.results, out / "speed.json")
    steps.run("card", "Render the model card (projection, training, evaluation)", [f["spectemp"] / "README.md"],
              lambda: write_card(f["spectemp"], model_id=options.repo_id, evaluation=card_evaluation(
                  out / "results", f["spectemp"], options.repo_id, results_model=options.repo_id)))
    steps.run("verify", "Check AutoModel, SentenceTransformer, MTEB and the stock export agree",
              [f["stock"]] if stock_exportable(f["spectemp"]) else [], run.verify)
    steps.run("push", f"push --dry-run to {options.repo_id}", [f["staging"]], run.push_dry_run)
    if options.decoder:
        steps.run("decoder-build", "Build SmolLM2-135M-Instruct (PromptEOL, K=0) and fit EmbedFilter τ=2",
                  [f["decoder"], f["embedfilter"]], run.build_decoder)
        # smaller samples of the held-out sets for SmolLM2 (~10x slower per text than MiniLM on a CPU)
        decoder_rows = run.decoder_rows()
        decoder_tasks = run.samples("eval-data-decoder", b.decoder_max_queries, b.decoder_max_documents)
        record = steps.run("decoder-evaluate", f"Evaluate SmolLM2 zero-shot on {', '.join(decoder_tasks)}",
                           [out / "eval-cache" / "decoder"],
                           lambda: run.decoder_results.extend(run.evaluate(decoder_rows, decoder_tasks)))
        if record.skipped:
            run.decoder_results = run.evaluate(decoder_rows, decoder_tasks)
        steps.run("decoder-speed", f"Measure SmolLM2 encode speed ({b.decoder_speed_texts} documents, with and "
                  "without EmbedFilter)", [out / "speed-decoder.json"],
                  lambda: _save_speed(run, decoder_rows, b.decoder_speed_texts, out / "speed-decoder.json"))
        _load_speed(run.decoder_results, out / "speed-decoder.json")
    _report(run, steps, time.perf_counter() - started)
    return run


def _save_speed(run: Quickstart, rows: list[Row], num_texts: int, path: Path) -> None:
    """Documents per second of each row, side by side (`_load_speed` puts them in the results)."""
    speeds = measure_speed(rows, run.sample_documents(num_texts), run.budget.speed_repeats, run.options.progress)
    path.write_text(json.dumps(speeds, indent=2) + "\n")


def _load_speed(results: list[RowResult], path: Path) -> None:
    if path.exists():
        speeds = json.loads(path.read_text())
        for result in results:
            result.texts_per_second = speeds.get(result.row.name)


def _report(run: Quickstart, steps: StepRunner, wall_seconds: float) -> None:
    out, b, options = run.out, run.budget, run.options
    tasks = list(run.tasks)
    decoder_tasks = sorted({t for r in run.decoder_results for t in r.scores})
    say("")
    say(f"Held-out nDCG@10 ({b.name} budget; trained and fitted on {TRAIN_COLLECTION} only; texts/s = documents "
        "encoded per second, side by side on this machine)")
    say(results_table(run.results, tasks, baseline="k0"))
    say("(one training seed: a difference between the fine-tuned rows smaller than about 1% is within the "
        "seed-to-seed spread measured over 3 paired seeds in BENCHMARKS.md, 'Training with [DUMP] tokens'; there "
        "[DUMP] costs a little at this budget, is level after one epoch, and pays where a pooled vector is learned "
        "and most for a decoder)")
    projection = ProjectionInfo.from_config(_config(run.folders["spectemp"])) or ProjectionInfo()
    auto = projection.auto
    if auto is not None and auto.saturated:
        say(f"(SpecTemp auto = the paper's rule here: the model was just trained on {TRAIN_COLLECTION}, so it finds "
            f"those texts from their first lines almost perfectly (pseudo-query nDCG@10 {auto.identity_cloze:.3f} "
            f">= {auto.saturation:g}) and auto's label-free score cannot choose; BENCHMARKS.md, 'SpecTemp auto with "
            "the saturation check')")
    if run.decoder_results:
        say("")
        say(results_table(run.decoder_results, decoder_tasks, baseline="decoder"))
    for name, reason in run.skipped.items():
        say(f"(not evaluated: {name} — {reason})")
    plots = [plot_results(run.results, tasks, out / "plots" / "ndcg.png",
                          f"Held-out nDCG@10 ({b.name} budget)"),
             plot_losses({r.row.label: training_losses(Path(str(r.row.folder) + ".checkpoints"))
                          for r in run.results if not r.row.reuses_encoding}, out / "plots" / "training_loss.png")]
    if run.decoder_results:
        plots.append(plot_results(run.decoder_results, decoder_tasks, out / "plots" / "ndcg_decoder.png",
                                  "SmolLM2-135M-Instruct zero-shot nDCG@10"))
    fit_plots = sorted((run.folders["spectemp"] / "plots").glob("*.png"))
    for plot in fit_plots:
        shutil.copyfile(plot, out / "plots" / f"spectemp_{plot.name}")
    info = machine_info()
    training = _config(run.folders[f"k{run.k}"]).get("training_info") or {}
    payload = {
        "kind": "quickstart",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": info,
        "command": "hf-dumpembed quickstart" + (" --fast" if options.fast else "")
                   + (" --decoder" if options.decoder else ""),
        "mode": b.name,
        "wall_seconds": round(wall_seconds, 1),
        "training": {"data": TRAIN_COLLECTION, "rows": sum(d.get("num_rows", 0) for d in training.get("datasets", [])),
                     "steps": training.get("steps"), "batch_size": b.batch_size, "max_seq_length": b.max_seq_length,
                     "dump_tokens_on_top": True, "seed": options.seed, "num_negatives": b.num_negatives},
        "projection": {"method": projection.method, "mode": projection.mode,
                       "dim": projection.dim, "corpus": TRAIN_COLLECTION,
                       "num_texts": projection.corpus.num_texts if projection.corpus is not None else None,
                       "gamma": projection.gamma, "knee": projection.knee,
                       "auto_identity_cloze": None if auto is None else auto.identity_cloze},
        "skipped_tasks": run.skipped,
        "decoder_rows": [{"name": r.row.name, "label": r.row.label, "dim": r.dim,
                          "texts_per_second": r.texts_per_second,
                          "scores": {t: r.ndcg(t) for t in r.scores}} for r in run.decoder_results],
    }
    summary = write_summary(out / "summary.json", payload, run.results, tasks, steps.records)
    say("")
    say(f"machine: {describe_machine(info)}")
    say(f"plots: {', '.join(str(p) for p in plots if p)}" + (f" (+ {len(fit_plots)} SpecTemp fit plots)"
                                                              if fit_plots else ""))
    say(f"model card: {run.folders['spectemp'] / 'README.md'}; results (mteb layout): {out / 'results'}")
    say(f"summary: {summary}; total {wall_seconds:.0f} s")


def _config(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "config.json").read_text())
