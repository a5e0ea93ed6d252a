"""The typed record of a fit: config.json's ``projection_info`` (what was fitted, on what, what the folder serves).

``projection_info`` is ``{"method", "description", ..., "params": {...}}``: the fields every fit records (the
method's name, k, the corpus, what the folder serves), written even when None, and under ``params`` what the method
itself records (SpecTemp's γ and knee, EmbedFilter's band, ...), written by the method and read by name
(``info.gamma`` reads ``params["gamma"]``). Keys this version does not know are kept as they were. Folders written
before ``params`` existed (one flat dict) read the same. The methods are classes of
`hf_dumpembed.projections.methods`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar


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
    identity_cloze: float | None = None  # the unprojected model's inverse cloze on the pseudo-queries
    saturation: float | None = None  # identity_cloze at or above which the reference rule was kept at every k
    base_mode: str | None = None
    pseudo_query_candidates: int | None = None
    pseudo_query_rule: str | None = None
    score: str | None = None
    pseudo_query_encode_seconds: float | None = None
    selection_seconds: float | None = None
    corpus_encode_seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def saturated(self) -> bool | None:
        """Whether auto kept the reference rule at every k because its pseudo-queries were saturated (None: folders
        fitted before the check)."""
        if self.identity_cloze is None or self.saturation is None:
            return None
        return self.identity_cloze >= self.saturation


# What a method records under ``params`` in this package's methods, read as None where a fit did not set them.
METHOD_PARAM_NAMES = frozenset({
    "mode", "gamma", "knee", "ratio", "knee_fallback", "noise_floor", "t0", "used_rank", "route", "reference_gamma",
    "eps", "spectrum_rank", "band_start", "unembedding", "excluded_rows", "auto"})


@dataclass(frozen=True)
class ProjectionInfo(_Record):
    """``config.projection_info``: what was fitted, on what, what the folder serves, and the method's ``params``."""

    _ALWAYS: ClassVar[frozenset[str]] = frozenset({
        "method", "params", "dim", "seed", "corpus", "fitted_at", "plots", "selection", "source_model", "input",
        "prompt", "max_dim", "selectable_dims"})
    _NESTED: ClassVar[dict[str, type[_Record]]] = {"corpus": CorpusRecord}

    method: str | None = None
    description: str | None = None  # the method's words for the fitted map (the card's)
    params: dict[str, Any] = field(default_factory=dict)  # the method's own record (γ, knee, band, auto's choice, ...)
    dim: int | None = None
    seed: int | None = None  # of the random map, or of the corpus sample
    corpus: CorpusRecord | None = None
    fitted_at: str | None = None
    plots: list[str] = field(default_factory=list)
    selection: str | None = None  # how the map is recomposed for another k (None: fixed dimension)
    source_model: str | None = None
    input: str | None = None
    prompt: str | None = None
    max_dim: int | None = None
    selectable_dims: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        """A method's recorded value by name (``info.gamma``); None for this package's names the fit did not set."""
        params = self.__dict__.get("params", {})
        if name in params:
            return params[name]
        if name in METHOD_PARAM_NAMES:
            return None
        raise AttributeError(f"{type(self).__name__} has no field or recorded parameter {name!r}")

    @property
    def auto(self) -> AutoRecord | None:
        """SpecTemp auto mode's record (``params["auto"]``), None for other fits."""
        record = self.params.get("auto")
        return AutoRecord.from_dict(record) if isinstance(record, Mapping) else record

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProjectionInfo:
        """The record of a stored dict; a flat record (before ``params``) has its method's fields moved there."""
        if "params" not in data:
            shared = {item.name for item in fields(cls)}
            data = {**{key: value for key, value in data.items() if key in shared},
                    "params": {key: value for key, value in data.items() if key not in shared}}
        return super().from_dict(data)

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | Any) -> ProjectionInfo | None:
        """The record of a config (its dict or a `DumpEmbedConfig`); None when it holds no fitted projection."""
        info = config.get("projection_info") if isinstance(config, Mapping) else getattr(config, "projection_info",
                                                                                           None)
        return cls.from_dict(info) if info else None
