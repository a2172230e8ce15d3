"""The tokens file of a team server: who may connect, what each client may read, and how fast.

A JSON file (``RAGMCP_TOKENS_FILE``) lists the clients. Each entry has a name (a team or a
client; the audit log records it), the SHA-256 of its bearer token — never the token,
which ``ragmcp token add`` prints once — its grant (the corpora it may read, ``"*"`` for
all, and whether it may run ``sql_query``) and its limits (requests per minute with a
burst allowance, and requests in flight at once)::

    {"version": 1, "clients": [
      {"name": "team-a", "token_sha256": "9f2c…", "created": "2025-11-29T20:00:00+00:00",
       "grant": {"corpora": ["handbook"], "sql": false},
       "limits": {"rate_per_minute": 120, "burst": 20, "max_concurrent": 4}}]}

A token is 256 random bits, so an unsalted SHA-256 suffices: no input that produces a
stored hash can be guessed. Edits hold a lock file and replace the file atomically, so a
server reading it sees the old list or the new one, never a torn one, and
:class:`TokenRegistry` re-reads it whenever it changes: revocation needs no restart.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from filelock import FileLock
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from mcp_server.errors import TokensFileError
from mcp_server.grants import Grant
from mcp_server.indexing.generations import write_file_atomically

TOKEN_PREFIX = "rmcp_"
"""Starts every token, so that secret scanners and people can recognise one."""
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"

logger = logging.getLogger(__name__)


class ClientLimits(BaseModel):
    """How hard one client may use the server (enforced per server process)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rate_per_minute: float = Field(default=120, gt=0, description="Sustained requests per minute.")
    burst: int = Field(default=20, ge=1, description="Requests allowed at once above the sustained rate.")
    max_concurrent: int = Field(default=4, ge=1, description="Requests in flight at once; more wait their turn.")


class TokenEntry(BaseModel):
    """One client: its name, its token's hash, what it may read and its limits."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=NAME_PATTERN)
    token_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    created: str
    grant: Grant
    limits: ClientLimits = ClientLimits()


class TokensFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    clients: list[TokenEntry] = []

    @model_validator(mode="after")
    def _unique(self) -> TokensFile:
        names = [c.name for c in self.clients]
        if len(set(names)) != len(names):
            raise ValueError(f"client names must be unique: {sorted({n for n in names if names.count(n) > 1})}")
        if len({c.token_sha256 for c in self.clients}) != len(self.clients):
            raise ValueError("two clients share one token hash")
        return self

    def find(self, name: str) -> TokenEntry | None:
        return next((c for c in self.clients if c.name == name), None)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def read_tokens(path: Path) -> TokensFile:
    """The clients in ``path``; TokensFileError saying what is wrong if it is missing or malformed."""
    try:
        return TokensFile.model_validate_json(path.read_bytes())
    except FileNotFoundError as e:
        raise TokensFileError(
            f"tokens file {path} does not exist; create it with: ragmcp token add NAME --corpora ..."
        ) from e
    except ValidationError as e:
        raise TokensFileError(f"tokens file {path} is malformed: {e}") from e


@contextmanager
def editing_tokens(path: Path) -> Iterator[TokensFile]:
    """The tokens file (empty if new) to change in place; written back atomically on success.

    A lock file keeps two edits from overwriting each other; the server never takes it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path.with_name(path.name + ".lock"))):
        tokens = read_tokens(path) if path.exists() else TokensFile()
        yield tokens
        write_file_atomically(path, TokensFile.model_validate(tokens.model_dump()).model_dump_json(indent=2) + "\n")
        os.chmod(path, 0o600)


def add_client(path: Path, name: str, grant: Grant, limits: ClientLimits) -> str:
    """Register a new client and return its token: the only time the token exists outside its holder."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    try:
        entry = TokenEntry(
            name=name, token_sha256=hash_token(token), created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            grant=grant, limits=limits,
        )  # fmt: skip
    except ValidationError as e:
        raise TokensFileError(
            f"invalid client name {name!r}: use letters, digits, '.', '_' or '-', at most 64 characters"
        ) from e
    with editing_tokens(path) as tokens:
        if tokens.find(name) is not None:
            raise TokensFileError(
                f"client {name!r} already exists; revoke it first (ragmcp token revoke {name}) or pick another name"
            )
        tokens.clients.append(entry)
    return token


def revoke_client(path: Path, name: str) -> None:
    """Remove a client; servers refuse its token from their next request on."""
    with editing_tokens(path) as tokens:
        if tokens.find(name) is None:
            known = ", ".join(c.name for c in tokens.clients) or "none"
            raise TokensFileError(f"no client {name!r} in {path}; clients: {known}")
        tokens.clients = [c for c in tokens.clients if c.name != name]


class TokenRegistry:
    """The clients of one tokens file, for a server: re-read whenever the file changes.

    The file must be valid when the registry is created. If it later disappears or
    becomes malformed, every token is refused (fail closed) until it is fixed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp = self._file_stamp()
        self._clients = read_tokens(path).clients

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_mtime_ns, stat.st_size

    def clients(self) -> list[TokenEntry]:
        """The current clients, re-reading the file if it changed since the last look."""
        stamp = self._file_stamp()
        if stamp != self._stamp:
            self._stamp = stamp
            try:
                self._clients = read_tokens(self.path).clients
                logger.info("tokens file %s re-read: %d clients", self.path, len(self._clients))
            except TokensFileError as e:
                self._clients = []
                logger.error("%s; refusing every token until it is fixed", e)
        return self._clients

    def find(self, token: str) -> TokenEntry | None:
        """The client holding ``token``, if any. Every stored hash is compared, in constant time."""
        digest = hash_token(token)
        found = None
        for entry in self.clients():
            if hmac.compare_digest(entry.token_sha256, digest):
                found = entry
        return found


def tokens_summary(tokens: TokensFile) -> list[dict[str, object]]:
    """The clients without their hashes, for ``ragmcp token list``."""
    return [
        {"name": c.name, "created": c.created, **c.grant.model_dump(mode="json"), **c.limits.model_dump()}
        for c in tokens.clients
    ]
