"""Bar charts of the token statistics, models side by side (matplotlib, the ``plots`` extra)."""

from __future__ import annotations

from pathlib import Path

from ..projections.plots import pyplot, save_figure
from .token_stats import TokenStatistics
from .tokens import CLS, OTHER, SPECIAL, STOPWORDS


def _group_order(stats: list[TokenStatistics], keys: set[str]) -> list[str]:
    k = max(s.num_dump_tokens for s in stats)
    order = [CLS] + [f"dump{i + 1}" for i in range(k)] + [STOPWORDS, OTHER, SPECIAL]
    return [g for g in order if g in keys]


def _bars(axis, stats: list[TokenStatistics], labels: list[str], values: list[dict[str, float]], title: str,
          ylabel: str) -> None:
    from matplotlib.patches import Patch

    groups = _group_order(stats, {g for value in values for g in value})
    width = 0.8 / len(stats)
    handles = []
    for index, (label, value) in enumerate(zip(labels, values, strict=True)):
        xs = [i + (index - (len(stats) - 1) / 2) * width for i, g in enumerate(groups) if g in value]
        ys = [value[g] for g in groups if g in value]
        # One colour per model in both panels; a model with nothing to show here says so in the legend.
        axis.bar(xs, ys, width=width, color=f"C{index}")
        handles.append(Patch(color=f"C{index}", label=label if ys else f"{label} (no such tokens)"))
    axis.set_xticks(range(len(groups)), [g.replace("dump", "D") for g in groups], fontsize=9)
    axis.set_title(title)
    axis.set_ylabel(ylabel)
    axis.legend(handles=handles, fontsize=8, loc="best")


def plot_token_statistics(stats: list[TokenStatistics], labels: list[str], out: str | Path) -> Path:
    """One PNG: (a) mean final-layer norm per group, (b) stopword attention to [CLS] and each D_i (×1e5)."""
    try:
        plt = pyplot()
    except ImportError as error:
        raise ImportError("plots need matplotlib: pip install 'hf_dumpembed[plots]'") from error
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    _bars(left, stats, labels, [s.norms for s in stats], "(a) mean L2 norm, final layer", "norm")
    _bars(right, stats, labels, [s.attention_from_stopwords for s in stats], "(b) last-layer attention from stopwords",
          "attention ×1e5 (head mean)")
    return save_figure(figure, Path(out))
