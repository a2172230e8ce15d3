"""Fixtures for the agent: the bundled demo index, built once, a way to run one question on a server in this
process (or, for the few tests of that path, over stdio), and each model back-end on its scripted server.

A model back-end test names the API it drives in its module's ``API`` (``"openai"`` or
``"anthropic"``); a test of what both back-ends do the same way is parametrised over ``api``
instead. Either way :func:`fake` is that API's scripted server and :func:`backend` the real SDK
client's back-end pointed at it, configured as :data:`tests.client_agent.scripted.MODEL_APIS` says.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from client_agent.backends.base import Backend, Exchange
from client_agent.backends.conversation import ModelBackend
from client_agent.offline.backend import OfflineBackend
from client_agent.connection import ToolServer, connect
from client_agent.loop import Agent, Budgets, RunResult
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from mcp_server.surface.tools import RetrievalTools
from tests.client_agent.fake_http import ScriptedServer
from tests.client_agent.in_process import served
from tests.client_agent.scripted import MODEL_APIS
from tests.helpers import subprocess_env

AskFn = Callable[..., Awaitable[RunResult]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def bundled_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The bundled corpora and demo database, indexed once for the whole session."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("agent-bundled"))
    ingest(settings)
    return settings


@pytest.fixture(scope="session")
def bundled_tools(bundled_settings: Settings) -> Iterator[RetrievalTools]:
    """The tools over the bundled index, opened once for the whole session."""
    tools = RetrievalTools.open(bundled_settings)
    yield tools
    tools.close()


def _asker(connecting: Callable[[], AbstractAsyncContextManager[ToolServer]], trace: Path) -> AskFn:
    async def ask(question: str, history: list[Exchange] | None = None, backend: Backend | None = None,
                  budgets: Budgets | None = None) -> RunResult:
        async with connecting() as server:
            agent = Agent(server, backend or OfflineBackend(), budgets)
            return await agent.run(question, trace, history)

    return ask


@pytest.fixture
def ask_offline(bundled_tools: RetrievalTools, tmp_path: Path) -> AskFn:
    """Ask one question with the offline back-end, over MCP in memory, of a server on the bundled index."""
    return _asker(lambda: served(bundled_tools), tmp_path / "trace.jsonl")


@pytest.fixture
def ask_offline_stdio(bundled_settings: Settings, tmp_path: Path) -> AskFn:
    """Ask one question with the offline back-end over a real stdio server on the bundled index (a spawned
    ``ragmcp serve --wait-for-index``, as ``rag-agent ask`` runs it)."""
    return _asker(lambda: connect(server_env=subprocess_env(bundled_settings)), tmp_path / "trace.jsonl")


@pytest.fixture
def api(request: pytest.FixtureRequest) -> str:
    """The model API under test: the test module's ``API``, unless the test is parametrised over ``api``."""
    return str(request.module.API)


@pytest.fixture
def fake(api: str) -> Iterator[ScriptedServer]:
    """The API's scripted server on 127.0.0.1, stopped after the test."""
    with MODEL_APIS[api].server() as server:
        yield server


@pytest.fixture
async def backend(api: str, fake: ScriptedServer) -> AsyncIterator[ModelBackend[Any]]:
    """The API's back-end through its real SDK against ``fake``: 512 tokens a reply, two retries; closed after."""
    spec = MODEL_APIS[api]
    backend = spec.backend(model=spec.model, base_url=spec.base_url(fake), api_key=spec.key, max_tokens=512,
                           max_retries=2)
    yield backend
    await backend.aclose()
