"""What a client may read: the grant model shared by the MCP surface (which serves a grant) and the team server (which issues them)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator


class Grant(BaseModel):
    """What one client may read: some corpora (or ``"*"``: all, including future ones) and maybe SQL."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    corpora: tuple[str, ...] | Literal["*"] = "*"
    sql: bool = True

    @field_validator("corpora")
    @classmethod
    def _sorted(cls, value: tuple[str, ...] | Literal["*"]) -> tuple[str, ...] | Literal["*"]:
        """One spelling per grant (clients with equal grants share one server)."""
        return value if value == "*" else tuple(sorted(set(value)))

    @property
    def scope(self) -> frozenset[str] | None:
        """The corpora this grant may read; None for all of them."""
        return None if self.corpora == "*" else frozenset(self.corpora)

    def describe(self) -> str:
        corpora = "all corpora" if self.corpora == "*" else ", ".join(self.corpora) or "no corpora"
        return f"{corpora}; {'SQL' if self.sql else 'no SQL'}"


FULL_ACCESS = Grant()
"""The grant of a local user: stdio, or HTTP without a tokens file."""
