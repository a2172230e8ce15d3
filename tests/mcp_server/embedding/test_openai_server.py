"""Embeddings from an OpenAI-compatible server (``openai:<model>``), through the real ``openai`` SDK,
against a local ``/v1/embeddings`` server answering with the bundled model's real vectors."""

from __future__ import annotations

import base64
import shutil
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import Client

from mcp_server.sql.demo import open_database
from mcp_server.embedding.loading import load_embedder
from mcp_server.errors import BackendUnavailableError, EmbeddingModelError, EmbeddingModelMismatchError
from mcp_server.indexing.generations import IndexLayout
from mcp_server.indexing.ingest import ingest
from mcp_server.retrieval.retriever import Retriever
from mcp_server.surface.server import build_server
from mcp_server.settings import Settings
from mcp_server.surface.tools import RetrievalTools
from tests.helpers import FIXTURES, write_doc
from tests.mcp_server.embedding.embeddings_server import MODEL, EmbeddingsServer, Reply
from tests.mcp_server.surface.mcp_contract import text_of

QUERIES = [
    "how many days ahead should flights be booked",
    "money for meals while travelling",
    "the deploy fails with a certificate error",
    "can I work from home on Fridays",
    "年假有多少天",
]


def through_server(data_dir: Path, corpus: Path, url: str, **changes: Any) -> Settings:
    return Settings.from_names(data_dir=data_dir, corpora=[corpus], embedding_model=f"openai:{MODEL}", embedding_url=url, **changes)


def index_files(settings: Settings) -> dict[str, tuple[int, bytes]]:
    """Every file under the index directory with its mtime and bytes."""
    root = settings.index_dir
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes()) for p in root.rglob("*") if p.is_file()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def embeddings() -> Iterator[EmbeddingsServer]:
    server = EmbeddingsServer()
    yield server
    server.stop()


@pytest.fixture
def fresh_embedders() -> Iterator[None]:
    """Each load_embedder call in the test builds a new embedder, as a new process would."""
    load_embedder.cache_clear()
    yield
    load_embedder.cache_clear()


# --- the same index as with the bundled model ---------------------------------------------------


