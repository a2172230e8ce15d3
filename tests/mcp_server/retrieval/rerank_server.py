"""A local rerank server for the tests (and bench/retrieval/rerank_overhead.py) on 127.0.0.1.

It speaks the wire shapes of the servers ragmcp supports — ``vllm`` and ``llamacpp`` at
``/v1/rerank``, ``infinity`` and ``tei`` at ``/rerank`` — refusing a request of the other shape
as the real server does (TEI 422 without ``texts``, the others 400/422 without ``documents``).
It ranks as scripted: a text holding ``prefer[0]`` scores highest, then ``prefer[1]``, and so on;
texts holding none score lowest (0.01). ``replies`` are answered first, in order, instead
(a status and raw body, after a delay), and every request is recorded with its headers.

A scripted reply can also be hostile, as a broken or malicious server would be: sent a byte at a
time (``drip_s``), padded to any size without ever holding it (``padding``, with or without a
content-length), or carrying extra headers (a redirect's ``location``). The stand-in records how
many bytes of each answer it managed to send before the client closed the connection (``sent``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Kind = Literal["vllm", "llamacpp", "infinity", "tei"]
PATHS: dict[Kind, str] = {"vllm": "/v1/rerank", "llamacpp": "/v1/rerank", "infinity": "/rerank", "tei": "/rerank"}


PIECE = 64 * 1024


@dataclass(frozen=True)
class Reply:
    """A scripted answer: ``status`` with the raw ``body``, sent after ``delay_s``.

    ``drip_s``: the answer goes out one byte every ``drip_s`` seconds — all of it, from the status
    line on (``drip="all"``), or the body only (``drip="body"``). ``padding``: that many spaces
    follow the body (still the same JSON), written in 64 KiB pieces. ``sized``: False leaves the
    content-length out, so the client can only read until the connection closes. ``headers``:
    more headers, e.g. ``{"location": ...}`` for a redirect.
    """

    status: int = 200
    body: str = ""
    delay_s: float = 0.0
    drip_s: float = 0.0
    drip: Literal["all", "body"] = "all"
    padding: int = 0
    sized: bool = True
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class RerankStandIn:
    """Serves ``kind``'s rerank API until stopped; use as a context manager."""

    kind: Kind = "vllm"
    prefer: list[str] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)  # bytes of each answer sent before it ended or the client left
    port: int = 0  # 0: a free one

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", self.port), _handler(self))
        self._http.block_on_close = False  # stopping does not wait for a reply still being delayed
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}{PATHS[self.kind]}"

    def wait_sent(self, count: int = 1, within_s: float = 10.0) -> list[int]:
        """``sent`` once ``count`` answers have ended (a client that gave up may leave one still being written)."""
        give_up = time.monotonic() + within_s
        while len(self.sent) < count and time.monotonic() < give_up:
            time.sleep(0.01)
        return list(self.sent)

    def texts(self) -> list[str]:
        """Every text received for scoring, in order (documents or texts, whichever the request had)."""
        return [t for r in self.received for t in r.body.get("documents") or r.body.get("texts") or []]

    def __enter__(self) -> RerankStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop answering and close the port (a later request is refused)."""
        if self._thread.is_alive():
            self._http.shutdown()
            self._http.server_close()
            self._thread.join()

    def score(self, text: str) -> float:
        for position, word in enumerate(self.prefer):
            if word.lower() in text.lower():
                return round(0.99 - 0.1 * position, 4)
        return 0.01

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        with self._lock:
            self.received.append(Received(path, headers, body))
            scripted = self.replies.pop(0) if self.replies else None
        if scripted is not None:
            return scripted
        if path != PATHS[self.kind]:
            return Reply(404, json.dumps({"error": f"no route {path}"}))
        field_name = "texts" if self.kind == "tei" else "documents"
        texts = body.get(field_name)
        if not isinstance(texts, list) or not isinstance(body.get("query"), str):
            status = 400 if self.kind == "vllm" else 422
            return Reply(status, json.dumps({"error": f"missing field `{field_name}`"}))
        return Reply(200, json.dumps(self.results(texts, body.get("top_n"))))

    def results(self, texts: list[str], top_n: int | None) -> Any:
        ranked = sorted(range(len(texts)), key=lambda i: -self.score(texts[i]))[: top_n or len(texts)]
        if self.kind == "tei":
            return [{"index": i, "score": self.score(texts[i])} for i in ranked]
        results: list[dict[str, Any]] = [{"index": i, "relevance_score": self.score(texts[i])} for i in ranked]
        usage = {"total_tokens": sum(len(t.split()) for t in texts)}
        if self.kind == "vllm":
            for result in results:
                result["document"] = {"text": texts[result["index"]]}
            return {"id": "rerank-1", "model": "BAAI/bge-reranker-v2-m3", "usage": usage, "results": results}
        if self.kind == "infinity":
            for result in results:
                result["document"] = None
            return {"object": "rerank", "results": results, "model": "bge", "usage": usage, "id": "i1", "created": 1}
        return {"model": "bge-reranker", "object": "list", "usage": usage, "results": results}


def _handler(stand_in: RerankStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
            raw = self.rfile.read(int(self.headers.get("content-length", 0)))
            self._answer(json.loads(raw or b"{}"))

        def do_GET(self) -> None:  # noqa: N802 - what a client following a 301/302/303 redirect sends
            self._answer({})

        def _answer(self, body: dict[str, Any]) -> None:
            headers = {k.lower(): v for k, v in self.headers.items()}
            reply = stand_in.answer(self.path, headers, body)
            time.sleep(reply.delay_s)
            payload = reply.body.encode()
            head = [f"HTTP/1.1 {reply.status} {_phrase(reply.status)}", "content-type: application/json"]
            head += [f"{name}: {value}" for name, value in reply.headers.items()]
            if reply.sized:
                head.append(f"content-length: {len(payload) + reply.padding}")
            else:
                head.append("connection: close")
                self.close_connection = True
            start = ("\r\n".join(head) + "\r\n\r\n").encode()
            sent = 0
            try:
                for piece in _pieces(start, payload, reply):
                    self.wfile.write(piece)
                    sent += len(piece)
            except OSError:  # the client gave up (a timeout or size test)
                self.close_connection = True
            finally:
                with stand_in._lock:
                    stand_in.sent.append(sent)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the http.server signature
            """Quiet: the tests assert on the recorded requests instead."""

    return Handler


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Scripted"


def _pieces(start: bytes, payload: bytes, reply: Reply) -> Iterator[bytes]:
    """The answer's bytes as ``reply`` sends them: dripped a byte at a time, or in pieces of at most 64 KiB."""
    if reply.drip_s and reply.drip == "body":
        yield start
        start = b""
    if reply.drip_s:
        for byte in start + payload:
            yield bytes([byte])
            time.sleep(reply.drip_s)
    else:
        yield start + payload
    filler = b" " * PIECE
    for offset in range(0, reply.padding, PIECE):
        yield filler[: min(PIECE, reply.padding - offset)]
