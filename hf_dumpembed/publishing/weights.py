"""What `push` may stage as weights: the safetensors files the model loads, holding exactly its tensors.

The expected tensors come from the model built on the ``meta`` device (no memory, no weights) by this package's
own classes, never by the folder's code: a DumpEmbed folder through ``hf_dumpembed.remote.DumpEmbedModel``, a
stock export's backbone through ``AutoModel.from_config`` (``trust_remote_code=False``) and its ``Dense`` modules
from their config. Each file is then read with ``safetensors.safe_open``: its tensor names must be the expected
ones (no extra, none missing), each of the expected shape, and every floating-point tensor finite.
"""

from __future__ import annotations

import json
from pathlib import Path


def read_json(path: Path) -> object:
    """The JSON value in ``path``; None when it cannot be read as JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _meta_shapes(model_factory) -> dict[str, tuple[int, ...]]:
    """Name -> shape of the state dict of the model ``model_factory()`` builds on the meta device."""
    import torch

    with torch.device("meta"):
        model = model_factory()
    return {name: tuple(tensor.shape) for name, tensor in model.state_dict().items()}


def backbone_shapes(folder: Path, dumpembed: bool) -> dict[str, tuple[int, ...]]:
    """The tensors of the top-level model: DumpEmbedModel (the package's class) or the stock AutoModel."""
    if dumpembed:
        from ..remote import DumpEmbedConfig, DumpEmbedModel

        config = DumpEmbedConfig.from_pretrained(str(folder))
        return _meta_shapes(lambda: DumpEmbedModel(config))
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
    return _meta_shapes(lambda: AutoModel.from_config(config, trust_remote_code=False))


def top_level_weight_files(folder: Path) -> list[str]:
    """The top-level safetensors files transformers loads: the index's shards, else ``model.safetensors``."""
    index = read_json(folder / "model.safetensors.index.json")
    if isinstance(index, dict) and isinstance(index.get("weight_map"), dict):
        return sorted({str(shard) for shard in index["weight_map"].values()})
    return ["model.safetensors"]


def dense_shapes(module_dir: Path) -> dict[str, tuple[int, ...]]:
    """The tensors of a sentence-transformers ``Dense`` module, from its config.json."""
    config = read_json(module_dir / "config.json")
    if not isinstance(config, dict):
        return {}
    inputs, outputs = int(config.get("in_features", 0)), int(config.get("out_features", 0))
    shapes = {"linear.weight": (outputs, inputs)}
    if config.get("bias", True):
        shapes["linear.bias"] = (outputs,)
    return shapes


def expected_weights(folder: Path, dumpembed: bool) -> dict[str, dict[str, tuple[int, ...]]]:
    """Weight file (relative path) -> the tensors it may hold; the whole set the model loads, shards pooled."""
    shapes = backbone_shapes(folder, dumpembed)
    expected = {name: shapes for name in top_level_weight_files(folder)}
    modules = read_json(folder / "modules.json") if not dumpembed else None
    for module in modules if isinstance(modules, list) else []:
        if isinstance(module, dict) and module.get("path") and str(module.get("type", "")).endswith(".Dense"):
            expected[f"{module['path']}/model.safetensors"] = dense_shapes(folder / module["path"])
    return expected


def _file_problems(path: Path, rel: str, allowed: dict[str, tuple[int, ...]]) -> tuple[set[str], list[str]]:
    """The tensor names of ``path`` and what is wrong with them (extra names, shapes, non-finite values)."""
    import torch
    from safetensors import safe_open

    problems = []
    with safe_open(str(path), framework="pt") as handle:
        names = set(handle.keys())
        extra = sorted(names - set(allowed))
        if extra:
            problems.append(f"{rel} holds tensors the model does not have: {', '.join(extra[:8])}"
                            f"{' …' if len(extra) > 8 else ''} (publish only the model's own weights)")
        misshapen = []
        for name in sorted(names & set(allowed)):
            shape = tuple(handle.get_slice(name).get_shape())
            if shape != allowed[name]:
                misshapen.append(f"tensor {name} has shape {list(shape)}, the model's is {list(allowed[name])}")
                continue
            tensor = handle.get_tensor(name)
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                problems.append(f"{rel}: tensor {name} holds NaN or infinite values")
    if misshapen:
        more = f" (and {len(misshapen) - 4} more)" if len(misshapen) > 4 else ""
        problems.append(f"{rel}: {'; '.join(misshapen[:4])}{more}: config.json and the weights do not belong "
                        "together; rebuild or refit the folder")
    return names, problems


def weights_problems(folder: Path, files: list[str], dumpembed: bool) -> list[str]:
    """Why the safetensors files of ``folder`` may not be published as they are (empty: they may)."""
    try:
        expected = expected_weights(folder, dumpembed)
    except (OSError, ValueError, KeyError, TypeError) as error:
        return [f"the model's tensors could not be derived from its config ({error}): re-save the folder"]
    present = {f for f in files if f.endswith(".safetensors")}
    problems = [f"{rel} is not a weights file the model loads (it loads {', '.join(sorted(expected))}): remove it"
                for rel in sorted(present - set(expected))]
    problems += [f"{rel} is missing (the model loads it)" for rel in sorted(set(expected) - present)]
    seen: dict[int, set[str]] = {}
    from safetensors import SafetensorError

    for rel in sorted(present & set(expected)):
        try:
            names, found = _file_problems(folder / rel, rel, expected[rel])
        except (SafetensorError, OSError) as error:
            problems.append(f"{rel} could not be read by safetensors ({error})")
            continue
        problems += found
        seen.setdefault(id(expected[rel]), set()).update(names)
    for rel in sorted(set(expected) & present):
        missing = sorted(set(expected[rel]) - seen.get(id(expected[rel]), set()))
        if missing:
            problems.append(f"{rel}: the model's tensors {', '.join(missing[:8])} are in no weights file")
            seen[id(expected[rel])] = set(expected[rel])  # report once per model, not once per shard
    return problems
