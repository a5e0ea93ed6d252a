"""SpecTemp's γ(k) curve: spectral tempering with an SNR-derived exponent, for every k at once.

Reference mode follows the authors' code exactly: noise floor σ² = mean of the eigenvalues at indices
``int(0.9·d):``, SNR over ranks 1..T0 = int(0.9·d), knee from ``kneed.KneeLocator(curve="convex",
direction="decreasing", S=0.5)`` (no knee → ``max(1, k // 2)``), γ(k) = min(1, SNR(k) / SNR(knee)).

Robust mode [ours]: numerically-zero eigenvalues (rank deficiency, n ≤ d) are dropped before the 10% tail, and
the knee is the argmax of Kneedle's difference curve (one knee for every k, no early-plateau stop).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from enum import Enum

import numpy as np
from kneed import KneeLocator

from .spectrum import check_dim, numerical_rank

KNEEDLE_S = 0.5
TAIL_FRACTION = 0.1


class SpecTempMode(str, Enum):
    """``reference``: the authors' code; ``robust``: zero eigenvalues dropped, knee = difference-curve argmax."""

    REFERENCE = "reference"
    ROBUST = "robust"


@dataclass(frozen=True)
class SpecTempCurve:
    """Everything SpecTemp derives from a spectrum, for every k at once.

    Attributes:
        mode: reference or robust.
        noise_floor: σ².
        snr: SNR(i) for ranks i = 1..T0 (index i − 1).
        knee: the 1-based knee rank found by Kneedle (robust: difference-curve argmax); None if none.
        knees: (d,) knee rank used for each k = 1..d (differs from ``knee`` only in the no-knee fallback).
        gamma: (d,) γ(k) for k = 1..d (index k − 1).
        used_rank: eigenvalues the noise floor was taken from (d in reference mode, the numerical rank in robust).
        difference_curve: Kneedle's normalised difference curve (for plots and the robust knee).
    """

    mode: SpecTempMode
    noise_floor: float
    snr: np.ndarray
    knee: int | None
    knees: np.ndarray
    gamma: np.ndarray
    used_rank: int
    difference_curve: np.ndarray = field(repr=False)

    @property
    def t0(self) -> int:
        return len(self.snr)

    def gamma_at(self, k: int) -> float:
        return float(self.gamma[check_dim(k, len(self.gamma)) - 1])

    def knee_at(self, k: int) -> int:
        return int(self.knees[check_dim(k, len(self.knees)) - 1])


def spectemp_curve(eigenvalues: np.ndarray, mode: SpecTempMode | str = "reference",
                   count: int | None = None) -> SpecTempCurve:
    """γ(k) for every k from a descending eigenvalue spectrum (``count`` = n, used by robust mode's rank)."""
    try:
        mode = SpecTempMode(mode)
    except ValueError:
        raise ValueError(f"mode must be one of ('reference', 'robust'); got {mode!r}.") from None
    lam = np.clip(np.asarray(eigenvalues, dtype=np.float64), 0.0, None)
    if lam.ndim != 1 or len(lam) < 10:
        raise ValueError(f"SpecTemp needs a spectrum of at least 10 eigenvalues; got shape {lam.shape}.")
    if np.any(np.diff(lam) > 1e-12 * max(lam[0], 1e-300)):
        raise ValueError("eigenvalues must be sorted in descending order.")
    d = len(lam)
    used = d
    if mode is SpecTempMode.ROBUST:
        used = numerical_rank(lam, count)
        if used < 10:
            raise ValueError(
                f"only {used} eigenvalues are above numerical zero; SpecTemp needs at least 10. Fit on more texts."
            )
    t0 = int((1.0 - TAIL_FRACTION) * used)
    noise_floor = float(lam[t0:used].mean())
    if noise_floor <= 0.0:
        raise ValueError(
            "the noise floor (mean of the last 10% of eigenvalues) is 0: the covariance is rank-deficient "
            "(fewer texts than dimensions?). Use the robust mode (--robust), which drops zero eigenvalues."
        )
    snr = np.maximum(0.0, (lam[:t0] - noise_floor) / noise_floor)
    ranks = np.arange(1, t0 + 1)
    difference = np.zeros(t0)
    knee: int | None = None
    if snr.max() > snr.min():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # kneed warns when it finds no knee
            locator = KneeLocator(ranks, snr, S=KNEEDLE_S, curve="convex", direction="decreasing")
        difference = np.asarray(locator.y_difference, dtype=np.float64)
        if mode is SpecTempMode.REFERENCE:
            knee = None if locator.knee is None else int(locator.knee)
        else:
            knee = int(ranks[int(np.argmax(difference))])
    ks = np.arange(1, d + 1)
    knees = np.full(d, knee, dtype=np.int64) if knee is not None else np.maximum(1, ks // 2)
    snr_k = snr[np.minimum(ks, t0) - 1]
    s_ref = snr[np.minimum(knees, t0) - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        gamma = np.where(s_ref > 0, np.minimum(1.0, snr_k / np.where(s_ref > 0, s_ref, 1.0)), 1.0)
    return SpecTempCurve(mode=mode, noise_floor=noise_floor, snr=snr, knee=knee, knees=knees, gamma=gamma,
                         used_rank=used, difference_curve=difference)
