"""sentence-transformers files of a DumpEmbed folder, written by sentence-transformers itself (stock modules)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules.transformer import Transformer

ST_FILES = ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json")
# Prompts for encode_query / encode_document: DumpEmbed embeds queries and documents the same way.
DEFAULT_PROMPTS = {"query": "", "document": ""}
# The stock Transformer module reads the model's own `sentence_embedding` output: no custom ST module.
MODALITY_CONFIG = {"text": {"method": "forward", "method_output_name": "sentence_embedding"}}


def st_settings(config: Any | None) -> dict[str, Any]:
    """The prompts, default prompt and similarity a DumpEmbed config carries (its source's), with the defaults for
    folders that carry none: empty query/document prompts and cosine similarity."""
    prompts = dict(getattr(config, "prompts", None) or DEFAULT_PROMPTS)
    return {"prompts": prompts, "default_prompt_name": getattr(config, "default_prompt_name", None),
            "similarity_fn_name": getattr(config, "similarity_fn_name", None) or "cosine"}


def write_sentence_transformers_files(model_dir: str | Path, config: Any | None = None) -> None:
    """Add modules.json, sentence_bert_config.json and config_sentence_transformers.json to ``model_dir``.

    The pipeline is a single stock `Transformer` module pointed at the model's `sentence_embedding` output
    (pooling, projection and normalisation happen inside the model); the prompts, default prompt and similarity
    come from the model's ``config`` (`st_settings`). The files are produced by sentence-transformers' own `save`
    in a scratch folder, and only those files are copied, so the model weights and tokenizer written by
    transformers stay untouched.
    """
    model_dir = Path(model_dir)
    transformer = Transformer(
        str(model_dir),
        model_kwargs={"trust_remote_code": True},
        config_kwargs={"trust_remote_code": True},
        processor_kwargs={"trust_remote_code": True},
        modality_config=MODALITY_CONFIG,
        module_output_name="sentence_embedding",
    )
    st_model = SentenceTransformer(modules=[transformer], **st_settings(config))
    with tempfile.TemporaryDirectory() as scratch:
        st_model.save(scratch)
        for name in ST_FILES:
            shutil.copyfile(Path(scratch) / name, model_dir / name)
