"""Configuration of a DumpEmbed text-embedding model (remote code: transformers and the huggingface_hub it requires)."""

from typing import Any, Literal

from transformers.utils.versions import require_version

# Oldest transformers this code runs on: SubConfigSpec (the backbone sub-config) appeared in 5.20 (its pre-releases
# count: ".dev0" is the earliest). Checked before the names it brings are imported.
MIN_TRANSFORMERS = "5.20"
TRANSFORMERS_REQUIREMENT = f"transformers>={MIN_TRANSFORMERS}.0.dev0"
require_version(
    TRANSFORMERS_REQUIREMENT,
    f"This DumpEmbed model's code needs transformers >= {MIN_TRANSFORMERS}. Upgrade with pip install -U "
    f"'transformers>={MIN_TRANSFORMERS}', or load the model's stock export (no remote code; made with "
    "`hf-dumpembed export-st`), which transformers 4.57+ and sentence-transformers 3.4+ read.",
)

from huggingface_hub.dataclasses import strict  # noqa: E402  (transformers' own config validation)
from transformers import AutoConfig, PreTrainedConfig  # noqa: E402
from transformers.configuration_utils import SubConfigSpec  # noqa: E402

# The one definition of the pooling modes: DumpEmbed name -> sentence-transformers Pooling mode (None: no stock
# equivalent). The builder's enum, the CLI choices, the training config and the card derive from it.
ST_POOLING_MODES: dict[str, str | None] = {
    "cls": "cls", "last": "lasttoken", "mean": "mean", "max": "max", "mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "weightedmean": "weightedmean", "mean_no_dump": None}
POOLING_MODES = tuple(ST_POOLING_MODES)
# Short labels that read "<label> pooling" (model cards, logs).
POOLING_DESCRIPTIONS: dict[str, str] = {
    "cls": "[CLS]", "last": "last-token", "mean": "mean", "max": "max", "mean_sqrt_len_tokens": "sum / sqrt(length)",
    "weightedmean": "position-weighted mean", "mean_no_dump": "mean over every token except the [DUMP] slots"}
# The modes that read positions counted from a row's first or last real token, so left and right padding run them on
# different positions (the others read every real token alike); the ONNX export checks them under both sides.
PADDING_SENSITIVE_POOLING: frozenset[str] = frozenset({"cls", "last", "weightedmean", "mean_no_dump"})
SIMILARITY_FUNCTIONS = ("cosine", "dot", "euclidean", "manhattan")
# The zero-shot prompt modes `compose_prompt` builds (the package's `PromptMode` and --prompt derive from it).
PROMPT_MODES = ("prompteol", "echo")


@strict
class DumpEmbedConfig(PreTrainedConfig):
    r"""Configuration of [`DumpEmbedModel`]: a backbone, K [DUMP] tokens, pooling and a linear projection.

    Every field is type-checked by its annotation whenever it is set (``from_pretrained`` kwargs and
    ``config_kwargs`` included); the ``validate_*`` methods check the fields together.

    Args:
        text_config: the backbone's configuration (any encoder or decoder `AutoModel` builds).
        num_dump_tokens: K, the [DUMP] tokens the tokenizer prepends (0: the plain baseline).
        dump_token_ids: the ids of `[DUMP1]..[DUMPK]`, in order.
        dump_token_offset: position of `[DUMP1]` from the first real token (1 after [CLS] or BOS, else 0).
        pooling: one of `POOLING_MODES`; all but `mean_no_dump` (the mean without the [DUMP] slots) compute what
            sentence-transformers' Pooling mode of `ST_POOLING_MODES` computes (same padding rules and dtypes).
        include_prompt, prompt_token_ids_excluded: sentence-transformers' Pooling `include_prompt`; when False, a
            row that starts with one of the excluded prompts (token ids, as the tokenizer makes each alone, without a
            trailing special token) leaves those positions out of the pooling.
        dense_layers: the source's linear Dense layers after pooling (`in_features`, `out_features`, `bias`),
            folded into one fp32 affine map.
        prompts, default_prompt_name, similarity_fn_name: the sentence-transformers settings, kept so every re-save
            writes them again.
        projection_dim: the stored projection's output dimension (default: the pooled embedding's size).
        normalize: L2-normalise the output; normalize_pooled: L2-normalise the pooled vector before the projection
            (fitted projections were fitted on unit-length embeddings).
        projection_info: a fitted projection's record (method, k, corpus hash, ..., and the method's own `params`);
            its `selection` is set exactly when the folder stores what recomposes the map for any k at load time.
        max_position_embeddings: the longest input the backbone accepts (default: the backbone's).
        base_model, dump_init, pooling_reason, training_info: the backbone built from, how the [DUMP] rows were
            initialised, why this pooling, what the model was fine-tuned on (model card and MTEB metadata).
        prompt_mode, prompt_token_ids: a zero-shot prompt composed inside the model (`"prompteol"`: template and
            last-token pooling; `"echo"`: the text twice, mean over the second copy) from its pieces' token ids
            (`prefix`, `middle`, `suffix`, `num_trailing_special`).
        prefix_cache: causal backbones at inference compute the states of the tokens every row starts with once
            and run only the rest of each row (same vectors, to rounding); False turns it off.
    """

    model_type = "dumpembed"
    sub_configs_defaults = {"text_config": SubConfigSpec(config_class=AutoConfig, model_type="bert")}

    text_config: dict | PreTrainedConfig | None = None
    num_dump_tokens: int = 0
    dump_token_ids: list[int] | None = None
    dump_token_offset: int = 0
    pooling: Literal[POOLING_MODES] = "cls"
    projection_dim: int | None = None
    normalize: bool = True
    projection_info: dict[str, Any] | None = None
    max_position_embeddings: int | None = None
    base_model: str | None = None
    dump_init: str | None = None
    pooling_reason: str | None = None
    training_info: dict[str, Any] | None = None
    normalize_pooled: bool = False
    prompt_mode: Literal[PROMPT_MODES] | None = None
    prompt_token_ids: dict[str, Any] | None = None
    include_prompt: bool = True
    prompt_token_ids_excluded: list[list[int]] | None = None
    dense_layers: list[dict[str, Any]] | None = None
    prompts: dict[str, str] | None = None
    default_prompt_name: str | None = None
    similarity_fn_name: Literal[SIMILARITY_FUNCTIONS] | None = None
    prefix_cache: bool = True

    def __post_init__(self, **kwargs: Any) -> None:
        super().__post_init__(**kwargs)
        for name, empty in (("dump_token_ids", list), ("projection_info", dict), ("training_info", dict),
                            ("dense_layers", list), ("prompt_token_ids_excluded", list), ("prompts", dict)):
            if getattr(self, name) is None:
                setattr(self, name, empty())
        if self.projection_dim is None:
            self.projection_dim = self.embedding_size
        if self.max_position_embeddings is None:
            self.max_position_embeddings = getattr(self.text_config, "max_position_embeddings", None)

    def validate_dump_tokens(self) -> None:
        """K >= 0 [DUMP] ids, each >= 0, one per token, at an offset >= 0."""
        if self.num_dump_tokens < 0:
            raise ValueError(f"num_dump_tokens must be an integer >= 0; got {self.num_dump_tokens!r}.")
        if any(i < 0 for i in self.dump_token_ids):
            raise ValueError(f"dump_token_ids must be non-negative integers; got {self.dump_token_ids!r}.")
        if len(self.dump_token_ids) != self.num_dump_tokens:
            raise ValueError(f"dump_token_ids must list exactly num_dump_tokens={self.num_dump_tokens} ids; got "
                             f"{len(self.dump_token_ids)}: {self.dump_token_ids}.")
        if self.dump_token_offset < 0:
            raise ValueError(f"dump_token_offset must be >= 0; got {self.dump_token_offset}.")

    def validate_dense_layers(self) -> None:
        """Each Dense layer's input is the previous one's output, starting from the backbone's hidden size."""
        width = self.text_config.hidden_size
        for index, layer in enumerate(self.dense_layers):
            out = layer.get("out_features")
            if layer.get("in_features") != width or type(out) is not int or out < 1:
                raise ValueError(f"dense_layers[{index}] must map {width} features to a positive out_features; "
                                 f"got {layer!r}.")
            width = out

    def validate_projection_dim(self) -> None:
        """The stored projection maps the pooled embedding to 1..its size outputs."""
        size = self.embedding_size
        if not 1 <= self.projection_dim <= size:
            raise ValueError(
                f"projection_dim must be between 1 and the pooled embedding size {size}; got {self.projection_dim}.")

    def validate_prompts(self) -> None:
        """The excluded prompts need include_prompt=False, the default prompt a name of `prompts`, a prompt mode
        its pieces."""
        if self.prompt_token_ids_excluded and self.include_prompt:
            raise ValueError("prompt_token_ids_excluded is only used with include_prompt=False; remove it or set "
                             "include_prompt to false.")
        if self.default_prompt_name is not None and self.default_prompt_name not in self.prompts:
            raise ValueError(f"default_prompt_name {self.default_prompt_name!r} is not one of the prompts "
                             f"{sorted(self.prompts)}.")
        if self.prompt_mode is not None and not self.prompt_token_ids:
            raise ValueError(f"prompt_mode={self.prompt_mode!r} needs prompt_token_ids (the prompt's pieces).")

    @property
    def hidden_size(self) -> int:
        """Hidden size of the backbone (the width of its token states)."""
        return self.text_config.hidden_size

    @property
    def embedding_size(self) -> int:
        """Width of the pooled embedding the projection reads: the last Dense layer's output, else the hidden size."""
        return self.dense_layers[-1]["out_features"] if self.dense_layers else self.text_config.hidden_size


__all__ = ["DumpEmbedConfig"]
