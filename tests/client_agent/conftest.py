"""Fixtures for the agent: the bundled demo index, built once, and a way to run one question over stdio."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from client_agent.backends.base import Backend, Exchange
from client_agent.offline.backend import OfflineBackend
from client_agent.connection import connect
from client_agent.loop import Agent, Budgets, RunResult
from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
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


@pytest.fixture
def ask_offline(bundled_settings: Settings, tmp_path: Path) -> AskFn:
    """Ask one question with the offline back-end over a real stdio server on the bundled index."""

    async def ask(question: str, history: list[Exchange] | None = None, backend: Backend | None = None,
                  budgets: Budgets | None = None) -> RunResult:
        async with connect(server_env=subprocess_env(bundled_settings)) as server:
            agent = Agent(server, backend or OfflineBackend(), budgets)
            return await agent.run(question, tmp_path / "trace.jsonl", history)

    return ask
