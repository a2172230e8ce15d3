"""What serving costs and who may reach it: tool calls (``RAGMCP_*``), SQL (``RAGMCP_SQL_*``), the HTTP
server (``RAGMCP_HTTP_*`` and the access lists) and its audit log (``RAGMCP_AUDIT_*``).

``ragmcp serve --transport http`` hands its worker processes the parent's settings through
:meth:`mcp_server.settings.Settings.to_env`. With a tokens file the HTTP server requires bearer
tokens, and every call it serves goes to the audit log (default ``<data_dir>/audit.jsonl``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_settings import NoDecode

from mcp_server.settings.group import SettingsGroup, expand_home, group_config


class CallSettings(SettingsGroup):
    """What one MCP tool call may ask for, return and take, and how many run at once."""

    model_config = group_config("RAGMCP_")

    max_top_k: int = Field(default=50, ge=1, le=1000)
    max_query_chars: int = Field(default=2000, ge=16)
    max_result_chars: int = Field(
        default=20_000, ge=1_000, description="Most characters of text one MCP tool call returns."
    )
    max_concurrent_calls: int = Field(
        default=4, ge=1, le=256,
        description="Searches and document reads running at once per process (SQL: sql_max_concurrent); more wait.",
    )
    call_timeout_s: float = Field(
        default=30.0, gt=0, le=3600, description="Longest an MCP tool call may take, waiting for its turn included."
    )
    page_image_max_side: int = Field(
        default=1600, ge=64, le=10_000,
        description="The longest side, in pixels, of a picture of a cited page (page:// resources, ragmcp doc --png); "
        "a page is drawn at the scale that fits it (a picture is only ever scaled down).",
    )  # fmt: skip
    page_image_max_bytes: int = Field(
        default=2_000_000, ge=10_000, le=50_000_000,
        description="The largest PNG of a cited page, in bytes; a larger one is drawn again, smaller, until it fits.",
    )  # fmt: skip


class SqlSettings(SettingsGroup):
    """What one ``sql_query`` statement may return and cost, and how many run at once (:mod:`mcp_server.sql`)."""

    model_config = group_config("RAGMCP_SQL_")

    max_rows: int = Field(default=200, ge=1, le=10_000)
    timeout_s: float = Field(default=5.0, gt=0, le=300)
    max_concurrent: int = Field(
        default=2, ge=1, le=64,
        description="SQL statements running at once per process (each in a worker process), besides the other calls; "
        "on a team server one team holds all but one of them while another team waits.",
    )  # fmt: skip
    memory_mb: int = Field(
        default=256, ge=16, le=65_536,
        description="Memory one SQL statement may use (SQLite's heap, its sorts and temporary tables included: they "
        "stay in memory, never on disk); past it the statement is stopped with a tool error.",
    )  # fmt: skip


class HttpSettings(SettingsGroup):
    """``ragmcp serve --transport http``: where it listens, who may reach it, and what one request may cost.

    The access settings keep their own names (``RAGMCP_ALLOWED_HOSTS``, ``RAGMCP_TOKENS_FILE``, ...)."""

    model_config = group_config("RAGMCP_HTTP_")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65_535)
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias="RAGMCP_ALLOWED_HOSTS",
        description="Host headers accepted over HTTP besides loopback; 'name:*' for any port.",
    )  # fmt: skip
    allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list, validation_alias="RAGMCP_ALLOWED_ORIGINS",
        description="Origin headers accepted over HTTP besides loopback ones.",
    )  # fmt: skip
    tokens_file: Path | None = Field(
        default=None, validation_alias="RAGMCP_TOKENS_FILE",
        description="Clients, token hashes and grants (ragmcp token add); set, HTTP requires tokens.",
    )  # fmt: skip
    public_url: str | None = Field(
        default=None, validation_alias="RAGMCP_PUBLIC_URL",
        description="The URL clients reach the HTTP server at (behind a proxy, the proxy's); names the protected "
        "resource in auth responses. Default: http://<host>:<port>.",
    )  # fmt: skip
    stateless_http: bool = Field(
        default=True, validation_alias="RAGMCP_STATELESS_HTTP",
        description="A fresh MCP transport per HTTP request (no sessions).",
    )  # fmt: skip
    max_body_bytes: int = Field(
        default=1_048_576, ge=1_024, validation_alias="RAGMCP_MAX_BODY_BYTES",
        description="Largest HTTP request body accepted.",
    )  # fmt: skip
    reload_interval_s: float = Field(
        default=1.0, gt=0, le=3600, validation_alias="RAGMCP_RELOAD_INTERVAL_S",
        description="How often an HTTP worker checks for a newly published index.",
    )  # fmt: skip
    header_timeout_s: float = Field(
        default=10.0, gt=0, le=3600, description="Longest an HTTP request's headers may take to arrive."
    )
    body_timeout_s: float = Field(
        default=30.0, gt=0, le=3600, description="Longest an HTTP request's body may take to arrive after its headers."
    )
    max_header_bytes: int = Field(
        default=65_536, ge=4_096, le=16_777_216,
        description="Largest HTTP request line and headers together; past it the answer is 431.",
    )  # fmt: skip
    stream_lifetime_s: float = Field(
        default=300.0, gt=0, le=86_400,
        description="Longest an HTTP notification stream (GET /mcp, subscriptions/listen) stays open; clients reconnect.",
    )  # fmt: skip
    max_headers: int = Field(
        default=100, ge=10, le=10_000, description="Most header fields an HTTP request may have; past it, 431."
    )
    worker_start_timeout_s: int = Field(
        default=60, ge=5, le=3600,
        description="Longest an HTTP worker process may take to start (and to answer the supervisor's pings).",
    )  # fmt: skip

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("tokens_file", mode="after")
    @classmethod
    def _expand(cls, value: Any) -> Any:
        return expand_home(value)


class AuditSettings(SettingsGroup):
    """The HTTP server's audit log (:mod:`mcp_server.team.audit`): where, how large, and how much per client."""

    model_config = group_config("RAGMCP_AUDIT_")

    log: Path | None = Field(default=None, description="The HTTP audit log (JSONL); default <data_dir>/audit.jsonl.")
    max_bytes: int = Field(default=10_485_760, ge=10_000, description="Size at which the audit log rotates.")
    backups: int = Field(default=5, ge=1, description="Rotated audit logs kept (audit.jsonl.1, .2, ...).")
    min_keep_hours: float = Field(
        default=24.0, ge=0, le=8_760,
        description="Rotation never deletes an audit backup written to less than this many hours ago: the log grows "
        "past audit_max_bytes instead, so a flood of calls cannot push recent records out. 0: rotate by size alone.",
    )  # fmt: skip
    client_bytes_per_minute: int = Field(
        default=262_144, ge=16_384,
        description="Bytes of full audit records one client may write a minute (per worker process); past it its "
        "calls are still recorded, each on a thinned line (time, tool, outcome, the start of its arguments).",
    )  # fmt: skip

    @field_validator("log", mode="after")
    @classmethod
    def _expand(cls, value: Any) -> Any:
        return expand_home(value)
