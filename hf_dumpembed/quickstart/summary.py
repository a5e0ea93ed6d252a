"""The quickstart's results: the side-by-side table, `summary.json` and the plots."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from .._utils.tables import percent, relative_change, render_text
from ..projections.plots import pyplot, save_figure
from .evaluate import RowResult
from .steps import StepRecord

logger = logging.getLogger(__name__)


def _cell(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def results_table(results: list[RowResult], tasks: list[str], baseline: str | None = None) -> str:
    """nDCG@10 per task, the mean, the change of the mean against ``baseline``, dimension and encode speed."""
    base = next((r for r in results if r.row.name == baseline), None)
    base_mean = base.mean_ndcg(tasks) if base else None
    header = ["model", "dim", *tasks, "mean", "vs base", "texts/s"]
    rows = []
    for result in results:
        mean = result.mean_ndcg(tasks)
        change = None if result is base else relative_change(mean, base_mean)
        speed = "-" if result.texts_per_second is None else f"{result.texts_per_second:.0f}"
        rows.append([result.row.label, str(result.dim), *[_cell(result.ndcg(t)) for t in tasks], _cell(mean),
                     percent(change), speed])
    return render_text(header, rows)


def write_summary(path: Path, payload: dict[str, Any], results: list[RowResult], tasks: list[str],
                  steps: list[StepRecord]) -> Path:
    """`summary.json`: settings, machine, per-row scores and timings (BENCHMARKS.md renders it as a section:
    `scripts/bench/benchmarks.py render`)."""
    payload = dict(payload)
    payload["tasks"] = tasks
    payload["rows"] = [
        {"name": r.row.name, "label": r.row.label, "folder": str(r.row.folder), "dim": r.dim,
         "texts_per_second": r.texts_per_second, "scores": {t: r.ndcg(t) for t in tasks},
         "mean": r.mean_ndcg(tasks), "all_scores": r.scores}
        for r in results
    ]
    payload["steps"] = [{"name": s.name, "seconds": round(s.seconds, 2), "skipped": s.skipped} for s in steps]
    payload["pipeline_seconds"] = round(sum(s.seconds for s in steps), 1)  # every step, resumed ones included
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def training_losses(checkpoints: Path) -> list[tuple[int, float]]:
    """(step, loss) from the newest checkpoint's ``trainer_state.json`` (empty when there is none)."""
    states = sorted(checkpoints.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[1]))
    if not states:
        return []
    history = json.loads(states[-1].read_text()).get("log_history", [])
    return [(int(entry["step"]), float(entry["loss"])) for entry in history if "loss" in entry]


def _pyplot_or_none(path: Path):
    try:
        return pyplot()
    except ImportError as error:
        logger.warning("%s: no plot %s", error, path)
        return None


def plot_results(results: list[RowResult], tasks: list[str], path: Path, title: str) -> Path | None:
    """Grouped bars: nDCG@10 of every row on every task (and the mean)."""
    if (plt := _pyplot_or_none(path)) is None:
        return None
    columns = [*tasks, "mean"]
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(columns), 4.8))
    width = 0.8 / max(1, len(results))
    for i, result in enumerate(results):
        values = [result.ndcg(t) or 0.0 for t in tasks] + [result.mean_ndcg(tasks) or 0.0]
        positions = [c + (i - (len(results) - 1) / 2) * width for c in range(len(columns))]
        bars = ax.bar(positions, values, width, label=f"{result.row.label} (d={result.dim})")
        ax.bar_label(bars, fmt="%.3f", fontsize=6, rotation=90, padding=2)
    ax.set_xticks(range(len(columns)), columns)
    ax.set_ylabel("nDCG@10")
    ax.set_ylim(0, 1.12)
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, frameon=False)
    return save_figure(fig, path, dpi=120)


def plot_losses(curves: dict[str, list[tuple[int, float]]], path: Path) -> Path | None:
    """Training loss per step of each fine-tuned model (same recipe, same data order)."""
    if not any(curves.values()):
        return None
    if (plt := _pyplot_or_none(path)) is None:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for label, points in curves.items():
        if points:
            ax.plot([s for s, _ in points], [v for _, v in points], marker="o", label=label)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("InfoNCE loss")
    ax.set_title("Fine-tuning loss (identical recipe)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return save_figure(fig, path, dpi=120)
