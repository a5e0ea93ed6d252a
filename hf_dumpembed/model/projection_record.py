"""The projection methods' vocabulary and the typed record of a fit (config.json's ``projection_info``).

The vocabulary is descriptive: each method's name, card and CLI texts, whether it is fitted on a corpus, whether
the folder it writes serves any output dimension at load time, and which method-specific options it takes. The
projections layer binds each name to its fitter (`hf_dumpembed.projections.registry`); the CLI's choices and help,
`FitOptions`' rules and the card's texts are derived from it.

`ProjectionInfo` serialises to exactly the dict the fit writes: the same keys in the same order, the keys every
fit records written even when None, the method-specific ones only when set; keys it does not know are kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar


@dataclass(frozen=True)
class ModeSpec:
    """One of a method's modes (SpecTemp's γ(k) rules)."""

    name: str
    card_text: str
    help: str
    pseudo_queries: bool = False  # needs pseudo-queries from the corpus (auto mode)


@dataclass(frozen=True)
class MethodSpec:
    """One projection method, as the CLI, `FitOptions` and the card describe it."""

    name: str
    card_text: str
    help: str
    needs_corpus: bool = False  # fitted on corpus embeddings (``--corpus`` required)
    any_k: bool = False  # the folder stores what recomposes the map for any k at load time
    options: frozenset[str] = frozenset()  # method-specific options it accepts (keys of OPTION_RULES)
    needs_dim: bool = True  # ``--dim K`` is required
    modes: tuple[ModeSpec, ...] = ()
    default_mode: str | None = None
    paper: str | None = None  # key of `hf_dumpembed.model.papers.PAPERS` to cite

    @property
    def mode_names(self) -> tuple[str, ...]:
        return tuple(mode.name for mode in self.modes)

    def mode(self, name: str | None) -> ModeSpec | None:
        return next((mode for mode in self.modes if mode.name == name), None)


@dataclass(frozen=True)
class OptionRule:
    """A method-specific option: its name in errors and what the error adds."""

    label: str
    note: str = ""


# Checked in this order; an option given to a method that does not accept it is refused.
OPTION_RULES = {
    "ratio": OptionRule("ratio (τ)"),
    "gamma": OptionRule("gamma", " (whiten is γ=1, pca γ=0, spectemp picks γ(k))"),
    "robust": OptionRule("robust"),
    "mode": OptionRule("mode (--mode)"),
}

# SpecTemp's γ(k) rules: the one definition of its modes (`FitOptions`' names, `fit --mode`, the card's texts).
SPECTEMP_MODE_SPECS = (
    ModeSpec("reference", "SpecTemp, reference mode (the paper's rule): PCA with spectral tempering, eigenvalue "
             "exponent γ(k) set from the SNR knee of the spectrum", "the paper's rule"),
    ModeSpec("robust", "SpecTemp, robust mode (ours): PCA with spectral tempering, eigenvalue exponent γ(k) set from "
             "the SNR knee of the spectrum, the knee taken as the argmax of Kneedle's difference curve",
             "knee = argmax of Kneedle's difference curve, zero eigenvalues dropped before the noise floor"),
    ModeSpec("auto", "SpecTemp, auto mode (ours, `hf-dumpembed fit`'s default): PCA with spectral tempering, the "
             "eigenvalue exponent γ(k), centring or prefix truncation chosen for every k by a label-free pseudo-query "
             "score on the fit corpus, starting from the paper's SNR-knee rule",
             "γ(k) or prefix truncation chosen per k by pseudo-query nDCG@10 on the corpus; needs texts with a first "
             "line or sentence to split off", pseudo_queries=True),
)

_SPECTRAL = {"needs_corpus": True, "any_k": True}
# Auto mode was ahead of the paper's rule, PCA and truncation at every k measured on held-out text (BENCHMARKS.md,
# "SpecTemp auto mode"); ``mode="reference"`` keeps the paper's rule.
_METHODS = (
    MethodSpec("spectemp", "SpecTemp: PCA with spectral tempering, eigenvalue exponent γ(k) set from the SNR knee of "
               "the spectrum",
               "PCA with spectral tempering. --mode auto (ours, the default) chooses γ(k), or prefix truncation, for "
               "every k with pseudo-queries from the corpus itself (a text's first line or sentence against the whole "
               "text; no labels; --pseudo-queries N of them); --mode reference: the paper's rule, γ(k) from the SNR "
               "knee of the spectrum; --mode robust (ours): the same rule with a steadier knee. OUT's "
               'config.projection_info["mode"] and its card name the mode',
               options=frozenset({"mode", "robust"}), modes=SPECTEMP_MODE_SPECS, default_mode="auto",
               paper="spectemp_2026", **_SPECTRAL),
    MethodSpec("embedfilter", "EmbedFilter: the middle band of the unembedding matrix's spectrum (edge directions "
               "removed)", "middle band of the causal LM's unembedding spectrum: m = d // --ratio (default 2) or --dim",
               any_k=True, options=frozenset({"ratio"}), needs_dim=False, paper="embedfilter_2026"),
    MethodSpec("pca", "PCA (centred, γ = 0)", "centred top-k eigenvectors, γ = 0", **_SPECTRAL),
    MethodSpec("whiten", "PCA whitening (γ = 1)", "centred top-k eigenvectors, γ = 1", **_SPECTRAL),
    MethodSpec("gamma", "γ-whitening (eigenvalue exponent γ)", "γ-whitening with --gamma G (default 0.5)",
               options=frozenset({"gamma"}), **_SPECTRAL),
    MethodSpec("truncate", "prefix truncation (first k dimensions)", "first k coordinates", any_k=True),
    MethodSpec("random-truncate", "random truncation (a seeded choice of k dimensions)",
               "seeded random coordinates (--seed)"),
    MethodSpec("random-project", "random Gaussian projection (seeded)", "seeded Gaussian projection (--seed)"),
)
METHODS: dict[str, MethodSpec] = {method.name: method for method in _METHODS}
METHOD_NAMES = tuple(METHODS)


def method_spec(name: str) -> MethodSpec:
    """The vocabulary entry of ``name``; ValueError naming the methods when there is none."""
    if not isinstance(name, str) or name not in METHODS:
        raise ValueError(f"method must be one of {METHOD_NAMES}; got {name!r}.")
    return METHODS[name]


def mode_names() -> tuple[str, ...]:
    """Every method's mode names (``--mode`` choices), in vocabulary order."""
    return tuple(dict.fromkeys(name for method in _METHODS for name in method.mode_names))


