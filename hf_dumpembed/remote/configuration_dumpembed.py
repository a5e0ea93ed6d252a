"""Configuration of a DumpEmbed text-embedding model (remote code: torch + transformers only)."""

from __future__ import annotations

from typing import Any

import transformers

# Oldest transformers this code runs on: SubConfigSpec (the backbone sub-config) appeared in 5.20.
MIN_TRANSFORMERS = (5, 20)


def check_transformers_version(version: str = transformers.__version__) -> None:
    """Raise ImportError naming the needed version when ``version`` is older than ``MIN_TRANSFORMERS``."""
    found = tuple(int("".join(c for c in part if c.isdigit()) or 0) for part in version.split(".")[:2])
    if found < MIN_TRANSFORMERS:
        need = ".".join(map(str, MIN_TRANSFORMERS))
        raise ImportError(
            f"This DumpEmbed model's code needs transformers >= {need}; transformers {version} is installed. "
            f"Upgrade with pip install -U 'transformers>={need}', or load the model's stock export (no remote "
            "code; made with `hf-dumpembed export-st`), which transformers 4.57+ and sentence-transformers 3.4+ read."
        )


check_transformers_version()

from transformers import AutoConfig, PreTrainedConfig  # noqa: E402
from transformers.configuration_utils import SubConfigSpec  # noqa: E402

POOLING_MODES = ("cls", "last", "mean", "mean_no_dump")
PROMPT_MODES = ("prompteol", "echo")


