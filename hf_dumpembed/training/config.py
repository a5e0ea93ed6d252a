"""One YAML file fully determines a training run: model, data, hyperparameters, seed and output.

Every key is checked: unknown keys, wrong types and out-of-range values are errors that name the key, the
bad value and what is allowed. Relative paths are resolved against the current working directory; the resolved
config (every default filled in) is saved next to the checkpoints as is, and inside the trained model folder with
local paths written as relative paths or names (a published folder names no path of the author's machine).
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import BeforeValidator, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, TypeAdapter
from pydantic import ValidationError as _PydanticError

from .._utils.checked import complaint
from ..model.embeddings import DumpInit
from ..remote.configuration_dumpembed import POOLING_MODES

DATA_FORMATS = ("auto", "jsonl", "hf", "beir", "rlhn", "mldr")
LOSSES = ("cached_mnrl", "mnrl")
TRAINING_PRECISIONS = ("auto", "bf16", "fp32")  # training.precision (quantization.PRECISIONS are output precisions)
# pydantic checks each YAML section against these dataclasses: unknown keys are refused, scalars are not coerced
# (an integer is accepted where a number is expected), strings are non-empty, ranges are the fields' own, and an
# empty section means defaults. Its first complaint becomes one sentence (`hf_dumpembed._utils.checked.complaint`).
_SCHEMA: ConfigDict = ConfigDict(extra="forbid", str_min_length=1)
_EMPTY_IS_DEFAULT = BeforeValidator(lambda value: {} if value is None else value)
_Positive = Annotated[StrictInt, Field(gt=0)]
_Count = Annotated[StrictInt, Field(ge=0)]
_PositiveNumber = Annotated[StrictFloat, Field(gt=0)]
_NonNegativeNumber = Annotated[StrictFloat, Field(ge=0)]

# build --pooling, with "auto" (the source's own); the modes are defined once, in the remote config.
PoolingChoice = Literal[("auto", *POOLING_MODES)]  # type: ignore[valid-type]
# build --init: the [DUMP] init modes, defined once as `DumpInit` (plain strings here, as the YAML holds them).
InitChoice = Literal[tuple(mode.value for mode in DumpInit)]  # type: ignore[valid-type]


@dataclass(frozen=True)
class MiningConfig:
    """Hard negatives for BEIR folders, mined with sentence-transformers' ``mine_hard_negatives``.

    ``model`` is the embedding model used to rank candidates (None = the run's backbone, or the ``init_from``
    folder); the other fields are passed to ``mine_hard_negatives`` unchanged.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _SCHEMA

    model: StrictStr | None = None
    range_min: StrictInt = 0
    range_max: StrictInt | None = 50
    relative_margin: StrictFloat | None = 0.05
    sampling_strategy: Literal["top", "random"] = "top"
    batch_size: _Positive = 32
    cache_dir: StrictStr | None = None  # None = <checkpoint_dir>/mined


