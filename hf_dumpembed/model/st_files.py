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


# The prompt names sentence-transformers' encode_document tries, in its order (encode_query tries "query" only).
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")


def side_prompts(prompts: dict[str, str], default_prompt_name: str | None = None) -> dict[str, str]:
    """The texts sentence-transformers' ``encode_query`` / ``encode_document`` put before a query / a document with
    these prompts: the ``query`` prompt, the first of `DOCUMENT_PROMPT_NAMES`, else the default prompt, else none."""
    fallback = prompts.get(default_prompt_name, "") if default_prompt_name else ""
    document = next((prompts[name] for name in DOCUMENT_PROMPT_NAMES if name in prompts), fallback)
    return {"query": prompts.get("query", fallback), "document": document}


def folder_prompts(model_dir: str | Path, config: Any) -> dict[str, str]:
    """The prompts of the folder ``model_dir`` whose loaded config is ``config``: config.json's (`st_settings`:
    `DEFAULT_PROMPTS` where a folder built before config.json named them has none), which must equal those of its
    config_sentence_transformers.json (what sentence-transformers applies), so every export carries the prompts the
    folder's own ``encode_query`` / ``encode_document`` use."""
    prompts = st_settings(config)["prompts"]
    path = Path(model_dir) / "config_sentence_transformers.json"
    if path.is_file():
        stated = json.loads(path.read_text(encoding="utf-8")).get("prompts") or DEFAULT_PROMPTS
        if stated != prompts:
            raise ValueError(f"{model_dir}: config_sentence_transformers.json has the prompts {stated!r} and "
                             f"config.json {prompts!r}; sentence-transformers reads the first, transformers and the "
                             "exports the second. Make them equal (edit the `prompts` of one file to match the "
                             "other), then export again.")
    return prompts


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
    """Add modules.json, sentence_bert_config.json and config_sentence_transformers.json to ``model_dir``
    (`sentence_transformers_files`); the weights and tokenizer written by transformers stay untouched."""
    for name, content in sentence_transformers_files(config).items():
        indent = 2 if name in ("modules.json", "config_sentence_transformers.json") else 4
        (Path(model_dir) / name).write_text(json.dumps(content, indent=indent, ensure_ascii=False), encoding="utf-8")
