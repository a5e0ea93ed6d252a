"""An ONNX export as a fastembed model that puts the export's prompts before each text.

fastembed's own `TextEmbedding.add_custom_model` feeds every text as it comes: its `query_embed` and `embed` add no
prompt for a custom model, and neither do the clients that embed through fastembed (qdrant-client's
`models.Document`), so a prompted folder's queries come out unprompted. `add_export` registers the export as a
`PromptedTextEmbedding` instead: `query_embed` puts the `query` prompt of the export's `onnx_export.json` before each
query, `embed` / `passage_embed` its `document` prompt before each document, the texts sentence-transformers'
`encode_query` / `encode_document` put first. qdrant-client embeds upserted Documents with `embed` and a query with
`query_embed`, so its vectors are the folder's.

Imports fastembed and none of hf_dumpembed's own dependencies: it runs in an environment that has only fastembed
(and the client) besides hf_dumpembed installed with ``pip install --no-deps``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fastembed import TextEmbedding
from fastembed.common.model_description import DenseModelDescription, ModelSource, PoolingType
from fastembed.text.custom_text_embedding import CustomTextEmbedding

from .artefacts import MANIFEST_FILE, ONNX_FILE, OUTPUT_NAME

SIDES = ("query", "document")


class PromptedTextEmbedding(CustomTextEmbedding):
    """fastembed's custom ONNX model with the export's query / document prompts put before each text.

    `add_export` registers a model here (in this class's own registry, apart from `CustomTextEmbedding`'s); its name
    loads with ``TextEmbedding(name)``, from the export folder unless ``specific_model_path`` names another copy.
    fastembed's parallel workers receive the texts with their prompts already in front.
    """

    SUPPORTED_MODELS: list[DenseModelDescription] = []
    POSTPROCESSING_MAPPING: dict[str, Any] = {}
    EXPORTS: dict[str, tuple[Path, dict[str, str]]] = {}  # model name -> (export folder, prompts by side)

    def __init__(self, model_name: str, *args: Any, specific_model_path: str | None = None, **kwargs: Any) -> None:
        folder, prompts = self.EXPORTS[registered_name(model_name)]
        super().__init__(model_name, *args, specific_model_path=specific_model_path or str(folder), **kwargs)
        self.prompts = dict(prompts)

    def embed(self, documents: str | Iterable[str], batch_size: int = 256, parallel: int | None = None,
              **kwargs: Any) -> Iterator[Any]:
        """Embed documents after the document prompt (fastembed's `passage_embed` comes here too)."""
        yield from super().embed(self.prompted(documents, "document"), batch_size, parallel, **kwargs)

    def query_embed(self, query: str | Iterable[str], **kwargs: Any) -> Iterator[Any]:
        """Embed queries after the query prompt."""
        yield from super().embed(self.prompted(query, "query"), **kwargs)

    def prompted(self, texts: str | Iterable[str], side: str) -> Iterator[str]:
        """``texts`` (one text or an iterable of texts), each after the prompt of ``side``."""
        prompt = self.prompts[side]
        for text in [texts] if isinstance(texts, str) else texts:
            if not isinstance(text, str):
                raise TypeError(f"{type(self).__name__} embeds text; got {type(text).__name__} {text!r}.")
            yield prompt + text


def registered_name(model_name: str) -> str:
    """The name `add_export` registered ``model_name`` under (fastembed matches names case-insensitively)."""
    found = [name for name in PromptedTextEmbedding.EXPORTS if name.lower() == model_name.lower()]
    if not found:
        raise ValueError(f"{model_name!r} is not an export registered with add_export "
                         f"(registered: {sorted(PromptedTextEmbedding.EXPORTS)}).")
    return found[0]


def export_prompts(folder: str | Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The export's manifest (`onnx_export.json`) and the texts it puts before a query / a document."""
    path = Path(folder) / MANIFEST_FILE
    if not path.is_file():
        raise ValueError(f"{folder} has no {MANIFEST_FILE}: give the folder `hf-dumpembed export-onnx` wrote (a "
                         "model folder or its stock export is served by sentence-transformers, not by fastembed).")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    prompts = manifest.get("prompts") or {}
    missing = [side for side in SIDES if not isinstance(prompts.get(side), str)]
    if missing:
        raise ValueError(f"{path} names no {' / '.join(missing)} prompt (its prompts: {prompts!r}); export the "
                         "folder again with `hf-dumpembed export-onnx`, which records the text put before a query "
                         "and before a document, empty ones included.")
    return manifest, {side: prompts[side] for side in SIDES}


def add_export(folder: str | Path, model: str | None = None, model_file: str = ONNX_FILE) -> str:
    """Register the ONNX export in ``folder`` with fastembed as a `PromptedTextEmbedding` named ``model`` (default
    ``local/<folder name>``) and return the name, for ``TextEmbedding(name)`` or ``models.Document(model=name)``.

    ``model_file`` picks the graph (`model_optimized.onnx`, `model_int8.onnx` where the export wrote them). The same
    folder, graph and name again returns the name; a name fastembed already knows for anything else is refused.
    """
    folder = Path(folder).resolve()
    manifest, prompts = export_prompts(folder)
    if not (folder / model_file).is_file():
        raise ValueError(f"{folder} has no {model_file} (its graphs: "
                         f"{sorted(p.name for p in folder.glob('*.onnx'))}).")
    model = model or f"local/{folder.name}"
    if PromptedTextEmbedding not in TextEmbedding.EMBEDDINGS_REGISTRY:
        TextEmbedding.EMBEDDINGS_REGISTRY.append(PromptedTextEmbedding)
    known = {d.model.lower(): d for d in TextEmbedding._list_supported_models()}.get(model.lower())
    if known is not None:
        if PromptedTextEmbedding.EXPORTS.get(known.model) == (folder, prompts) and known.model_file == model_file:
            return known.model
        raise ValueError(f"fastembed already has a model named {known.model!r}; pass another name as model=.")
    PromptedTextEmbedding.add_model(
        DenseModelDescription(model=model, sources=ModelSource(hf=model), dim=int(manifest["dimension"]),
                              model_file=model_file, description=f"hf_dumpembed ONNX export {folder.name}",
                              license="", size_in_GB=0.0),
        pooling=PoolingType.DISABLED, normalization=False, output_name=OUTPUT_NAME,  # both inside the graph
    )
    PromptedTextEmbedding.EXPORTS[model] = (folder, prompts)
    return model
