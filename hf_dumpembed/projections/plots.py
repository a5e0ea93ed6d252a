"""PNG plots of a fit (matplotlib, the optional `plots` extra): spectrum with noise floor and knee, SNR, γ(k)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .maths.auto_selection import UNCENTRED, AutoSelection, grid_gamma
from .maths.gamma_curve import SpecTempCurve


def pyplot():
    """matplotlib.pyplot on the Agg backend, or an ImportError saying how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError("plots need matplotlib: pip install 'hf_dumpembed[plots]' (or fit without plots: "
                          "--no-plots, FitOptions(plots=False)).") from error
    return plt


def plots_available() -> bool:
    """Whether matplotlib can be imported (the fit writes its plots only then)."""
    try:
        pyplot()
    except ImportError:
        return False
    return True


def save_figure(fig, path: Path, dpi: int = 110) -> Path:
    """Lay out ``fig``, write it to ``path`` as a PNG (its folder made) and free it; returns ``path``."""
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path


def _finish(fig, ax, path: Path, xlabel: str, ylabel: str, title: str) -> Path:
    """Label the axes, add the legend, write the PNG and free the figure; returns ``path``."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def plot_spectrum(eigenvalues: np.ndarray, path: Path, curve: SpecTempCurve | None = None, k: int | None = None,
                  title: str = "Eigen-spectrum of the corpus covariance") -> Path:
    """Eigenvalues (log scale) with SpecTemp's noise floor, T0, the knee and the chosen k."""
    fig, ax = pyplot().subplots(figsize=(6.4, 4.0))
    ranks = np.arange(1, len(eigenvalues) + 1)
    positive = eigenvalues > 0
    ax.semilogy(ranks[positive], eigenvalues[positive], lw=1.5, label="eigenvalue λᵢ")
    if curve is not None:
        ax.axhline(curve.noise_floor, color="grey", ls="--", lw=1, label=f"noise floor σ² = {curve.noise_floor:.3g}")
        ax.axvline(curve.t0, color="grey", ls=":", lw=1, label=f"T0 = {curve.t0}")
        if curve.knee is not None:
            ax.axvline(curve.knee, color="tab:red", lw=1, label=f"knee = {curve.knee}")
    if k is not None:
        ax.axvline(k, color="tab:green", lw=1, label=f"k = {k}")
    return _finish(fig, ax, path, xlabel="rank i", ylabel="λᵢ", title=title)


def plot_snr(curve: SpecTempCurve, path: Path, k: int | None = None) -> Path:
    """SNR(i) = max(0, (λᵢ − σ²)/σ²) over ranks 1..T0 with the knee."""
    fig, ax = pyplot().subplots(figsize=(6.4, 4.0))
    ranks = np.arange(1, curve.t0 + 1)
    ax.semilogx(ranks, curve.snr, lw=1.5, label="SNR(i)")
    if curve.knee is not None:
        label = f"knee = {curve.knee}, SNR = {curve.snr[curve.knee - 1]:.3g}"
        ax.axvline(curve.knee, color="tab:red", lw=1, label=label)
    if k is not None:
        ax.axvline(min(k, curve.t0), color="tab:green", lw=1, label=f"k = {k}")
    return _finish(fig, ax, path, xlabel="rank i", ylabel="SNR",
                   title=f"Signal-to-noise ratio ({curve.mode.value} mode)")


def plot_gamma(curve: SpecTempCurve, path: Path, k: int | None = None, auto: AutoSelection | None = None) -> Path:
    """γ(k) for every output dimension k, with the fitted k marked; with ``auto``, the reference rule and the
    auto mode's γ(k) on one figure (markers: the choice at each scored k; grey: the k where auto truncates)."""
    fig, ax = pyplot().subplots(figsize=(6.4, 4.0))
    ks = np.arange(1, len(curve.gamma) + 1)
    ax.semilogx(ks, curve.gamma, lw=1.5, label=f"γ(k), {curve.mode.value} rule")
    gamma = curve.gamma
    if auto is not None:
        gamma = auto.gamma
        ax.semilogx(ks, auto.gamma, lw=1.5, color="tab:orange", label="γ(k), auto")
        for route, marker in (("centred", "o"), ("uncentred", "s")):
            at = [int(g) for g in auto.ks if auto.route_at(int(g)) == route]
            if at:
                ax.plot(at, [auto.gamma[g - 1] for g in at], marker, color="tab:orange", mfc="none",
                        label=f"auto: {route} map chosen")
        prefix = np.flatnonzero(auto.routes == 2) + 1
        if len(prefix):
            ax.axvspan(prefix.min(), prefix.max(), color="tab:grey", alpha=0.2, label="auto: prefix truncation")
    if k is not None:
        ax.plot([k], [gamma[k - 1]], "*", ms=10, color="tab:green", label=f"k = {k}: γ = {gamma[k - 1]:.3f}")
    ax.set_ylim(-0.02, 1.02)
    return _finish(fig, ax, path, xlabel="output dimension k", ylabel="γ (0 = PCA, 1 = whitening)",
                   title="SpecTemp exponent γ(k)")


def plot_pseudo_scores(auto: AutoSelection, path: Path, dims: tuple[int, ...] = (32, 64, 128, 256)) -> Path:
    """Auto mode's label-free score (inverse-cloze + fidelity nDCG@10) against γ at a few of the scored k:
    solid centred, dotted uncentred, dashed prefix truncation."""
    fig, ax = pyplot().subplots(figsize=(6.4, 4.0))
    on_grid = [c for c in auto.candidates if grid_gamma(c) is not None]
    centred = [c for c in on_grid if not c.startswith(UNCENTRED)]
    uncentred = [c for c in on_grid if c.startswith(UNCENTRED)]
    rows = [i for i, k in enumerate(auto.ks) if int(k) in dims] or list(range(0, len(auto.ks), 3))
    for row in rows:
        cols = [auto.candidates.index(c) for c in centred]
        line, = ax.plot([float(c) for c in centred], auto.scores[row, cols], lw=1.5, marker=".",
                        label=f"k = {int(auto.ks[row])}")
        if uncentred:
            cols = [auto.candidates.index(c) for c in uncentred]
            ax.plot([grid_gamma(c) for c in uncentred], auto.scores[row, cols], ls=":", lw=1.5,
                    color=line.get_color())
        if "prefix" in auto.candidates:
            ax.axhline(auto.scores[row, auto.candidates.index("prefix")], color=line.get_color(), ls="--", lw=1)
    return _finish(fig, ax, path, xlabel="γ", ylabel="cloze + fidelity nDCG@10",
                   title=f"Auto mode on {auto.num_queries} corpus texts (— centred, ··· uncentred, -- prefix)")


def plot_band(singular_values: np.ndarray, start: int, m: int, path: Path) -> Path:
    """Singular values of the unembedding matrix with EmbedFilter's kept middle band shaded."""
    fig, ax = pyplot().subplots(figsize=(6.4, 4.0))
    ranks = np.arange(1, len(singular_values) + 1)
    ax.semilogy(ranks, np.maximum(singular_values, 1e-30), lw=1.5, label="singular value σᵢ of W_U")
    ax.axvspan(start + 0.5, start + m + 0.5, color="tab:green", alpha=0.2, label=f"kept band: {m} of {len(ranks)}")
    return _finish(fig, ax, path, xlabel="rank i", ylabel="σᵢ", title="EmbedFilter: unembedding spectrum")