@dataclass(frozen=True)
class DataConfig:
    """One training data source.

    Args:
        path: a ``.jsonl`` file, a folder saved with ``datasets.save_to_disk``, or a BEIR folder.
        format: ``auto`` (by what the path is), ``jsonl``, ``hf``, ``beir``, or the paper's data layouts
            ``rlhn`` / ``mldr`` (Tevatron rows: query, positive_passages, negative_passages) in jsonl or HF form.
        name: the dataset's name in the model's metadata (default: the path's last component).
        split: the HF dataset split, or the BEIR qrels split (``qrels/<split>.tsv``).
        columns: for ``jsonl``/``hf``: which columns hold ``anchor``, ``positive`` and ``negatives`` (a string or
            a list of strings per row). Defaults: anchor|query, positive|pos, negatives|negative|neg.
        num_negatives: hard negatives per row (the paper uses 1); rows with fewer are malformed.
        max_rows: keep a seeded random subset of this many rows (all rows when None).
        sample_seed: seed of that subset (fixed, so that runs with different training seeds see the same rows).
        lenient: count and report malformed rows instead of stopping at the first one.
        mining: how BEIR folders get their hard negatives.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _SCHEMA

    path: StrictStr
    format: Literal[DATA_FORMATS] = "auto"  # type: ignore[valid-type]
    name: StrictStr | None = None
    split: StrictStr = "train"
    columns: dict[StrictStr, StrictStr] | None = None
    num_negatives: _Count = 1
    max_rows: _Positive | None = None
    sample_seed: StrictInt = 0
    lenient: StrictBool = False
    mining: Annotated[MiningConfig, _EMPTY_IS_DEFAULT] = field(default_factory=MiningConfig)


@dataclass(frozen=True)
class ModelConfig:
    """The model to train: a plain backbone built with K [DUMP] tokens, or an existing DumpEmbed folder.

    Exactly one of ``backbone`` (local folder, Hub id, or ``embedded:encoder`` / ``embedded:decoder`` for the
    embedded all-MiniLM-L6-v2 / SmolLM2-135M-Instruct) and ``init_from`` (a DumpEmbed model folder) is set.
    ``num_dump_tokens``, ``pooling``, ``init``, ``init_seed`` and ``match_steps`` (`build --match-steps`: fit the
    [DUMP] rows to reproduce K = 0 before training; 0 = off; None = the builder's default, 60 for encoders with
    K > 0) apply to ``backbone`` only.
    """

    __pydantic_config__: ClassVar[ConfigDict] = _SCHEMA

    backbone: StrictStr | None = None
    init_from: StrictStr | None = None
    num_dump_tokens: _Count = 4
    pooling: PoolingChoice | None = "auto"
    init: InitChoice = DumpInit.AUTO.value
    init_token: StrictStr | None = None
    init_seed: StrictInt = 0
    match_steps: StrictInt | None = None
    max_seq_length: StrictInt | None = None


@dataclass(frozen=True)
class HyperParameters:
    """The recipe (defaults = the [DUMP] paper's: InfoNCE scale 20, lr 1e-4, 1 epoch, GradCache, bf16)."""

    __pydantic_config__: ClassVar[ConfigDict] = _SCHEMA

    loss: Literal[LOSSES] = "cached_mnrl"  # type: ignore[valid-type]
    scale: _PositiveNumber = 20.0
    batch_size: _Positive = 256  # per device; the global batch is batch_size x world size
    mini_batch_size: _Positive | None = None  # GradCache chunk; None = min(32, batch_size)
    learning_rate: _PositiveNumber = 1e-4
    dump_learning_rate: _NonNegativeNumber | None = None  # the [DUMP] rows' own learning rate (None = learning_rate)
    warmup_ratio: Annotated[StrictFloat, Field(ge=0, lt=1)] = 0.05
    weight_decay: _NonNegativeNumber = 0.0
    lr_scheduler: StrictStr = "linear"
    epochs: _PositiveNumber = 1.0
    max_steps: _Positive | None = None
    precision: Literal[TRAINING_PRECISIONS] = "auto"  # type: ignore[valid-type]
    gradient_checkpointing: StrictBool = False
    gather_across_devices: StrictBool = True
    no_duplicates: StrictBool = True
    save_steps: _Positive = 100
    save_total_limit: _Positive | None = 2
    logging_steps: _Positive = 10


@dataclass(frozen=True)
class TrainConfig:
    """A whole run. ``checkpoint_dir`` defaults to ``<output>.checkpoints`` (outside the model folder)."""

    model: ModelConfig
    data: tuple[DataConfig, ...]
    output: StrictStr
    training: Annotated[HyperParameters, _EMPTY_IS_DEFAULT] = field(default_factory=HyperParameters)
    seed: StrictInt = 42
    checkpoint_dir: StrictStr | None = None
    overwrite: StrictBool = False

    @property
    def checkpoint_path(self) -> Path:
        return Path(self.checkpoint_dir) if self.checkpoint_dir else Path(f"{self.output}.checkpoints")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (YAML-ready) of the resolved config."""
        return {**dataclasses.asdict(self), "data": [dataclasses.asdict(d) for d in self.data]}


class ConfigError(ValueError):
    """A config file that cannot define a run; the message names the key, the value and the fix."""


def _build(cls: type, raw: Any, where: str) -> Any:
    """Instantiate dataclass ``cls`` from a YAML mapping with pydantic, refusing unknown keys and missing ones."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping of keys to values; got {raw!r}.")
    try:
        return TypeAdapter(cls).validate_python(raw)
    except _PydanticError as error:
        raise ConfigError(complaint(error, cls, where=where)) from None


def _resolve(path: str | None) -> str | None:
    """Absolute path for local paths; ``embedded:*`` names and Hub ids (``org/name``, not on disk) stay as written."""
    if path is None or path.startswith("embedded:"):
        return path
    local = Path(path).expanduser()
    if not local.exists() and re.fullmatch(r"[\w.-]+/[\w.-]+", path):
        return path
    return str(local.resolve())


