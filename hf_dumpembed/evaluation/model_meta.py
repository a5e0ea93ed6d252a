"""The ``mteb.ModelMeta`` of a DumpEmbed folder, read from the folder itself: every evaluation files its results
under it, and the leaderboard submission ships it.

config.json, model.safetensors, sentence-transformers files and the README front matter give parameter counts
(safetensors header), training datasets (``config.training_info``) and ``adapted_from`` (``config.base_model``);
``embed_dim`` lists every dimension the folder can be loaded at, ``framework`` the runtimes it ships for,
``citation`` the papers of the methods it uses.

The loader (`load_dumpembed_folder`) loads the folder from its path, offline, and refuses a folder that no longer
matches the facts in ``loader_kwargs["dumpembed"]`` (K, pooling, projection). `register_folder` puts the ModelMeta
in mteb's registry so that ``mteb.get_model(path)`` finds it; a leaderboard submission (`write_submission`) keeps
the stock wrapper and the Hub name.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._utils.hashing import update_with_file
from ..data.assets import EMBEDDED_MODELS
from ..model.papers import PAPERS
from ..model.projection_record import ProjectionInfo
from ..projections.registry import METHODS

FRAMEWORK = ["Sentence Transformers", "PyTorch", "Transformers"]  # every folder: ST, AutoModel (remote code), torch
# mteb framework literal -> files of an export in the folder (`export-onnx` layout, or sentence-transformers' onnx/
# and openvino/ backend folders).
EXPORT_FRAMEWORKS = {"ONNX": ("*.onnx", "onnx/*.onnx"),
                     "OpenVINO": ("openvino_model.xml", "openvino/*.xml", "openvino_*.xml")}
_EMBEDDING_KEYS = ("word_embeddings.weight", "embed_tokens.weight", "wte.weight")
# ISO 639-1 codes a model card may use -> mteb's "xxx-Scrp" codes (extend as needed).
LANGUAGE_CODES = {"en": "eng-Latn", "de": "deu-Latn", "fr": "fra-Latn", "es": "spa-Latn", "zh": "zho-Hans"}


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def _dumpembed_config(model_dir: Path) -> dict[str, Any]:
    """config.json of a DumpEmbed folder; ValueError for any other folder."""
    config = _read_json(model_dir / "config.json")
    if config.get("model_type") != "dumpembed":
        raise ValueError(f"{model_dir} is not a DumpEmbed model folder (config.json model_type != 'dumpembed').")
    return config


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
                count = math.prod(int(dim) for dim in shape)
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


def selectable_dims(config: dict[str, Any]) -> int | list[int]:
    """The output dimensions the folder can be loaded at: 1..max_dim when its fitted projection stores what
    recomposes it for any k (``projection_info["selection"]``), else its one ``projection_dim``."""
    dim = int(config["projection_dim"])
    info = ProjectionInfo.from_config(config)
    if info is not None and info.selection and isinstance(info.max_dim, int) and info.max_dim > 1:
        return list(range(1, info.max_dim + 1))
    return dim


def folder_facts(config: dict[str, Any]) -> dict[str, Any]:
    """What a DumpEmbed folder is: [DUMP] count K, pooling, and its fitted projection (None when it has none)."""
    info = ProjectionInfo.from_config(config)
    projection = {"method": info.method, "mode": info.mode, "dim": int(config["projection_dim"])} if info else None
    return {"num_dump_tokens": int(config.get("num_dump_tokens") or 0), "pooling": config.get("pooling"),
            "projection": projection}


def frameworks(model_dir: Path) -> list[str]:
    """mteb's ``framework`` list: the runtimes the folder ships for (ONNX / OpenVINO when their export is there)."""
    found = list(FRAMEWORK)
    for framework, patterns in EXPORT_FRAMEWORKS.items():
        if any(next(model_dir.glob(pattern), None) is not None for pattern in patterns):
            found.append(framework)
    return found


def citation(config: dict[str, Any]) -> str | None:
    """BibTeX of the papers whose methods the folder uses ([DUMP] tokens when K > 0, SpecTemp, EmbedFilter); None
    when it uses none of them."""
    info = ProjectionInfo.from_config(config)
    method = METHODS.get(str(info.method)) if info is not None else None
    paper = method.paper if method is not None else None
    keys = (["dump_tokens_2026"] if config.get("num_dump_tokens") else []) + ([paper] if paper else [])
    return "\n".join(PAPERS[key] for key in keys) or None


