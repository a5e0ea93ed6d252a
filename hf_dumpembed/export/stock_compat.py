"""Rewrite a stock sentence-transformers export in the file formats that old and new clients all read.

sentence-transformers 6.x saves its own newest formats; older clients refuse them:

* ``modules.json`` class paths ``sentence_transformers.base.modules.*`` do not import in sentence-transformers 5.x;
  the ``sentence_transformers.models.*`` names resolve in 3.x, 5.x and (through its import aliases) 6.x.
* 6.x-only config keys (``embedding_dimension``, ``modality_config``, ``module_output_name``, ...) are unknown
  keyword arguments to the 3.x modules. The legacy keys (``word_embedding_dimension``, ``pooling_mode_*``,
  ``max_seq_length``) are still read by 6.x.
* transformers 4.x reads ``tokenizer_config.json``'s ``extra_special_tokens`` as a dict of named tokens and fails on
  the list transformers 5.x writes; ``additional_special_tokens`` (a list) is read identically by both.
* transformers 4.x reads a rotary backbone's base frequency from ``rope_theta`` (5.x: ``rope_parameters``); without
  it 4.x would silently fall back to its default base and give other vectors.

Each rewrite keeps the meaning for transformers 5.x / sentence-transformers 6.x unchanged (tested).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ..model.folder_schema import LEGACY_DENSE_KEYS, LEGACY_MODULE_TYPES, LEGACY_POOLING_FLAGS

# Dense routing keys at these values are what every version assumes; anything else cannot be expressed.
DEFAULT_DENSE_ROUTING = {"module_input_name": ("sentence_embedding",),
                         "module_output_name": (None, "sentence_embedding")}


def _read(path: Path) -> Any:
    return json.loads(path.read_text())


def _write(path: Path, value: Any, indent: int = 2) -> None:
    path.write_text(json.dumps(value, indent=indent, ensure_ascii=False) + "\n")


def copy_tokenizer_files(source: Path, target: Path) -> None:
    """Copy the tokenizer files ``source`` has into ``target`` (the stock and the ONNX export both carry them)."""
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (source / name).exists():
            shutil.copyfile(source / name, target / name)


def legacy_modules(modules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """modules.json entries with ``sentence_transformers.models.*`` class paths."""
    out = []
    for module in modules:
        name = module["type"].rsplit(".", 1)[-1]
        if name not in LEGACY_MODULE_TYPES:
            raise ValueError(f"modules.json lists {module['type']!r}, which has no portable class path; a stock "
                             f"export holds only {', '.join(LEGACY_MODULE_TYPES)}.")
        out.append({**module, "type": LEGACY_MODULE_TYPES[name]})
    return out


def legacy_transformer_config(max_seq_length: int | None, do_lower_case: bool = False) -> dict[str, Any]:
    """sentence_bert_config.json in the 2.x/3.x format (token embeddings from ``last_hidden_state``, the default)."""
    return {"max_seq_length": max_seq_length, "do_lower_case": do_lower_case}


def check_default_transformer_routing(config: dict[str, Any]) -> None:
    """Raise unless the 6.x Transformer config feeds ``last_hidden_state`` to pooling (all that 3.x can express)."""
    text = (config.get("modality_config") or {}).get("text", {"method_output_name": "last_hidden_state"})
    if text.get("method_output_name") != "last_hidden_state" or config.get("module_output_name") not in (
        None, "token_embeddings"
    ):
        raise ValueError(f"the exported Transformer module routes {config}; only the stock token-embedding output "
                         "has a portable form.")


def legacy_pooling_config(config: dict[str, Any]) -> dict[str, Any]:
    """1_Pooling/config.json with ``word_embedding_dimension`` and one ``pooling_mode_*`` flag per mode."""
    mode = config["pooling_mode"]
    modes = [mode] if isinstance(mode, str) else list(mode)
    unknown = [m for m in modes if m not in LEGACY_POOLING_FLAGS]
    if unknown or len(modes) != 1:
        raise ValueError(f"pooling mode {mode!r} has no portable form; use one of {', '.join(LEGACY_POOLING_FLAGS)}.")
    flags = {flag: name in modes for name, flag in LEGACY_POOLING_FLAGS.items()}
    return {"word_embedding_dimension": config["embedding_dimension"], **flags,
            "include_prompt": config.get("include_prompt", True)}


def legacy_dense_config(config: dict[str, Any]) -> dict[str, Any]:
    """2_Dense/config.json with only the keys sentence-transformers 3.x's Dense accepts."""
    extra = {key: value for key, value in config.items() if key not in LEGACY_DENSE_KEYS}
    for key, value in extra.items():
        if key == "use_residual" and value is False:
            continue
        if value not in DEFAULT_DENSE_ROUTING.get(key, ()):
            raise ValueError(f"Dense config key {key}={value!r} has no portable form (older clients ignore it).")
    return {key: config[key] for key in LEGACY_DENSE_KEYS}


def legacy_tokenizer_config(config: dict[str, Any]) -> dict[str, Any]:
    """tokenizer_config.json with a list of extra special tokens under ``additional_special_tokens``."""
    config = dict(config)
    extra = config.get("extra_special_tokens")
    if isinstance(extra, list):
        del config["extra_special_tokens"]
        merged = list(config.get("additional_special_tokens") or [])
        config["additional_special_tokens"] = merged + [token for token in extra if token not in merged]
    return config


def legacy_backbone_config(config: dict[str, Any]) -> dict[str, Any]:
    """config.json plus ``rope_theta`` (and ``rope_scaling`` when not the default) for transformers 4.x."""
    config = dict(config)
    rope = config.get("rope_parameters")
    if isinstance(rope, dict) and "rope_theta" in rope:
        config.setdefault("rope_theta", rope["rope_theta"])
        if rope.get("rope_type", "default") != "default":
            config.setdefault("rope_scaling", {key: value for key, value in rope.items() if key != "rope_theta"})
    return config


def make_portable(folder: str | Path, max_seq_length: int | None) -> None:
    """Rewrite the stock export in ``folder`` (in place) in the portable formats described above."""
    folder = Path(folder)
    modules = _read(folder / "modules.json")
    for module in modules:
        name = module["type"].rsplit(".", 1)[-1]
        config_path = folder / module["path"] / "config.json"
        if name == "Pooling":
            _write(config_path, legacy_pooling_config(_read(config_path)), indent=4)
        elif name == "Dense":
            _write(config_path, legacy_dense_config(_read(config_path)), indent=4)
        elif name == "Normalize" and module["path"]:
            # Its 6.x routing keys are the defaults; older releases take no arguments at all.
            _write(config_path, {}, indent=4)
    _write(folder / "modules.json", legacy_modules(modules))
    check_default_transformer_routing(_read(folder / "sentence_bert_config.json"))
    _write(folder / "sentence_bert_config.json", legacy_transformer_config(max_seq_length), indent=4)
    for name, rewrite in (("tokenizer_config.json", legacy_tokenizer_config), ("config.json", legacy_backbone_config)):
        if (folder / name).exists():
            _write(folder / name, rewrite(_read(folder / name)))
