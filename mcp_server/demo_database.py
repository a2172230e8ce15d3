"""Build the demo SQLite database from its SQL script, atomically and only when needed.

The bundled business data ships as ``corpora/company.sql`` (schema and rows in one
script). :func:`materialize_database` turns it into a SQLite file that
:class:`mcp_server.sql.ReadOnlyDatabase` then serves read-only.

Freshness is recorded in a sidecar file ``<target>.sha256`` holding the sha256 of
the script the database was built from; the database is rebuilt when that differs.
The build goes to a temporary file in the target's directory and is moved into place
with :func:`os.replace`, so readers see either the old or the new database, never a
half-written one. The sidecar is removed before the swap and written after it, so
an interrupted build always leads to a rebuild next time.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from pathlib import Path

from mcp_server.errors import IngestError, NotFoundError
from mcp_server.settings import Settings, bundled_corpora_dir
from mcp_server.sql import ReadOnlyDatabase

DATABASE_SCRIPT_NAME = "company.sql"


def bundled_database_script(corpora_dir: Path) -> Path:
    """The demo database script inside the bundled corpora directory.

    :raises NotFoundError: the directory holds no ``company.sql``.
    """
    script = corpora_dir / DATABASE_SCRIPT_NAME
    if not script.is_file():
        raise NotFoundError(
            f"No demo database script at {script}; point the server at a corpora "
            f"directory that contains {DATABASE_SCRIPT_NAME}, or configure your own database file."
        )
    return script


def materialize_database(script: Path, target: Path) -> Path:
    """Build ``target`` from the SQL ``script`` unless it was already built from this script.

    Returns ``target``.

    :raises NotFoundError: the script does not exist.
    :raises IngestError: the script is not valid SQL for SQLite.
    """
    if not script.is_file():
        raise NotFoundError(f"No SQL script at {script}; pass the path of an existing .sql file.")
    text = script.read_bytes()
    digest = hashlib.sha256(text).hexdigest()
    stamp = _stamp_path(target)
    if target.is_file() and _read_stamp(stamp) == digest:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    _build_atomically(text.decode("utf-8"), script, target)
    _write_atomically(stamp, digest.encode("ascii"))
    return target


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _read_stamp(stamp: Path) -> str | None:
    try:
        return stamp.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _temp_sibling(target: Path) -> Path:
    """A new, empty, uniquely named file next to ``target`` (same filesystem, so os.replace is atomic)."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    return Path(name)


def _build_atomically(sql: str, script: Path, target: Path) -> None:
    temp = _temp_sibling(target)
    try:
        connection = sqlite3.connect(temp)
        try:
            connection.executescript(sql)
        finally:
            connection.close()
        os.replace(temp, target)
    except sqlite3.Error as exc:
        raise IngestError(f"Cannot build {target} from {script}: {exc}. Fix the SQL script and retry.") from exc
    finally:
        temp.unlink(missing_ok=True)


def _write_atomically(path: Path, data: bytes) -> None:
    temp = _temp_sibling(path)
    try:
        temp.write_bytes(data)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def configured_database(settings: Settings) -> Path:
    """The database ``sql_query`` reads: ``RAGMCP_DATABASE``, else the demo database built in the data dir."""
    if settings.database is not None:
        return settings.database
    script = bundled_database_script(bundled_corpora_dir())
    return materialize_database(script, settings.data_dir / "databases" / "company.sqlite")


def open_database(settings: Settings) -> ReadOnlyDatabase:
    """The configured database, read-only, with the row, time and size limits of ``settings``."""
    return ReadOnlyDatabase(
        configured_database(settings),
        max_rows=settings.sql_max_rows,
        timeout_s=settings.sql_timeout_s,
        max_result_chars=settings.max_result_chars,
    )
