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

A rerank server is trusted with the candidates' texts, not with this process:

* the whole call (connecting, sending, every read of the answer, and the second request of a
  refused shape) ends within ``RAGMCP_RERANK_TIMEOUT_S`` in all, so a server that sends its
  answer a byte at a time cannot hold a search past it. (Only connecting can take longer: the
  time left is allowed for each address of a host name that has several, and for a TLS
  handshake once connected; looking the name up is the system resolver's.)
* the answer is read in pieces and dropped once it passes :func:`answer_limit` bytes (room for
  every text echoed back, JSON-escaped), so a huge answer costs at most that much memory;
* a redirect is an error, never followed, so ``RAGMCP_RERANK_API_KEY`` goes to
  ``RAGMCP_RERANK_URL``'s host and nowhere else. Proxy variables (``HTTPS_PROXY``...) are not
  used either: the request goes straight to that host.

Any failure (connection refused, timeout, HTTP error or redirect, oversized or malformed
answer) raises :class:`RerankError`; the retriever then logs one line and returns the fused order. After a
failure the server is left alone for :data:`PAUSE_AFTER_FAILURE_S` seconds, so a server that is
down or hanging costs one timeout and one log line per pause, not one per search. The pause is
kept per *tenant* (a team server's grant): whether one team's results are reranked never depends
on another team's searches, whose texts may be what made the server fail.
"""

from __future__ import annotations

import http.client
import io
import json
import math
import socket
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from mcp_server.settings import Settings

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

RequestShape = Literal["cohere", "tei"]
PAUSE_AFTER_FAILURE_S = 30.0
"""How long reranking is skipped after the server failed (searches then return the fused order)."""
TEXT_CHARS = 4_000
"""Longest text sent per candidate; cross-encoders read 512 to 8,192 tokens of it at most anyway."""
ANSWER_BYTES_PER_TEXT = 6 * TEXT_CHARS + 1024
"""Room in an answer per text scored: its index and score, and the text itself, which some servers
echo back (vLLM), JSON-escaped at up to 6 bytes a character."""
ANSWER_BYTES_BASE = 64 * 1024
"""Room in an answer for everything else (model name, usage, an error message)."""
_SHAPE_REFUSED = (400, 422)
_PIECE = 64 * 1024


class RerankError(Exception):
    """The rerank server could not be reached or its answer could not be used; the message says why."""


@dataclass(frozen=True)
class RerankServer:
    """Where the rerank server is and how to talk to it (from the ``RAGMCP_RERANK_*`` settings)."""

    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 5.0  # the longest one call of Reranker.scores may take, all its requests included


def reranker_for(settings: Settings) -> Reranker | None:
    """The reranker ``settings`` configure, or None when reranking is off (``RAGMCP_RERANK_URL`` unset)."""
    if settings.rerank.url is None or settings.rerank.model is None:
        return None
    key = settings.rerank.api_key.get_secret_value() if settings.rerank.api_key else None
    return Reranker(RerankServer(settings.rerank.url, settings.rerank.model, key, settings.rerank.timeout_s))


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
        deadline = time.monotonic() + self.server.timeout_s
        limit = answer_limit(len(texts))
        shape = self._shape
        status, answer = self._post(_request(shape, self.server.model, query, texts), deadline, limit)
        if status in _SHAPE_REFUSED:
            other: RequestShape = "cohere" if shape == "tei" else "tei"
            retry_status, retry_answer = self._post(_request(other, self.server.model, query, texts), deadline, limit)
            if retry_status == 200:
                self._shape, status, answer = other, retry_status, retry_answer
        if status != 200:
            raise RerankError(f"HTTP {status}: {_clipped(answer)}")
        return parse_scores(answer, len(texts))

    def _post(self, body: dict[str, Any], deadline: float, limit: int) -> tuple[int, str]:
        """POST ``body`` as JSON; the answer's status and text, read before ``deadline`` (a
        :func:`time.monotonic` time) and refused past ``limit`` bytes. A redirect is refused too.

        The standard library's ``http.client``: no import cost, no log line per request as an
        HTTP client library's logger would write, and nothing followed or retried behind our back.
        """
        parts = urlsplit(self.server.url)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.server.api_key:
            headers["Authorization"] = f"Bearer {self.server.api_key}"
        try:
            port = parts.port
        except ValueError as e:  # e.g. a port past 65535: the settings check the URL's shape, not this
            raise RerankError(f"RAGMCP_RERANK_URL has no usable port ({e})") from e
        connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        connection = connection_class(parts.hostname or "", port)
        reason = "cannot reach it"  # refused, unknown host, TLS failure
        try:
            connection.timeout = _time_left(deadline)  # to connect (each address tried), then TLS's handshake
            connection.connect()
            reason = "the exchange broke off"
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            return _exchange(connection, target, headers, json.dumps(body).encode(), deadline, limit)
        except TimeoutError as e:
            raise RerankError(
                f"no complete answer within {self.server.timeout_s:g} s (RAGMCP_RERANK_TIMEOUT_S)"
            ) from e
        except (OSError, http.client.HTTPException) as e:
            raise RerankError(f"{reason} ({str(e) or repr(e)})") from e
        finally:
            connection.close()


def answer_limit(count: int) -> int:
    """The most bytes of an answer read when ``count`` texts were sent: past it the answer is dropped
    (1.3 MB for 50 texts)."""
    return ANSWER_BYTES_BASE + count * ANSWER_BYTES_PER_TEXT


def _exchange(
    connection: http.client.HTTPConnection, target: str, headers: dict[str, str], data: bytes, deadline: float,
    limit: int,
) -> tuple[int, str]:
    """Send the POST on the open ``connection`` and read the answer, every step before ``deadline``.

    The response is read with :class:`_Answer` rather than ``connection.getresponse()``, whose
    reads each wait the socket's timeout anew: a server sending a byte per timeout would never
    trip it. Raises :class:`TimeoutError` once the deadline has passed, and :class:`RerankError` on a
    redirect or an answer over ``limit`` bytes.
    """
    sock = connection.sock
    sock.settimeout(_time_left(deadline))
    connection.putrequest("POST", target)
    for name, value in {**headers, "Content-Length": str(len(data))}.items():
        connection.putheader(name, value)
    connection.endheaders()
    body = memoryview(data)
    while body:  # in pieces, not sendall: TLS's sendall gives each piece the whole timeout
        sock.settimeout(_time_left(deadline))
        body = body[sock.send(body[:_PIECE]) :]
    response = _Answer(sock, deadline)
    try:
        response.begin()
        if 300 <= response.status < 400:
            where = _clipped(response.getheader("Location") or "nowhere")
            raise RerankError(
                f"HTTP {response.status} redirect to {where}: redirects are not followed, so RAGMCP_RERANK_API_KEY "
                "never goes to another host; set RAGMCP_RERANK_URL to the endpoint that answers"
            )
        too_large = (
            f"its answer is over {limit:,} bytes, more than scores for the texts sent need; it was dropped there "
            "(is RAGMCP_RERANK_URL a rerank endpoint?)"
        )
        if response.length is not None and response.length > limit:
            raise RerankError(too_large)
        answer = bytearray()
        while piece := response.read(_PIECE):
            if len(answer) + len(piece) > limit:
                raise RerankError(too_large)
            answer += piece
        return response.status, _text(answer)
    finally:
        response.close()


class _Answer(http.client.HTTPResponse):
    """An HTTP response whose every read of ``sock`` waits only for what is left before ``deadline``."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__(sock, method="POST")
        self.fp = io.BufferedReader(_ReadsBefore(self.fp.detach(), sock, deadline))


class _ReadsBefore(io.RawIOBase):
    """``raw`` (a socket's reader) with each read of ``sock`` given the time left before ``deadline``."""

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._raw, self._sock, self._deadline = raw, sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int | None:
        self._sock.settimeout(_time_left(self._deadline))
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


def _time_left(deadline: float) -> float:
    """Seconds until ``deadline``; :class:`TimeoutError` once it has passed."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the rerank call's deadline has passed")
    return left


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


def _text(raw: bytes | bytearray) -> str:
    return raw.decode("utf-8", errors="replace")


def _clipped(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[:limit]}…"
