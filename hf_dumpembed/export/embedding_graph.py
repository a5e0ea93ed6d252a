"""The module every exported form runs: the DumpEmbed forward minus its Python-side checks (tokenizer output ->
backbone -> pooling -> projection -> L2) in traceable tensor ops, and the inputs it takes.

``export-onnx`` exports it with ``torch.onnx.export`` (onnx.py).
"""

from __future__ import annotations

import inspect

import torch
from torch import nn

from ..remote import DumpEmbedModel
from ..remote.modeling_dumpembed import counts_positions_from_mask


class EmbeddingGraph(nn.Module):
    """What gets exported: the DumpEmbed forward minus its Python-side checks, in traceable tensor ops.

    Position ids count from each row's first real token (as the model does under left padding; under right padding
    they equal the defaults for every real token), so the same graph serves both padding sides.
    """

    def __init__(self, model: DumpEmbedModel, use_token_type_ids: bool) -> None:
        super().__init__()
        self.model = model
        self.use_token_type_ids = use_token_type_ids
        self.takes_position_ids = counts_positions_from_mask(model.backbone)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
        kwargs = {}
        if self.takes_position_ids:
            kwargs["position_ids"] = (attention_mask.long().cumsum(dim=1) - 1).clamp(min=0)
        if self.use_token_type_ids:
            kwargs["token_type_ids"] = token_type_ids
        outputs = self.model.backbone(input_ids=input_ids, attention_mask=attention_mask, return_dict=True, **kwargs)
        return self.model.head(self.model.pool(outputs.last_hidden_state, attention_mask))


def graph_inputs(model: DumpEmbedModel, tokenizer) -> list[str]:
    """input_ids, attention_mask, and token_type_ids when both the tokenizer and the backbone use them."""
    names = ["input_ids", "attention_mask"]
    backbone_takes = "token_type_ids" in inspect.signature(model.backbone.forward).parameters
    if backbone_takes and "token_type_ids" in tokenizer.model_input_names:
        names.append("token_type_ids")
    return names
