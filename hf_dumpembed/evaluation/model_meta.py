"""The ``mteb.ModelMeta`` of a DumpEmbed folder, read from the folder itself: every evaluation files its results
under it, and the leaderboard submission ships it.

config.json, model.safetensors, sentence-transformers files and the README front matter (read with
huggingface_hub's ``metadata_load``) give parameter counts from the safetensors header, training datasets from
``config.training_info`` and ``adapted_from`` from ``config.base_model``; the loader is mteb's stock
``SentenceTransformerEncoderWrapper`` with ``trust_remote_code=True``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._utils.hashing import update_with_file
from ..data.assets import EMBEDDED_MODELS

LOADER_KWARGS = {"trust_remote_code": True}
FRAMEWORK = ["Sentence Transformers", "PyTorch"]
_EMBEDDING_KEYS = ("word_embeddings.weight", "embed_tokens.weight", "wte.weight")
# ISO 639-1 codes a model card may use -> mteb's "xxx-Scrp" codes (extend as needed).
LANGUAGE_CODES = {"en": "eng-Latn", "de": "deu-Latn", "fr": "fra-Latn", "es": "spa-Latn", "zh": "zho-Hans"}


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _front_matter(model_dir: Path) -> dict[str, Any]:
    """The README's YAML front matter (empty when there is no README or no front matter)."""
    from huggingface_hub import metadata_load

    readme = model_dir / "README.md"
    return (metadata_load(readme) or {}) if readme.is_file() else {}


def parameter_counts(model_dir: Path) -> tuple[int, int | None, int]:
    """(all parameters, embedding-matrix parameters, bytes) from the safetensors headers (no weights loaded).

    The projection's mean/matrix buffers count as parameters: they are stored weights the model applies.
    """
    from safetensors import safe_open

    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{model_dir} has no *.safetensors weights; is it a DumpEmbed model folder?")
    total, embedding, size = 0, None, 0
    for path in files:
        size += path.stat().st_size
        with safe_open(str(path), framework="pt") as handle:
            for key in handle.keys():  # noqa: SIM118 - safe_open has keys(), not iteration
                shape = handle.get_slice(key).get_shape()
                count = 1
                for dim in shape:
                    count *= int(dim)
                total += count
                if key.endswith(_EMBEDDING_KEYS) and embedding is None and len(shape) == 2:
                    embedding = count
    return total, embedding, size


def content_revision(model_dir: str | Path) -> str:
    """A 40-hex revision for a folder that has no Hub commit yet: sha1 over config.json and the weights.

    It changes whenever the weights or config change, so local results never mix two different models; after a
    push, pass the Hub commit instead (``--revision``).
    """
    model_dir = Path(model_dir)
    digest = hashlib.sha1()
    for path in [model_dir / "config.json", *sorted(model_dir.glob("*.safetensors"))]:
        if path.is_file():
            digest.update(path.name.encode())
            update_with_file(digest, path)
    return digest.hexdigest()


def model_identity(model_dir: str | Path, name: str | None = None, revision: str | None = None) -> tuple[str, str]:
    """(``org/name``, revision) under which results are filed.

    Name: ``name``, else the Hub id of a Hub-cache snapshot folder (``models--org--name/snapshots/<sha>``), else
    ``local/<folder name>``. Revision: ``revision``, else the snapshot's commit, else :func:`content_revision`.
    """
    model_dir = Path(model_dir).resolve()
    snapshot = None
    if model_dir.parent.name == "snapshots" and model_dir.parent.parent.name.startswith("models--"):
        snapshot = (model_dir.parent.parent.name.removeprefix("models--").replace("--", "/"), model_dir.name)
    if name is not None and "/" not in name:
        raise ValueError(f"model name must look like 'organization/model_name' (mteb's format); got {name!r}.")
    resolved_name = name or (snapshot[0] if snapshot else f"local/{model_dir.name}")
    resolved_revision = revision or (snapshot[1] if snapshot else content_revision(model_dir))
    return resolved_name, resolved_revision


