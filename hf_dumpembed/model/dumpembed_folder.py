"""The one check every command that needs a DumpEmbed model folder makes first, with one clear message: a DumpEmbed
folder, with readable weights, whose config.json and tokenizer.json agree about the [DUMP] tokens."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .tokenizer_bounds import MAX_TOKENIZER_BYTES, TOKENIZER_FILE


def require_dumpembed_folder(folder: str | Path) -> Path:
    """``folder`` as a Path when it is a DumpEmbed model folder; ValueError saying what it is otherwise."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder: give a DumpEmbed model folder (`hf-dumpembed build`).")
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise ValueError(f"{folder} is not a DumpEmbed model folder (no config.json); build one with "
                         "`hf-dumpembed build`.")
    try:
        config = json.loads(config_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"{folder} is not a DumpEmbed model folder: its config.json is not valid JSON "
                         f"({error}).") from None
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if model_type != "dumpembed":
        what = " (a stock sentence-transformers folder)" if (folder / "modules.json").exists() else ""
        raise ValueError(f"{folder} is not a DumpEmbed model folder{what}: config.json model_type is {model_type!r}, "
                         "not 'dumpembed'. Build one with `hf-dumpembed build BACKBONE OUT`.")
    require_readable_weights(folder)
    require_consistent_dump_template(folder)
    return folder


class DamagedWeightsError(ValueError):
    """A safetensors file whose header does not describe its bytes (truncated, overwritten, not safetensors)."""


def require_readable_weights(folder: Path) -> None:
    """DamagedWeightsError naming the first top-level safetensors file of ``folder`` whose header safetensors cannot
    read (nothing is loaded)."""
    from safetensors import SafetensorError, safe_open

    for path in sorted(folder.glob("*.safetensors")):
        try:
            with safe_open(str(path), "numpy"):
                pass
        except (SafetensorError, OSError) as error:
            raise DamagedWeightsError(f"{path} is damaged ({error}): rebuild or re-download it.") from None


def template_prefix_ids(tokenizer_json: Mapping[str, Any]) -> list[tuple[str, list[int]]] | None:
    """(token, ids) of each special token the tokenizer.json template puts before the text (None: no template)."""
    processor = tokenizer_json.get("post_processor") or {}
    processors = processor.get("processors") or [] if processor.get("type") == "Sequence" else [processor]
    template = next((p for p in processors if isinstance(p, dict) and p.get("type") == "TemplateProcessing"), None)
    if template is None:
        return None
    specials, prefix = template.get("special_tokens") or {}, []
    for item in template.get("single") or []:
        if "Sequence" in item:
            break
        token = (item.get("SpecialToken") or {}).get("id")
        prefix.append((token, list((specials.get(token) or {}).get("ids") or [])))
    return prefix


def check_dump_template(config: Mapping[str, Any], tokenizer_json: Mapping[str, Any]) -> None:
    """Refuse a config.json whose ``num_dump_tokens`` / ``dump_token_ids`` / ``dump_token_offset`` disagree with the
    [DUMP] tokens its tokenizer.json post-processor actually prepends."""
    prefix = template_prefix_ids(tokenizer_json)
    k, ids = config.get("num_dump_tokens", 0), list(config.get("dump_token_ids") or [])
    offset = config.get("dump_token_offset", 0)
    if prefix is None:
        if k:
            raise ValueError(f"config.json expects {k} [DUMP] tokens, but tokenizer.json has no TemplateProcessing "
                             "post-processor that prepends them. The folder's files do not belong together; "
                             "rebuild it with `hf-dumpembed build`.")
        return
    found = [token for token, _ in prefix if isinstance(token, str) and token.startswith("[DUMP")]
    flat = [i for _, token_ids in prefix for i in token_ids]
    if len(found) != k or flat[offset:offset + k] != ids:
        raise ValueError(
            f"config.json says num_dump_tokens={k}, dump_token_ids={ids} at offset {offset}, but tokenizer.json's "
            f"template prepends {found or 'no [DUMP] tokens'} (ids before the text: {flat}). The folder's config and "
            "tokenizer do not belong together (vectors would be computed on other tokens); rebuild it with "
            "`hf-dumpembed build`, or restore the config.json or tokenizer.json it was built with."
        )


def require_consistent_dump_template(folder: str | Path) -> None:
    """`check_dump_template` on a DumpEmbed folder's config.json and tokenizer.json (nothing to check without a
    tokenizer.json; one over the size bound is left to `tokenizer_bounds`, which refuses it unread)."""
    folder = Path(folder)
    config, path = _json_object(folder / "config.json"), folder / TOKENIZER_FILE
    if config.get("model_type") != "dumpembed" or not path.is_file() or path.stat().st_size > MAX_TOKENIZER_BYTES:
        return
    tokenizer_json = _json_object(path)
    if not tokenizer_json:
        raise ValueError(f"{path} is not a JSON object; rebuild the folder with `hf-dumpembed build`.")
    check_dump_template(config, tokenizer_json)


def _json_object(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; {} when it is missing, unreadable or not an object."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
