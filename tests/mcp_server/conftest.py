"""Fixtures for the MCP server tests: the acme index with a demo database, as settings and as subprocess env."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_server.indexing.ingest import ingest
from mcp_server.settings import Settings
from mcp_server.sql.demo import materialize_database
from tests.helpers import DEMO_DATABASE_SOURCES, write_doc
from tests.mcp_server.sql.test_guard import CAP, TIMEOUT_S


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
    return Settings.from_names(
        data_dir=acme_index.data_dir, corpora=acme_index.corpora, database=company_db,
        sql_max_rows=CAP, sql_timeout_s=TIMEOUT_S,
    )  # fmt: skip


@pytest.fixture(scope="session")
def teams_settings(tmp_path_factory: pytest.TempPathFactory, company_db: Path) -> Settings:
    """Two teams' corpora, teama and teamb, ingested once per session, and the demo database (read-only use)."""
    root = tmp_path_factory.mktemp("teams")
    teama, teamb = root / "teama", root / "teamb"
    for folder, description in ((teama, "Team A's onboarding handbook."), (teamb, "Team B's launch plans.")):
        folder.mkdir()
        toml = f'name = "{folder.name}"\ndescription = "{description}"\n'
        (folder / "corpus.toml").write_text(toml, encoding="utf-8")
    write_doc(teama, "badges.md", "Badges", "# Badges\n\nThe wombat badge opens the north door of the office.")
    write_doc(teama, "lunch.md", "Lunch", "# Lunch\n\nLunch is served at noon in the canteen on the third floor.")
    write_doc(teamb, "launch.md", "Launch", "# Launch\n\nProject quokka launches in March with a budget of 42 million.")
    write_doc(teamb, "hiring.md", "Hiring", "# Hiring\n\nThe quokka team hires four engineers before the launch.")
    settings = Settings(data_dir=root / "data", corpora=[teama, teamb], database=company_db)
    ingest(settings)
    return settings
