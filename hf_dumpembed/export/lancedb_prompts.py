"""LanceDB's sentence-transformers embedding function, embedding queries with ``encode_query`` and rows with
``encode_document``.

LanceDB's registered ``sentence-transformers`` function calls plain ``encode`` for the rows it stores and for the
queries it searches with, so a prompted folder's prompts are dropped on both sides. `PromptedSentenceTransformers`,
registered as ``sentence-transformers-prompts``, is the same function (the same options: ``name``, ``device``,
``normalize``, ``trust_remote_code``) with LanceDB's two hooks, ``compute_source_embeddings`` and
``compute_query_embeddings``, calling the model's own ``encode_document`` / ``encode_query``, which put the folder's
prompts first. A table made with it records the name; importing this module before opening the table again lets
LanceDB find the function.

Imports LanceDB (which loads sentence-transformers when the model is first used) and none of hf_dumpembed's own
dependencies.
"""

from __future__ import annotations

from typing import Any

from lancedb.embeddings import register
from lancedb.embeddings.sentence_transformers import SentenceTransformerEmbeddings

REGISTRY_NAME = "sentence-transformers-prompts"


@register(REGISTRY_NAME)
class PromptedSentenceTransformers(SentenceTransformerEmbeddings):
    """``SentenceTransformerEmbeddings`` whose rows are embedded with ``encode_document`` and queries with
    ``encode_query`` (the folder's prompts applied)."""

    def compute_source_embeddings(self, texts: Any, *args: Any, **kwargs: Any) -> list:
        return self._encode(self.embedding_model.encode_document, texts)

    def compute_query_embeddings(self, query: Any, *args: Any, **kwargs: Any) -> list:
        return self._encode(self.embedding_model.encode_query, query)

    def _encode(self, encode: Any, texts: Any) -> list:
        return encode(list(self.sanitize_input(texts)), convert_to_numpy=True,
                      normalize_embeddings=self.normalize).tolist()
