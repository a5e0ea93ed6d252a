"""The shape of the folders hf_dumpembed writes, and the one check that a folder has it: an allowlist.

A folder's code runs here without ``--trust-remote-code`` only when every file in its tree is one that
`build` / `fit` / `train` (a DumpEmbed folder) or `export-st` (a stock sentence-transformers export) write, and
every file a loader reads for code (configs, module lists, module configs) holds only what those writers put
there. Nothing is admitted because it is absent from a list of bad shapes: a file, a key or a module that no
writer produces is a deviation, named with its file, its key and what to do. Any other folder loads with
``trust_remote_code=False`` (`folder_code_may_run`): transformers and sentence-transformers refuse its code. The
rules, by file:

* the tree: only the paths of `ROOT_FILES`, `DUMPEMBED_FILES` / `STOCK_FILES` (by pattern), nothing else — no other
  ``*.py``, no ``__init__.py``, no ``.pyc``, no pickles, no sub-folder a writer does not make, no link to a folder;
* the remote code (DumpEmbed folders): exactly the files of one release's set, each byte-identical to this package's
  copy or to a version released in that set (`hf_dumpembed._utils.remote_trust`);
* ``config.json``: a DumpEmbed config whose keys are `DumpEmbedConfig`'s own and whose ``auto_map`` is exactly
  `AUTO_MAP`; the backbone (``text_config``, or a stock export's ``config.json``) of a model type transformers
  itself defines, with no ``auto_map`` or ``custom_pipelines`` and only settings its config class stores as data;
* ``tokenizer_config.json``: no ``auto_map``, the tokenizer class the writer sets, no file named from elsewhere;
* ``modules.json``: the module stack the writers build (DumpEmbed: one stock Transformer at ``""``; stock: Transformer,
  Pooling, then Dense / Normalize at ``{idx}_{Name}``), each module's own config file allowlisted key by key.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from .._utils.hashing import sha256_file
from .._utils.remote_trust import REMOTE_FILE_NAMES, known_remote_hashes, known_remote_sets
from .tokenizer_bounds import json_items, require_bounded_tokenizer

logger = logging.getLogger(__name__)

# config.json keys a writer adds beside DumpEmbedConfig's own: transformers' Trainer switches the KV cache off on the
# model it trains (`train`), and save_pretrained keeps that flag.
RUNTIME_CONFIG_KEYS = ("use_cache",)
# config.json's auto_map in every DumpEmbed folder: our two classes, nothing else.
AUTO_MAP = {"AutoConfig": "configuration_dumpembed.DumpEmbedConfig", "AutoModel": "modeling_dumpembed.DumpEmbedModel"}
ARCHITECTURES = ["DumpEmbedModel"]
# The hooks by which a transformers config names code to import (PretrainedConfig's own), with why each is refused.
CONFIG_CODE_KEYS = {"auto_map": "names code to import", "custom_pipelines": "names code to import"}
# Config keys transformers' loading code acts on, at any depth, to choose code, kernels, module classes or the weights
# file (`modeling_utils`, `quantizers/`, `configuration_utils`); the config class stores them as data, so only a name
# list refuses them.
LOAD_TIME_KEYS = {
    "quantization_config": "transformers quantizes or rewrites the layers at load (and may import or fetch kernels)",
    "fusion_config": "transformers patches the model's module classes at load",
    "transformers_weights": "transformers loads the weights from the file it names",
    "distributed_config": "transformers shards the model at load",
    "attn_implementation": "transformers picks the attention kernel from it (Hub kernels included)",
    "_attn_implementation": "transformers picks the attention kernel from it (Hub kernels included)",
    "experts_implementation": "transformers picks the experts kernel from it",
    "_experts_implementation": "transformers picks the experts kernel from it",
    "kernel_config": "transformers maps layers to Hub kernels from it",
    "use_kernels": "transformers replaces layers with Hub kernels",
}
# sentence-transformers module class paths the writers use: the current one (a DumpEmbed folder's Transformer) and
# the portable one every release since 2.x resolves (a stock export's modules; hf_dumpembed.export.stock_compat).
LEGACY_MODULE_TYPES = {
    "Transformer": "sentence_transformers.models.Transformer",
    "Pooling": "sentence_transformers.models.Pooling",
    "Dense": "sentence_transformers.models.Dense",
    "Normalize": "sentence_transformers.models.Normalize",
}
# sentence-transformers Pooling mode -> the boolean key of the legacy Pooling config (all present, one true).
LEGACY_POOLING_FLAGS = {
    "cls": "pooling_mode_cls_token",
    "mean": "pooling_mode_mean_tokens",
    "max": "pooling_mode_max_tokens",
    "mean_sqrt_len_tokens": "pooling_mode_mean_sqrt_len_tokens",
    "weightedmean": "pooling_mode_weightedmean_tokens",
    "lasttoken": "pooling_mode_lasttoken",
}
LEGACY_DENSE_KEYS = ("in_features", "out_features", "bias", "activation_function")
# The only Dense activation a stock export writes (a linear map: the folded source Dense and the projection).
DENSE_ACTIVATION = "torch.nn.modules.linear.Identity"
ST_MODEL_CONFIG_KEYS = ("__version__", "default_prompt_name", "model_type", "prompts", "similarity_fn_name")
STOCK_ST_CONFIG_KEYS = {"max_seq_length": int, "do_lower_case": bool}
# Rotary settings a stock export's config.json repeats for transformers 4.x (5.x folds them into rope_parameters;
# hf_dumpembed.export.stock_compat.legacy_backbone_config writes them).
PORTABLE_BACKBONE_KEYS = ("rope_theta", "rope_scaling")
TRUST_HINT = ("Read those files; if you trust whoever made the folder, run the command again with "
              "--trust-remote-code (Python: trust_remote_code=True), or rebuild the folder with `hf-dumpembed build`.")


class UntrustedRemoteCode(ValueError):
    """A folder is not one hf_dumpembed wrote (its code could run here) and the user did not say to trust it."""


class FolderShape(str, Enum):
    """DUMPEMBED: `build` / `fit` / `train` output (remote code); STOCK: `export-st` output (no remote code)."""

    DUMPEMBED = "dumpembed"
    STOCK = "stock"


@dataclass(frozen=True)
class Deviation:
    """One way a folder differs from the shape its writer produces: the file, the key (if any), what is wrong."""

    path: str
    problem: str
    key: str | None = None

    def __str__(self) -> str:
        return f"{self.path}{f' [{self.key}]' if self.key else ''}: {self.problem}"


Check = Callable[[Path, str, FolderShape], list[Deviation]]


@dataclass(frozen=True)
class FileRule:
    """Files a writer produces: a full-match regex over the relative POSIX path, who writes it, its content check."""

    pattern: str
    what: str
    check: Check | None = None


def _read_json(folder: Path, rel: str) -> tuple[Any, list[Deviation]]:
    try:
        return json.loads((folder / rel).read_text(encoding="utf-8")), []
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return None, [Deviation(rel, f"is not readable JSON ({error.__class__.__name__}: {error})")]


def _code_hooks(rel: str, value: Any, hooks: dict[str, str] = CONFIG_CODE_KEYS, prefix: str = "") -> list[Deviation]:
    """A deviation for each key of ``hooks`` (key -> what a loader does with it) at any depth of ``value``."""
    return [Deviation(rel, f"{hooks[key]}; hf_dumpembed's writers never write it",
                      f"{prefix}{where + '.' if where else ''}{key}")
            for where, key, _ in json_items(value) if key in hooks]


def _object(folder: Path, rel: str) -> tuple[dict | None, list[Deviation]]:
    value, found = _read_json(folder, rel)
    if not found and not isinstance(value, dict):
        return None, [Deviation(rel, f"is a JSON {type(value).__name__}, not an object")]
    return value, found


# --- config.json -------------------------------------------------------------------------------------------------

def backbone_config_deviations(rel: str, config: Any, prefix: str = "",
                               portable: tuple[str, ...] = ()) -> list[Deviation]:
    """A backbone config must be of a model type transformers defines itself, name no code, and hold only settings
    its config class stores as data (a key the class consumes at load, e.g. an attention kernel, is refused;
    ``portable``: the keys a stock export repeats for older transformers)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING, CONFIG_MAPPING_NAMES

    if not isinstance(config, dict):
        return [Deviation(rel, "is not a transformers config (a JSON object)", prefix.rstrip(".") or None)]
    found = _code_hooks(rel, config, prefix=prefix) + _code_hooks(rel, config, LOAD_TIME_KEYS, prefix)
    model_type = config.get("model_type")
    if model_type not in CONFIG_MAPPING_NAMES:
        return found + [Deviation(rel, f"model_type {model_type!r} is not a model type transformers defines itself "
                                       "(its code would come from elsewhere)", f"{prefix}model_type")]
    config_class = CONFIG_MAPPING[model_type]
    if getattr(config_class, "sub_configs", None):
        parts = ", ".join(sorted(config_class.sub_configs))
        found.append(Deviation(rel, f"is a composite {model_type} config ({parts}): hf_dumpembed builds from a text "
                                    "model; build from its text backbone instead", f"{prefix}model_type"))
    found += _architecture_deviations(rel, config, config_class, prefix)
    if found:
        return found
    try:
        stored = config_class.from_dict(dict(config)).to_dict()
    except Exception as error:  # a config transformers cannot read is no folder a writer made
        return [Deviation(rel, f"transformers cannot read it as a {model_type} config ({error})", prefix or None)]
    return [Deviation(rel, f"is not a setting transformers' {model_type} config stores as data (it acts at load time)",
                      f"{prefix}{key}") for key in config if key not in stored and key not in portable]