def method_text(info: ProjectionInfo) -> str:
    """The card's words for the fitted method, naming its mode (SpecTemp's) when it records one."""
    method = METHODS.get(str(info.method or ""))
    if method is None:
        return str(info.method or "")
    mode = method.mode(info.mode)
    return mode.card_text if mode is not None else method.card_text


class _Record:
    """(De)serialisation shared by the records: fields in declaration order, ``_ALWAYS`` fields written even when
    None, the others only when set, then the keys this version does not know (``extra``) as they were."""

    _ALWAYS: ClassVar[frozenset[str]] = frozenset()
    _NESTED: ClassVar[dict[str, type[_Record]]] = {}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for item in fields(self):  # type: ignore[arg-type]
            value = getattr(self, item.name)
            if item.name == "extra" or (value is None and item.name not in self._ALWAYS):
                continue
            out[item.name] = value.to_dict() if isinstance(value, _Record) else value
        out.update(self.extra)  # type: ignore[attr-defined]
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]):
        """The record of a stored dict; missing keys read as None (folders written by older versions)."""
        names = {item.name for item in fields(cls)} - {"extra"}  # type: ignore[arg-type]
        known = {key: value for key, value in data.items() if key in names}
        for key, kind in cls._NESTED.items():
            if isinstance(known.get(key), Mapping):
                known[key] = kind.from_dict(known[key])
        return cls(**known, extra={key: value for key, value in data.items() if key not in names})


@dataclass(frozen=True)
class CorpusRecord(_Record):
    """``projection_info["corpus"]``: the fit corpus's public path, file name, sha256 and texts fitted on."""

    path: str | None = None
    name: str | None = None
    sha256: str | None = None
    num_texts: int | None = None
    sampled_from: int | None = None  # the source's text count when a seeded sample was fitted on
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AutoRecord(_Record):
    """``projection_info["auto"]``: what SpecTemp's auto mode chose at each scored k, and what it cost."""

    pseudo_queries: int | None = None
    ks: list[int] | None = None
    chosen: list[str] | None = None
    route: list[str] | None = None
    gamma: list[float] | None = None
    reference_gamma: list[float] | None = None
    score_chosen: list[float] | None = None
    score_reference: list[float] | None = None
    cloze_chosen: list[float] | None = None
    fidelity_chosen: list[float] | None = None
    tolerance: float | None = None
    rule_weight: float | None = None
    base_mode: str | None = None
    pseudo_query_candidates: int | None = None
    pseudo_query_rule: str | None = None
    score: str | None = None
    pseudo_query_encode_seconds: float | None = None
    selection_seconds: float | None = None
    corpus_encode_seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ProjectionInfo(_Record):
    """``config.projection_info``: what was fitted, on what, and what the folder serves."""

    _ALWAYS: ClassVar[frozenset[str]] = frozenset({
        "method", "mode", "dim", "gamma", "knee", "ratio", "seed", "corpus", "fitted_at", "plots", "selection",
        "source_model", "input", "prompt", "max_dim", "selectable_dims"})
    _NESTED: ClassVar[dict[str, type[_Record]]] = {"corpus": CorpusRecord, "auto": AutoRecord}

    method: str | None = None
    mode: str | None = None
    dim: int | None = None
    gamma: float | None = None  # γ at k (None: no tempering, or auto's prefix route)
    knee: int | None = None
    ratio: int | None = None
    seed: int | None = None  # of the random map, or of the corpus sample
    corpus: CorpusRecord | None = None
    fitted_at: str | None = None
    plots: list[str] = field(default_factory=list)
    knee_fallback: bool | None = None  # SpecTemp's SNR-knee rule (reference / robust / auto's base)
    noise_floor: float | None = None
    t0: int | None = None
    used_rank: int | None = None
    route: str | None = None  # auto mode at k: centred, uncentred or prefix
    reference_gamma: float | None = None
    selection: str | None = None  # how the map is recomposed for another k (None: fixed dimension)
    eps: float | None = None
    spectrum_rank: int | None = None
    band_start: int | None = None  # EmbedFilter's band
    unembedding: str | None = None
    excluded_rows: int | None = None
    auto: AutoRecord | None = None
    source_model: str | None = None
    input: str | None = None
    prompt: str | None = None
    max_dim: int | None = None
    selectable_dims: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | Any) -> ProjectionInfo | None:
        """The record of a config (its dict or a `DumpEmbedConfig`); None when it holds no fitted projection."""
        info = config.get("projection_info") if isinstance(config, Mapping) else getattr(config, "projection_info",
                                                                                           None)
        return cls.from_dict(info) if info else None

    @property
    def spec(self) -> MethodSpec | None:
        """The method's vocabulary entry (None for a method this version does not know)."""
        return METHODS.get(str(self.method or ""))
