"""sentence-transformers files of a DumpEmbed folder: one stock Transformer module reading the model's output.

The three files are what sentence-transformers' own ``save`` writes for ``SentenceTransformer(modules=[Transformer(
folder, modality_config=MODALITY_CONFIG, module_output_name="sentence_embedding")], ...)`` (a test compares them
with that save), written directly so that saving a folder never loads its weights a second time.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import sentence_transformers
import torch
import transformers
from sentence_transformers.base.modules.transformer import Transformer

ST_FILES = ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json")
# Prompts for encode_query / encode_document when the source has none: queries and documents embedded alike.
DEFAULT_PROMPTS = {"query": "", "document": ""}
# The stock Transformer module reads the model's own `sentence_embedding` output: no custom ST module.
MODALITY_CONFIG = {"text": {"method": "forward", "method_output_name": "sentence_embedding"}}


def st_settings(config: Any | None) -> dict[str, Any]:
    """The prompts, default prompt and similarity a DumpEmbed config carries (its source's), with the defaults for
    folders that carry none: empty query/document prompts and cosine similarity."""
    prompts = dict(getattr(config, "prompts", None) or DEFAULT_PROMPTS)
    return {"prompts": prompts, "default_prompt_name": getattr(config, "default_prompt_name", None),
            "similarity_fn_name": getattr(config, "similarity_fn_name", None) or "cosine"}


def sentence_transformers_files(config: Any | None = None) -> dict[str, Any]:
    """File name -> JSON content of the three files, for a model with ``config``'s prompts and similarity."""
    settings = st_settings(config)
    return {
        "modules.json": [{"idx": 0, "name": "0", "path": "",
                          "type": f"{Transformer.__module__}.{Transformer.__name__}"}],
        "sentence_bert_config.json": {"transformer_task": "feature-extraction", "modality_config": MODALITY_CONFIG,
                                      "module_output_name": "sentence_embedding"},
        "config_sentence_transformers.json": {
            "__version__": {"pytorch": torch.__version__, "sentence_transformers": sentence_transformers.__version__,
                            "transformers": transformers.__version__},
            "default_prompt_name": settings["default_prompt_name"],
            "model_type": "SentenceTransformer",
            "prompts": dict(sorted(settings["prompts"].items())),
            "similarity_fn_name": settings["similarity_fn_name"],
        },
    }


def write_sentence_transformers_files(model_dir: str | Path, config: Any | None = None) -> None:
    """Add modules.json, sentence_bert_config.json and config_sentence_transformers.json to ``model_dir``.

    The pipeline is a single stock `Transformer` module pointed at the model's `sentence_embedding` output
    (pooling, projection and normalisation happen inside the model); the prompts, default prompt and similarity
    come from the model's ``config`` (`st_settings`). The weights and tokenizer written by transformers stay
    untouched.
    """
    for name, content in sentence_transformers_files(config).items():
        indent = 2 if name in ("modules.json", "config_sentence_transformers.json") else 4
        (Path(model_dir) / name).write_text(json.dumps(content, indent=indent, ensure_ascii=False), encoding="utf-8")
