"""`FitOptions`: what a fit fits, checked by pydantic (`hf_dumpembed._utils.checked`) and against the method
vocabulary (`hf_dumpembed.model.projection_record`): each field's type and range first, then which method takes
which option."""

from __future__ import annotations

import os
from enum import Enum
from typing import Annotated

from pydantic import BeforeValidator, Field, StrictFloat, StrictInt, StrictStr, model_validator

from .._utils.checked import checked_options
from ..model.projection_record import METHOD_NAMES, METHODS, OPTION_RULES, MethodSpec, method_spec
from ..model.prompting import PromptMode, prompt_mode
from .maths.pseudo_queries import DEFAULT_MAX_PAIRS

# The methods as an enum (``FitOptions.method``), generated from the vocabulary.
Method = Enum("Method", {name.upper().replace("-", "_"): name for name in METHOD_NAMES}, type=str)  # type: ignore[misc]
SPECTEMP_MODE_NAMES = METHODS["spectemp"].mode_names  # the names of the vocabulary's SpecTemp modes
DEFAULT_SPECTEMP_MODE = METHODS["spectemp"].default_mode
# Sentences for the fields whose type and range read better as one (the others: `checked.complaint`'s words).
_OPTION_MESSAGES = {
    "dim": "dim must be a positive integer; got {value!r}.",
    "mode": f"mode must be one of {SPECTEMP_MODE_NAMES}; got {{value!r}}.",
}
_AtLeastOne = Annotated[StrictInt, Field(ge=1)]


def _method(value: object) -> Method:
    """A method name (or `Method`) as its `Method`, with method_spec's error listing the methods."""
    return Method(method_spec(value).name)


def _prompt(value: object) -> PromptMode | None:
    """A prompt name (or `PromptMode`) as its `PromptMode`, with prompt_mode's error listing the choices."""
    return None if value is None else prompt_mode(value)


def _path_text(value: object) -> object:
    """A path given as an `os.PathLike` (e.g. a `Path`), as its string."""
    return os.fspath(value) if isinstance(value, os.PathLike) else value


@checked_options(_OPTION_MESSAGES)
class FitOptions:
    """What `fit_projection` fits.

    Args:
        method: one of `Method` (the names of `hf_dumpembed.model.projection_record.METHODS`).
        dim: output dimension k (EmbedFilter: the band width m). Required except for EmbedFilter.
        ratio: EmbedFilter's filter ratio τ (m = d // τ); default 2 when neither dim nor ratio is given.
        gamma: exponent of the ``gamma`` method (default 0.5, the paper's γ-whitening baseline).
        mode: SpecTemp's γ(k): ``auto`` (ours, the default: γ(k), or prefix truncation, chosen per k with
            pseudo-queries from the corpus; see `maths/auto_selection.py`), ``reference`` (the authors' rule, the
            paper's) or ``robust`` (ours: knee = difference-curve argmax). The folder's ``projection_info["mode"]``
            and its card name the mode that ran.
        robust: alias of ``mode="robust"``.
        pseudo_queries: auto mode: at most this many (first segment, text) pairs are scored.
        seed: seed of the random baselines and of the corpus sample (paper seeds 1999, 5, 2026).
        max_texts: fit on a seeded sample of at most this many texts (the authors' code: 1M).
        batch_size: encoding batch size.
        prompt: compose a zero-shot prompt inside the model (``prompteol`` or ``echo``; causal LMs).
        lm_head: the original causal-LM folder, for EmbedFilter on a backbone with an untied lm_head.
        text_column: text column of a saved HF dataset corpus.
        plots: write PNG plots under ``plots/`` (needs matplotlib: checked before anything is encoded).
        progress: show progress bars.
    """

    method: Annotated[Method, BeforeValidator(_method)]
    dim: _AtLeastOne | None = None
    ratio: _AtLeastOne | None = None
    gamma: Annotated[StrictFloat, Field(ge=0, le=1)] | None = None
    mode: StrictStr | None = None
    robust: bool = False
    pseudo_queries: _AtLeastOne = DEFAULT_MAX_PAIRS
    seed: StrictInt = 1999
    max_texts: _AtLeastOne | None = 1_000_000
    batch_size: _AtLeastOne = 32
    prompt: Annotated[PromptMode | None, BeforeValidator(_prompt)] = None
    lm_head: Annotated[StrictStr | None, BeforeValidator(_path_text)] = None
    text_column: StrictStr | None = None
    plots: bool = True
    progress: bool = True

    @model_validator(mode="after")
    def _follow_the_vocabulary(self) -> FitOptions:
        """The method's own options only, their values, SpecTemp's mode (default, ``robust`` alias) and ``dim``."""
        spec = self.spec
        for name, rule in OPTION_RULES.items():
            value = getattr(self, name)
            if value is None or value is False:
                continue
            if name not in spec.options:
                accepting = " / ".join(m.name for m in METHODS.values() if name in m.options)
                raise ValueError(f"{rule.label} applies to --method {accepting} only{rule.note}.")
        if spec.modes:
            if self.mode is not None and self.mode not in spec.mode_names:
                raise ValueError(f"mode must be one of {spec.mode_names}; got {self.mode!r}.")
            if self.robust and self.mode not in (None, "robust"):
                raise ValueError(f"robust (--robust) is the alias of mode 'robust'; it contradicts mode {self.mode!r}.")
            object.__setattr__(self, "mode", self.mode or ("robust" if self.robust else spec.default_mode))
            object.__setattr__(self, "robust", self.mode == "robust")
        if self.dim is None and spec.needs_dim:
            raise ValueError(f"--method {spec.name} needs --dim K (the output dimension).")
        return self

    @property
    def spec(self) -> MethodSpec:
        """The method's vocabulary entry."""
        return METHODS[self.method.value]

    @property
    def needs_corpus(self) -> bool:
        return self.spec.needs_corpus

    @property
    def is_auto(self) -> bool:
        """A mode that scores pseudo-queries from the corpus (SpecTemp's auto mode)."""
        mode = self.spec.mode(self.mode)
        return mode is not None and mode.pseudo_queries
