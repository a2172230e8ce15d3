"""Fixtures for the MCP server tests: the acme index with a demo database, as settings and as subprocess env."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server.demo_database import materialize_database
from mcp_server.settings import Settings
from tests.helpers import DEMO_DATABASE_SOURCES
from tests.mcp_server.test_sql import CAP, TIMEOUT_S

@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio, the event loop the server runs on."""
    return "asyncio"


@pytest.fixture(scope="session")
def company_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo database in a directory of its own, so tests can check it stays byte-for-byte the same."""
    return materialize_database(DEMO_DATABASE_SOURCES, tmp_path_factory.mktemp("mcp-sql") / "company.sqlite")


@pytest.fixture(scope="session")
def server_settings(acme_index: Settings, company_db: Path) -> Settings:
    """The acme index and the demo database, with the SQL limits of the hostile-input table."""
    return Settings(
        data_dir=acme_index.data_dir, corpora=acme_index.corpora, database=company_db,
        sql_max_rows=CAP, sql_timeout_s=TIMEOUT_S,
    )  # fmt: skip