def _local(path: str) -> str:
    return str(Path(path).expanduser().resolve())


def validate(config: TrainConfig) -> TrainConfig:
    """Cross-field checks (each field's type and range are pydantic's); returns the config with paths resolved."""
    model, hp = config.model, config.training
    if (model.backbone is None) == (model.init_from is None):
        raise ConfigError("model: set exactly one of model.backbone (a plain backbone to build) and model.init_from "
                          "(an existing DumpEmbed folder).")
    if model.max_seq_length is not None and model.max_seq_length <= model.num_dump_tokens + 2:
        raise ConfigError(f"model.max_seq_length={model.max_seq_length} leaves no room for text after "
                          f"{model.num_dump_tokens} [DUMP] tokens and the special tokens.")
    if not config.data:
        raise ConfigError("data: list at least one training data source.")
    for i, data in enumerate(config.data):
        extra = sorted(set(data.columns or ()) - {"anchor", "positive", "negatives"})
        if extra:
            raise ConfigError(f"data[{i}].columns: unknown role(s) {extra}; roles are anchor, positive, negatives.")
    if hp.mini_batch_size is None:
        hp = dataclasses.replace(hp, mini_batch_size=min(32, hp.batch_size))
    if hp.mini_batch_size > hp.batch_size:
        raise ConfigError(f"training.mini_batch_size={hp.mini_batch_size} is larger than training.batch_size="
                          f"{hp.batch_size}; it only bounds memory, so use at most the batch size.")
    data = tuple(
        dataclasses.replace(
            d,
            path=_local(d.path),
            mining=dataclasses.replace(d.mining, model=_resolve(d.mining.model),
                                       cache_dir=_local(d.mining.cache_dir) if d.mining.cache_dir else None),
        )
        for d in config.data
    )
    return dataclasses.replace(
        config,
        training=hp,
        model=dataclasses.replace(model, backbone=_resolve(model.backbone), init_from=_resolve(model.init_from)),
        data=data,
        output=_local(config.output),
        checkpoint_dir=_local(config.checkpoint_dir or f"{config.output}.checkpoints"),
    )


def _plain_paths(value: Any) -> Any:
    """``value`` with every `os.PathLike` (e.g. the `Path` that `build` returns) written as its string."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        return {key: _plain_paths(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_paths(item) for item in value]
    return value


def config_from_dict(raw: Any, source: str = "config") -> TrainConfig:
    """Build and validate a `TrainConfig` from a mapping with the YAML file's keys (``data`` may be one mapping or
    a list; paths may be strings or `Path` objects), e.g. ``{"model": {"init_from": folder}, "data": {"path": ...},
    "output": ...}``; every key left out takes its default."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the top level must be a mapping (model:, data:, training:, output:, ...).")
    raw = _plain_paths(raw)
    data = raw.pop("data", None)
    if isinstance(data, dict):
        data = [data]
    elif data is not None and not isinstance(data, list):
        raise ConfigError(f"{source}: data must be a mapping or a list of mappings; got {data!r}.")
    try:
        top = _build(_TopLevel, raw, "")
        parsed = tuple(_build(DataConfig, d, f"data[{i}]") for i, d in enumerate(data or []))
        return validate(TrainConfig(data=parsed, **vars(top)))
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from None


@dataclass(frozen=True)
class _TopLevel:
    __pydantic_config__: ClassVar[ConfigDict] = _SCHEMA

    model: Annotated[ModelConfig, _EMPTY_IS_DEFAULT]
    output: StrictStr
    training: Annotated[HyperParameters, _EMPTY_IS_DEFAULT] = field(default_factory=HyperParameters)
    seed: StrictInt = 42
    checkpoint_dir: StrictStr | None = None
    overwrite: StrictBool = False


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """Read a YAML run config; ``overrides`` (dotted keys, e.g. ``{"seed": 1, "training.batch_size": 8}``) win."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Config file {path} does not exist.")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    for dotted, value in (overrides or {}).items():
        node = raw
        *parents, last = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return config_from_dict(raw, source=str(path))


def save_config(config: TrainConfig, path: str | Path) -> None:
    """Write the resolved config as YAML (loads back to an equal config)."""
    Path(path).write_text(yaml.safe_dump(config.to_dict(), sort_keys=False), encoding="utf-8")
