"""`FitOptions`: what a fit fits, checked against the method vocabulary (`hf_dumpembed.model.projection_record`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ..model.projection_record import METHOD_NAMES, METHODS, OPTION_RULES, MethodSpec, method_spec
from ..model.prompting import PromptMode, prompt_mode
from .pseudo import DEFAULT_MAX_PAIRS

# The methods as an enum (``FitOptions.method``), generated from the vocabulary.
Method = Enum("Method", {name.upper().replace("-", "_"): name for name in METHOD_NAMES}, type=str)  # type: ignore[misc]
SPECTEMP_MODES = METHODS["spectemp"].mode_names
DEFAULT_SPECTEMP_MODE = METHODS["spectemp"].default_mode
_INTEGERS = ("dim", "ratio", "seed", "max_texts", "batch_size")


@dataclass(frozen=True)
class FitOptions:
    """What `fit_projection` fits.

    Args:
        method: one of `Method` (the names of `hf_dumpembed.model.projection_record.METHODS`).
        dim: output dimension k (EmbedFilter: the band width m). Required except for EmbedFilter.
        ratio: EmbedFilter's filter ratio τ (m = d // τ); default 2 when neither dim nor ratio is given.
        gamma: exponent of the ``gamma`` method (default 0.5, the paper's γ-whitening baseline).
        mode: SpecTemp's γ(k): ``auto`` (ours, the default: γ(k), or prefix truncation, chosen per k with
            pseudo-queries from the corpus; see `auto.py`), ``reference`` (the authors' rule, the paper's) or
            ``robust`` (ours: knee = difference-curve argmax). The folder's ``projection_info["mode"]`` and its card
            name the mode that ran.
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

    method: Method | str
    dim: int | None = None
    ratio: int | None = None
    gamma: float | None = None
    mode: str | None = None
    robust: bool = False
    pseudo_queries: int = DEFAULT_MAX_PAIRS
    seed: int = 1999
    max_texts: int | None = 1_000_000
    batch_size: int = 32
    prompt: PromptMode | str | None = None
    lm_head: str | None = None
    text_column: str | None = None
    plots: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "method", Method(method_spec(self.method).name))  # ValueError naming the methods
        self._check_types()
        if self.prompt is not None:
            object.__setattr__(self, "prompt", prompt_mode(self.prompt))
        spec = self.spec
        for name, rule in OPTION_RULES.items():
            value = getattr(self, name)
            if value is None or value is False:
                continue
            if name not in spec.options:
                accepting = " / ".join(m.name for m in METHODS.values() if name in m.options)
                raise ValueError(f"{rule.label} applies to --method {accepting} only{rule.note}.")
            self._check_value(name, spec)
        if spec.modes:
            object.__setattr__(self, "mode", self.mode or ("robust" if self.robust else spec.default_mode))
            object.__setattr__(self, "robust", self.mode == "robust")
        if self.pseudo_queries < 1:
            raise ValueError(f"pseudo_queries must be >= 1; got {self.pseudo_queries}.")
        if self.dim is None and spec.needs_dim:
            raise ValueError(f"--method {spec.name} needs --dim K (the output dimension).")
        if self.dim is not None and self.dim < 1:
            raise ValueError(f"dim must be a positive integer; got {self.dim!r}.")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1; got {self.batch_size}.")

    def _check_types(self) -> None:
        for name in _INTEGERS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(f"{name} must be an integer; got {value!r} ({type(value).__name__}).")
        if self.gamma is not None and (isinstance(self.gamma, bool) or not isinstance(self.gamma, (int, float))):
            raise ValueError(f"gamma must be a number; got {self.gamma!r}.")
        if self.ratio is not None and self.ratio < 1:
            raise ValueError(f"ratio must be >= 1; got {self.ratio}.")
        if self.max_texts is not None and self.max_texts < 1:
            raise ValueError(f"max_texts must be >= 1; got {self.max_texts}.")

    def _check_value(self, name: str, spec: MethodSpec) -> None:
        """The value of an option the method accepts."""
        if name == "gamma" and not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1]; got {self.gamma}.")
        if name == "mode":
            if self.mode not in spec.mode_names:
                raise ValueError(f"mode must be one of {spec.mode_names}; got {self.mode!r}.")
            if self.robust and self.mode != "robust":
                raise ValueError(f"robust (--robust) is the alias of mode 'robust'; it contradicts mode {self.mode!r}.")

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