def _config_class_of(module: Any, name: str) -> type | None:
    """The config class of the transformers model class ``name`` (None: no such class, or it cannot be imported)."""
    try:
        return getattr(getattr(module, name, None), "config_class", None)
    except Exception:  # a class whose optional backend is missing raises on access
        return None


def _architecture_deviations(rel: str, config: dict, config_class: type, prefix: str) -> list[Deviation]:
    """``architectures`` must name transformers' own model classes of the config's model type (the class a loader
    builds from it would otherwise read settings this config does not have)."""
    import transformers

    names = config.get("architectures")
    if names is None:
        return []
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return [Deviation(rel, "must be a list of transformers model class names", f"{prefix}architectures")]
    model_type = config_class.model_type
    wrong = [name for name in names if _config_class_of(transformers, name) is not config_class]
    return [Deviation(rel, f"{name!r} is not a transformers model class of model_type {model_type!r}: set it to the "
                           f"class of that type the backbone was saved with (e.g. rebuild the folder with "
                           "`hf-dumpembed build`)", f"{prefix}architectures") for name in wrong]


def check_config(folder: Path, rel: str, shape: FolderShape) -> list[Deviation]:
    """config.json: a DumpEmbed config (keys, auto_map, backbone) or a stock export's backbone config."""
    from ..remote.configuration_dumpembed import DumpEmbedConfig

    config, found = _object(folder, rel)
    if config is None:
        return found
    if shape is FolderShape.STOCK:
        return backbone_config_deviations(rel, config, portable=PORTABLE_BACKBONE_KEYS)
    allowed = frozenset(DumpEmbedConfig().to_dict()) | {"auto_map", *RUNTIME_CONFIG_KEYS}
    found = [Deviation(rel, "is not a setting of DumpEmbedConfig", key) for key in config if key not in allowed]
    if config.get("auto_map") != AUTO_MAP:
        found.append(Deviation(rel, f"must be exactly {AUTO_MAP} (hf_dumpembed's two classes)", "auto_map"))
    if config.get("architectures", ARCHITECTURES) != ARCHITECTURES:
        found.append(Deviation(rel, f"must be {ARCHITECTURES}", "architectures"))
    return found + backbone_config_deviations(rel, config.get("text_config"), prefix="text_config.")


