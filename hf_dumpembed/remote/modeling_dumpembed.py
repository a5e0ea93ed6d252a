"""DumpEmbed model: backbone -> pooling -> linear projection -> L2 normalisation (remote code: torch, transformers and
the sibling files only)."""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoModel, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput, logging

from .configuration_dumpembed import DumpEmbedConfig
from .prefix_cache_dumpembed import PrefixCacheMixin, first_token_index

logger = logging.get_logger(__name__)


@dataclass
class DumpEmbedOutput(ModelOutput):
    """Outputs of [`DumpEmbedModel`]; the token states hold zeros at padding positions when the prefix cache ran."""

    sentence_embedding: torch.FloatTensor | None = None
    pooled_embedding: torch.FloatTensor | None = None
    last_hidden_state: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


# How a fitted projection is recomposed for another output dimension k (projection_info["selection"]; None: fixed).
SELECTIONS = ("spectral", "band", "prefix", "auto")
# Auto mode's stored route codes (the ``routes`` buffer): index -> map used at that k.
AUTO_ROUTES = ("centred", "uncentred", "prefix")
SPECTRAL_EPS = 1e-6
# What the errors about a fixed output dimension advise.
ANY_K_HINT = "fit a projection that serves any dimension (`hf-dumpembed fit --help` lists the methods)"


def spectral_scale(eigenvalues: torch.Tensor, gamma: torch.Tensor | float, eps: float = SPECTRAL_EPS) -> torch.Tensor:
    """SpecTemp's per-direction scale (λ + eps)^(−γ/2) in float64: γ=0 is PCA, γ=1 whitening."""
    gamma = torch.as_tensor(gamma, dtype=torch.float64)
    return (eigenvalues.double() + eps) ** (-gamma / 2)


def spectral_matrix(basis: torch.Tensor, eigenvalues: torch.Tensor, gamma: torch.Tensor | float, k: int,
                    eps: float = SPECTRAL_EPS) -> torch.Tensor:
    """W_k = U_k diag((λ_1..k + eps)^(−γ/2)) in float64, returned fp32: the fit writes its matrix with this same
    function, so choosing k at load time gives the matrix of fitting at k, bit for bit."""
    return (basis[:, :k].double() * spectral_scale(eigenvalues[:k], gamma, eps)[None, :]).float()


def band_start(d: int, k: int) -> int:
    """s = (d − k) // 2: the middle band of k of d directions drops ⌊(d−k)/2⌋ top and the rest bottom ones."""
    return (d - k) // 2


def band_matrix(basis: torch.Tensor, k: int) -> torch.Tensor:
    """The middle band of k columns of a basis sorted by descending singular value: columns s..s+k (`band_start`)."""
    start = band_start(basis.shape[1], k)
    return basis[:, start : start + k].clone()


def _register_fp32_buffers(module: nn.Module, **tensors: torch.Tensor) -> None:
    """Persistent fp32 buffers (saved in model.safetensors, kept in fp32 under any load dtype)."""
    for name, tensor in tensors.items():
        module.register_buffer(name, tensor.to(torch.float32), persistent=True)


