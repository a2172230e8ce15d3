"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` server: Ollama, vLLM, LM Studio,
llama.cpp's ``llama-server``, a gateway, or OpenAI itself.

The spec ``openai:<model>`` names the model as the server knows it; the server is
``RAGMCP_EMBEDDING_URL`` (its OpenAI base URL, ending in ``/v1``; unset: OpenAI's API) and
``RAGMCP_EMBEDDING_API_KEY`` its key (unset: a placeholder, which local servers ignore; only
OpenAI's own API falls back to ``OPENAI_API_KEY``, so a key never goes to a server it was not
given for). The index records the model with the server's URL (less any ``user:password@``).

Requests go through the ``openai`` SDK, the client these servers test against: it asks for
base64 vectors (and reads float lists from servers that ignore that), retries connection
errors, timeouts, 408, 409, 429 and 5xx answers with exponential backoff (honouring
``Retry-After``), and gives up after ``RAGMCP_EMBEDDING_MAX_RETRIES`` retries. Texts go
``RAGMCP_EMBEDDING_BATCH_SIZE`` to a request. Every answer is checked: one vector per text,
all of one dimension; anything else is an error that names the server and the setting to fix.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from mcp_server.settings.embedding import EmbeddingServer
from mcp_server.errors import BackendUnavailableError, EmbeddingModelError

if TYPE_CHECKING:
    from openai import APIStatusError, OpenAI


def _require_sdk(model: str) -> None:
    """Check for the ``openai`` SDK, which the ``openai`` extra installs (the default install has none)."""
    try:
        import openai  # noqa: F401
    except ImportError as error:
        raise EmbeddingModelError(
            f"RAGMCP_EMBEDDING_MODEL=openai:{model} needs the openai SDK, which is not installed ({error}): install "
            "agentic-rag-mcp[openai] to embed with an OpenAI-compatible server"
        ) from error


@register_embedding_function
class ServerEmbedding(EmbeddingFunction[Documents]):
    """Embeddings of ``model`` from the OpenAI-compatible server ``server``, in input order."""

    def __init__(self, model: str, server: EmbeddingServer) -> None:
        self.model = model
        self.server = server
        self._key = server.key()  # fail at load time, not at the first text
        _require_sdk(model)

    @property
    def identity(self) -> str:
        """What the index records: the model and the server that computes it."""
        return f"openai:{self.model}@{self.server.public_url}"

    @cached_property
    def _client(self) -> OpenAI:
        from openai import OpenAI  # imported on first use: only this spec pays for it

        return OpenAI(
            base_url=self.server.base_url, api_key=self._key,
            timeout=self.server.timeout_s, max_retries=self.server.max_retries,
        )  # fmt: skip

    def __call__(self, input: Documents) -> Embeddings:
        texts = list(input)
        vectors: list[npt.NDArray[np.float32]] = []
        for start in range(0, len(texts), self.server.batch_size):
            vectors.extend(self._request(texts[start : start + self.server.batch_size]))
        return cast(Embeddings, vectors)

    def _request(self, texts: list[str]) -> list[npt.NDArray[np.float32]]:
        import openai

        url, attempts = self.server.public_url, f"{self.server.max_retries + 1} attempt(s)"
        try:
            response = self._client.embeddings.create(model=self.model, input=texts)
        except openai.APIConnectionError as e:  # refused, unreachable, timed out - after every retry
            raise BackendUnavailableError(
                f"cannot reach the embedding server at {url} ({_reason(e)}; {attempts}); "
                "start it, or set RAGMCP_EMBEDDING_URL to its address"
            ) from e
        except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
            raise EmbeddingModelError(
                f"the embedding server at {url} refused the API key ({e.status_code}: {_detail(e)}); "
                "set RAGMCP_EMBEDDING_API_KEY to a key it accepts"
            ) from e
        except openai.NotFoundError as e:
            raise EmbeddingModelError(
                f"the embedding server at {url} answered 404 for model {self.model!r} ({_detail(e)}): check that "
                "RAGMCP_EMBEDDING_MODEL=openai:<name> names a model it serves and that RAGMCP_EMBEDDING_URL is its "
                "OpenAI base URL, usually ending in /v1"
            ) from e
        except openai.APIStatusError as e:
            if e.status_code == 429 or e.status_code >= 500:  # retried: the server is overloaded or failing
                raise BackendUnavailableError(
                    f"the embedding server at {url} answered {e.status_code} for model {self.model!r} "
                    f"({attempts}): {_detail(e)}"
                ) from e
            raise EmbeddingModelError(
                f"the embedding server at {url} answered {e.status_code} for model {self.model!r}: {_detail(e)}"
            ) from e
        except (openai.APIError, ValueError) as e:  # an answer the SDK cannot read (no data, not JSON)
            raise EmbeddingModelError(f"the embedding server at {url} sent an unreadable answer: {e}") from e
        return _checked_vectors(response.data, len(texts), url)

    @staticmethod
    def name() -> str:
        return "agentic_rag_openai_server"

    def default_space(self) -> str:  # type: ignore[override]
        return "cosine"

    def supported_spaces(self) -> list[str]:  # type: ignore[override]
        return ["cosine"]

    def get_config(self) -> dict[str, Any]:
        """What Chroma stores with the collection: never the API key (rebuilt from the environment)."""
        s = self.server
        return {
            "model": self.model, "url": s.url, "batch_size": s.batch_size,
            "timeout_s": s.timeout_s, "max_retries": s.max_retries,
        }  # fmt: skip

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ServerEmbedding:
        server = EmbeddingServer(
            url=config["url"], api_key=os.environ.get("RAGMCP_EMBEDDING_API_KEY"),
            batch_size=int(config["batch_size"]), timeout_s=float(config["timeout_s"]),
            max_retries=int(config["max_retries"]),
        )  # fmt: skip
        return ServerEmbedding(config["model"], server)


def _checked_vectors(data: Sequence[Any], count: int, url: str) -> list[npt.NDArray[np.float32]]:
    """The answer's vectors in input order, after checking there is one per text, all of one length."""
    items = sorted(data, key=lambda item: item.index)
    if [item.index for item in items] != list(range(count)):
        raise EmbeddingModelError(f"the embedding server at {url} returned {len(items)} vectors for {count} texts")
    vectors = [np.asarray(item.embedding, dtype=np.float32) for item in items]
    shapes = sorted({v.shape for v in vectors})
    if len(shapes) != 1 or len(shapes[0]) != 1 or shapes[0][0] == 0:
        raise EmbeddingModelError(
            f"the embedding server at {url} returned vectors of shapes {shapes} in one answer; "
            "each text needs one vector, all of one length"
        )
    return vectors


def _reason(error: Exception) -> str:
    """The innermost cause of a connection error: 'Connection refused', 'timed out', ..."""
    while error.__cause__ is not None and isinstance(error.__cause__, Exception):
        error = error.__cause__
    return str(error) or type(error).__name__


def _detail(error: APIStatusError) -> str:
    """The server's own error message (the SDK puts it after "Error code: N - "), shortened."""
    message = error.message.removeprefix(f"Error code: {error.status_code}").removeprefix(" - ")
    if not message and isinstance(error.body, str):
        message = error.body  # not JSON: the raw text
    return (message.strip() or "no message")[:500]