# --- tokenizer -----------------------------------------------------------------------------------------------------

def check_tokenizer_config(folder: Path, rel: str, shape: FolderShape) -> list[Deviation]:
    """tokenizer_config.json: no auto_map, the fast tokenizer over tokenizer.json, no file taken from elsewhere."""
    from .tokenizer import TOKENIZER_CLASS

    config, found = _object(folder, rel)
    if config is None:
        return found
    found = _code_hooks(rel, config, {"auto_map": CONFIG_CODE_KEYS["auto_map"]})
    if config.get("tokenizer_class", TOKENIZER_CLASS) != TOKENIZER_CLASS:
        found.append(Deviation(rel, f"must be {TOKENIZER_CLASS!r} (the class over this folder's tokenizer.json)",
                               "tokenizer_class"))
    if config.get("backend", "tokenizers") != "tokenizers":
        found.append(Deviation(rel, "must be 'tokenizers'", "backend"))
    found += [Deviation(rel, "names a file outside this folder to read instead of its own tokenizer files", key)
              for key, value in config.items() if key.endswith("_file") and not _is_bare_name(value)]
    return found


def _is_bare_name(value: Any) -> bool:
    """None or a file name of this folder (no folder part, no way up, not absolute)."""
    return value is None or (isinstance(value, str) and not re.search(r"[/\\]|^\.\.?$|^~", value))


