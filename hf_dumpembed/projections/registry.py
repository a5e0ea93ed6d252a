"""The projection methods' fitters, one per name of the vocabulary (`hf_dumpembed.model.projection_record`).

Adding a method: its vocabulary entry (`projection_record._METHODS`), its fitter module under ``methods/`` and its
line here; the CLI, `FitOptions`' rules and the card follow from the vocabulary.
"""

from __future__ import annotations

from ..model.projection_record import METHOD_NAMES, method_spec
from .maths.spectrum import Spectrum
from .methods import embedfilter, fixed, spectemp, tempered
from .methods.common import FitContext, FittedProjection, Fitter, PseudoSet
from .options import FitOptions

FITTERS: dict[str, Fitter] = {
    "spectemp": spectemp.fit,
    "embedfilter": embedfilter.fit,
    "pca": tempered.fit,
    "whiten": tempered.fit,
    "gamma": tempered.fit,
    "truncate": fixed.fit,
    "random-truncate": fixed.fit,
    "random-project": fixed.fit,
}
if set(FITTERS) != set(METHOD_NAMES):  # checked at import (not an assert: it must hold under python -O too)
    raise RuntimeError(f"every method of the vocabulary needs a fitter, and only those: the vocabulary names "
                       f"{sorted(METHOD_NAMES)}, FITTERS {sorted(FITTERS)}.")


def fitter(method: str) -> Fitter:
    """The fitter of ``method`` (a name of the vocabulary)."""
    return FITTERS[method_spec(method).name]


def fit_spectral(spectrum: Spectrum, options: FitOptions, pseudo: PseudoSet | None = None) -> FittedProjection:
    """A corpus-fitted method from a spectrum already computed (auto mode also needs the pseudo-query vectors)."""
    return fitter(options.method.value)(FitContext.from_spectrum(spectrum, pseudo), options)