@pytest.fixture(scope="module")
def served() -> Iterator[EmbeddingsServer]:
    server = EmbeddingsServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def served_index(served: EmbeddingsServer, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The acme fixture corpus ingested through the server, eight texts a request."""
    root = tmp_path_factory.mktemp("served")
    shutil.copytree(FIXTURES / "corpora" / "acme", root / "acme")
    settings = through_server(root / "data", root / "acme", served.url, embedding_batch_size=8)
    ingest(settings)
    return settings


@pytest.fixture(scope="module")
def served_retriever(served_index: Settings) -> Iterator[Retriever]:
    retriever = Retriever.open(served_index)
    yield retriever
    retriever.close()


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_index_built_through_the_server_answers_like_the_bundled_model(
    acme: Retriever, served_retriever: Retriever, served: EmbeddingsServer, mode: str
) -> None:
    for query in QUERIES:
        direct = acme.searcher.search(query, mode=mode, top_k=8)  # type: ignore[arg-type]
        through = served_retriever.searcher.search(query, mode=mode, top_k=8)  # type: ignore[arg-type]
        assert [h.citation.id for h in through] == [h.citation.id for h in direct], query
        assert np.allclose([h.score for h in through], [h.score for h in direct], rtol=0, atol=1e-6), query
        assert served.texts()[-1] == query  # the query was embedded by the server too
    assert served_retriever.manifest.embedding_model == f"openai:{MODEL}@{served.url}"
    assert served_retriever.manifest.dimension == 384


def test_ingest_batches_requests_and_asks_for_base64(served_index: Settings, served: EmbeddingsServer) -> None:
    chunks = Retriever.open(served_index)
    try:
        total = chunks.manifest.chunks
    finally:
        chunks.close()
    ingest_requests = [r for r in served.received if r.body["input"] != ["dimension probe"]][: -(-total // 8)]
    assert [len(r.body["input"]) for r in ingest_requests[:-1]] == [8] * (len(ingest_requests) - 1)
    assert sum(len(r.body["input"]) for r in ingest_requests) == total
    assert all(r.body["encoding_format"] == "base64" and r.body["model"] == MODEL for r in served.received)
    assert all(r.authorization == "Bearer no-key" for r in served.received)


def test_a_server_that_only_sends_float_lists_gives_the_same_vectors(fresh_embedders: None) -> None:
    server = EmbeddingsServer(base64_supported=False)
    try:
        settings = Settings.from_names(embedding_model=f"openai:{MODEL}", embedding_url=server.url)
        texts = ["annual leave", "the VPN certificate expired", "中文句子"]
        remote = load_embedder(settings.embedding.model, None, settings.embedding.server).embed(texts)
        local = load_embedder("minilm-int8").embed(texts)
        assert all(isinstance(r.body, dict) for r in server.received)
        assert np.allclose(np.stack(remote), np.stack(local), rtol=0, atol=1e-6)
    finally:
        server.stop()


# --- the query path through MCP -----------------------------------------------------------------


@pytest.mark.anyio
async def test_mcp_vector_search_embeds_the_query_through_the_server(
    served_retriever: Retriever, served_index: Settings, served: EmbeddingsServer, acme: Retriever
) -> None:
    tools = RetrievalTools(served_retriever, open_database(served_index), served_index)
    async with Client(build_server(served_index, tools)) as client:
        result = await client.call_tool("vector_search", {"query": "money for meals while travelling", "top_k": 3})
    assert not result.is_error, text_of(result)
    hits = result.structured_content["hits"]  # type: ignore[index]
    expected = [h.citation.id for h in acme.searcher.search("money for meals while travelling", mode="vector", top_k=3)]
    assert [h["citation"]["id"] for h in hits] == expected
    assert served.texts()[-1] == "money for meals while travelling"


@pytest.mark.anyio
async def test_mcp_search_with_the_server_down_is_a_clear_tool_error(
    tiny_corpus: Path, tmp_path: Path, fresh_embedders: None
) -> None:
    server = EmbeddingsServer()
    settings = through_server(tmp_path / "data", tiny_corpus, server.url, embedding_max_retries=1)
    ingest(settings)
    retriever = Retriever.open(settings)
    server.stop()
    try:
        tools = RetrievalTools(retriever, open_database(settings), settings)
        async with Client(build_server(settings, tools)) as client:
            down = await client.call_tool("vector_search", {"query": "zebraword fuel"})
            hybrid = await client.call_tool("hybrid_search", {"query": "zebraword fuel"})
            keyword = await client.call_tool("keyword_search", {"query": "zebraword"})
    finally:
        retriever.close()
    for failed in (down, hybrid):
        assert failed.is_error
        assert f"cannot reach the embedding server at {server.url}" in text_of(failed)
        assert "RAGMCP_EMBEDDING_URL" in text_of(failed)
    assert not keyword.is_error and "tiny:alpha#0" in text_of(keyword)  # what needs no embedding still works


# --- failures leave the index as it was ---------------------------------------------------------


def test_server_down_fails_ingest_before_publishing_and_the_old_index_still_serves(
    tiny_corpus: Path, tmp_path: Path, embeddings: EmbeddingsServer, fresh_embedders: None
) -> None:
    port = embeddings.port
    settings = through_server(tmp_path / "data", tiny_corpus, embeddings.url, embedding_max_retries=1)
    ingest(settings)
    retriever = Retriever.open(settings)
    before_hits = [(h.citation.id, h.score) for h in retriever.searcher.search("zebraword fuel", mode="vector")]
    retriever.close()
    before = index_files(settings)
    embeddings.stop()

    write_doc(tiny_corpus, "delta.md", "Delta", "# Delta\n\nDelta wings fly at dawn.")
    load_embedder.cache_clear()  # a new ingest process
    with pytest.raises(BackendUnavailableError) as raised:
        ingest(settings)
    message = str(raised.value)
    assert f"cannot reach the embedding server at http://127.0.0.1:{port}/v1" in message
    assert "RAGMCP_EMBEDDING_URL" in message
    assert index_files(settings) == before  # no staging left over either: nothing was started

    restarted = EmbeddingsServer(port)
    try:
        retriever = Retriever.open(settings)
        assert [(h.citation.id, h.score) for h in retriever.searcher.search("zebraword fuel", mode="vector")] == before_hits
        assert retriever.searcher.search("delta wings", mode="keyword", top_k=3) == []  # still the previous generation
        retriever.close()
        ingest(settings)  # the server is back: the change goes in
        retriever = Retriever.open(settings)
        assert retriever.searcher.search("delta wings", mode="keyword")[0].citation.id == "tiny:delta#0"
        retriever.close()
    finally:
        restarted.stop()


def test_first_ingest_with_no_server_publishes_nothing(tiny_corpus: Path, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    settings = through_server(tmp_path / "data", tiny_corpus, url, embedding_max_retries=0)
    with pytest.raises(BackendUnavailableError, match=f"cannot reach the embedding server at {url}"):
        ingest(settings)
    assert IndexLayout(settings.index_dir).current() is None


def test_wrong_dimension_is_refused_and_leaves_the_index_untouched(
    tiny_corpus: Path, tmp_path: Path, embeddings: EmbeddingsServer, fresh_embedders: None
) -> None:
    settings = through_server(tmp_path / "data", tiny_corpus, embeddings.url)
    ingest(settings)
    before = index_files(settings)
    embeddings.dimension = 768  # another model now answers under the same name
    write_doc(tiny_corpus, "delta.md", "Delta", "# Delta\n\nDelta wings fly at dawn.")
    load_embedder.cache_clear()
    with pytest.raises(EmbeddingModelMismatchError) as raised:
        ingest(settings)
    message = str(raised.value)
    assert "384-dimensional" in message and "768-dimensional" in message and "ragmcp ingest --rebuild" in message
    assert index_files(settings) == before

    retriever = Retriever.open(settings)  # opening needs no vector; the first vector search says what is wrong
    try:
        with pytest.raises(EmbeddingModelMismatchError, match="ragmcp ingest --rebuild"):
            retriever.searcher.search("zebraword fuel", mode="vector")
    finally:
        retriever.close()

    report = ingest(settings, rebuild=True)  # the cache holds 384-d vectors under this name: none is reused
    assert report.chunks_embedded == report.chunks_written == 4
    retriever = Retriever.open(settings)
    try:
        assert retriever.manifest.dimension == 768
        assert retriever.searcher.search("zebraword fuel", mode="vector")[0].citation.id == "tiny:alpha#0"
    finally:
        retriever.close()


def test_a_server_changing_dimension_mid_ingest_publishes_nothing(
    tiny_corpus: Path, tmp_path: Path, embeddings: EmbeddingsServer, fresh_embedders: None
) -> None:
    settings = through_server(tmp_path / "data", tiny_corpus, embeddings.url)
    embeddings.script = [Reply(200, {"object": "list", "model": MODEL, "data": [
        {"object": "embedding", "index": 0, "embedding": [0.5] * 384}]})]  # the probe: 384-d, then 768-d
    embeddings.dimension = 768
    with pytest.raises(EmbeddingModelMismatchError, match="returned 768-dimensional vectors after 384-dimensional"):
        ingest(settings)
    assert IndexLayout(settings.index_dir).current() is None


def test_a_500_is_retried_and_the_ingest_completes(
    tiny_corpus: Path, tmp_path: Path, embeddings: EmbeddingsServer
) -> None:
    embeddings.script = [Reply(500, {"error": {"message": "model is loading"}}), Reply(503, "Service Unavailable")]
    settings = through_server(tmp_path / "data", tiny_corpus, embeddings.url)
    report = ingest(settings)
    assert report.generation is not None and report.chunks_embedded == 3
    assert embeddings.script == [] and len(embeddings.received) >= 3
    retriever = Retriever.open(settings)
    try:
        assert retriever.searcher.search("zebraword fuel", mode="vector")[0].citation.id == "tiny:alpha#0"
    finally:
        retriever.close()


def test_a_429_waits_as_long_as_retry_after_says(tiny_corpus: Path, tmp_path: Path, embeddings: EmbeddingsServer) -> None:
    embeddings.script = [Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "1"})]
    settings = through_server(tmp_path / "data", tiny_corpus, embeddings.url)
    ingest(settings)
    limited, retried = embeddings.received[0], embeddings.received[1]
    assert limited.body["input"] == retried.body["input"]
    assert retried.at - limited.at >= 0.95  # the SDK's own first backoff is at most 0.5 s


def test_a_server_that_fails_mid_ingest_names_itself_and_the_published_index_stays(
    tiny_corpus: Path, tmp_path: Path, embeddings: EmbeddingsServer
) -> None:
    settings = through_server(tmp_path / "data", tiny_corpus, embeddings.url, embedding_max_retries=1)
    ingest(settings)
    published = index_files(settings)
    write_doc(tiny_corpus, "delta.md", "Delta", "# Delta\n\nDelta wings fly at dawn.")
    embeddings.script = [Reply(500, {"error": {"message": "CUDA out of memory"}})] * 2
    requests = len(embeddings.received)
    with pytest.raises(BackendUnavailableError, match=f"server at {embeddings.url} answered 500 .*CUDA out of memory"):
        ingest(settings)
    assert len(embeddings.received) == requests + 2  # the request and its one retry
    after = {k: v for k, v in index_files(settings).items() if not k.startswith(".staging-")}
    assert after == published  # the failed run got as far as staging; the published generation is as it was
    retriever = Retriever.open(settings)
    try:
        assert retriever.searcher.search("delta wings", mode="keyword", top_k=3) == []
        assert retriever.searcher.search("zebraword fuel", mode="vector")[0].citation.id == "tiny:alpha#0"
    finally:
        retriever.close()


def test_an_unknown_model_or_a_url_without_v1_is_a_clear_error(
    tiny_corpus: Path, tmp_path: Path, embeddings: EmbeddingsServer
) -> None:
    unknown = Settings.from_names(
        data_dir=tmp_path / "a", corpora=[tiny_corpus], embedding_model="openai:bge-m3", embedding_url=embeddings.url
    )
    with pytest.raises(EmbeddingModelError, match="404 for model 'bge-m3'.*not found, try pulling it.*RAGMCP_EMBEDDING_MODEL"):
        ingest(unknown)
    without_v1 = through_server(tmp_path / "b", tiny_corpus, embeddings.url.removesuffix("/v1"))
    with pytest.raises(EmbeddingModelError, match="no route /embeddings.*usually ending in /v1"):
        ingest(without_v1)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([{"object": "embedding", "index": 0, "embedding": [0.5] * 384}], "1 vectors for 2 texts"),
        ([{"object": "embedding", "index": i, "embedding": [0.5] * (384 + i)} for i in range(2)], "vectors of shapes"),
    ],
)
def test_an_answer_without_one_vector_per_text_is_refused(
    embeddings: EmbeddingsServer, fresh_embedders: None, data: list[dict[str, Any]], message: str
) -> None:
    settings = Settings.from_names(embedding_model=f"openai:{MODEL}", embedding_url=embeddings.url)
    embedder = load_embedder(settings.embedding.model, None, settings.embedding.server)
    assert embedder.dimension == 384
    embeddings.script = [Reply(200, {"object": "list", "model": MODEL, "data": data})]
    with pytest.raises(EmbeddingModelError, match=f"server at {embeddings.url} returned {message}"):
        embedder.embed(["first text", "second text"])


# --- the identity the index records --------------------------------------------------------------


def test_switching_model_or_server_needs_a_rebuild_and_caches_never_mix(
    tiny_corpus: Path, tmp_path: Path, embeddings: EmbeddingsServer
) -> None:
    data = tmp_path / "data"
    bundled = Settings(data_dir=data, corpora=[tiny_corpus])
    assert ingest(bundled).chunks_embedded == 3
    first = through_server(data, tiny_corpus, embeddings.url)
    with pytest.raises(EmbeddingModelMismatchError, match="'auto' \\(tiny: minilm-int8\\).*ragmcp ingest --rebuild"):
        ingest(first)
    with pytest.raises(EmbeddingModelMismatchError, match="ragmcp ingest --rebuild"):
        Retriever.open(first)
    assert ingest(first, rebuild=True).chunks_embedded == 3  # same vectors, but from another model: not reused

    other = EmbeddingsServer()
    try:
        second = through_server(data, tiny_corpus, other.url)
        with pytest.raises(EmbeddingModelMismatchError, match=f"{embeddings.url}.*is configured.*RAGMCP_EMBEDDING_URL"):
            ingest(second)
        assert ingest(second, rebuild=True).chunks_embedded == 3
    finally:
        other.stop()
    assert ingest(first, rebuild=True).chunks_embedded == 0  # back to the first server: its cache entries serve

    cache = sqlite3.connect(bundled.embedding_cache_path)
    models = sorted(row[0] for row in cache.execute("SELECT DISTINCT model FROM vectors"))
    cache.close()
    assert models == sorted(["all-MiniLM-L6-v2-int8", f"openai:{MODEL}@{embeddings.url}", f"openai:{MODEL}@{other.url}"])


# --- settings ------------------------------------------------------------------------------------


def test_the_api_key_goes_to_the_configured_server_only(
    embeddings: EmbeddingsServer, monkeypatch: pytest.MonkeyPatch, fresh_embedders: None
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-meant-for-openai")
    keyless = Settings.from_names(embedding_model=f"openai:{MODEL}", embedding_url=embeddings.url)
    load_embedder(keyless.embedding.model, None, keyless.embedding.server).embed(["hello"])
    keyed = Settings.from_names(embedding_model=f"openai:{MODEL}", embedding_url=embeddings.url, embedding_api_key="sk-local")
    load_embedder(keyed.embedding.model, None, keyed.embedding.server).embed(["hello"])
    assert {r.authorization for r in embeddings.received} == {"Bearer no-key", "Bearer sk-local"}
    assert "sk-local" not in repr(keyed) and "sk-local" not in repr(keyed.embedding.server)
    assert keyed.to_env()["RAGMCP_EMBEDDING_API_KEY"] == "sk-local"  # worker processes get the real key


def test_credentials_in_the_url_are_used_but_never_recorded(
    tiny_corpus: Path, tmp_path: Path, embeddings: EmbeddingsServer
) -> None:
    url = embeddings.url.replace("http://", "http://user:s3cret@")
    settings = through_server(tmp_path / "data", tiny_corpus, url, embedding_max_retries=0)
    ingest(settings)
    retriever = Retriever.open(settings)
    try:
        assert retriever.manifest.embedding_model == f"openai:{MODEL}@{embeddings.url}"
        basic = "Basic " + base64.b64encode(b"user:s3cret").decode()
        assert {r.authorization for r in embeddings.received} == {basic}  # sent to the server, as HTTP basic auth
        embeddings.stop()
        with pytest.raises(BackendUnavailableError, match=f"cannot reach the embedding server at {embeddings.url}"):
            retriever.searcher.search("zebraword", mode="vector")
    finally:
        retriever.close()


def test_openai_itself_without_a_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, fresh_embedders: None) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = Settings.from_names(embedding_model="openai:text-embedding-3-small")
    with pytest.raises(EmbeddingModelError, match="RAGMCP_EMBEDDING_API_KEY or OPENAI_API_KEY.*RAGMCP_EMBEDDING_URL"):
        load_embedder(settings.embedding.model, None, settings.embedding.server)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"embedding_url": "http://localhost:11434/v1"}, "set RAGMCP_EMBEDDING_MODEL=openai:<model>"),
        ({"embedding_model": "openai:bge-m3", "embedding_url": "localhost:11434"}, "like http://localhost:11434/v1"),
        ({"embedding_model": "openai:bge-m3", "embedding_batch_size": 0}, "embedding_batch_size"),
    ],
)
def test_bad_embedding_settings_are_refused(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settings.from_names(**fields)