def check_json_object(folder: Path, rel: str, shape: FolderShape) -> list[Deviation]:
    """A data file (special tokens, shard index, records): a JSON object that names no code."""
    value, found = _object(folder, rel)
    return found if value is None else _code_hooks(rel, value)


# --- sentence-transformers files -----------------------------------------------------------------------------------

def _transformer_types() -> tuple[str, ...]:
    from sentence_transformers.base.modules.transformer import Transformer

    return f"{Transformer.__module__}.{Transformer.__name__}", LEGACY_MODULE_TYPES["Transformer"]


def check_modules(folder: Path, rel: str, shape: FolderShape) -> list[Deviation]:
    """modules.json: DumpEmbed: one stock Transformer at ""; stock: Transformer, Pooling, then Dense / Normalize."""
    modules, found = _read_json(folder, rel)
    if found:
        return found
    if not isinstance(modules, list) or not modules:
        return [Deviation(rel, "must be a non-empty list of modules")]
    if shape is FolderShape.DUMPEMBED:
        if len(modules) != 1 or not isinstance(modules[0], dict) or modules[0].get("type") not in _transformer_types():
            return [Deviation(rel, f"must list exactly one module, the stock Transformer ({_transformer_types()[0]}), "
                                   "as `hf-dumpembed build` writes it")]
        names = ["Transformer"]
    else:
        by_type = {path: name for name, path in LEGACY_MODULE_TYPES.items()}
        names = [by_type.get(entry.get("type")) if isinstance(entry, dict) else None for entry in modules]
        if None in names or names[:2] != ["Transformer", "Pooling"] or not set(names[2:]) <= {"Dense", "Normalize"}:
            return [Deviation(rel, "must list the stock export's modules: Transformer, Pooling, then Dense / Normalize "
                                   f"({', '.join(LEGACY_MODULE_TYPES.values())}), as `hf-dumpembed export-st` writes")]
    for index, (entry, name) in enumerate(zip(modules, names, strict=True)):
        expected = {"idx": index, "name": str(index), "path": "" if index == 0 else f"{index}_{name}"}
        extra = sorted(set(entry) - {*expected, "type"})
        if {key: entry.get(key) for key in expected} != expected or extra:
            found.append(Deviation(rel, f"module {index} must be {expected} plus its type", f"[{index}]"))
    return found


def check_st_config(folder: Path, rel: str, shape: FolderShape) -> list[Deviation]:
    """sentence_bert_config.json: exactly what the writer writes (DumpEmbed) or the legacy keys (stock)."""
    from .st_files import sentence_transformers_files

    config, found = _object(folder, rel)
    if config is None:
        return found
    if shape is FolderShape.DUMPEMBED:
        expected = sentence_transformers_files()[rel]
        return [Deviation(rel, "is not a key `hf-dumpembed build` writes (a loader would act on it)", key)
                for key in config if key not in expected] + \
               [Deviation(rel, f"must be {value!r} (what `hf-dumpembed build` writes)", key)
                for key, value in expected.items() if config.get(key) != value]
    return [Deviation(rel, f"is not a key `export-st` writes ({', '.join(STOCK_ST_CONFIG_KEYS)})", key)
            for key in config if key not in STOCK_ST_CONFIG_KEYS] + \
           [Deviation(rel, f"must be {kind.__name__}", key) for key, kind in STOCK_ST_CONFIG_KEYS.items()
            if key in config and type(config[key]) is not kind]


