"""``analyze``: token statistics of one model (or several side by side), JSON + PNG, and the decoder logit lens."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .._utils.folders import staged_output
from ..model.backbone import is_decoder_folder
from ..model.dumpembed_folder import require_dumpembed_folder
from ..model.folder_schema import folder_code_may_run
from .logit_lens import DEFAULT_RATIO, LogitLens, logit_lens
from .plots import plot_token_statistics
from .token_stats import TokenStatistics, attention_sinks, token_statistics

LENS_TEXTS = 8
ANALYSIS_FILES = ("analysis.json", "token_statistics.png", "logit_lens.md")


@dataclass(frozen=True)
class AnalysisResult:
    """What was written."""

    statistics: list[TokenStatistics]
    lenses: list[LogitLens]
    json_path: Path
    plot_path: Path | None
    lens_path: Path | None
    sinks: dict[str, list[dict]] | None = None


def _check_output(out: Path) -> None:
    """Refuse an ``--out`` that holds anything but a previous analysis (it is replaced as a whole)."""
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder; choose another --out.")
    other = sorted(p.name for p in out.iterdir() if p.name not in ANALYSIS_FILES) if out.is_dir() else []
    if other:
        raise FileExistsError(f"{out} holds files that are not an analysis ({', '.join(other[:5])}); it would be "
                              "replaced as a whole: choose another --out (an empty or new folder).")


def analyze(
    model_dirs: list[str | Path], texts: list[str], out: str | Path, labels: list[str] | None = None,
    max_length: int | None = None, ratio: int = DEFAULT_RATIO, plot: bool = True, sinks: int = 0,
    trust_remote_code: bool = False,
) -> AnalysisResult:
    """Measure each model on ``texts``; write ``OUT/analysis.json``, ``OUT/token_statistics.png`` and, for
    decoders, ``OUT/logit_lens.md`` (top tokens before/after EmbedFilter on the first texts).

    Each folder's remote code must be hf_dumpembed's own unless ``trust_remote_code``. ``OUT`` is written through
    a staging folder and swapped in whole (a failed run leaves it as it was); it may hold only a previous analysis."""
    model_dirs = [Path(m) for m in model_dirs]
    for model_dir in model_dirs:
        require_dumpembed_folder(model_dir)  # the analysis reads [DUMP] slots and the folder's pooling
        folder_code_may_run(model_dir, trust_remote_code)
    labels = labels or [m.name for m in model_dirs]
    if len(labels) != len(model_dirs):
        raise ValueError(f"got {len(labels)} labels for {len(model_dirs)} models.")
    out = Path(out)
    _check_output(out)
    with staged_output(out, overwrite=True, inputs=model_dirs) as staging:
        statistics = [token_statistics(m, texts, max_length=max_length) for m in model_dirs]
        lenses = [logit_lens(m, texts[:LENS_TEXTS], ratio=ratio, max_length=max_length)
                  for m in model_dirs if is_decoder_folder(json.loads((m / "config.json").read_text()))]
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
        (staging / "analysis.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
        if plot:
            plot_token_statistics(statistics, labels, staging / "token_statistics.png")
        if lenses:
            (staging / "logit_lens.md").write_text("\n".join(lens.markdown() for lens in lenses), encoding="utf-8")
    return AnalysisResult(statistics, lenses, out / "analysis.json", out / "token_statistics.png" if plot else None,
                          out / "logit_lens.md" if lenses else None, sink_lists)


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