def load_dumpembed_folder(model_name: str, revision: str | None = None, *, folder: str,
                          dumpembed: dict[str, Any] | None = None, device: str | None = None,
                          embed_dim: int | None = None, projection_dim: int | None = None,
                          truncate_dim: int | None = None, trust_remote_code: bool = False, **kwargs: Any):
    """mteb loader of a local DumpEmbed folder: a sentence-transformers encoder loaded from ``folder``, offline (the
    ModelMeta's ``name`` and ``revision`` are its identity, not where it is read from).

    The output dimension k comes from any of ``embed_dim`` (mteb's ``get_model(path, embed_dim=k)``), ``truncate_dim``
    (the name mteb passes it to the wrapper under), ``projection_dim`` or ``model_kwargs={"projection_dim": k}``; two
    that disagree are an error. ``dumpembed``: the facts the ModelMeta states (`folder_facts`); a folder that no
    longer matches them is refused. The folder's code must be hf_dumpembed's own unless ``trust_remote_code``.
    """
    from ..model.folder_schema import folder_code_may_run

    path = Path(folder)
    config = _dumpembed_config(path)
    if dumpembed is not None:
        current = folder_facts(config)
        for key, expected in dumpembed.items():
            if current.get(key) != expected:
                raise ValueError(f"{path} no longer is the model its ModelMeta describes: {key} is {current.get(key)!r}"
                                 f" in the folder, {expected!r} in the ModelMeta; build the ModelMeta again "
                                 "(build_model_meta / register_folder).")
    runs_code = folder_code_may_run(path, trust_remote_code)  # a DumpEmbed folder: True, or refused
    model_kwargs = dict(kwargs.pop("model_kwargs", None) or {})
    k = requested_dim(embed_dim=embed_dim, truncate_dim=truncate_dim, projection_dim=projection_dim,
                      model_kwargs=model_kwargs.pop("projection_dim", None))
    if k is not None and k != int(config["projection_dim"]):
        model_kwargs["projection_dim"] = k
    return _folder_encoder()(str(path), revision=None, device=device, trust_remote_code=runs_code,
                             model_kwargs=model_kwargs or None, **kwargs)


def requested_dim(**sources: int | None) -> int | None:
    """The one output dimension the given loader arguments ask for (None when none does); arguments that ask for
    two different dimensions are a ValueError naming them."""
    given = {name: int(value) for name, value in sources.items() if value is not None}
    if len(set(given.values())) > 1:
        named = ", ".join(f"{name.replace('model_kwargs', 'model_kwargs[projection_dim]')}={value}"
                          for name, value in given.items())
        raise ValueError(f"these arguments ask for different output dimensions: {named}; pass one of them.")
    return next(iter(given.values()), None)


@functools.cache
def _folder_encoder() -> type:
    """mteb's ``SentenceTransformerEncoderWrapper`` whose ModelMeta names the dimension this loaded model outputs:
    ``load_model`` hands the loaded model the ModelMeta with every selectable dimension, and mteb would file results
    under the largest of them."""
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    class DumpEmbedFolderEncoder(SentenceTransformerEncoderWrapper):
        @property
        def mteb_model_meta(self):
            return getattr(self, "_mteb_model_meta", None)

        @mteb_model_meta.setter
        def mteb_model_meta(self, meta) -> None:
            dim = self.model.get_embedding_dimension()
            if meta is not None and not isinstance(meta.embed_dim, int) and dim:
                meta = meta.model_copy(update={"embed_dim": int(dim)})
            self._mteb_model_meta = meta

    return DumpEmbedFolderEncoder


def is_dumpembed_folder(model_dir: str | Path) -> bool:
    """True when ``model_dir``'s config.json says it is a DumpEmbed model."""
    return _read_json(Path(model_dir) / "config.json").get("model_type") == "dumpembed"


def plain_model_meta(model_dir: str | Path, model, options: SubmissionOptions = SubmissionOptions()):
    """The ``mteb.ModelMeta`` of any other sentence-transformers model folder (a baseline evaluated beside one's own):
    mteb's own description of the loaded ``model``, named and versioned as `model_identity` files results."""
    from mteb.models.model_meta import ModelMeta

    name, revision = model_identity(model_dir, options.name, options.revision)
    return ModelMeta.from_sentence_transformer_model(model).model_copy(update={"name": name, "revision": revision})