def _is_str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def check_st_model_config(folder: Path, rel: str, shape: FolderShape) -> list[Deviation]:
    """config_sentence_transformers.json: versions, prompts, the default prompt name and the similarity only."""
    from ..remote.configuration_dumpembed import SIMILARITY_FUNCTIONS  # the one list (the remote config checks it)

    config, found = _object(folder, rel)
    if config is None:
        return found
    found = [Deviation(rel, f"is not a key the writers write ({', '.join(ST_MODEL_CONFIG_KEYS)})", key)
             for key in config if key not in ST_MODEL_CONFIG_KEYS]
    rules = {
        "__version__": (_is_str_map(config.get("__version__", {})), "must map library names to version strings"),
        "prompts": (_is_str_map(config.get("prompts", {})), "must map prompt names to prompt strings"),
        "model_type": (config.get("model_type", "SentenceTransformer") == "SentenceTransformer",
                       "must be 'SentenceTransformer'"),
        "default_prompt_name": (config.get("default_prompt_name") is None
                                or config.get("default_prompt_name") in (config.get("prompts") or {}),
                                "must be null or one of the prompts' names"),
        "similarity_fn_name": (config.get("similarity_fn_name") in (None, *SIMILARITY_FUNCTIONS),
                               f"must be null or one of {', '.join(SIMILARITY_FUNCTIONS)}"),
    }
    return found + [Deviation(rel, problem, key) for key, (ok, problem) in rules.items() if not ok]


def check_module_config(folder: Path, rel: str, shape: FolderShape) -> list[Deviation]:
    """A stock module's config.json (1_Pooling/, 2_Dense/, 3_Normalize/), by its module: the legacy keys only."""
    config, found = _object(folder, rel)
    if config is None:
        return found
    module = rel.split("/")[0].split("_", 1)[1]
    allowed = {"Pooling": {"word_embedding_dimension", "include_prompt", *LEGACY_POOLING_FLAGS.values()},
               "Dense": set(LEGACY_DENSE_KEYS), "Normalize": set()}[module]
    found = [Deviation(rel, f"is not a key `export-st` writes for {module} ({', '.join(sorted(allowed)) or 'none'})",
                       key) for key in config if key not in allowed]
    if module == "Dense" and config.get("activation_function") != DENSE_ACTIVATION:
        found.append(Deviation(rel, f"must be {DENSE_ACTIVATION!r} (a linear map; the name is imported on load)",
                               "activation_function"))
    if module == "Pooling":
        found += [Deviation(rel, "must be true or false", key) for key in config
                  if key != "word_embedding_dimension" and not isinstance(config[key], bool)]
    return found


# --- remote code ---------------------------------------------------------------------------------------------------

def remote_set_deviations(folder: Path, files: list[str]) -> list[Deviation]:
    """The remote-code files of a DumpEmbed folder, each hashed once: every one byte-identical to this package's copy
    or a released version of it, and together exactly one release's set, each a version released in that set;
    otherwise the deviations from the nearest set (a file of no known version fits any set there)."""
    sets = known_remote_sets()
    known = known_remote_hashes(sets)
    present = {name: sha256_file(folder / name) for name in files if name in REMOTE_FILE_NAMES}
    unknown = [Deviation(name, f"differs from every version of hf_dumpembed's {name} (sha256 {digest[:12]}…)")
               for name, digest in sorted(present.items()) if digest not in known.get(name, set())]

    def release_deviations(release: dict[str, set[str]]) -> list[Deviation]:
        found = [Deviation(name, "is missing") for name in sorted(set(release) - set(present))]
        found += [Deviation(name, "is not one of the remote files released with the folder's other ones (hf_dumpembed "
                                  "never wrote them together); rebuild the folder with `hf-dumpembed build`")
                  for name in sorted(set(present) - set(release))]
        return found + [Deviation(name, "is a version of another release than the folder's other remote files "
                                        "(hf_dumpembed never wrote them together); rebuild the folder with "
                                        "`hf-dumpembed build`") for name in sorted(set(present) & set(release))
                        if present[name] in known.get(name, set()) and present[name] not in release[name]]
    return unknown + min((release_deviations(release) for release in sets), key=len, default=[])


# --- the tree ------------------------------------------------------------------------------------------------------

