"""One guarded SQLite connection and one statement run on it: the part of the SQL layer that executes.

:func:`run_statement` opens a fresh connection (layers 2 to 4 of :mod:`mcp_server.sql.guard`),
runs an already checked statement and returns its bounded, JSON-ready rows. It runs inside
a worker process of :mod:`mcp_server.sql.sandbox`, which is why it takes and returns plain
data and imports nothing but the standard library and :mod:`mcp_server.errors`.

- **Authorizer**: SQLite asks before every action while compiling. Only SELECT, READ,
  RECURSIVE, functions (minus :data:`DENIED_FUNCTIONS`) and the introspection pragmas in
  :data:`INTROSPECTION_PRAGMAS` are allowed; everything else (INSERT, UPDATE, DELETE,
  CREATE, DROP, ALTER, ATTACH, DETACH, transactions, other pragmas, ...) is denied. This
  is what stops ``WITH x AS (...) DELETE ...``.
- **Connection**: opened from a ``file:...?mode=ro`` URI (never creates the file), with
  ``PRAGMA query_only = ON``, and with limits on value size, SQL length, columns, bound
  variables and attached databases (zero).
- **Time and size**: a progress handler interrupts statements after ``timeout_s``; rows,
  cell sizes and the total result size are capped.

The progress handler runs between virtual-machine steps, never inside one function call
(a two-argument ``trim()`` of a 98 KB string can take half a minute), so it is the polite
stop; the strict one is the sandbox killing the worker process at the deadline.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

from mcp_server.errors import InvalidQueryError, QueryTimeoutError, ReadOnlyViolationError, RetrievalError

MAX_SQL_BYTES = 100_000
"""Longest SQL text accepted, in UTF-8 bytes (also SQLITE_LIMIT_SQL_LENGTH)."""
MAX_VALUE_BYTES = 100_000
"""Largest string or blob SQLite may build or read (SQLITE_LIMIT_LENGTH)."""
MAX_COLUMNS = 100
"""Most columns in a result (SQLITE_LIMIT_COLUMN)."""
MAX_PARAMS = 100
"""Most bound parameters per query (SQLITE_LIMIT_VARIABLE_NUMBER)."""
PROGRESS_STEPS = 1_000
"""Virtual-machine steps between wall-clock checks."""

INTROSPECTION_PRAGMAS = frozenset({"table_info", "table_xinfo", "index_list", "index_info", "foreign_key_list"})
"""Pragmas allowed as table-valued functions, e.g. ``SELECT * FROM pragma_table_info('employees')``."""
DENIED_FUNCTIONS: Mapping[str, str] = {
    "load_extension": "loading extensions is not allowed",
    "fts3_tokenizer": "it can register native code",
    "printf": "a large precision such as '%.999999999c' stalls SQLite beyond the time limit; "
    "format with round(), substr() and || instead",
    "format": "a large precision such as '%.999999999c' stalls SQLite beyond the time limit; "
    "format with round(), substr() and || instead",
}
"""Functions the authorizer refuses, with the reason given to the caller."""

SqlCell = str | int | float | None
Bound = list[SqlCell | bool] | dict[str, SqlCell | bool]


class Statement(TypedDict):
    """What :func:`run_statement` runs: a checked statement, its bound params and the limits."""

    sql: str
    params: Bound
    max_rows: int
    timeout_s: float
    max_value_chars: int
    max_result_chars: int
    memory_mb: int


class Rows(TypedDict):
    """What a statement returned: column names, JSON-ready rows, and whether rows were cut."""

    columns: list[str]
    rows: list[list[SqlCell]]
    truncated: bool


_TABLE_FUNCTIONS = ("json_each", "json_tree", *(f"pragma_{name}" for name in sorted(INTROSPECTION_PRAGMAS)))
# SQLite reports "UPDATE sqlite_master" to the authorizer the first time a connection
# uses a table-valued function. Touching the allowed ones before the authorizer is
# installed lets it deny every UPDATE, with no exception for sqlite_master: a denied
# UPDATE of sqlite_master therefore means a table-valued function that is not allowed.
_WARM_UP_SQL = "SELECT 1 FROM " + ", ".join(f"{name}('{'[]' if name.startswith('json') else ''}')"
                                            for name in _TABLE_FUNCTIONS)  # fmt: skip

_ALLOWED_ACTIONS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})
_ACTION_NAMES = {
    getattr(sqlite3, f"SQLITE_{name}"): name.replace("_", " ")
    for name in (
        "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE", "CREATE_TEMP_TRIGGER",
        "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DELETE", "DROP_INDEX", "DROP_TABLE",
        "DROP_TEMP_INDEX", "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER", "DROP_TEMP_VIEW", "DROP_TRIGGER",
        "DROP_VIEW", "INSERT", "PRAGMA", "READ", "SELECT", "TRANSACTION", "UPDATE", "ATTACH", "DETACH",
        "ALTER_TABLE", "REINDEX", "ANALYZE", "CREATE_VTABLE", "DROP_VTABLE", "FUNCTION", "SAVEPOINT",
        "RECURSIVE",
    )
}  # fmt: skip
_LIMITS = {
    sqlite3.SQLITE_LIMIT_LENGTH: MAX_VALUE_BYTES,
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: MAX_SQL_BYTES,
    sqlite3.SQLITE_LIMIT_COLUMN: MAX_COLUMNS,
    sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER: MAX_PARAMS,
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
}
_READ_ONLY_ADVICE = "This database is read-only: send a single SELECT (or WITH ... SELECT) that only reads."


def run_statement(path: Path, statement: Statement) -> Rows:
    """Run one checked read statement on a fresh guarded connection to ``path``.

    :raises RetrievalError: the statement was refused, timed out or failed (the message says what to do).
    """
    guard = Guard(statement["timeout_s"], statement["memory_mb"])
    connection = open_connection(path, guard)
    try:
        cursor = connection.execute(statement["sql"], statement["params"])
        clip = _Clip(statement["max_value_chars"])
        columns = [clip.text(str(column[0])) for column in cursor.description or ()]
        rows, truncated = _fetch(cursor, clip, statement["max_rows"], statement["max_result_chars"])
    except sqlite3.Error as exc:
        raise guard.translate(exc) from exc
    finally:
        connection.close()
    return Rows(columns=columns, rows=rows, truncated=truncated)


class Guard:
    """Per-connection state of the authorizer and the deadline, and error translation."""

    def __init__(self, timeout_s: float, memory_mb: int = 256) -> None:
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.deadline = time.monotonic() + timeout_s
        self.timed_out = False
        self.denied: list[str] = []  # messages for the caller, first denial first

    def authorize(self, action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
        """SQLite's authorizer callback: allow reads only, and remember what was denied."""
        if action in _ALLOWED_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and arg2 is not None:
            reason = DENIED_FUNCTIONS.get(arg2.lower())
            if reason is None:
                return sqlite3.SQLITE_OK
            self.denied.append(f"Refused: the function {arg2}() is disabled here: {reason}.")
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_PRAGMA and arg1 is not None and arg1.lower() in INTROSPECTION_PRAGMAS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_UPDATE and arg1 in ("sqlite_master", "sqlite_schema"):
            self.denied.append(
                "Refused: the statement uses a table-valued function that is not available here; the ones you can "
                f"use are {', '.join(_TABLE_FUNCTIONS)}, e.g. SELECT * FROM pragma_table_info('employees')."
            )
            return sqlite3.SQLITE_DENY
        self.denied.append(f"Refused: {_describe(action, arg1, arg2)}. {_READ_ONLY_ADVICE}")
        return sqlite3.SQLITE_DENY

    def expired(self) -> bool:
        """SQLite's progress callback: True interrupts the statement."""
        self.timed_out = self.timed_out or time.monotonic() > self.deadline
        return self.timed_out

    def translate(self, exc: sqlite3.Error) -> RetrievalError:
        """Our error for a SQLite error, saying what to do instead."""
        message = str(exc).rstrip(".")  # SQLite's own messages may end with one
        if self.timed_out:
            return timeout_error(self.timeout_s)
        if self.denied:
            return ReadOnlyViolationError(self.denied[0])
        if "readonly" in message or "one statement at a time" in message:
            return ReadOnlyViolationError(
                f"Refused by SQLite ({message}). This database is read-only: send a single SELECT that only reads."
            )
        if "out of memory" in message:
            return InvalidQueryError(
                f"The query needs more than the {self.memory_mb} MB of memory a statement may use "
                "(RAGMCP_SQL_MEMORY_MB). Aggregate less at once: add a LIMIT, narrow the WHERE clause, or "
                "group the rows before building large values."
            )
        if "too big" in message:
            return InvalidQueryError(
                f"A value in this query would exceed {MAX_VALUE_BYTES:,} bytes ({message}). "
                "Select length() or substr() of large values instead of building them."
            )
        return InvalidQueryError(
            f"SQLite rejected the query: {message}. Check the syntax, the number of params, "
            "and table and column names against the schema."
        )


