"""Build the demo SQLite database from its checked-in sources, atomically and only when needed.

Which database is served at all is decided by :func:`database_path` (``RAGMCP_DATABASE``, and
the demo database only together with the bundled demo corpora).

The bundled business data ships as ``corpora/database/``: ``schema.json`` and one CSV per
table (see :mod:`mcp_server.sql.sources`). :func:`materialize_database` turns them
into a SQLite file with sqlite-utils (typed columns, primary and foreign keys, indexes)
that :class:`mcp_server.sql.guard.ReadOnlyDatabase` then serves read-only. Each table's
description becomes the one-line ``--`` comment opening its CREATE TABLE column list,
where :meth:`ReadOnlyDatabase.schema` finds it.

The build is reproducible: the same sources give a byte-for-byte identical file (for a
given SQLite and sqlite-utils version). It happens in memory and is written out with
``VACUUM INTO``, which stores no timestamps or paths and leaves no free pages behind.

Freshness is recorded in a sidecar file ``<target>.sha256`` holding the digest of the
sources the database was built from; the database is rebuilt when that differs. The
file is written to a temporary file in the target's directory and moved into place with
:func:`os.replace`, so readers see either the old or the new database, never a
half-written one. The sidecar is removed before the swap and written after it, so an
interrupted build always leads to a rebuild next time.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from pathlib import Path

import sqlite_utils

from mcp_server.documents.corpus import slugify_name
from mcp_server.errors import IngestError, NotFoundError
from mcp_server.settings import Settings, bundled_corpora_dir, bundled_corpus_dirs
from mcp_server.sql.guard import ReadOnlyDatabase
from mcp_server.sql.sources import (
    SCHEMA_FILE,
    DatabaseSchema,
    TableSpec,
    load_schema,
    read_rows,
    source_files,
    sources_digest,
)

DATABASE_SOURCES_DIR = "database"
DEMO_DATABASE_FILE = "company.sqlite"
FOREIGN_KEY_ERRORS_SHOWN = 5


def bundled_database_sources(corpora_dir: Path) -> Path:
    """The demo database's sources directory inside the bundled corpora directory.

    :raises NotFoundError: the directory holds no ``database/schema.json``.
    """
    sources = corpora_dir / DATABASE_SOURCES_DIR
    if not (sources / SCHEMA_FILE).is_file():
        raise NotFoundError(
            f"No demo database sources at {sources}; point the server at a corpora directory that "
            f"contains {DATABASE_SOURCES_DIR}/{SCHEMA_FILE}, or configure your own database file."
        )
    return sources


def materialize_database(sources: Path, target: Path) -> Path:
    """Build ``target`` from the sources directory unless it was already built from these sources.

    Returns ``target``.

    :raises NotFoundError: the schema or a table's CSV file does not exist.
    :raises IngestError: a source file is malformed, or the rows break a key (see the message).
    """
    schema = load_schema(sources)
    digest = sources_digest(source_files(sources, schema))
    stamp = _stamp_path(target)
    if target.is_file() and _read_stamp(stamp) == digest:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    temp = _temp_sibling(target)
    try:
        build_database(schema, sources, temp)
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    _write_atomically(stamp, digest.encode("ascii"))
    return target


def build_database(schema: DatabaseSchema, sources: Path, target: Path) -> None:
    """Write the database described by ``schema`` with the rows of the CSVs in ``sources``
    to ``target``, which must not exist or be empty.

    :raises IngestError: a CSV file is malformed or its rows break a key.
    """
    database = sqlite_utils.Database(memory=True, execute_plugins=False)
    try:
        for table in schema.tables:
            _load_table(database, table, sources / f"{table.name}.csv")
        _check_foreign_keys(database.conn, schema, sources)
        try:
            database.conn.execute("VACUUM INTO ?", (str(target),))
        except sqlite3.Error as exc:
            raise IngestError(
                f"Cannot write the database to {target}: {exc}. Free disk space or fix permissions."
            ) from exc
    finally:
        database.close()


def _load_table(database: sqlite_utils.Database, table: TableSpec, csv_path: Path) -> None:
    rows = read_rows(csv_path, table)
    columns = table.column_names
    database.execute(_create_table_sql(database, table))
    created = database.table(table.name)
    try:
        created.insert_all(dict(zip(columns, row)) for row in rows)
        for index in table.indexes:
            created.create_index(index.columns, unique=index.unique)
    except sqlite3.IntegrityError as exc:
        raise IngestError(f"{csv_path}: {exc}. Each key must be unique; fix the rows and retry.") from exc


def _create_table_sql(database: sqlite_utils.Database, table: TableSpec) -> str:
    """sqlite-utils' CREATE TABLE for ``table``, with its description as the comment that opens the column list."""
    sql = database.create_table_sql(
        table.name,
        {column.name: column.type for column in table.columns},
        pk=table.primary_key[0] if len(table.primary_key) == 1 else tuple(table.primary_key),
        foreign_keys=[(fk.column, *fk.target) for fk in table.foreign_keys],
        not_null={column.name for column in table.columns if not column.nullable},
    )
    head, paren, body = sql.partition("(")
    assert paren and body.startswith("\n"), f"unexpected CREATE TABLE layout from sqlite-utils: {sql!r}"
    return f"{head}( -- {table.description}{body}"