ROOT_FILES = (
    FileRule("config.json", "the model's configuration", check_config),
    FileRule("model.safetensors", "the weights"),
    FileRule(r"model-\d{5}-of-\d{5}\.safetensors", "a shard of the weights"),
    FileRule("model.safetensors.index.json", "the index of the weight shards", check_json_object),
    FileRule("tokenizer.json", "the tokenizer with its [DUMP] template"),
    FileRule("tokenizer_config.json", "the tokenizer's settings", check_tokenizer_config),
    FileRule("special_tokens_map.json", "the special tokens", check_json_object),
    FileRule("modules.json", "the sentence-transformers module stack", check_modules),
    FileRule("sentence_bert_config.json", "the Transformer module's settings", check_st_config),
    FileRule("config_sentence_transformers.json", "prompts and similarity", check_st_model_config),
    FileRule("README.md", "the model card"),
    FileRule("quantization.json", "int8 ranges and binary thresholds (`fit`)", check_json_object),
    FileRule(r"plots/[A-Za-z0-9_.-]+\.png", "a plot (`fit`)"),
    FileRule(r"\.gitattributes", "the Hub's attributes file"),
    FileRule(r"\.cache/huggingface/(\.gitignore|download/[A-Za-z0-9_./-]+\.(metadata|lock))",
             "huggingface_hub's record of a download into this folder"),
)
# The side files `train` writes under a trained folder's training/: name -> (format, what it holds). The schema, the
# card and push's staging checks read them from here.
TRAINING_SIDE_FILES = {"config.yaml": ("yaml", "the resolved run configuration"),
                       "environment.json": ("json", "library versions"),
                       "data_files.json": ("json", "hashes of the data files")}
DUMPEMBED_FILES = (
    *(FileRule(re.escape(name), "hf_dumpembed's remote code (`remote_set_deviations`)") for name in REMOTE_FILE_NAMES),
    FileRule(f"training/({'|'.join(map(re.escape, TRAINING_SIDE_FILES))})", "the training record (`train`)"),
)
STOCK_FILES = (
    FileRule("dumpembed_export.json", "the export's record of its DumpEmbed source", check_json_object),
    FileRule(r"[1-9][0-9]*_(Pooling|Dense|Normalize)/config\.json", "a stock module's settings", check_module_config),
    FileRule(r"[1-9][0-9]*_Dense/model\.safetensors", "a stock Dense module's weights"),
)
SHAPE_FILES = {FolderShape.DUMPEMBED: ROOT_FILES + DUMPEMBED_FILES, FolderShape.STOCK: ROOT_FILES + STOCK_FILES}
# Files both shapes must have (a DumpEmbed folder's remote-code files: one release's set, `remote_set_deviations`).
REQUIRED_FILES = ("config.json", "modules.json", "tokenizer.json")


def tree_entries(folder: Path) -> tuple[list[str], list[Deviation]]:
    """The files under ``folder`` (relative POSIX paths; a link to a regular file counts as that file, as in a Hub
    cache snapshot) and a deviation for each link to a folder, dangling link or special file."""
    files, found = [], []
    for directory, dirs, names in os.walk(folder, followlinks=False):
        base = Path(directory)
        for name in sorted(dirs + names):
            path = base / name
            rel = path.relative_to(folder).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISDIR(mode):
                continue
            if stat.S_ISLNK(mode):
                target = os.stat(path).st_mode if path.exists() else None
                if target is None or not stat.S_ISREG(target):
                    found.append(Deviation(rel, "is a link to a folder or to nothing; the writers make neither"))
                    continue
            elif not stat.S_ISREG(mode):
                found.append(Deviation(rel, "is not a regular file (a FIFO, socket or device)"))
                continue
            files.append(rel)
    return sorted(files), found


def folder_shape(folder: Path) -> FolderShape | None:
    """DUMPEMBED when config.json says model_type dumpembed, STOCK when it has a modules.json; None otherwise."""
    config = _object(folder, "config.json")[0] if (folder / "config.json").is_file() else None
    if isinstance(config, dict) and config.get("model_type") == "dumpembed":
        return FolderShape.DUMPEMBED
    return FolderShape.STOCK if (folder / "modules.json").is_file() and config is not None else None


