"""Loading the embedding model a spec names (the specs: :mod:`mcp_server.embedding`), as an
:class:`Embedder` that carries the identity the index records."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache, cached_property
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import known_embedding_functions

from mcp_server.embedding.e5_model import E5_SCALE, E5SentenceEmbedding
from mcp_server.embedding.onnx_model import BGE_MAX_TOKENS, BGE_SCALE, OnnxSentenceEmbedding
from mcp_server.embedding.openai_server import ServerEmbedding
from mcp_server.settings.embedding import BGE_MODEL, ENGLISH_MODEL, MULTILINGUAL_MODEL, EmbeddingServer
from mcp_server.errors import EmbeddingModelError, EmbeddingModelMismatchError

@dataclass
class Embedder:
    """An embedding model with the identity recorded in the index, and, when it is known, how many tokens
    it reads (``max_tokens``) and how it counts them (``count_tokens``: each text's count, uncut)."""

    name: str
    function: EmbeddingFunction[Documents]
    count_tokens: Callable[[Sequence[str]], list[int]] | None = None
    max_tokens: int | None = None
    scale: tuple[float, float] = (1.0, 0.0)
    """(slope, offset) putting the model's cosine similarities on the scale searches merge and fuse them on
    (all-MiniLM-L6-v2's; :mod:`mcp_server.embedding.choice`)."""
    reads_cjk: bool = False
    """Whether the model was trained on Chinese, Japanese and Korean (known for the models that ship); hybrid
    search leans on keywords for a CJK query over a corpus whose model does not (:mod:`mcp_server.retrieval.fusion`)."""

    @cached_property
    def dimension(self) -> int:
        """The length of the model's vectors, from one probe (for a server: one request) per process."""
        return len(self.function(["dimension probe"])[0])

    def embed(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        """Embed texts (documents' chunks, or texts compared with each other) as float32 vectors, in input
        order, each of :attr:`dimension` values."""
        return self._checked(self.function(list(texts)))

    def embed_query(self, query: str) -> npt.NDArray[np.float32]:
        """Embed a search query, as the model embeds queries (E5 differently from documents; most alike)."""
        return self._checked(self.function.embed_query([query]))[0]

    def _checked(self, embeddings: Embeddings) -> list[npt.NDArray[np.float32]]:
        vectors = [np.asarray(v, dtype=np.float32) for v in embeddings]
        wrong = sorted({len(v) for v in vectors} - {self.dimension})
        if wrong:
            raise EmbeddingModelMismatchError(
                f"embedding model {self.name!r} returned {wrong[0]}-dimensional vectors after "
                f"{self.dimension}-dimensional ones: the model behind it changed while running. Restart, and "
                "rebuild the index if it was built with the old model: ragmcp ingest --rebuild"
            )
        return vectors


@cache
def load_embedder(spec: str, config_json: str | None = None, server: EmbeddingServer = EmbeddingServer()) -> Embedder:
    """The embedder a spec names (see the module docstring), loaded once per process;
    ``server`` says where an ``openai:<model>`` spec's server is.

    Raises EmbeddingModelError when the spec is malformed or the model cannot be loaded.
    """
    if spec == ENGLISH_MODEL:
        return _local_embedder("all-MiniLM-L6-v2-int8", OnnxSentenceEmbedding())
    if spec == BGE_MODEL:
        return _local_embedder("bge-small-en-int8", OnnxSentenceEmbedding(BGE_MODEL, BGE_MAX_TOKENS), scale=BGE_SCALE)
    if spec == MULTILINGUAL_MODEL:
        return _local_embedder("multilingual-e5-small-q4", E5SentenceEmbedding(), scale=E5_SCALE, reads_cjk=True)
    kind, _, value = spec.partition(":")
    if kind == "onnx" and value:
        function = OnnxSentenceEmbedding(model=value)
        return _local_embedder(f"onnx:{function.model_sha256[:16]}", function)
    if kind == "openai" and value:
        served = ServerEmbedding(value, server)
        return Embedder(name=served.identity, function=served)
    if kind == "chroma" and value:
        return Embedder(name=f"chroma:{value}", function=_chroma_function(value, config_json))
    raise EmbeddingModelError(
        f"unknown embedding model spec {spec!r}; use 'auto', '{ENGLISH_MODEL}', '{BGE_MODEL}', '{MULTILINGUAL_MODEL}', "
        "'onnx:<model directory>', "
        "'openai:<model served at RAGMCP_EMBEDDING_URL>' or 'chroma:<embedding function name>'"
    )


def _local_embedder(
    name: str, function: OnnxSentenceEmbedding | E5SentenceEmbedding, scale: tuple[float, float] = (1.0, 0.0),
    reads_cjk: bool = False,
) -> Embedder:  # fmt: skip
    """A model run in this process: it says how many tokens it reads and counts them."""
    return Embedder(
        name=name, function=function, count_tokens=function.count_tokens, max_tokens=function.max_tokens,
        scale=scale, reads_cjk=reads_cjk,
    )  # fmt: skip


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