def timeout_error(timeout_s: float) -> QueryTimeoutError:
    """The error of a statement stopped at its deadline."""
    return QueryTimeoutError(
        f"The query was interrupted after {timeout_s:g} s. Add a LIMIT, narrow the WHERE "
        "clause, or avoid unbounded recursive CTEs, cross joins and string functions over huge values."
    )


def limit_heap(memory_mb: int) -> None:
    """Bound SQLite's heap in this whole process (only ever called in a SQL worker process)."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.execute(f"PRAGMA hard_heap_limit = {memory_mb * 1_048_576}")
    finally:
        connection.close()


def open_connection(path: Path, guard: Guard) -> sqlite3.Connection:
    """A read-only connection to ``path`` with the limits, the authorizer and the deadline of ``guard``."""
    connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None, timeout=guard.timeout_s)
    try:
        connection.text_factory = lambda data: data.decode("utf-8", "replace")
        for category, limit in _LIMITS.items():
            connection.setlimit(category, limit)
        connection.execute("PRAGMA query_only = ON")
        # Sorts and temporary tables in memory, never on disk: the worker's heap limit bounds them too.
        connection.execute("PRAGMA temp_store = MEMORY")
        connection.execute(_WARM_UP_SQL).fetchall()
        connection.set_authorizer(guard.authorize)
        connection.set_progress_handler(guard.expired, PROGRESS_STEPS)
    except BaseException:
        connection.close()
        raise
    return connection


def _describe(action: int, arg1: str | None, arg2: str | None) -> str:
    name = _ACTION_NAMES.get(action, f"action {action}")
    target = " ".join(arg for arg in (arg1, arg2) if arg)
    return f"the statement needs {name}" + (f" on {target}" if target else "")


class _Clip:
    """Cuts cell text to ``max_chars``, marking how much was left out."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars

    def text(self, text: str) -> str:
        if len(text) <= self.max_chars:
            return text
        return f"{text[: self.max_chars]}…[{len(text) - self.max_chars} more characters]"

    def cell(self, value: object) -> SqlCell:
        """A JSON-ready cell: blobs summarised, long text cut with a marker, inf as text."""
        if isinstance(value, bytes):
            return f"<blob {len(value)} bytes>"
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        assert value is None or isinstance(value, (int, float))
        return value


def _fetch(cursor: sqlite3.Cursor, clip: _Clip, limit: int, max_chars: int) -> tuple[list[list[SqlCell]], bool]:
    """Step through at most ``limit`` rows (one more to detect truncation), converting
    each row as it arrives so raw values are never all held at once."""
    rows: list[list[SqlCell]] = []
    size = 0
    for raw in cursor:
        if len(rows) == limit:
            return rows, True
        row = [clip.cell(value) for value in raw]
        size += sum(len(str(value)) for value in row)
        if rows and size > max_chars:
            return rows, True
        rows.append(row)
    return rows, False
