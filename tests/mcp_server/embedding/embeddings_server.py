"""A local OpenAI-compatible embeddings server for the tests: ``POST /v1/embeddings`` on 127.0.0.1.

It speaks the OpenAI wire format (a JSON list of ``{"object": "embedding", "index", "embedding"}``,
the embedding as a float list or, when asked with ``encoding_format: base64``, as base64 of
little-endian float32) and answers with REAL vectors from the bundled MiniLM model, computed
by the ONNX encoder directly. Tests script failures ahead (status, headers, body), change the
dimension it answers with, and read back every request it received.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from mcp_server.embedding.onnx_model import OnnxSentenceEmbedding

MODEL = "all-minilm"


@dataclass
class Received:
    at: float  # time.monotonic() on arrival
    body: dict[str, Any]
    authorization: str | None


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class EmbeddingsServer:
    """Serves ``MODEL`` until stopped; ``port=0`` picks a free port (reused by a restart on the same one)."""

    def __init__(self, port: int = 0, *, base64_supported: bool = True) -> None:
        self.base64_supported = base64_supported
        self.dimension: int | None = None  # answer vectors of this length (the model's own: None)
        self.script: list[Reply] = []  # answered in order before any real vector
        self.received: list[Received] = []
        self._encoder = OnnxSentenceEmbedding()
        self._http = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._http.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        """Stop answering and free the port (again: nothing)."""
        if not self._thread.is_alive():
            return
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    def texts(self) -> list[str]:
        """Every text embedded so far, in the order received."""
        return [t for r in self.received for t in r.body["input"]]

    def _answer(self, body: dict[str, Any]) -> Reply:
        if self.script:
            return self.script.pop(0)
        if body.get("model") != MODEL:
            return Reply(404, {"error": {"message": f"model \"{body.get('model')}\" not found, try pulling it first"}})
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        vectors = [np.asarray(v, dtype=np.float32) for v in self._encoder(texts)]
        if self.dimension is not None:  # another model under the same name: repeat the vector to the length
            vectors = [np.resize(v, self.dimension) for v in vectors]
        as_base64 = body.get("encoding_format") == "base64" and self.base64_supported
        data = [
            {
                "object": "embedding", "index": i,
                "embedding": base64.b64encode(v.astype("<f4").tobytes()).decode() if as_base64 else v.tolist(),
            }
            for i, v in enumerate(vectors)
        ]  # fmt: skip
        tokens = sum(len(t.split()) for t in texts)
        return Reply(200, {"object": "list", "data": data, "model": MODEL,
                           "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})  # fmt: skip

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                if self.path != "/v1/embeddings":
                    self._send(Reply(404, {"error": {"message": f"no route {self.path}"}}))
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.received.append(Received(time.monotonic(), body, self.headers.get("Authorization")))
                self._send(server._answer(body))

            def _send(self, reply: Reply) -> None:
                payload = reply.body.encode() if isinstance(reply.body, str) else json.dumps(reply.body).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/plain" if isinstance(reply.body, str) else "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep the test output clean

        return Handler