class DumpEmbedConfig(PreTrainedConfig):
    r"""Configuration of [`DumpEmbedModel`]: a backbone, K [DUMP] tokens, pooling and a linear projection.

    Args:
        text_config (`dict` or `PreTrainedConfig`):
            Configuration of the transformer backbone (any encoder or decoder that `AutoModel` builds).
        num_dump_tokens (`int`, defaults to 0):
            K, the number of [DUMP] tokens the tokenizer prepends. 0 builds the plain baseline.
        dump_token_ids (`list[int]`, defaults to `[]`):
            Vocabulary ids of `[DUMP1]..[DUMPK]`, in order; length must equal `num_dump_tokens`.
        dump_token_offset (`int`, defaults to 0):
            Position of `[DUMP1]` counted from the first non-padding token (1 after [CLS] or BOS, 0 otherwise).
        pooling (`str`, defaults to `"cls"`):
            One of `"cls"` (first non-padding token), `"last"` (last non-padding token), `"mean"` (mean over all
            non-padding tokens, the same as sentence-transformers' stock mean pooling) or `"mean_no_dump"` (the same
            mean with the K [DUMP] positions left out; [CLS]/[SEP] count as in the stock mean).
        projection_dim (`int`, *optional*):
            Output dimension of the stored projection; `None` keeps the backbone's hidden size.
        normalize (`bool`, defaults to `True`):
            L2-normalise the projected embedding.
        projection_info (`dict`, *optional*):
            Provenance of a fitted projection (method, k, corpus hash, ...); empty for the identity.
        max_position_embeddings (`int`, *optional*):
            Longest input the backbone accepts; copied from `text_config` when not given.
        base_model (`str`, *optional*):
            The backbone this model was built from (Hub id or local path), for model cards and MTEB metadata.
        dump_init (`str`, *optional*):
            How the [DUMP] embedding rows were initialised (`mean`, `cls`, `normal`, `sep` or `sink`).
        pooling_reason (`str`, *optional*):
            Why this pooling was chosen at build time (e.g. "the source's sentence-transformers Pooling: mean"),
            for the model card.
        training_info (`dict`, *optional*):
            What the model was fine-tuned on and how (datasets, hyperparameters, seed, steps); empty when the
            folder was only built, never trained. Read by the model card and the MTEB metadata.
        normalize_pooled (`bool`, defaults to `False`):
            L2-normalise the pooled vector before the projection. Fitted projections set it: they were fitted
            on the model's unit-length embeddings (SpecTemp's mean and covariance are those of unit vectors).
        prompt_mode (`str`, *optional*):
            Zero-shot prompt composed around the text inside the model (so every load path applies it):
            `"prompteol"` (template, last-token pooling) or `"echo"` (text twice, mean over the second copy).
        prompt_token_ids (`dict`, *optional*):
            Token ids of the prompt pieces: `prefix`, `middle` (ECHO only), `suffix`, and `num_trailing_special`
            (special tokens the tokenizer appends after the text, e.g. EOS).
    """

    model_type = "dumpembed"
    sub_configs_defaults = {"text_config": SubConfigSpec(config_class=AutoConfig, model_type="bert")}

    text_config: dict | PreTrainedConfig | None = None
    num_dump_tokens: int = 0
    dump_token_ids: list[int] | None = None
    dump_token_offset: int = 0
    pooling: str = "cls"
    projection_dim: int | None = None
    normalize: bool = True
    projection_info: dict[str, Any] | None = None
    max_position_embeddings: int | None = None
    base_model: str | None = None
    dump_init: str | None = None
    pooling_reason: str | None = None
    training_info: dict[str, Any] | None = None
    normalize_pooled: bool = False
    prompt_mode: str | None = None
    prompt_token_ids: dict[str, Any] | None = None

    def __post_init__(self, **kwargs: Any) -> None:
        super().__post_init__(**kwargs)
        if self.dump_token_ids is None:
            self.dump_token_ids = []
        self.dump_token_ids = [int(i) for i in self.dump_token_ids]
        if self.projection_info is None:
            self.projection_info = {}
        if self.training_info is None:
            self.training_info = {}
        if self.projection_dim is None:
            self.projection_dim = self.text_config.hidden_size
        self.validate()
        if self.max_position_embeddings is None:
            self.max_position_embeddings = getattr(self.text_config, "max_position_embeddings", None)

    def validate(self) -> None:
        """Check every field's type and range (also after from_pretrained kwargs have set fields)."""
        for name, kinds in _FIELD_TYPES.items():
            value = getattr(self, name)
            if value is None and name in _OPTIONAL:
                continue
            if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
                expected = " or ".join(k.__name__ for k in kinds) + (" or None" if name in _OPTIONAL else "")
                raise ValueError(f"{name} must be {expected}; got {value!r} ({type(value).__name__}).")
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in self.dump_token_ids):
            raise ValueError(f"dump_token_ids must be non-negative integers; got {self.dump_token_ids!r}.")
        if self.pooling not in POOLING_MODES:
            raise ValueError(f"pooling must be one of {POOLING_MODES}; got {self.pooling!r}.")
        if not isinstance(self.num_dump_tokens, int) or self.num_dump_tokens < 0:
            raise ValueError(f"num_dump_tokens must be an integer >= 0; got {self.num_dump_tokens!r}.")
        if len(self.dump_token_ids) != self.num_dump_tokens:
            raise ValueError(
                f"dump_token_ids must list exactly num_dump_tokens={self.num_dump_tokens} ids; "
                f"got {len(self.dump_token_ids)}: {self.dump_token_ids}."
            )
        if self.dump_token_offset < 0:
            raise ValueError(f"dump_token_offset must be >= 0; got {self.dump_token_offset}.")
        hidden_size = self.text_config.hidden_size
        if not 1 <= self.projection_dim <= hidden_size:
            raise ValueError(
                f"projection_dim must be between 1 and the backbone hidden size {hidden_size}; "
                f"got {self.projection_dim}."
            )
        if self.prompt_mode is not None:
            if self.prompt_mode not in PROMPT_MODES:
                raise ValueError(f"prompt_mode must be one of {PROMPT_MODES} or None; got {self.prompt_mode!r}.")
            if not self.prompt_token_ids:
                raise ValueError(f"prompt_mode={self.prompt_mode!r} needs prompt_token_ids (the prompt's pieces).")

    @property
    def hidden_size(self) -> int:
        """Hidden size of the backbone (the input dimension of the projection)."""
        return self.text_config.hidden_size


# Field -> allowed types (bool is only allowed where listed: True is not a count).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "num_dump_tokens": (int,), "dump_token_ids": (list,), "dump_token_offset": (int,), "pooling": (str,),
    "projection_dim": (int,), "normalize": (bool,), "projection_info": (dict,), "max_position_embeddings": (int,),
    "base_model": (str,), "dump_init": (str,), "training_info": (dict,), "normalize_pooled": (bool,),
    "prompt_mode": (str,), "prompt_token_ids": (dict,),
}
_OPTIONAL = {"max_position_embeddings", "base_model", "dump_init", "prompt_mode", "prompt_token_ids"}

__all__ = ["DumpEmbedConfig"]