@dataclass(frozen=True)
class SubmissionOptions:
    """What the folder cannot tell: identity, dates, licence, languages, links."""

    name: str | None = None
    revision: str | None = None
    release_date: str | None = None
    license: str | None = None
    languages: tuple[str, ...] | None = None
    reference: str | None = None
    public_training_code: str | None = None
    public_training_data: str | None = None
    contacts: tuple[str, ...] | None = None


def _languages(model_dir: Path, config: dict[str, Any], options: SubmissionOptions) -> list[str] | None:
    if options.languages:
        return list(options.languages)
    front = _front_matter(model_dir).get("language")
    base = EMBEDDED_MODELS.get(config.get("base_model") or "", {}).get("language")
    codes = [front] if isinstance(front, str) else list(front or []) or ([base] if base else [])
    mapped = [LANGUAGE_CODES.get(code, code) for code in codes]
    return mapped or None


def build_model_meta(model_dir: str | Path, options: SubmissionOptions = SubmissionOptions(), strict: bool = True):
    """The ``mteb.ModelMeta`` of a DumpEmbed folder (validated by mteb's pydantic model on construction).

    ``strict`` requires a licence (a leaderboard submission does); evaluation runs pass ``strict=False``.
    """
    from mteb.models.model_meta import ModelMeta
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    model_dir = Path(model_dir)
    config = _read_json(model_dir / "config.json")
    if config.get("model_type") != "dumpembed":
        raise ValueError(f"{model_dir} is not a DumpEmbed model folder (config.json model_type != 'dumpembed').")
    name, revision = model_identity(model_dir, options.name, options.revision)
    n_parameters, n_embedding, size = parameter_counts(model_dir)
    st_config = _read_json(model_dir / "sentence_bert_config.json")
    prompts = {k: v for k, v in _read_json(model_dir / "config_sentence_transformers.json").get("prompts", {}).items()
               if v}
    front = _front_matter(model_dir)
    base_model = config.get("base_model") or None
    license_ = options.license or front.get("license") or EMBEDDED_MODELS.get(base_model or "", {}).get("license")
    if not license_ and strict:
        raise ValueError(f"no licence known for {model_dir}: pass --license (e.g. apache-2.0).")
    training_info = config.get("training_info") or {}
    training_datasets = {str(d["name"]) for d in training_info.get("datasets", []) if d.get("name")}
    release_date = options.release_date or (training_info.get("trained_at") or "")[:10] or dt.date.today().isoformat()
    return ModelMeta(
        loader=SentenceTransformerEncoderWrapper,
        loader_kwargs=dict(LOADER_KWARGS),
        name=name,
        revision=revision,
        release_date=release_date,
        languages=_languages(model_dir, config, options),
        n_parameters=n_parameters,
        n_embedding_parameters=n_embedding,
        memory_usage_mb=round(size / 1024**2, 1),
        max_tokens=_max_tokens(model_dir, st_config, config),
        embed_dim=int(config["projection_dim"]),
        license=license_,
        open_weights=True,
        public_training_code=options.public_training_code,
        public_training_data=options.public_training_data,
        framework=list(FRAMEWORK),
        reference=options.reference or (f"https://huggingface.co/{name}" if not name.startswith("local/") else None),
        similarity_fn_name="cosine",
        use_instructions=bool(prompts),
        training_datasets=training_datasets,
        adapted_from=base_model,
        contacts=list(options.contacts) if options.contacts else None,
    )


def _max_tokens(model_dir: Path, st_config: dict[str, Any], config: dict[str, Any]) -> int | None:
    """The longest input the saved pipeline reads: tokenizer limit, else ST's, else the position limit."""
    tokenizer_limit = _read_json(model_dir / "tokenizer_config.json").get("model_max_length")
    for value in (tokenizer_limit, st_config.get("max_seq_length"), config.get("max_position_embeddings")):
        if isinstance(value, (int, float)) and 0 < value < 1e9:
            return int(value)
    return None
