"""Leaderboard submission kit: an ``mteb.ModelMeta`` for a DumpEmbed folder, its Python snippet for the mteb PR,
and the results folder laid out for the embeddings-benchmark/results PR.

The metadata is read from the folder itself (config.json, model.safetensors, sentence-transformers files,
README front matter): parameter counts from the safetensors header, training datasets from
``config.training_info``, ``adapted_from`` from ``config.base_model``; the loader is mteb's stock
``SentenceTransformerEncoderWrapper`` with ``trust_remote_code=True``.
"""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data.assets import EMBEDDED_MODELS
from .leaderboard import check_leaderboard_results
from .results import read_task_result

LOADER_KWARGS = {"trust_remote_code": True}
FRAMEWORK = ["Sentence Transformers", "PyTorch"]
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_EMBEDDING_KEYS = ("word_embeddings.weight", "embed_tokens.weight", "wte.weight")
# ISO 639-1 codes a model card may use -> mteb's "xxx-Scrp" codes (extend as needed).
LANGUAGE_CODES = {"en": "eng-Latn", "de": "deu-Latn", "fr": "fra-Latn", "es": "spa-Latn", "zh": "zho-Hans"}


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _front_matter(model_dir: Path) -> dict[str, Any]:
    readme = model_dir / "README.md"
    if not readme.is_file():
        return {}
    import yaml

    match = re.match(r"^---\n(.*?)\n---", readme.read_text(encoding="utf-8"), re.S)
    return (yaml.safe_load(match.group(1)) or {}) if match else {}


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
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
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


def _python_value(value: Any) -> str:
    if isinstance(value, enum.Enum):
        return repr(value.value)
    if isinstance(value, float) and value.is_integer():
        return repr(int(value))
    if isinstance(value, set):
        return "{" + ", ".join(repr(v) for v in sorted(value)) + "}" if value else "set()"
    return repr(value)


def model_meta_snippet(meta) -> str:
    """Python source for the mteb PR (``mteb/models/model_implementations/<org>_models.py``)."""
    variable = re.sub(r"\W", "_", meta.name.split("/")[-1]).lower()
    fields = []
    for key, value in meta:
        info = type(meta).model_fields[key]
        if key == "loader" or (not info.is_required() and value == info.get_default(call_default_factory=True)):
            continue
        fields.append(f"    {key}={_python_value(value)},")
    return "\n".join(
        [
            "from mteb.models.model_meta import ModelMeta",
            "from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper",
            "",
            f"{variable} = ModelMeta(",
            "    loader=SentenceTransformerEncoderWrapper,",
            *fields,
            ")",
            "",
        ]
    )


def _revision_folders(results_dir: Path, meta) -> list[Path]:
    path_name = meta.model_name_as_path()
    return [
        base / path_name / meta.revision
        for base in (results_dir / "results", results_dir)
        if (base / path_name / meta.revision).is_dir()
    ]


def write_submission(
    model_dir: str | Path, results_dir: str | Path, out: str | Path, options: SubmissionOptions = SubmissionOptions(),
    overwrite: bool = False,
) -> Path:
    """Write ``OUT/model_meta.py`` (the mteb PR snippet), ``OUT/model_meta.json`` and
    ``OUT/results/<org>__<name>/<revision>/`` (task JSONs + model_meta.json, the results-repo PR)."""
    meta = build_model_meta(model_dir, options)
    results_dir, out = Path(results_dir), Path(out)
    folders = _revision_folders(results_dir, meta)
    task_files = sorted(p for folder in folders[:1] for p in folder.glob("*.json") if p.name != "model_meta.json")
    if not task_files:
        raise FileNotFoundError(
            f"no mteb results for {meta.name} at revision {meta.revision} under {results_dir} (expected "
            f"{meta.model_name_as_path()}/{meta.revision}/<Task>.json, as `hf-dumpembed eval` writes them). Run "
            "`hf-dumpembed eval` with the same --model-name/--revision first."
        )
    for path in task_files:
        read_task_result(path)  # a clear error naming the file when it is not a valid mteb result
    check_leaderboard_results(task_files)  # official mteb tasks only, complete for their evaluation splits
    from .._utils.folders import staged_output

    with staged_output(out, overwrite=overwrite, inputs=[model_dir, results_dir]) as staging:
        target = staging / "results" / meta.model_name_as_path() / meta.revision
        target.mkdir(parents=True)
        for path in task_files:
            shutil.copy2(path, target / path.name)
        meta_json = json.dumps(meta.to_dict(), indent=2, default=str) + "\n"
        (target / "model_meta.json").write_text(meta_json, encoding="utf-8")
        (staging / "model_meta.json").write_text(meta_json, encoding="utf-8")
        (staging / "model_meta.py").write_text(model_meta_snippet(meta), encoding="utf-8")
        if not _HEX40.match(meta.revision):
            (staging / "WARNING.txt").write_text(
                f"revision {meta.revision!r} is not a 40-hex Hub commit: push the model and re-run with --revision.\n"
            )
    return out
