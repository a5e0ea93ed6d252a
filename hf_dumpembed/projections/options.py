"""`FitOptions`: what a fit fits. The settings every method shares are checked by pydantic
(`hf_dumpembed._utils.checked`); the method's own options by its class's `Options`, refusing an option another
method takes."""

from __future__ import annotations

import os
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StrictInt, StrictStr

from .._utils.checked import OptionError, checked_options
from ..model.prompting import PromptMode, prompt_mode
from .methods.base import ProjectionMethod
from .registry import option_owners, projection_method

_AtLeastOne = Annotated[StrictInt, Field(ge=1)]


def _method(value: object) -> str:
    """A method name, with projection_method's error listing the methods."""
    return projection_method(value).name


def _prompt(value: object) -> PromptMode | None:
    """A prompt name (or `PromptMode`) as its `PromptMode`, with prompt_mode's error listing the choices."""
    return None if value is None else prompt_mode(value)


def _path_text(value: object) -> object:
    """A path given as an `os.PathLike` (e.g. a `Path`), as its string."""
    return os.fspath(value) if isinstance(value, os.PathLike) else value


@checked_options({"dim": "dim must be a positive integer; got {value!r}."})
class FitSettings:
    """The settings of a fit that every method shares.

    Args:
        method: a method name (`hf_dumpembed.projections.registry.METHODS`).
        dim: output dimension k (EmbedFilter: the band width m). Required by the methods whose ``needs_dim`` is set.
        seed: seed of the random baselines and of the corpus sample (paper seeds 1999, 5, 2026).
        max_texts: fit on a seeded sample of at most this many texts (the authors' code: 1M).
        batch_size: encoding batch size.
        prompt: compose a zero-shot prompt inside the model (``prompteol`` or ``echo``; causal LMs).
        lm_head: the original causal-LM folder, for EmbedFilter on a backbone with an untied lm_head.
        text_column: text column of a saved HF dataset corpus.
        plots: write PNG plots under ``plots/`` (needs matplotlib: checked before anything is encoded).
        progress: show progress bars.
    """

    method: Annotated[str, BeforeValidator(_method)]
    dim: _AtLeastOne | None = None
    seed: StrictInt = 1999
    max_texts: _AtLeastOne | None = 1_000_000
    batch_size: _AtLeastOne = 32
    prompt: Annotated[PromptMode | None, BeforeValidator(_prompt)] = None
    lm_head: Annotated[StrictStr | None, BeforeValidator(_path_text)] = None
    text_column: StrictStr | None = None
    plots: bool = True
    progress: bool = True


SETTING_NAMES = tuple(FitSettings.__dataclass_fields__)


class FitOptions:
    """What `fit_projection` fits, from one keyword constructor: the shared settings (`FitSettings`, read as
    attributes: ``options.dim``) and the method's own options (``options.params``, an instance of its class's
    ``Options``), e.g. ``FitOptions(method="spectemp", dim=128, mode="reference")``."""

    __slots__ = ("settings", "params")

    def __init__(self, method: object, **given: Any) -> None:
        own = {name: value for name, value in given.items() if name not in SETTING_NAMES}
        settings = FitSettings(method=method, **{name: given[name] for name in given if name in SETTING_NAMES})
        method_class = projection_method(settings.method)
        owners = option_owners()
        for name, value in own.items():
            if name not in owners:
                raise OptionError(f"unknown option(s) [{name!r}]; allowed options: "
                                 f"{sorted([*SETTING_NAMES, *method_class.option_names()])}.")
            if name not in method_class.option_names() and value is not None and value is not False:
                raise OptionError(f"{name} (--{name.replace('_', '-')}) applies to --method "
                                 f"{' / '.join(owners[name])} only.")
        params = method_class.Options(**{k: v for k, v in own.items() if k in method_class.option_names()})
        if settings.dim is None and method_class.needs_dim:
            raise OptionError(f"--method {settings.method} needs --dim K (the output dimension).")
        object.__setattr__(self, "settings", settings)
        object.__setattr__(self, "params", params)

    def __getattr__(self, name: str) -> Any:
        if name in SETTING_NAMES:
            return getattr(object.__getattribute__(self, "settings"), name)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("FitOptions is read-only; build a new one.")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FitOptions) and (self.settings, self.params) == (other.settings, other.params)

    def __hash__(self) -> int:
        return hash((self.settings, self.params))

    def __reduce__(self) -> tuple:
        """Pickled as its two parts (torch.multiprocessing hands options to each rank)."""
        return _restored, (self.settings, self.params)

    def __repr__(self) -> str:
        return f"FitOptions({self.settings!r}, params={self.params!r})"

    @property
    def method_class(self) -> type[ProjectionMethod]:
        return projection_method(self.settings.method)

    @property
    def needs_corpus(self) -> bool:
        return self.method_class.needs_corpus

    @property
    def uses_pseudo_queries(self) -> bool:
        """A fit that scores pseudo-queries from the corpus (SpecTemp's auto mode)."""
        return self.method_class.uses_pseudo_queries(self.params)


def _restored(settings: FitSettings, params: Any) -> FitOptions:
    """A `FitOptions` from its parts, already checked (unpickling)."""
    options = object.__new__(FitOptions)
    object.__setattr__(options, "settings", settings)
    object.__setattr__(options, "params", params)
    return options
