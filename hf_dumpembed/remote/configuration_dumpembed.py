"""Configuration of a DumpEmbed text-embedding model (remote code: torch + transformers only)."""

from __future__ import annotations

import re
from typing import Any

import transformers

# Oldest transformers this code runs on: SubConfigSpec (the backbone sub-config) appeared in 5.20.
MIN_TRANSFORMERS = (5, 20)
# The release segment of a PEP 440 version ("N!" epoch skipped): the numbers before any pre-, post-, dev- or local
# part. packaging is not imported: the remote code imports only torch and transformers.
_RELEASE = re.compile(r"\s*v?(?:\d+!)?(\d+(?:\.\d+)*)")


def release_numbers(version: str) -> tuple[int, ...]:
    """The release numbers of a version string: "5.2rc1" -> (5, 2), "5.20.0.dev0" -> (5, 20, 0), "4.57.1" ->
    (4, 57, 1); () when it does not start with one (older than every release)."""
    match = _RELEASE.match(version)
    return tuple(int(part) for part in match[1].split(".")) if match else ()


def check_transformers_version(version: str = transformers.__version__) -> None:
    """Raise ImportError naming the needed version when ``version`` is older than ``MIN_TRANSFORMERS``, compared
    by release numbers: 5.2rc1 is 5.2, older than 5.20; a pre-release of 5.20 itself (5.20.0rc1, 5.20.0.dev0)
    counts as 5.20, as it always has."""
    if release_numbers(version) < MIN_TRANSFORMERS:
        need = ".".join(map(str, MIN_TRANSFORMERS))
        raise ImportError(
            f"This DumpEmbed model's code needs transformers >= {need}; transformers {version} is installed. "
            f"Upgrade with pip install -U 'transformers>={need}', or load the model's stock export (no remote "
            "code; made with `hf-dumpembed export-st`), which transformers 4.57+ and sentence-transformers 3.4+ read."
        )


check_transformers_version()

from transformers import AutoConfig, PreTrainedConfig  # noqa: E402
from transformers.configuration_utils import SubConfigSpec  # noqa: E402

