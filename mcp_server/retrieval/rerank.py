"""Reranking by the user's own model server: a cross-encoder orders hybrid search's fused candidates.

With ``RAGMCP_RERANK_URL`` set, :class:`Reranker` POSTs the query and the candidates' texts to
that URL and reads back one relevance score per text. Two request shapes are spoken:

* **Cohere / Jina** (vLLM ``/v1/rerank``, llama.cpp's ``llama-server --reranking`` ``/v1/rerank``,
  Infinity ``/rerank``, Jina- and Cohere-compatible gateways)::

      {"model": <RAGMCP_RERANK_MODEL>, "query": "...", "documents": ["...", ...], "top_n": <len(documents)>}

* **Hugging Face TEI** (``text-embeddings-router``, ``/rerank``)::

      {"query": "...", "texts": ["...", ...], "truncate": true}

A URL whose path is a bare ``/rerank`` (no ``/v1``) gets the TEI shape first, any other URL the
Cohere shape. Infinity also serves a bare ``/rerank`` but wants ``documents``: when the server
refuses the first shape with HTTP 400 or 422, the other is tried once, and the one that worked is
kept for the rest of the process.

Either answer shape is read, whichever request was sent: ``{"results": [{"index": i,
"relevance_score": s}, ...]}`` (Cohere, Jina, vLLM, llama.cpp, Infinity; a ``document`` field and
other fields are ignored) or a bare list ``[{"index": i, "score": s}, ...]`` (TEI). The answer must
score every text sent exactly once, with a finite number; anything else is a malformed answer.

Any failure (connection refused, timeout, HTTP error, malformed answer) raises
:class:`RerankError`; the retriever then logs one line and returns the fused order. After a
failure the server is left alone for :data:`PAUSE_AFTER_FAILURE_S` seconds, so a server that is
down or hanging costs one timeout and one log line per pause, not one per search. The pause is
kept per *tenant* (a team server's grant): whether one team's results are reranked never depends
on another team's searches, whose texts may be what made the server fail.
"""

from __future__ import annotations

import http.client
import json
import math
import time
import urllib.error
import urllib.request
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from mcp_server.settings import Settings

RequestShape = Literal["cohere", "tei"]
PAUSE_AFTER_FAILURE_S = 30.0
"""How long reranking is skipped after the server failed (searches then return the fused order)."""
TEXT_CHARS = 4_000
"""Longest text sent per candidate; cross-encoders read 512 to 8,192 tokens of it at most anyway."""
_SHAPE_REFUSED = (400, 422)


class RerankError(Exception):
    """The rerank server could not be reached or its answer could not be used; the message says why."""


@dataclass(frozen=True)
class RerankServer:
    """Where the rerank server is and how to talk to it (from the ``RAGMCP_RERANK_*`` settings)."""

    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 5.0


def reranker_for(settings: Settings) -> Reranker | None:
    """The reranker ``settings`` configure, or None when reranking is off (``RAGMCP_RERANK_URL`` unset)."""
    if settings.rerank_url is None or settings.rerank_model is None:
        return None
    key = settings.rerank_api_key.get_secret_value() if settings.rerank_api_key else None
    return Reranker(RerankServer(settings.rerank_url, settings.rerank_model, key, settings.rerank_timeout_s))


class Reranker:
    """Scores texts against a query on one rerank server. Safe to share between threads."""

    def __init__(self, server: RerankServer) -> None:
        self.server = server
        path = urlsplit(server.url).path.rstrip("/")
        self._shape: RequestShape = "tei" if path == "/rerank" else "cohere"
        self._paused_until: dict[Hashable, float] = {}

    @property
    def where(self) -> str:
        """The server's URL without any ``user:password@``, for log lines."""
        parts = urlsplit(self.server.url)
        return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()

    def paused(self, tenant: Hashable = None) -> bool:
        """Whether reranking is skipped for now for ``tenant``: the server failed on its search less
        than a pause ago."""
        return time.monotonic() < self._paused_until.get(tenant, 0.0)

    def scores(self, query: str, texts: Sequence[str], tenant: Hashable = None) -> list[float]:
        """The server's relevance score of each of ``texts`` for ``query``, in the order given.

        Raises :class:`RerankError` (and pauses reranking for ``tenant``, see the module docstring)
        on any failure.
        """
        try:
            return self._scores(query, [text[:TEXT_CHARS] for text in texts])
        except RerankError:
            self._paused_until[tenant] = time.monotonic() + PAUSE_AFTER_FAILURE_S
            raise

    def _scores(self, query: str, texts: list[str]) -> list[float]:
        shape = self._shape
        status, answer = self._post(_request(shape, self.server.model, query, texts))
        if status in _SHAPE_REFUSED:
            other: RequestShape = "cohere" if shape == "tei" else "tei"
            retry_status, retry_answer = self._post(_request(other, self.server.model, query, texts))
            if retry_status == 200:
                self._shape, status, answer = other, retry_status, retry_answer
        if status != 200:
            raise RerankError(f"HTTP {status}: {_clipped(answer)}")
        return parse_scores(answer, len(texts))

    def _post(self, body: dict[str, Any]) -> tuple[int, str]:
        """POST ``body`` as JSON; the answer's status and text (the standard library: no import cost,
        and no log line per request as an HTTP client library's logger would write)."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.server.api_key:
            headers["Authorization"] = f"Bearer {self.server.api_key}"
        request = urllib.request.Request(self.server.url, json.dumps(body).encode(), headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.server.timeout_s) as response:
                return int(response.status), _text(response.read())
        except urllib.error.HTTPError as e:
            return e.code, _text(e.read())
        except (OSError, http.client.HTTPException) as e:  # URLError and TimeoutError are OSErrors
            reason = e.reason if isinstance(e, urllib.error.URLError) else e
            if isinstance(reason, TimeoutError):
                raise RerankError(f"no answer within {self.server.timeout_s:g} s (RAGMCP_RERANK_TIMEOUT_S)") from e
            raise RerankError(f"cannot reach it ({reason})") from e


def _request(shape: RequestShape, model: str, query: str, texts: list[str]) -> dict[str, Any]:
    if shape == "tei":
        return {"query": query, "texts": texts, "truncate": True}
    return {"model": model, "query": query, "documents": texts, "top_n": len(texts)}


def parse_scores(answer: str, count: int) -> list[float]:
    """The scores of ``count`` texts, in the order sent, from a rerank server's JSON ``answer``
    (either shape of the module docstring); raises :class:`RerankError` when it is malformed."""
    try:
        data = json.loads(answer)
    except ValueError as e:
        raise RerankError(f"the answer is not JSON: {_clipped(answer)}") from e
    results = data.get("results") if isinstance(data, dict) else data
    if not isinstance(results, list):
        raise RerankError(f'the answer has no "results" list: {_clipped(answer)}')
    if len(results) != count:
        raise RerankError(f"it scored {len(results)} texts of the {count} sent")
    scores: list[float | None] = [None] * count
    for result in results:
        index = result.get("index") if isinstance(result, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise RerankError(f"a result has no index between 0 and {count - 1}: {_clipped(json.dumps(result))}")
        score = result.get("relevance_score", result.get("score"))
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
            raise RerankError(f"result {index} has no numeric relevance_score or score: {_clipped(json.dumps(result))}")
        if scores[index] is not None:
            raise RerankError(f"text {index} is scored twice")
        scores[index] = float(score)
    return [s for s in scores if s is not None]  # all set: count results, none twice


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _clipped(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[:limit]}…"