def folder_deviations(folder: str | Path) -> list[Deviation]:
    """Every way ``folder`` differs from the shape hf_dumpembed's writers produce (empty: it is exactly one)."""
    folder = Path(folder)
    shape = folder_shape(folder)
    if shape is None:
        return [Deviation(".", "is neither a DumpEmbed folder (config.json model_type 'dumpembed') nor a stock "
                               "export (config.json and modules.json)")]
    files, found = tree_entries(folder)
    rules = SHAPE_FILES[shape]
    found += [Deviation(name, "is missing") for name in REQUIRED_FILES if name not in files]
    for rel in files:
        rule = next((rule for rule in rules if re.fullmatch(rule.pattern, rel)), None)
        if rule is None:
            found.append(Deviation(rel, f"is not a file hf_dumpembed writes into a {shape.value} folder"))
        elif rule.check is not None:
            found += rule.check(folder, rel, shape)
    if shape is FolderShape.STOCK:
        found += _stock_module_dirs(folder, files)
    else:
        found += remote_set_deviations(folder, files)
    return found


def _stock_module_dirs(folder: Path, files: list[str]) -> list[Deviation]:
    """A stock export's module folders are exactly those its modules.json names."""
    modules, problems = _read_json(folder, "modules.json")
    if problems or not isinstance(modules, list):
        return []
    named = {entry.get("path") for entry in modules if isinstance(entry, dict)} - {""}
    present = {rel.split("/")[0] for rel in files if "/" in rel and rel.split("/")[0][0].isdigit()}
    return [Deviation(f"{name}/", "is a module folder modules.json does not name") for name in sorted(present - named)]


def describe(deviations: list[Deviation]) -> str:
    return "\n".join(f"  - {item}" for item in deviations)


_TRUSTED_ANYWAY: set[str] = set()


def folder_code_may_run(folder: str | Path, trust_remote_code: bool = False) -> bool:
    """Whether loaders may run ``folder``'s own code (pass the answer as their ``trust_remote_code``).

    True for a local folder of exactly the shape hf_dumpembed's writers produce; any other folder or Hub id gets
    ``trust_remote_code`` (False: transformers and sentence-transformers refuse the code it names; True: a warning,
    once, that its own code runs). Raises UntrustedRemoteCode, naming every deviation, for a folder whose config says
    DumpEmbed but that is not exactly ours, and TokenizerBoundError for a tokenizer.json past `tokenizer_bounds`."""
    path = Path(folder)
    if not path.is_dir():
        return trust_remote_code
    require_bounded_tokenizer(path)  # any folder: a hostile tokenizer.json costs seconds, not minutes
    found = folder_deviations(path)
    if not found:
        return True
    if trust_remote_code:
        if str(path.resolve()) not in _TRUSTED_ANYWAY:
            _TRUSTED_ANYWAY.add(str(path.resolve()))
            logger.warning("Running %s's own code (--trust-remote-code): it is not exactly a folder hf_dumpembed "
                           "writes (%s).", folder, "; ".join(str(item) for item in found))
        return True
    if folder_shape(path) is FolderShape.DUMPEMBED:
        raise UntrustedRemoteCode(f"{folder} is not exactly a folder hf_dumpembed writes, and loading it could run "
                                  f"code that is not ours on this machine:\n{describe(found)}\n{TRUST_HINT}")
    return False


def is_trusted_folder(folder: str | Path) -> bool:
    """True only for a local folder of exactly the shape hf_dumpembed writes (its code may run without asking)."""
    return Path(folder).is_dir() and not folder_deviations(folder)


def trusted_summary(folder: str | Path) -> str:
    """What the check of a trusted folder verified, for reports (push)."""
    folder = Path(folder)
    shape = folder_shape(folder)
    files, _ = tree_entries(folder)
    code = [name for name in files if name in REMOTE_FILE_NAMES]
    what = (f"remote code ({', '.join(code)}) byte-identical to hf_dumpembed's own, config.json auto_map exactly "
            "hf_dumpembed's two classes, " if shape is FolderShape.DUMPEMBED else "no code, ")
    return (f"the folder has exactly the shape hf_dumpembed writes ({shape.value if shape else '?'}): {len(files)} "
            f"files, each one a writer produces; {what}modules.json and every module config as the writers write "
            "them, no auto_map in any other config")
