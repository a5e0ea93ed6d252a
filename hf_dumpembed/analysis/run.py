"""``analyze``: token statistics of one model (or several side by side), JSON + PNG, and the decoder logit lens."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..model.backbone import is_decoder_folder
from .logit_lens import DEFAULT_RATIO, LogitLens, logit_lens
from .plots import plot_token_statistics
from .token_stats import TokenStatistics, attention_sinks, token_statistics

LENS_TEXTS = 8


@dataclass(frozen=True)
class AnalysisResult:
    """What was written."""

    statistics: list[TokenStatistics]
    lenses: list[LogitLens]
    json_path: Path
    plot_path: Path | None
    lens_path: Path | None
    sinks: dict[str, list[dict]] | None = None


def _is_decoder(model_dir: Path) -> bool:
    return is_decoder_folder(json.loads((model_dir / "config.json").read_text()))


def analyze(
    model_dirs: list[str | Path], texts: list[str], out: str | Path, labels: list[str] | None = None,
    max_length: int | None = None, ratio: int = DEFAULT_RATIO, plot: bool = True, sinks: int = 0,
) -> AnalysisResult:
    """Measure each model on ``texts``; write ``OUT/analysis.json``, ``OUT/token_statistics.png`` and, for
    decoders, ``OUT/logit_lens.md`` (top tokens before/after EmbedFilter on the first texts)."""
    model_dirs = [Path(m) for m in model_dirs]
    for model_dir in model_dirs:
        if not (model_dir / "config.json").is_file():
            raise FileNotFoundError(f"{model_dir} is not a model folder (no config.json).")
    labels = labels or [m.name for m in model_dirs]
    if len(labels) != len(model_dirs):
        raise ValueError(f"got {len(labels)} labels for {len(model_dirs)} models.")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    statistics = [token_statistics(m, texts, max_length=max_length) for m in model_dirs]
    lenses = [logit_lens(m, texts[:LENS_TEXTS], ratio=ratio, max_length=max_length)
              for m in model_dirs if _is_decoder(m)]
    payload = {
        "texts": {"count": len(texts), "max_length": max_length},
        "models": {label: s.to_dict() for label, s in zip(labels, statistics, strict=True)},
        "logit_lens": [lens.to_dict() for lens in lenses],
    }
    sink_lists = None
    if sinks:
        sink_lists = {label: attention_sinks(m, texts, max_length=max_length, top=sinks, progress=False)
                      for label, m in zip(labels, model_dirs, strict=True)}
        payload["attention_sinks"] = sink_lists
    json_path = out / "analysis.json"
    json_path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    plot_path = plot_token_statistics(statistics, labels, out / "token_statistics.png") if plot else None
    lens_path = None
    if lenses:
        lens_path = out / "logit_lens.md"
        lens_path.write_text("\n".join(lens.markdown() for lens in lenses), encoding="utf-8")
    return AnalysisResult(statistics, lenses, json_path, plot_path, lens_path, sink_lists)


def describe(result: AnalysisResult, labels: list[str]) -> str:
    """A console summary: norms and attention per group for each model."""
    lines = []
    for label, stats in zip(labels, result.statistics, strict=True):
        norms = "  ".join(f"{g} {v:.2f}" for g, v in stats.norms.items())
        attention = "  ".join(f"{g} {v:.0f}" for g, v in stats.attention_from_stopwords.items())
        lines += [f"{label}: {stats.num_texts} texts", f"  mean norm:      {norms}",
                  f"  stopword attn ×1e5: {attention}"]
        if result.sinks:
            lines.append("  attention sinks: " + "  ".join(
                f"{s['token']} {s['attention']:.3f}" for s in result.sinks[label]))
    lines.append(f"wrote {result.json_path}" + (f", {result.plot_path}" if result.plot_path else "")
                 + (f", {result.lens_path}" if result.lens_path else ""))
    return "\n".join(lines)
