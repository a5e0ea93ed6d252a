"""DumpEmbed model: backbone -> pooling -> linear projection -> L2 normalisation.

Remote code: imports only torch, transformers and the sibling configuration file.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import AutoModel, PreTrainedModel
from transformers import initialization as init
from transformers.utils import ModelOutput

from .configuration_dumpembed import DumpEmbedConfig


@dataclass
class DumpEmbedOutput(ModelOutput):
    """Outputs of [`DumpEmbedModel`].

    Args:
        sentence_embedding: (batch, projection_dim) pooled, projected and (if configured) normalised.
        pooled_embedding: (batch, hidden) the pooled backbone state before the projection.
        last_hidden_state: (batch, seq, hidden) final-layer token states.
        hidden_states: per-layer token states when `output_hidden_states=True`.
        attentions: per-layer attention maps when `output_attentions=True` (eager attention).
    """

    sentence_embedding: torch.FloatTensor | None = None
    pooled_embedding: torch.FloatTensor | None = None
    last_hidden_state: torch.FloatTensor | None = None
    hidden_states: tuple[torch.FloatTensor, ...] | None = None
    attentions: tuple[torch.FloatTensor, ...] | None = None


class DumpProjection(nn.Module):
    """Affine map ``y = (x - mean) @ matrix`` held in persistent fp32 buffers (identity by default)."""

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(in_dim, dtype=torch.float32), persistent=True)
        self.register_buffer("matrix", torch.eye(in_dim, out_dim, dtype=torch.float32), persistent=True)

    def forward(self, pooled: torch.Tensor) -> torch.Tensor:
        return (pooled.to(self.matrix.dtype) - self.mean) @ self.matrix


def first_token_index(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index of the first non-padding token of each row (0 under right padding)."""
    return (attention_mask.cumsum(dim=1) == 0).sum(dim=1)


def last_token_index(attention_mask: torch.Tensor) -> torch.Tensor:
    """Index of the last non-padding token of each row (seq_len - 1 under left padding)."""
    seq_len = attention_mask.shape[1]
    return seq_len - 1 - attention_mask.flip(dims=[1]).argmax(dim=1)


class DumpEmbedPreTrainedModel(PreTrainedModel):
    config_class = DumpEmbedConfig
    base_model_prefix = "dumpembed"
    supports_gradient_checkpointing = True
    _supports_sdpa = True
    _supports_flash_attn = False
    _supports_flex_attn = False
    # Packed (unpadded) sequences would break CLS / last-token pooling.
    _supports_attention_backend = False
    _keep_in_fp32_modules_strict = ["projection"]
    _tied_weights_keys: dict[str, str] = {}

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, DumpProjection):
            init.zeros_(module.mean)
            init.eye_(module.matrix)
        # Backbone weights always come from the checkpoint; nothing else to initialise here.


class DumpEmbedModel(DumpEmbedPreTrainedModel):
    """A text-embedding model: any `AutoModel` backbone, [DUMP]-prefixed inputs, pooling, projection, L2."""

    def __init__(self, config: DumpEmbedConfig) -> None:
        super().__init__(config)
        self.backbone = AutoModel.from_config(config.text_config)
        self.projection = DumpProjection(config.hidden_size, config.projection_dim)
        self._backbone_takes_position_ids = "position_ids" in inspect.signature(self.backbone.forward).parameters
        self.post_init()

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
            raise ValueError(
                f"Inputs are too short to hold the {k} [DUMP] tokens this model expects. Tokenize with the "
                "model's own tokenizer (its tokenizer.json post-processor prepends them)."
            )
        found = input_ids.gather(1, positions)
        expected = torch.tensor(self.config.dump_token_ids, dtype=input_ids.dtype, device=input_ids.device)
        bad_rows = (found != expected[None, :]).any(dim=1).nonzero().flatten()
        if len(bad_rows) > 0:
            row = int(bad_rows[0])
            raise ValueError(
                f"{len(bad_rows)} input row(s) lack the [DUMP] prefix: expected ids {expected.tolist()} at "
                f"positions {positions[row].tolist()} of row {row}, found {found[row].tolist()}. Tokenize with "
                "the model's own tokenizer (AutoTokenizer.from_pretrained on this model) with "
                "add_special_tokens=True; its post-processor prepends the [DUMP] tokens."
            )

    def pool(self, last_hidden_state: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Pool token states to one vector per row; safe under left and right padding."""
        rows = torch.arange(last_hidden_state.shape[0], device=last_hidden_state.device)
        if self.config.pooling == "cls":
            return last_hidden_state[rows, first_token_index(attention_mask)]
        if self.config.pooling == "last":
            return last_hidden_state[rows, last_token_index(attention_mask)]
        mask = attention_mask.unsqueeze(-1).to(last_hidden_state.dtype)
        return (last_hidden_state * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        **kwargs,
    ) -> DumpEmbedOutput:
        if input_ids is None:
            raise ValueError("DumpEmbedModel needs input_ids (the [DUMP] prefix is checked on them).")
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        self.check_dump_prefix(input_ids, attention_mask)
        backbone_kwargs = {key: value for key, value in kwargs.items() if key != "return_dict"}
        if "position_ids" not in backbone_kwargs and self._backbone_takes_position_ids:
            if bool((attention_mask[:, 0] == 0).any()):
                # Left padding: count positions from each row's first real token, so that encoders with
                # absolute position embeddings give the same vectors as unpadded inputs.
                backbone_kwargs["position_ids"] = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
        if token_type_ids is not None:
            backbone_kwargs["token_type_ids"] = token_type_ids
        outputs = self.backbone(
            input_ids=input_ids,
            attention_mask=attention_mask,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            **backbone_kwargs,
        )
        pooled = self.pool(outputs.last_hidden_state, attention_mask)
        embedding = self.projection(pooled)
        if self.config.normalize:
            embedding = F.normalize(embedding, p=2, dim=-1)
        return DumpEmbedOutput(
            sentence_embedding=embedding,
            pooled_embedding=pooled,
            last_hidden_state=outputs.last_hidden_state,
            hidden_states=getattr(outputs, "hidden_states", None),
            attentions=getattr(outputs, "attentions", None),
        )


__all__ = ["DumpEmbedModel", "DumpEmbedOutput", "DumpEmbedPreTrainedModel"]