class DumpDense(nn.Module):
    """The source's linear sentence-transformers Dense layers, folded: ``y = x @ weight + bias``."""

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        _register_fp32_buffers(self, weight=torch.eye(in_dim, out_dim), bias=torch.zeros(out_dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.float() @ self.weight + self.bias


class DumpProjection(nn.Module):
    """Affine map ``y = (x - mean) @ matrix`` in fp32 buffers (identity by default), and what recomposes it for any
    output dimension k (``selection``): ``spectral`` (SpecTemp / PCA / γ-whitening: ``basis`` = eigenvectors,
    ``eigenvalues``, ``gammas`` = γ(k) for k = 1..d), ``band`` (EmbedFilter: ``basis`` = right singular vectors of
    the unembedding matrix), ``prefix`` (truncation; nothing stored) or ``auto`` (the spectral buffers, ``centre`` =
    the corpus mean and ``routes`` = the map of each k, indices of `AUTO_ROUTES`)."""

    def __init__(self, in_dim: int, out_dim: int, selection: str | None = None, eps: float = SPECTRAL_EPS) -> None:
        super().__init__()
        if selection is not None and selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS} or None; got {selection!r}.")
        self.selection, self.eps = selection, eps
        _register_fp32_buffers(self, mean=torch.zeros(in_dim), matrix=torch.eye(in_dim, out_dim))
        if selection in ("spectral", "band", "auto"):
            _register_fp32_buffers(self, basis=torch.eye(in_dim))
        if selection in ("spectral", "auto"):
            _register_fp32_buffers(self, eigenvalues=torch.zeros(in_dim), gammas=torch.zeros(in_dim))
        if selection == "auto":
            _register_fp32_buffers(self, centre=torch.zeros(in_dim), routes=torch.zeros(in_dim))

    def route(self, k: int) -> str:
        """The map used for output dimension ``k``: ``centred``, ``uncentred`` or ``prefix``."""
        if self.selection == "auto":
            return AUTO_ROUTES[int(self.routes[k - 1])]
        return "prefix" if self.selection == "prefix" else "centred"

    def matrix_for(self, k: int) -> torch.Tensor:
        """The projection matrix for output dimension ``k`` (1..in_dim), recomposed from the stored spectrum."""
        in_dim = self.mean.shape[0]
        if not 1 <= k <= in_dim:
            raise ValueError(f"projection_dim must be between 1 and {in_dim}; got {k}.")
        if self.selection is None:
            raise ValueError(f"this model's projection stores no spectrum, so its output dimension is fixed at "
                             f"{self.matrix.shape[1]}; refit it with the wanted dimension (hf-dumpembed fit --dim "
                             f"K), or {ANY_K_HINT}.")
        if self.route(k) == "prefix":
            return torch.eye(in_dim, k, dtype=torch.float32, device=self.matrix.device)
        if self.selection == "band":
            return band_matrix(self.basis, k)
        return spectral_matrix(self.basis, self.eigenvalues, self.gammas[k - 1], k, self.eps)

    def recompose(self, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """``(mean, matrix)`` of the map for output dimension ``k``; refuses a map that is not finite."""
        matrix = self.matrix_for(k).to(self.matrix.device)
        if not bool(torch.isfinite(matrix).all()):
            raise ValueError(f"the projection recomposed for projection_dim={k} is not finite (a negative stored "
                             "eigenvalue or γ): the folder's spectrum is damaged; refit it.")
        if self.selection != "auto":
            return self.mean, matrix
        return (self.centre if self.route(k) == "centred" else torch.zeros_like(self.centre)), matrix

    def select(self, k: int) -> None:
        """Replace the stored matrix (and, in auto mode, the mean) by those for output dimension ``k``."""
        mean, self.matrix = self.recompose(k)
        if self.selection == "auto":
            self.mean = mean.clone()

    def forward(self, pooled: torch.Tensor, dim: int | None = None) -> torch.Tensor:
        """Project ``pooled``; another output dimension ``dim`` gets its recomposed map (else the first outputs)."""
        if dim is None or dim == self.matrix.shape[1]:
            return (pooled.to(self.matrix.dtype) - self.mean) @ self.matrix
        if self.selection is None:
            return ((pooled.to(self.matrix.dtype) - self.mean) @ self.matrix)[..., :dim]
        mean, matrix = self.recompose(dim)
        return (pooled.to(matrix.dtype) - mean) @ matrix


def check_loading_info(info: dict) -> None:
    """Refuse a checkpoint that lacks or misshapes a tensor the model needs (transformers only warns)."""
    missing = sorted(info.get("missing_keys") or [])
    if missing:
        raise ValueError(
            f"the checkpoint lacks {len(missing)} tensor(s) the model needs: {', '.join(missing[:8])}"
            f"{' ...' if len(missing) > 8 else ''}. The folder's model.safetensors is incomplete or belongs to "
            "another model; rebuild (`hf-dumpembed build`) or refit (`hf-dumpembed fit`) it.")
    mismatched = sorted(info.get("mismatched_keys") or [], key=str)
    if mismatched:
        names = "; ".join(
            f"{item[0]} (checkpoint {tuple(item[1])}, config expects {tuple(item[2])})"
            if isinstance(item, (tuple, list)) and len(item) == 3 else str(item) for item in mismatched[:8])
        raise ValueError(f"tensor(s) of the checkpoint have another shape than the config expects: {names}. The "
                         "folder's config.json and model.safetensors do not belong together; rebuild or refit it.")


def check_finite(model: nn.Module, prefix: str = "") -> None:
    """Refuse a model whose projection, [DUMP] rows or any other weight holds NaN or infinite values."""
    bad = [prefix + name for name, tensor in [*model.named_buffers(), *model.named_parameters()]
           if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all())]
    ids = list(getattr(getattr(model, "config", None), "dump_token_ids", None) or [])
    if ids and hasattr(model, "get_input_embeddings"):
        rows = model.get_input_embeddings().weight[ids]
        bad += [f"[DUMP{i + 1}] embedding row (id {ids[i]})" for i in range(len(ids))
                if not bool(torch.isfinite(rows[i]).all())]
    if bad:
        raise ValueError(
            f"non-finite values (NaN or inf) in {', '.join(bad[:8])}{' ...' if len(bad) > 8 else ''}: every "
            "vector would be NaN. The folder's weights are damaged (or a fit diverged); rebuild or refit it.")


def last_token_index(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index of the last non-padding token of each row (seq_len - 1 under left padding)."""
    return attention_mask.shape[1] - 1 - attention_mask.flip(dims=[1]).argmax(dim=1)


def counts_positions_from_mask(backbone: nn.Module) -> bool:
    """Whether the caller passes position ids counted from each row's first real token (left padding): backbones
    that take ``position_ids``, except those whose position table has a ``padding_idx`` (RoBERTa, XLM-R, MPNet derive
    positions from the ids, skipping padding)."""
    if "position_ids" not in inspect.signature(backbone.forward).parameters:
        return False
    return not any(name.rsplit(".", 1)[-1] == "position_embeddings" and isinstance(module, nn.Embedding)
                   and module.padding_idx is not None for name, module in backbone.named_modules())


def backbone_class(architectures: list[str] | None) -> type:
    """`AutoModel`, or the encoder-only class a checkpoint was saved as (``T5EncoderModel``: AutoModel would build
    the whole encoder-decoder). The builder loads with the same rule."""
    import transformers

    architecture = next(iter(architectures or []), "")
    if architecture.endswith("EncoderModel") and hasattr(transformers, architecture):
        return getattr(transformers, architecture)
    return AutoModel


def backbone_from_config(text_config) -> PreTrainedModel:
    """The backbone for ``text_config`` (see `backbone_class`)."""
    model_class = backbone_class(getattr(text_config, "architectures", None))
    return model_class.from_config(text_config) if model_class is AutoModel else model_class._from_config(text_config)


def pool_states(token_states: torch.Tensor, attention_mask: torch.Tensor, mode: str,
                pad_lengths: torch.Tensor | None = None) -> torch.Tensor:
    """One vector per row, as sentence-transformers' Pooling computes ``mode`` (same masks, fp32 sums for bf16/fp16
    states); ``pad_lengths`` (left padding) let ``weightedmean`` count positions from each row's first real token."""
    accumulation = torch.float32 if token_states.dtype in (torch.float16, torch.bfloat16) else token_states.dtype
    rows = torch.arange(token_states.shape[0], device=token_states.device)
    if mode == "cls":
        return token_states[rows, attention_mask.to(torch.int32).argmax(dim=1)]
    if mode == "last":
        masked = token_states * attention_mask.unsqueeze(-1).to(token_states.dtype)
        return masked[rows, last_token_index(attention_mask)]
    if mode == "max":
        return token_states.masked_fill(attention_mask.unsqueeze(-1) == 0, float("-inf")).max(dim=1).values
    if mode in ("mean", "mean_no_dump", "mean_sqrt_len_tokens"):
        mask = attention_mask.unsqueeze(-1).to(token_states.dtype)
        total = (token_states * mask).sum(dim=1, dtype=accumulation)
        count = mask.sum(dim=1, dtype=accumulation).clamp(min=1e-9)
        return (total / (count.sqrt() if mode == "mean_sqrt_len_tokens" else count)).to(token_states.dtype)
    if mode == "weightedmean":
        mask = attention_mask.unsqueeze(-1).to(accumulation)
        weights = torch.arange(1, token_states.shape[1] + 1, device=token_states.device, dtype=accumulation)
        weights = weights.view(1, -1, 1)
        if pad_lengths is not None:
            weights = weights - pad_lengths.view(-1, 1, 1).to(accumulation)
        weighted = mask * weights
        return ((token_states * weighted).sum(dim=1) / weighted.sum(dim=1).clamp(min=1e-9)).to(token_states.dtype)
    raise ValueError(f"unknown pooling mode {mode!r}.")


def prompt_lengths(input_ids: torch.Tensor, attention_mask: torch.Tensor, prompts: list[list[int]]) -> torch.Tensor:
    """Per row, the length of the longest of ``prompts`` (token ids) the row starts with, 0 if none; a prompt whose
    last token merged with the text (SentencePiece's "▁") matches on the others."""
    lengths = torch.zeros(input_ids.shape[0], dtype=torch.long, device=input_ids.device)
    for row, (ids, start) in enumerate(zip(input_ids.tolist(), first_token_index(attention_mask).tolist(),
                                           strict=True)):
        for prompt in prompts:
            head = ids[start : start + len(prompt)]
            if head == prompt or (len(prompt) > 1 and head[:-1] == prompt[:-1] and len(head) == len(prompt)):
                lengths[row] = max(int(lengths[row]), len(prompt))
    return lengths


def sentence_transformers_truncate_dim(max_depth: int = 24) -> int | None:
    """The ``truncate_dim`` sentence-transformers will slice this forward's output to (None: none), so the model
    returns the map fitted for it. Read from the stack: sentence-transformers 6.2-6.3 keeps it as a parameter of
    ``SentenceTransformer._inference`` and never passes it to the model (a release that moves it is warned about)."""
    if torch.compiler.is_compiling() or torch.jit.is_tracing() or torch.onnx.is_in_onnx_export():
        return None
    frame, called_by_library = inspect.currentframe(), False
    for _ in range(max_depth):
        frame = frame.f_back if frame is not None else None
        if frame is None:
            break
        in_library = str(frame.f_globals.get("__name__")).startswith("sentence_transformers.")
        if in_library and frame.f_code.co_name == "_inference" and "truncate_dim" in frame.f_locals:
            value = frame.f_locals["truncate_dim"]
            return value if type(value) is int else None
        called_by_library = called_by_library or in_library
    if called_by_library and torch.is_inference_mode_enabled():
        version = getattr(sys.modules.get("sentence_transformers"), "__version__", "unknown")
        logger.warning_once(
            f"sentence-transformers {version} runs this DumpEmbed model without the `_inference` frame whose "
            "truncate_dim it reads: a truncate_dim, if set, keeps the first coordinates of the loaded map instead of "
            "the map fitted for that dimension. Load the model with model_kwargs={'projection_dim': k} instead.")
    return None


class DumpEmbedPreTrainedModel(PreTrainedModel):
    config_class = DumpEmbedConfig
    base_model_prefix = "dumpembed"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = False
    _supports_flex_attn = False
    _supports_attention_backend = False  # packed (unpadded) sequences would break CLS / last-token pooling
    _keep_in_fp32_modules_strict = ["projection", "pooled_dense"]
    _tied_weights_keys: dict[str, str] = {}

    def _init_weights(self, module: nn.Module) -> None:
        """The head's buffers start as the identity map (the backbone's weights always come from the checkpoint)."""
        if isinstance(module, (DumpDense, DumpProjection)):
            for name, tensor in module.named_buffers(recurse=False):
                (init.eye_ if name in ("weight", "matrix", "basis") else init.zeros_)(tensor)


class DumpEmbedModel(PrefixCacheMixin, DumpEmbedPreTrainedModel):
    """A text-embedding model: any `AutoModel` backbone, [DUMP]-prefixed inputs, pooling, projection, L2."""

    def __init__(self, config: DumpEmbedConfig, projection_dim: int | None = None) -> None:
        config.validate()  # from_pretrained kwargs and config_kwargs are set after the config's own validation
        super().__init__(config)
        if projection_dim is not None:  # e.g. SentenceTransformer(..., model_kwargs={"projection_dim": 128})
            config.projection_dim = self.checked_dim(projection_dim, config.embedding_size)
        self.backbone = backbone_from_config(config.text_config)
        info = config.projection_info or {}
        # The checkpoint holds the map of the fitted dimension; another one is recomposed after loading.
        stored_dim = int(info["dim"]) if info.get("dim") else config.projection_dim
        if stored_dim != config.projection_dim and info.get("selection") is None:
            raise ValueError(
                f"projection_dim={config.projection_dim} was asked for, but this model's projection has a fixed "
                f"output dimension {stored_dim} (method {info.get('method', 'identity')!r} stores no spectrum). "
                f"To choose the dimension at load time, {ANY_K_HINT}.")
        self.pooled_dense = DumpDense(config.hidden_size, config.embedding_size) if config.dense_layers else None
        params = info.get("params", info)  # the method's own record (flat in folders written before "params")
        self.projection = DumpProjection(config.embedding_size, stored_dim, selection=info.get("selection"),
                                         eps=float(params.get("eps", SPECTRAL_EPS)))
        self._backbone_takes_position_ids = counts_positions_from_mask(self.backbone)
        # A learned absolute position table cannot index past its size: longer inputs get a clear error.
        self._absolute_positions = any(name.rsplit(".", 1)[-1] in ("position_embeddings", "wpe")
                                       and isinstance(module, nn.Embedding)
                                       for name, module in self.backbone.named_modules())
        self.init_prefix_cache()
        self.post_init()

    @staticmethod
    def checked_dim(dim: object, largest: int) -> int:
        """``dim`` when it is an integer output dimension in 1..``largest``; ValueError otherwise."""
        if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= largest:
            raise ValueError(f"projection_dim must be an integer between 1 and {largest}; got {dim!r}.")
        return dim

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        """`PreTrainedModel.from_pretrained` that refuses missing, misshapen or non-finite tensors (transformers only
        warns, and has no hook after loading) and recomposes the projection for ``projection_dim``."""
        want_info = bool(kwargs.pop("output_loading_info", False))
        if kwargs.get("ignore_mismatched_sizes"):
            raise ValueError("ignore_mismatched_sizes=True would replace misshapen tensors with random or identity "
                             "values; a DumpEmbed folder loads only with every tensor in place.")
        # Mismatched shapes are collected (not raised anonymously) so that the error names each tensor.
        model, info = super().from_pretrained(*args, output_loading_info=True, ignore_mismatched_sizes=True, **kwargs)
        if model.projection.selection is None and any(
                str(item[0] if isinstance(item, (tuple, list)) else item) == "projection.matrix"
                for item in info.get("mismatched_keys") or []):
            raise ValueError("the checkpoint's projection has another output dimension than the projection_dim asked "
                             "for, and stores no spectrum to recompose it (no fitted projection_info). Load it "
                             f"without projection_dim, or {ANY_K_HINT}.")
        check_loading_info(info)
        model.apply_projection_dim(model.config.projection_dim)
        check_finite(model)
        return (model, info) if want_info else model

    def apply_projection_dim(self, k: int) -> None:
        """Recompose the projection for output dimension ``k`` and keep the config's provenance in step."""
        if k == self.projection.matrix.shape[1]:
            return
        self.projection.select(k)
        self.config.projection_dim = k
        info = {**(self.config.projection_info or {}), "dim": k}
        params = dict(info["params"]) if "params" in info else info  # flat in folders written before "params"
        if self.projection.selection in ("spectral", "auto"):
            params["gamma"] = float(self.projection.gammas[k - 1])
            if self.projection.selection == "auto":
                params["route"] = self.projection.route(k)
                params["gamma"] = None if params["route"] == "prefix" else params["gamma"]
            if params.get("knee_fallback"):
                params["knee"] = max(1, k // 2)
        self.config.projection_info = {**info, "params": params} if "params" in info else info

    def get_input_embeddings(self) -> nn.Module:
        return self.backbone.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.backbone.set_input_embeddings(value)

    def check_dump_prefix(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> None:
        """Raise ValueError unless every row carries ``[DUMP1]..[DUMPK]`` at its configured position."""
        k = self.config.num_dump_tokens
        if k == 0:
            return
        start = first_token_index(attention_mask) + self.config.dump_token_offset
        positions = start[:, None] + torch.arange(k, device=input_ids.device)[None, :]
        if int(positions.max()) >= input_ids.shape[1]:
            raise ValueError(f"Inputs are too short to hold the {k} [DUMP] tokens this model expects. Tokenize with "
                             "the model's own tokenizer (its tokenizer.json post-processor prepends them).")
        found = input_ids.gather(1, positions)
        expected = torch.tensor(self.config.dump_token_ids, dtype=input_ids.dtype, device=input_ids.device)
        bad_rows = (found != expected[None, :]).any(dim=1).nonzero().flatten()
        if len(bad_rows) > 0:
            row = int(bad_rows[0])
            raise ValueError(
                f"{len(bad_rows)} input row(s) lack the [DUMP] prefix: expected ids {expected.tolist()} at "
                f"positions {positions[row].tolist()} of row {row}, found {found[row].tolist()}. Tokenize with "
                "the model's own tokenizer (AutoTokenizer.from_pretrained on this model) with "
                "add_special_tokens=True; its post-processor prepends the [DUMP] tokens.")

    def compose_prompt(self, input_ids: torch.Tensor, attention_mask: torch.Tensor
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Wrap each row's text in the zero-shot prompt, left-padded: PromptEOL ``lead prefix text suffix``, ECHO
        ``lead prefix text middle text suffix trailing`` with the mask of its second copy (+ trailing) to pool."""
        pieces = self.config.prompt_token_ids
        prefix, middle, suffix = (list(pieces.get(key) or []) for key in ("prefix", "middle", "suffix"))
        trailing = int(pieces.get("num_trailing_special", 0))
        lead_len = self.config.dump_token_offset + self.config.num_dump_tokens
        echo = self.config.prompt_mode == "echo"
        limit = self.config.max_position_embeddings or 10**9
        rows, spans = [], []
        for ids, mask in zip(input_ids.tolist(), attention_mask.tolist(), strict=True):
            ids = [token for token, keep in zip(ids, mask, strict=True) if keep]
            lead, text = ids[:lead_len], ids[lead_len : len(ids) - trailing]
            tail = ids[len(ids) - trailing :] if trailing else []
            fixed = len(lead) + len(prefix) + len(suffix) + (len(middle) + len(tail) if echo else 0)
            text = text[: max(1, (limit - fixed) // (2 if echo else 1))]
            first = lead + prefix + text + (middle if echo else [])
            rows.append(first + text + suffix + tail if echo else first + suffix)
            spans.append((len(first), len(rows[-1])))
        width, pad_id = max(len(row) for row in rows), self.config.text_config.pad_token_id
        new_ids = torch.full((len(rows), width), 0 if pad_id is None else int(pad_id), dtype=input_ids.dtype,
                             device=input_ids.device)
        new_mask = torch.zeros((len(rows), width), dtype=attention_mask.dtype, device=input_ids.device)
        pool_mask = torch.zeros_like(new_mask) if echo else None
        for index, (row, (start, end)) in enumerate(zip(rows, spans, strict=True)):
            offset = width - len(row)
            new_ids[index, offset:] = torch.tensor(row, dtype=input_ids.dtype, device=input_ids.device)
            new_mask[index, offset:] = 1
            if echo:
                pool_mask[index, offset + start : offset + end] = 1
        return new_ids, new_mask, pool_mask

    def without_dump_positions(self, attention_mask: torch.Tensor) -> torch.Tensor:
        """The attention mask with each row's K [DUMP] slots zeroed (either padding side)."""
        k = self.config.num_dump_tokens
        if k == 0:
            return attention_mask
        start = first_token_index(attention_mask) + self.config.dump_token_offset
        positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)[None, :]
        return attention_mask.masked_fill((positions >= start[:, None]) & (positions < start[:, None] + k), 0)

    def pooling_mask(self, attention_mask: torch.Tensor, mode: str, input_ids: torch.Tensor | None = None
                     ) -> torch.Tensor:
        """The positions ``mode`` pools: without the [DUMP] slots for ``mean_no_dump``, and without the prompt a row
        starts with under ``include_prompt=False`` (sentence-transformers' rule)."""
        mask = self.without_dump_positions(attention_mask) if mode == "mean_no_dump" else attention_mask
        if input_ids is not None and not self.config.include_prompt and self.config.prompt_token_ids_excluded:
            lengths = prompt_lengths(input_ids, attention_mask, self.config.prompt_token_ids_excluded)
            if bool((lengths > 0).any()):
                start = first_token_index(attention_mask)
                positions = torch.arange(mask.shape[1], device=mask.device)[None, :]
                mask = mask.masked_fill(positions < (start + lengths)[:, None], 0)
        return mask

    def pool(self, last_hidden_state: torch.Tensor, attention_mask: torch.Tensor, mode: str | None = None,
             input_ids: torch.Tensor | None = None) -> torch.Tensor:
        """The pooled embedding (padding-safe), then the source's folded Dense layers when it has any."""
        mode = mode or self.config.pooling
        mask = self.pooling_mask(attention_mask, mode, input_ids)
        pooled = pool_states(last_hidden_state, mask, mode, pad_lengths=first_token_index(attention_mask))
        return pooled if self.pooled_dense is None else self.pooled_dense(pooled)

    def projection_is_identity(self) -> bool:
        """True when the stored projection is exactly ``y = x`` (the pooled dtype is then kept); False under export
        and tracing (no data-dependent branch there; the fp32 identity gives the same vectors)."""
        if torch.compiler.is_compiling() or torch.jit.is_tracing():
            return False
        matrix, mean = self.projection.matrix, self.projection.mean
        return (matrix.shape[0] == matrix.shape[1] and not bool(mean.any())
                and bool(torch.equal(matrix, torch.eye(matrix.shape[0], dtype=matrix.dtype, device=matrix.device))))

    def output_dim_for_call(self, projection_dim: int | None) -> int | None:
        """The output dimension this call asks for (``projection_dim``, else sentence-transformers' ``truncate_dim``)
        when it differs from the loaded one; None keeps the loaded map."""
        loaded, largest = self.projection.matrix.shape[1], self.projection.mean.shape[0]
        if projection_dim is not None:
            return None if self.checked_dim(projection_dim, largest) == loaded else projection_dim
        truncate_dim = sentence_transformers_truncate_dim()
        return truncate_dim if truncate_dim is not None and 1 <= truncate_dim <= largest and truncate_dim != loaded \
            else None

    def head(self, pooled: torch.Tensor, dim: int | None = None) -> torch.Tensor:
        """Pooled embedding -> output embedding, as `forward` does it (also on stored pooled states); ``dim`` asks
        for another output dimension."""
        if dim is not None and not 1 <= dim <= self.projection.mean.shape[0]:
            raise ValueError(f"the output dimension must be between 1 and {self.projection.mean.shape[0]}; got {dim}.")
        if self.config.normalize_pooled:
            pooled = F.normalize(pooled, p=2, dim=-1)
        if self.projection_is_identity():
            embedding = pooled if dim is None else pooled[..., :dim]
        else:
            embedding = self.projection(pooled.float(), dim)
        return F.normalize(embedding, p=2, dim=-1) if self.config.normalize else embedding

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, output_attentions: bool | None = None,
                output_hidden_states: bool | None = None, projection_dim: int | None = None, **kwargs
                ) -> DumpEmbedOutput:
        """Embed a batch; ``projection_dim`` gives this call's vectors at another dimension, as a folder loaded with
        it would."""
        if input_ids is None:
            raise ValueError("DumpEmbedModel needs input_ids (the [DUMP] prefix is checked on them).")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        self.check_dump_prefix(input_ids, attention_mask)
        pool_mask = None
        if self.config.prompt_mode is not None:
            input_ids, attention_mask, pool_mask = self.compose_prompt(input_ids, attention_mask)
            token_type_ids = None
        limit = self.config.max_position_embeddings
        if self._absolute_positions and limit is not None and input_ids.shape[1] > limit:
            raise ValueError(
                f"inputs of {input_ids.shape[1]} tokens exceed this model's limit of {limit} positions. Tokenize with "
                f"truncation=True (max_length={limit}; sentence-transformers truncates to model.max_seq_length), or "
                "split long texts into passages.")
        backbone_kwargs = {key: value for key, value in kwargs.items() if key != "return_dict"}
        cacheable = not backbone_kwargs and token_type_ids is None  # inputs of the caller's own: the plain forward
        if "position_ids" not in backbone_kwargs and self._backbone_takes_position_ids \
                and bool((attention_mask[:, 0] == 0).any()):
            # Left padding: positions counted from each row's first real token, as unpadded inputs get them.
            backbone_kwargs["position_ids"] = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
        if token_type_ids is not None:
            backbone_kwargs["token_type_ids"] = token_type_ids

        def plain():
            return self.backbone(input_ids=input_ids, attention_mask=attention_mask,
                                 output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                                 return_dict=True, **backbone_kwargs)

        outputs = self.prefix_cached_forward(input_ids, attention_mask, output_attentions, output_hidden_states,
                                             plain) if cacheable else None
        outputs = outputs if outputs is not None else plain()
        if pool_mask is not None:  # ECHO: mean over the second copy of the text (and any trailing EOS)
            pooled = self.pool(outputs.last_hidden_state, pool_mask, mode="mean")
        else:
            pooled = self.pool(outputs.last_hidden_state, attention_mask, input_ids=input_ids)
        embedding = self.head(pooled, self.output_dim_for_call(projection_dim))
        if self.config.normalize_pooled:
            pooled = F.normalize(pooled, p=2, dim=-1)
        return DumpEmbedOutput(sentence_embedding=embedding, pooled_embedding=pooled,
                               last_hidden_state=outputs.last_hidden_state,
                               hidden_states=getattr(outputs, "hidden_states", None),
                               attentions=getattr(outputs, "attentions", None))


__all__ = ["DumpEmbedModel", "DumpEmbedOutput", "DumpEmbedPreTrainedModel"]