def _check_foreign_keys(connection: sqlite3.Connection, schema: DatabaseSchema, sources: Path) -> None:
    """Refuse rows whose foreign keys point at no row, naming the first few by primary key."""
    problems = connection.execute("PRAGMA foreign_key_check").fetchall()
    if not problems:
        return
    tables = {table.name: table for table in schema.tables}
    shown = []
    for table_name, rowid, parent, fk_index in problems[:FOREIGN_KEY_ERRORS_SHOWN]:
        table = tables[table_name]
        key = connection.execute(
            f"SELECT {', '.join(table.primary_key)} FROM {table_name} WHERE rowid = ?", (rowid,)
        ).fetchone()
        (column,) = connection.execute(
            'SELECT "from" FROM pragma_foreign_key_list(?) WHERE id = ?', (table_name, fk_index)
        ).fetchone()
        where = ", ".join(f"{name}={value}" for name, value in zip(table.primary_key, key))
        shown.append(f"{table_name}.csv row {where}: {column} points at no {parent} row")
    raise IngestError(
        f"{len(problems)} rows in {sources} refer to rows that do not exist ({'; '.join(shown)}). "
        "Fix the ids in the CSV files and retry."
    )


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


def _write_atomically(path: Path, data: bytes) -> None:
    temp = _temp_sibling(path)
    try:
        temp.write_bytes(data)
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def serves_bundled_corpora_only(settings: Settings) -> bool:
    """True when every configured corpus folder is one of the bundled demo corpora (the default)."""
    bundled = {p.resolve() for p in bundled_corpus_dirs()}
    return bool(settings.corpora) and all(p.resolve() in bundled for p in settings.corpora)


def database_path(settings: Settings) -> Path | None:
    """Where the database ``sql_query`` reads lives (it may not be built yet), or None for no SQL.

    ``RAGMCP_DATABASE`` decides: a SQLite file is read as it is; a folder of database sources is
    built into the data dir; ``none`` means no SQL. Unset, the demo database (in the data dir)
    goes with the bundled demo corpora, and nothing with corpora of the user's own.
    """
    configured = settings.database
    if configured == "none" or (configured is None and not serves_bundled_corpora_only(settings)):
        return None
    demo = settings.data_dir / "databases" / DEMO_DATABASE_FILE
    if configured is None:
        return demo
    if configured.is_dir():
        folder = configured.resolve()
        if folder == (bundled_corpora_dir() / DATABASE_SOURCES_DIR).resolve():
            return demo
        digest = hashlib.sha256(str(folder).encode()).hexdigest()[:12]
        return settings.data_dir / "databases" / digest / f"{slugify_name(folder.name) or 'database'}.sqlite"
    return configured


def configured_database(settings: Settings) -> Path | None:
    """The database ``sql_query`` reads, built or refreshed from its sources first when needed;
    None when no SQL is configured.

    :raises NotFoundError: ``RAGMCP_DATABASE`` names nothing that exists, or a folder without schema.json.
    """
    path = database_path(settings)
    configured = settings.database
    if path is None:
        return None
    if configured is None:
        return materialize_database(bundled_database_sources(bundled_corpora_dir()), path)
    assert configured != "none"
    if configured.is_dir():
        if not (configured / SCHEMA_FILE).is_file():
            raise NotFoundError(
                f"RAGMCP_DATABASE names the folder {configured}, which holds no {SCHEMA_FILE}. Point it at a "
                f"SQLite file, or at a folder of database sources ({SCHEMA_FILE} and one CSV per table), or set "
                "it to none for no SQL."
            )
        return materialize_database(configured, path)
    if not configured.is_file():
        raise NotFoundError(
            f"RAGMCP_DATABASE names {configured}, which does not exist. Point it at an existing SQLite file or "
            f"a folder of database sources ({SCHEMA_FILE} and one CSV per table), or set it to none for no SQL."
        )
    return configured


def open_database(settings: Settings) -> ReadOnlyDatabase | None:
    """The configured database, read-only, with the row, time and size limits of ``settings``;
    None when no SQL is configured."""
    path = configured_database(settings)
    if path is None:
        return None
    return ReadOnlyDatabase(
        path,
        max_rows=settings.sql.max_rows,
        timeout_s=settings.sql.timeout_s,
        max_result_chars=settings.calls.max_result_chars,
        memory_mb=settings.sql.memory_mb,
    )
