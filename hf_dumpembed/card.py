"""Render a model card (the folder's README.md) from the template in ``model_cards/`` and the folder's own files.

Only what the folder holds is shown: a section whose data is missing is left out, never filled with a
placeholder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from huggingface_hub import ModelCard, ModelCardData

from .assets import EMBEDDED_MODELS

TEMPLATE = Path(__file__).resolve().parent / "model_cards" / "dumpembed.md"
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")
POOLING_TEXT = {"cls": "[CLS]", "last": "last-token", "mean": "mean"}
INIT_TEXT = {
    "mean": "mean of the vocabulary embedding rows plus small Gaussian noise",
    "cls": "copy of the [CLS]/BOS embedding row plus small Gaussian noise",
    "normal": "N(0, 0.02)",
}
CITATIONS = """\
@inproceedings{dump_tokens_2026,
  title     = {Reducing Representational Interference in Retrieval Embeddings with Trainable Prefix Tokens},
  booktitle = {Proceedings of the 35th ACM International Conference on Information and Knowledge Management (CIKM '26)},
  year      = {2026},
  doi       = {10.1145/3799682.3840002},
  note      = {arXiv:2611.07298}
}
@misc{spectemp_2026,
  title  = {Spectral Tempering for Embedding Compression in Dense Passage Retrieval},
  author = {Li, Yongkang and Eustratiadis, Panagiotis and Kanoulas, Evangelos},
  year   = {2026}
}
@misc{embedfilter_2026,
  title = {Your UnEmbedding Matrix is Secretly a Feature Lens for Text Embeddings},
  year  = {2026},
  note  = {arXiv:2606.07502}
}"""


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def prefix_template(model_dir: Path) -> str:
    """The tokenizer's single-input template from tokenizer.json, e.g. ``[CLS] [DUMP1] [DUMP2] $A [SEP]``."""
    processor = _read_json(model_dir / "tokenizer.json").get("post_processor") or {}
    if processor.get("type") == "Sequence":
        processor = next((p for p in processor["processors"] if p.get("type") == "TemplateProcessing"), {})
    pieces = []
    for piece in processor.get("single", []):
        if "SpecialToken" in piece:
            pieces.append(piece["SpecialToken"]["id"])
        elif "Sequence" in piece:
            pieces.append("$" + piece["Sequence"]["id"])
    return " ".join(pieces).replace("$A", "text")


def read_dump_config(model_dir: Path) -> dict[str, Any]:
    """The folder's config.json; a clear error when it is not a DumpEmbed model."""
    config = _read_json(model_dir / "config.json")
    if config.get("model_type") != "dumpembed":
        raise ValueError(f"{model_dir} is not a DumpEmbed model folder (config.json model_type must be 'dumpembed').")
    return config


def card_context(
    model_dir: Path, config: dict[str, Any], model_id: str | None = None, revision: str | None = None
) -> dict[str, Any]:
    """Everything the template shows, read from ``model_dir``; snippets load ``model_id`` (default: the folder)."""
    text_config = config["text_config"]
    tokenizer_config = _read_json(model_dir / "tokenizer_config.json")
    base_model = config.get("base_model") or ""
    k = config.get("num_dump_tokens", 0)
    projected = bool(config.get("projection_info"))
    limitations = []
    if k and not config.get("training_info"):
        limitations.append(
            "The [DUMP] embedding rows are initialised, not trained: the paper's gains come from fine-tuning the "
            "model with the tokens (InfoNCE with hard negatives). Use this folder as a starting point for training."
        )
    limitations.append(
        f"Inputs are truncated to {tokenizer_config.get('model_max_length')} tokens, [DUMP] and special tokens "
        "included."
    )
    limitations.append("Loading needs `trust_remote_code=True` (or use the stock export, which does not).")

    model_id = model_id or str(model_dir)
    return {
        "title": model_id.rstrip("/").split("/")[-1],
        "model_id": model_id,
        "revision_arg": f', revision="{revision}"' if revision else "",
        "base_model_display": base_model or text_config.get("_name_or_path", text_config["model_type"]),
        "backbone_kind": "decoder" if config.get("pooling") == "last" else "encoder",
        "backbone_type": text_config["model_type"],
        "num_layers": text_config.get("num_hidden_layers"),
        "hidden_size": text_config.get("hidden_size"),
        "num_dump_tokens": k,
        "dump_tokens": ", ".join(f"[DUMP{i + 1}] ({t})" for i, t in enumerate(config.get("dump_token_ids", []))),
        "template": prefix_template(model_dir),
        "dump_init_text": INIT_TEXT.get(config.get("dump_init") or "", "not recorded"),
        "pooling_text": POOLING_TEXT[config.get("pooling", "cls")],
        "projected": projected,
        "projection_dim": config.get("projection_dim"),
        "normalize": config.get("normalize", True),
        "max_seq_length": tokenizer_config.get("model_max_length"),
        "limitations": limitations,
        "citations": CITATIONS,
    }


def card_metadata(config: dict[str, Any]) -> ModelCardData:
    """The YAML front matter: library, task, tags, and base model / license / language where they are known."""
    base_model = config.get("base_model") or ""
    known = EMBEDDED_MODELS.get(base_model, {})
    return ModelCardData(
        library_name="sentence-transformers",
        pipeline_tag="sentence-similarity",
        tags=["sentence-transformers", "feature-extraction", "sentence-similarity", "dumpembed", "dump-tokens"],
        base_model=base_model if _HUB_ID.match(base_model) else None,
        license=known.get("license"),
        language=known.get("language"),
    )


def render_card(model_dir: str | Path, model_id: str | None = None, revision: str | None = None) -> str:
    """The model card of ``model_dir`` as markdown with YAML front matter.

    ``model_id`` is what the usage snippets load (a Hub repo id, or by default the folder's path) and
    ``revision`` the commit they pin.
    """
    model_dir = Path(model_dir)
    config = read_dump_config(model_dir)
    context = card_context(model_dir, config, model_id, revision)
    card = ModelCard.from_template(card_metadata(config), template_path=str(TEMPLATE), **context)
    return re.sub(r"\n{3,}", "\n\n", str(card)).strip() + "\n"


def write_card(model_dir: str | Path, model_id: str | None = None, revision: str | None = None) -> Path:
    """Render the card into ``model_dir/README.md``."""
    path = Path(model_dir) / "README.md"
    path.write_text(render_card(model_dir, model_id, revision))
    return path