def build_model_meta(model_dir: str | Path, options: SubmissionOptions = SubmissionOptions(), strict: bool = True,
                     *, all_dims: bool = True, hub_loader: bool = False, trust_remote_code: bool = False):
    """The ``mteb.ModelMeta`` of a DumpEmbed folder (validated by mteb's pydantic model on construction).

    ``strict`` requires a licence (a leaderboard submission does); evaluation runs pass ``strict=False``.
    ``all_dims``: ``embed_dim`` lists every dimension the folder can be loaded at (`selectable_dims`); False: the one
    it outputs as saved (the ModelMeta results are filed under: mteb writes ``max(embed_dim)`` into a results
    ``model_meta.json``). ``hub_loader``: mteb's stock ``SentenceTransformerEncoderWrapper`` loading ``name`` from
    the Hub (the leaderboard snippet) instead of `load_dumpembed_folder` on this folder. ``trust_remote_code``: the
    folder loader runs a folder whose code is not hf_dumpembed's own.
    """
    from mteb.models.model_meta import ModelMeta
    from mteb.models.sentence_transformer_wrapper import SentenceTransformerEncoderWrapper

    model_dir = Path(model_dir)
    config = _dumpembed_config(model_dir)
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
    if hub_loader:  # the stock wrapper, for a Hub name (the submission kit)
        loader, loader_kwargs = SentenceTransformerEncoderWrapper, {"trust_remote_code": True}
    else:
        loader = functools.partial(load_dumpembed_folder, folder=str(model_dir.resolve()))
        loader_kwargs = {"dumpembed": folder_facts(config)} | ({"trust_remote_code": True} if trust_remote_code else {})
    return ModelMeta(
        loader=loader,
        loader_kwargs=loader_kwargs,
        name=name,
        revision=revision,
        release_date=release_date,
        languages=_languages(model_dir, config, options),
        n_parameters=n_parameters,
        n_embedding_parameters=n_embedding,
        memory_usage_mb=round(size / 1024**2, 1),
        max_tokens=_max_tokens(model_dir, st_config, config),
        embed_dim=selectable_dims(config) if all_dims else int(config["projection_dim"]),
        license=license_,
        open_weights=True,
        public_training_code=options.public_training_code,
        public_training_data=options.public_training_data,
        framework=frameworks(model_dir),
        reference=options.reference or (f"https://huggingface.co/{name}" if not name.startswith("local/") else None),
        similarity_fn_name="cosine",
        use_instructions=bool(prompts),
        training_datasets=training_datasets,
        adapted_from=base_model,
        contacts=list(options.contacts) if options.contacts else None,
        citation=citation(config),
    )


def register_folder(model_dir: str | Path, name: str | None = None, trust_remote_code: bool = False):
    """Put the folder's ModelMeta (`build_model_meta`, non-strict) in mteb's model registry under the path as given,
    its absolute path and its name, so that ``mteb.get_model(path)``, ``mteb.get_model_meta(path)`` and
    ``ModelMeta.load_model()`` load this folder, offline. mteb resolves names only in its registry and on the Hub:
    without this, ``mteb.get_model(path)`` finds no loader. Returns the ModelMeta."""
    from mteb.models.model_implementations import MODEL_REGISTRY

    meta = build_model_meta(model_dir, SubmissionOptions(name=name), strict=False,
                            trust_remote_code=trust_remote_code)
    for key in (str(model_dir), str(Path(model_dir).resolve()), meta.name):
        MODEL_REGISTRY[key] = meta
    return meta


def _max_tokens(model_dir: Path, st_config: dict[str, Any], config: dict[str, Any]) -> int | None:
    """The longest input the saved pipeline reads: tokenizer limit, else ST's, else the position limit."""
    tokenizer_limit = _read_json(model_dir / "tokenizer_config.json").get("model_max_length")
    for value in (tokenizer_limit, st_config.get("max_seq_length"), config.get("max_position_embeddings")):
        if isinstance(value, (int, float)) and 0 < value < 1e9:
            return int(value)
    return None
