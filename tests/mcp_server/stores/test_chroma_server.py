"""The vector store on a real Chroma server (``chroma run`` from the chromadb package) instead of embedded."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import chromadb
import httpx
import pytest
from chromadb.config import Settings as ChromaSettings
from mcp import Client
from pydantic import ValidationError

from mcp_server.errors import BackendUnavailableError
from mcp_server.indexing.generations import IndexLayout, read_manifest
from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.settings import Settings
from mcp_server.stores.vector import collection_name, server_collection_name
from tests.helpers import write_doc
from tests.mcp_server.team.test_http import HttpServer

QUERIES = [
    "how many days ahead should flights be booked",
    "money for meals while travelling",
    "working from home equipment allowance",
    "deployment fails with a timeout",
    "when is the office open",
    "年假",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Chroma server process on a free loopback port, with its data in a temporary directory."""
    root = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    log = (root / "chroma.log").open("wb")
    chroma = Path(sys.executable).with_name("chroma")
    process = subprocess.Popen(
        [str(chroma), "run", "--path", str(root / "db"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, (root / "chroma.log").read_text()
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the Chroma server did not answer its heartbeat"
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()


def server_collections(url: str) -> set[str]:
    port = int(url.rsplit(":", 1)[1])
    client = chromadb.HttpClient(host="127.0.0.1", port=port, settings=ChromaSettings(anonymized_telemetry=False))
    return {c.name for c in client.list_collections()}


def ranked(retriever: Retriever, query: str, mode: str) -> list[tuple[str, float]]:
    return [(h.citation.id, round(h.score, 4)) for h in retriever.searcher.search(query, mode=mode, top_k=8)]  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def served_acme(acme_index: Settings, chroma_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The acme corpus ingested with its vectors on the Chroma server."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("acme-on-server"), corpora=acme_index.corpora,
                        chroma_url=chroma_url)  # fmt: skip
    ingest(settings)
    return settings


@pytest.mark.slow
def test_server_backend_gives_the_same_hits_as_the_embedded_store(served_acme: Settings, acme: Retriever) -> None:
    generation = IndexLayout(served_acme.index_dir).current()
    assert generation is not None and not (generation / "chroma").exists()
    assert read_manifest(generation).vector_collection == server_collection_name(generation.name)
    on_server = Retriever.open(served_acme)
    try:
        for query in QUERIES:
            for mode in ("vector", "hybrid"):
                expected = ranked(acme, query, mode)
                assert expected and ranked(on_server, query, mode) == expected, (query, mode)
    finally:
        on_server.close()


@pytest.mark.slow
@pytest.mark.anyio
async def test_http_server_over_the_chroma_server_answers_like_the_embedded_store(
    served_acme: Settings, acme: Retriever, tmp_path: Path
) -> None:
    server = HttpServer(served_acme, tmp_path / "stderr.log")
    try:
        health = httpx.get(f"{server.url}/healthz").json()
        assert health["vectors"] == server_collection_name(health["generation"])
        async with Client(f"{server.url}/mcp") as client:
            for query in QUERIES[:3]:
                result = await client.call_tool("vector_search", {"query": query, "top_k": 5})
                assert result.structured_content is not None
                served = [(h["citation"]["id"], round(h["score"], 4)) for h in result.structured_content["hits"]]
                assert served == [(h.citation.id, round(h.score, 4)) for h in acme.searcher.search(query, mode="vector")]
    finally:
        assert server.stop() in (0, -signal.SIGTERM), server.log.read_text()  # one worker re-raises SIGTERM
    assert "HTTP Request:" not in server.log.read_text()  # no log line per Chroma server request


@pytest.mark.slow
def test_reingest_copies_vectors_to_a_new_collection_and_drops_removed_ones(
    tiny_settings: Settings, tiny_corpus: Path, chroma_url: str
) -> None:
    settings = tiny_settings.model_copy(update={"chroma_url": chroma_url})
    generations = [ingest(settings).generation]
    for fuel in ("quaggaword", "okapiword"):
        write_doc(tiny_corpus, "alpha.md", "Alpha", f"# Alpha\n\nThe alpha reactor now runs on {fuel} fuel.")
        report = ingest(settings)
        assert report.chunks_written == 1  # beta and gamma came over from the previous collection
        generations.append(report.generation)
    assert None not in generations
    names = {g: collection_name(server_collection_name(g), "tiny") for g in generations if g is not None}
    ours = {name for name in server_collections(chroma_url) if name in names.values()}
    assert ours == {names[g] for g in generations[1:] if g is not None}  # the one corpus's, of the kept generations
    retriever = Retriever.open(settings)
    try:
        assert [h.citation.id for h in retriever.searcher.search("okapiword", mode="vector", top_k=3)][0] == "tiny:alpha#0"
        assert {h.citation.id for h in retriever.searcher.search("lead shielding", mode="vector", top_k=3)} == {
            "tiny:alpha#0", "tiny:beta#0", "tiny:gamma#0",
        }  # fmt: skip
    finally:
        retriever.close()


@pytest.mark.slow
def test_vectors_move_to_the_server_and_back(tiny_settings: Settings, chroma_url: str) -> None:
    ingest(tiny_settings)
    embedded = Retriever.open(tiny_settings)
    before = ranked(embedded, "reactor fuel", "vector")
    embedded.close()
    on_server = tiny_settings.model_copy(update={"chroma_url": chroma_url})
    moved = ingest(on_server)  # nothing changed in the corpus, but the vectors move: a new generation
    assert moved.generation is not None and moved.chunks_embedded == 0
    retriever = Retriever.open(on_server)
    assert retriever.manifest.vector_collection is not None and ranked(retriever, "reactor fuel", "vector") == before
    retriever.close()
    with pytest.raises(BackendUnavailableError, match="set RAGMCP_CHROMA_URL"):
        Retriever.open(tiny_settings)
    back = ingest(tiny_settings)  # rebuilt into the embedded store, embeddings from the cache
    assert back.generation is not None and back.chunks_embedded == 0
    retriever = Retriever.open(tiny_settings)
    assert retriever.manifest.vector_collection is None and ranked(retriever, "reactor fuel", "vector") == before
    retriever.close()


def test_an_unreachable_chroma_server_is_a_clear_error(tiny_settings: Settings) -> None:
    settings = tiny_settings.model_copy(update={"chroma_url": f"http://127.0.0.1:{free_port()}"})
    with pytest.raises(BackendUnavailableError, match="cannot reach the Chroma server at http://127.0.0.1:.*chroma run"):
        ingest(settings)


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "ftp://h:1", "http://:8000", "http://h", "http://h:1/api", "http://h:x"])
def test_a_malformed_chroma_url_is_refused(url: str) -> None:
    with pytest.raises(ValidationError, match="chroma_url must look like http://HOST:PORT"):
        Settings(chroma_url=url)