# The one definition of the pooling modes: DumpEmbed name -> sentence-transformers Pooling mode (None: no stock
# equivalent). The builder's enum, the CLI choices, the training config and the card derive from it.
ST_POOLING_MODES: dict[str, str | None] = {
    "cls": "cls",
    "last": "lasttoken",
    "mean": "mean",
    "max": "max",
    "mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "weightedmean": "weightedmean",
    "mean_no_dump": None,
}
POOLING_MODES = tuple(ST_POOLING_MODES)
# Short labels that read "<label> pooling" (model cards, logs).
POOLING_DESCRIPTIONS: dict[str, str] = {
    "cls": "[CLS]",
    "last": "last-token",
    "mean": "mean",
    "max": "max",
    "mean_sqrt_len_tokens": "sum / sqrt(length)",
    "weightedmean": "position-weighted mean",
    "mean_no_dump": "mean over every token except the [DUMP] slots",
}
# The modes whose pooling finds where each row's real tokens sit, so that left and right padding run it on different
# positions: cls reads the first real token, last the last one, weightedmean weighs positions counted from the first,
# mean_no_dump leaves out the [DUMP] slots after it. The others (masked sums and maxima) read every real token alike.
# The ONNX export checks these modes under both padding sides.
PADDING_SENSITIVE_POOLING: frozenset[str] = frozenset({"cls", "last", "weightedmean", "mean_no_dump"})
SIMILARITY_FUNCTIONS = ("cosine", "dot", "euclidean", "manhattan")
# The one definition of the zero-shot prompt modes `compose_prompt` builds: the package's `PromptMode` and the CLI's
# --prompt choices derive from it.
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
            One of `POOLING_MODES`: `"cls"`, `"last"`, `"mean"`, `"max"`, `"mean_sqrt_len_tokens"` and
            `"weightedmean"` compute exactly what sentence-transformers' Pooling modes `cls`, `lasttoken`, `mean`,
            `max`, `mean_sqrt_len_tokens` and `weightedmean` compute (same padding rules, same accumulation dtype);
            `"mean_no_dump"` is the mean with the K [DUMP] positions left out ([CLS]/[SEP] count as in the mean).
        include_prompt (`bool`, defaults to `True`):
            sentence-transformers' Pooling `include_prompt`: when False, a row that starts with one of
            `prompt_token_ids_excluded` leaves those positions out of the pooling (as sentence-transformers does
            with the `prompt_length` of the prompt it prepended).
        prompt_token_ids_excluded (`list[list[int]]`, *optional*):
            For `include_prompt=False`: each named prompt as the tokenizer makes it on its own, leading special
            tokens and [DUMP] tokens included, a trailing special token dropped (sentence-transformers'
            `prompt_length` rule).
        dense_layers (`list[dict]`, *optional*):
            The source's linear sentence-transformers Dense layers after pooling (`in_features`, `out_features`,
            `bias`), folded into the one affine map `dense` applied to the pooled state (fp32).
        prompts (`dict[str, str]`, *optional*):
            The named prompts (e.g. `{"query": "query: ", "document": "passage: "}`) the sentence-transformers
            files carry; kept here so every re-save (training, fitting) writes them again.
        default_prompt_name (`str`, *optional*):
            The prompt `encode` uses when none is named.
        similarity_fn_name (`str`, *optional*):
            The similarity sentence-transformers uses (`cosine`, `dot`, `euclidean`, `manhattan`).
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
        prefix_cache (`bool`, defaults to `True`):
            Causal backbones at inference (eval mode, no gradients): compute the key/value states of the tokens
            every row starts with (BOS, the [DUMP] tokens, a prompt's opening) once and run the backbone only on the
            rest of each row; the vectors are the same (to rounding). Training, gradients, attention maps and
            encoders always run the plain forward. `False` turns it off.
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
    include_prompt: bool = True
    prompt_token_ids_excluded: list[list[int]] | None = None
    dense_layers: list[dict[str, Any]] | None = None
    prompts: dict[str, str] | None = None
    default_prompt_name: str | None = None
    similarity_fn_name: str | None = None
    prefix_cache: bool = True

    def __post_init__(self, **kwargs: Any) -> None:
        super().__post_init__(**kwargs)
        if self.dump_token_ids is None:
            self.dump_token_ids = []
        self.dump_token_ids = [int(i) for i in self.dump_token_ids]
        if self.projection_info is None:
            self.projection_info = {}
        if self.training_info is None:
            self.training_info = {}
        if self.dense_layers is None:
            self.dense_layers = []
        if self.prompt_token_ids_excluded is None:
            self.prompt_token_ids_excluded = []
        if self.prompts is None:
            self.prompts = {}
        if self.projection_dim is None:
            self.projection_dim = self.embedding_size
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
        self._validate_dense_layers()
        size = self.embedding_size
        if not 1 <= self.projection_dim <= size:
            raise ValueError(
                f"projection_dim must be between 1 and the pooled embedding size {size}; got {self.projection_dim}."
            )
        if self.prompt_token_ids_excluded and self.include_prompt:
            raise ValueError("prompt_token_ids_excluded is only used with include_prompt=False; remove it or set "
                             "include_prompt to false.")
        if self.similarity_fn_name is not None and self.similarity_fn_name not in SIMILARITY_FUNCTIONS:
            raise ValueError(f"similarity_fn_name must be one of {SIMILARITY_FUNCTIONS} or None; got "
                             f"{self.similarity_fn_name!r}.")
        if self.default_prompt_name is not None and self.default_prompt_name not in self.prompts:
            raise ValueError(f"default_prompt_name {self.default_prompt_name!r} is not one of the prompts "
                             f"{sorted(self.prompts)}.")
        if self.prompt_mode is not None:
            if self.prompt_mode not in PROMPT_MODES:
                raise ValueError(f"prompt_mode must be one of {PROMPT_MODES} or None; got {self.prompt_mode!r}.")
            if not self.prompt_token_ids:
                raise ValueError(f"prompt_mode={self.prompt_mode!r} needs prompt_token_ids (the prompt's pieces).")

    def _validate_dense_layers(self) -> None:
        """Each Dense layer's input is the previous one's output, starting from the backbone's hidden size."""
        width = self.text_config.hidden_size
        for index, layer in enumerate(self.dense_layers):
            if not isinstance(layer, dict) or layer.get("in_features") != width or not isinstance(
                    layer.get("out_features"), int) or layer["out_features"] < 1:
                raise ValueError(f"dense_layers[{index}] must map {width} features to a positive out_features; "
                                 f"got {layer!r}.")
            width = layer["out_features"]

    @property
    def hidden_size(self) -> int:
        """Hidden size of the backbone (the width of its token states)."""
        return self.text_config.hidden_size

    @property
    def embedding_size(self) -> int:
        """Width of the pooled embedding the projection reads: the last Dense layer's output, else the hidden size."""
        return self.dense_layers[-1]["out_features"] if self.dense_layers else self.text_config.hidden_size


# Field -> allowed types (bool is only allowed where listed: True is not a count).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "num_dump_tokens": (int,), "dump_token_ids": (list,), "dump_token_offset": (int,), "pooling": (str,),
    "projection_dim": (int,), "normalize": (bool,), "projection_info": (dict,), "max_position_embeddings": (int,),
    "base_model": (str,), "dump_init": (str,), "training_info": (dict,), "normalize_pooled": (bool,),
    "prompt_mode": (str,), "prompt_token_ids": (dict,), "include_prompt": (bool,), "prompt_token_ids_excluded": (list,),
    "dense_layers": (list,), "prompts": (dict,), "default_prompt_name": (str,), "similarity_fn_name": (str,),
    "prefix_cache": (bool,),
}
_OPTIONAL = {"max_position_embeddings", "base_model", "dump_init", "prompt_mode", "prompt_token_ids",
             "default_prompt_name", "similarity_fn_name"}

__all__ = ["DumpEmbedConfig"]
