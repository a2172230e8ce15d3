"""Strictly read-only SQL over one SQLite file.

:class:`ReadOnlyDatabase` runs one SELECT per call and returns a bounded, JSON-ready
:class:`~mcp_server.models.SqlResult` with a citation id. It is plain Python (no MCP)
and safe to share between threads: every call opens its own short-lived connection.

Defence in depth, outermost first; layers 1-3 each refuse writes on their own (the
tests switch the outer layers off to prove it):

1. **Statement check** (:func:`normalise_sql`): comments stripped, whitespace collapsed,
   trailing semicolons dropped; exactly one statement, whose first keyword is
   SELECT, WITH or VALUES.
2. **Authorizer**: SQLite asks before every action while compiling. Only SELECT, READ,
   RECURSIVE, functions (minus :data:`DENIED_FUNCTIONS`) and the introspection pragmas
   in :data:`INTROSPECTION_PRAGMAS` are allowed; everything else (INSERT, UPDATE,
   DELETE, CREATE, DROP, ALTER, ATTACH, DETACH, transactions, other pragmas, ...) is
   denied. This is what stops ``WITH x AS (...) DELETE ...``.
3. **Connection**: opened from a ``file:...?mode=ro`` URI (never creates the file), with
   ``PRAGMA query_only = ON``, and with limits on value size, SQL length, columns,
   bound variables and attached databases (zero).
4. **Time and size**: a progress handler interrupts statements after ``timeout_s``;
   rows, cell sizes and the total result size are capped.

Known limit: SQLite checks the progress handler between virtual-machine steps, never
inside one function call. Only the value-size limit (:data:`MAX_VALUE_BYTES`) keeps one
call short: ``instr``, ``replace`` and two-argument ``trim`` are quadratic in it (at
100 KB, about 0.07 s, 0.07 s and 5 s per call), so a statement chaining many such calls
can overrun ``timeout_s``. Only a separate process would bound that strictly.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from mcp_server.errors import (
    InvalidQueryError,
    NotFoundError,
    QueryTimeoutError,
    ReadOnlyViolationError,
    RetrievalError,
)
from mcp_server.models import ColumnInfo, SqlResult, SqlValue, TableInfo

MAX_SQL_BYTES = 100_000
"""Longest SQL text accepted, in UTF-8 bytes (also SQLITE_LIMIT_SQL_LENGTH)."""
MAX_VALUE_BYTES = 100_000
"""Largest string or blob SQLite may build or read (SQLITE_LIMIT_LENGTH)."""
MAX_COLUMNS = 100
"""Most columns in a result (SQLITE_LIMIT_COLUMN)."""
MAX_PARAMS = 100
"""Most bound parameters per query (SQLITE_LIMIT_VARIABLE_NUMBER)."""
MAX_RESULT_CHARS = 1_000_000
"""Default total characters of cell text returned per query; rows beyond it are cut (``truncated``)."""
PROGRESS_STEPS = 1_000
"""Virtual-machine steps between wall-clock checks."""

READ_STATEMENTS = frozenset({"SELECT", "WITH", "VALUES"})
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

_EPONYMOUS_TABLES = (
    "json_each('[]')",
    "json_tree('[]')",
    *(f"pragma_{name}('')" for name in sorted(INTROSPECTION_PRAGMAS)),
)
# SQLite reports "UPDATE sqlite_master" to the authorizer the first time a connection
# uses a table-valued function. Touching the allowed ones before the authorizer is
# installed lets it deny every UPDATE, with no exception for sqlite_master.
_WARM_UP_SQL = "SELECT 1 FROM " + ", ".join(_EPONYMOUS_TABLES)

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

# SQLite's own lexical rules: whitespace is exactly these five characters (a no-break
# space is part of an identifier), an unterminated block comment runs to the end.
_LEXEME = re.compile(
    r"""(?P<string>'(?:[^']|'')*'?)
      | (?P<quoted>"(?:[^"]|"")*"?|`(?:[^`]|``)*`?|\[[^\]]*\]?)
      | (?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
      | (?P<space>[ \t\n\f\r]+)
      | (?P<semicolon>;)
      | (?P<word>[^'"`\[ \t\n\f\r;/-]+|[/-])""",
    re.VERBOSE | re.DOTALL,
)
_FIRST_WORD = re.compile(r"[A-Za-z_]+|\S")
_TABLE_COMMENT = re.compile(r"\(\s*--[ \t]*([^\r\n]*)")
_NAME = re.compile(r"[A-Za-z0-9_.-]+")
_INT64 = range(-(2**63), 2**63)

Params = Sequence[object] | Mapping[str, object] | None
BoundParams = tuple[SqlValue | bool, ...] | dict[str, SqlValue | bool]


def normalise_sql(sql: str) -> str:
    """One read statement in canonical form: comments removed, whitespace runs outside
    literals collapsed to one space, trailing semicolons dropped.

    :raises InvalidQueryError: empty (or comment-only), too long, or not encodable SQL.
    :raises ReadOnlyViolationError: more than one statement, or not SELECT/WITH/VALUES.
    """
    _check_encodable(sql, "The SQL")
    if len(sql.encode("utf-8")) > MAX_SQL_BYTES:
        raise InvalidQueryError(
            f"The SQL is {len(sql.encode('utf-8')):,} bytes; the limit is {MAX_SQL_BYTES:,}. "
            "Send a shorter query, passing long values as params."
        )
    pieces: list[tuple[str, str]] = []
    for lexeme in _LEXEME.finditer(sql):
        kind = lexeme.lastgroup or "word"
        if kind in ("comment", "space"):
            if pieces and pieces[-1][0] != "space":
                pieces.append(("space", " "))
        else:
            pieces.append((kind, lexeme.group()))
    while pieces and pieces[-1][0] in ("space", "semicolon"):
        pieces.pop()
    if pieces and pieces[0][0] == "space":
        pieces.pop(0)
    if not pieces:
        raise InvalidQueryError("The SQL is empty (or only comments); send one SELECT statement.")
    normalised = "".join(text for _, text in pieces)
    _require_read_statement(normalised)
    if any(kind == "semicolon" for kind, _ in pieces):
        raise ReadOnlyViolationError(
            "Only one statement per call is allowed; remove the ';' between statements and send each SELECT separately."
        )
    return normalised


def citation_id(database: str, normalised_sql: str, params: BoundParams | None = None) -> str:
    """``sql:<database>:<hash>``: the first 8 hex digits of the sha256 of the normalised SQL,
    followed, when params are given, by a newline and their canonical JSON
    (sorted keys, no spaces). Equivalent SQL text with the same params shares an id."""
    material = normalised_sql
    if params:
        material += "\n" + json.dumps(params, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return f"sql:{database}:{hashlib.sha256(material.encode('utf-8')).hexdigest()[:8]}"


class ReadOnlyDatabase:
    """A SQLite file that can be queried but never modified, with bounded results.

    ``max_rows`` is both the default and the ceiling of the per-call ``max_rows``.
    ``max_result_chars`` caps the cell text of one result (rows beyond it are cut).
    ``name`` (default: the file stem) appears in citation ids.
    """

    def __init__(
        self,
        path: Path,
        *,
        name: str | None = None,
        max_rows: int = 200,
        timeout_s: float = 5.0,
        max_value_chars: int = 2000,
        max_result_chars: int = MAX_RESULT_CHARS,
    ) -> None:
        self.path = Path(path).resolve()
        self.name = name if name is not None else self.path.stem
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"Database name {self.name!r} must match [A-Za-z0-9_.-]+; pass name=... explicitly.")
        if max_rows < 1 or timeout_s <= 0 or max_value_chars < 1 or max_result_chars < 1:
            raise ValueError("max_rows, max_value_chars and max_result_chars must be >= 1 and timeout_s > 0.")
        self.max_rows = max_rows
        self.timeout_s = timeout_s
        self.max_value_chars = max_value_chars
        self.max_result_chars = max_result_chars
        self._require_file()

    def query(self, sql: str, params: Params = None, max_rows: int | None = None) -> SqlResult:
        """Run one read-only statement and return at most ``max_rows`` rows.

        ``params`` binds ``?`` placeholders (a list) or ``:name`` placeholders (a dict);
        values must be str, int, float, bool or None.

        :raises InvalidQueryError: malformed SQL or params, out-of-range ``max_rows``.
        :raises ReadOnlyViolationError: anything but a single read statement.
        :raises QueryTimeoutError: the statement ran past ``timeout_s``.
        :raises NotFoundError: the database file is gone.
        """
        normalised = normalise_sql(sql)
        bound = _bind(params)
        limit = self._row_limit(max_rows)
        with self._connection() as connection:
            cursor = connection.execute(normalised, bound)
            columns = [self._clip(str(column[0])) for column in cursor.description or ()]
            rows, truncated = self._fetch(cursor, limit)
        return SqlResult(
            columns=columns,
            rows=rows,
            row_count=len(rows),
            truncated=truncated,
            citation_id=citation_id(self.name, normalised, bound),
            sql=normalised,
        )

    def schema(self) -> list[TableInfo]:
        """Every table, in creation order, with its description, columns and row count.

        The description is the one-line ``--`` comment that opens the table's column list
        in its CREATE TABLE statement (empty when there is none).
        """
        with self._connection() as connection:
            tables = connection.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid"
            ).fetchall()
            return [_table_info(connection, name, sql or "") for name, sql in tables]

    def schema_text(self) -> str:
        """The schema in one line per table, compact enough for a tool description:
        ``employees(id INTEGER PK, department_id INTEGER -> departments.id, ...) — what it holds [12 rows]``."""
        return "\n".join(_table_line(table) for table in self.schema())

    def _require_file(self) -> None:
        if not self.path.is_file():
            raise NotFoundError(
                f"No SQL database at {self.path}; build it first (see materialize_database) "
                "or configure the path of an existing SQLite file."
            )

    def _row_limit(self, max_rows: int | None) -> int:
        if max_rows is None:
            return self.max_rows
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 1 <= max_rows <= self.max_rows:
            raise InvalidQueryError(
                f"max_rows must be an integer from 1 to {self.max_rows}, got {max_rows!r}; "
                "use LIMIT/OFFSET or aggregates to page through larger results."
            )
        return max_rows

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """A fresh guarded connection; SQLite errors leave as our errors, with advice."""
        self._require_file()
        guard = _Guard(self.timeout_s)
        connection = _open(self.path, guard)
        try:
            yield connection
        except sqlite3.Error as exc:
            raise guard.translate(exc) from exc
        finally:
            connection.close()

    def _fetch(self, cursor: sqlite3.Cursor, limit: int) -> tuple[list[list[SqlValue]], bool]:
        """Step through at most ``limit`` rows (one more to detect truncation), converting
        each row as it arrives so raw values are never all held at once."""
        rows: list[list[SqlValue]] = []
        size = 0
        for raw in cursor:
            if len(rows) == limit:
                return rows, True
            row = [self._cell(value) for value in raw]
            size += sum(len(str(value)) for value in row)
            if rows and size > self.max_result_chars:
                return rows, True
            rows.append(row)
        return rows, False

    def _cell(self, value: object) -> SqlValue:
        """A JSON-ready cell: blobs summarised, long text cut with a marker, inf as text."""
        if isinstance(value, bytes):
            return f"<blob {len(value)} bytes>"
        if isinstance(value, str):
            return self._clip(value)
        if isinstance(value, float) and not math.isfinite(value):
            return str(value)
        assert value is None or isinstance(value, (int, float))
        return value

    def _clip(self, text: str) -> str:
        if len(text) <= self.max_value_chars:
            return text
        return f"{text[: self.max_value_chars]}…[{len(text) - self.max_value_chars} more characters]"


class _Guard:
    """Per-connection state of the authorizer and the deadline, and error translation."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
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
        self.denied.append(
            f"Refused: {_describe(action, arg1, arg2)}. This database is read-only: "
            "send a single SELECT (or WITH ... SELECT) that only reads."
        )
        return sqlite3.SQLITE_DENY

    def expired(self) -> bool:
        """SQLite's progress callback: True interrupts the statement."""
        self.timed_out = self.timed_out or time.monotonic() > self.deadline
        return self.timed_out

    def translate(self, exc: sqlite3.Error) -> RetrievalError:
        """Our error for a SQLite error, saying what to do instead."""
        message = str(exc)
        if self.timed_out:
            return QueryTimeoutError(
                f"The query was interrupted after {self.timeout_s:g} s. Add a LIMIT, narrow the WHERE "
                "clause, or avoid unbounded recursive CTEs and cross joins."
            )
        if self.denied:
            return ReadOnlyViolationError(self.denied[0])
        if "readonly" in message or "one statement at a time" in message:
            return ReadOnlyViolationError(
                f"Refused by SQLite ({message}). This database is read-only: send a single SELECT that only reads."
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


def _open(path: Path, guard: _Guard) -> sqlite3.Connection:
    connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, isolation_level=None, timeout=guard.timeout_s)
    try:
        connection.text_factory = lambda data: data.decode("utf-8", "replace")
        for category, limit in _LIMITS.items():
            connection.setlimit(category, limit)
        connection.execute("PRAGMA query_only = ON")
        connection.execute(_WARM_UP_SQL).fetchall()
        connection.set_authorizer(guard.authorize)
        connection.set_progress_handler(guard.expired, PROGRESS_STEPS)
    except BaseException:
        connection.close()
        raise
    return connection


def _require_read_statement(normalised: str) -> None:
    first = _FIRST_WORD.match(normalised)
    keyword = first.group().upper() if first else ""
    if keyword not in READ_STATEMENTS:
        raise ReadOnlyViolationError(
            f"Only read-only queries are allowed (SELECT, WITH ... SELECT, or VALUES); this statement "
            f"starts with {keyword!r}. Rewrite it as a SELECT; the database cannot be changed."
        )


def _describe(action: int, arg1: str | None, arg2: str | None) -> str:
    name = _ACTION_NAMES.get(action, f"action {action}")
    if action == sqlite3.SQLITE_UPDATE and arg1 in ("sqlite_master", "sqlite_schema"):
        allowed = ", ".join(sorted(("json_each", "json_tree", *(f"pragma_{p}" for p in INTROSPECTION_PRAGMAS))))
        return (
            f"the statement would modify the schema table (only these table-valued functions are available: {allowed})"
        )
    target = " ".join(arg for arg in (arg1, arg2) if arg)
    return f"the statement needs {name}" + (f" on {target}" if target else "")


def _bind(params: Params) -> BoundParams:
    """Validated parameters for sqlite3: a tuple for ``?``, a dict for ``:name``."""
    if params is None:
        return ()
    if isinstance(params, Mapping):
        if len(params) > MAX_PARAMS:
            raise _too_many_params(len(params))
        return {_param_name(key): _param_value(value, repr(key)) for key, value in params.items()}
    if isinstance(params, (str, bytes)) or not isinstance(params, Sequence):
        raise InvalidQueryError(
            f"params must be a list (for ? placeholders) or an object (for :name placeholders), "
            f"got {type(params).__name__}."
        )
    if len(params) > MAX_PARAMS:
        raise _too_many_params(len(params))
    return tuple(_param_value(value, f"#{index + 1}") for index, value in enumerate(params))


def _too_many_params(count: int) -> InvalidQueryError:
    return InvalidQueryError(
        f"{count} params given; at most {MAX_PARAMS} are allowed. "
        "Filter with a subquery or a range instead of a long IN list."
    )


def _param_name(key: object) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidQueryError(f"Param names must be non-empty strings matching :name placeholders, got {key!r}.")
    return key


def _param_value(value: object, label: str) -> SqlValue | bool:
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        if value not in _INT64:
            raise InvalidQueryError(f"Param {label} ({value}) does not fit a 64-bit integer; pass it as a string.")
        return value
    if isinstance(value, str):
        _check_encodable(value, f"Param {label}")
        if len(value.encode("utf-8")) > MAX_VALUE_BYTES:
            raise InvalidQueryError(f"Param {label} is longer than {MAX_VALUE_BYTES:,} bytes; pass a shorter value.")
        return value
    raise InvalidQueryError(
        f"Param {label} is a {type(value).__name__}; params must be strings, numbers, booleans or null. "
        "Pass one value per placeholder (use IN (?, ?, ...) for lists)."
    )


def _check_encodable(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidQueryError(f"{what} is not valid Unicode text ({exc.reason}); remove lone surrogates.") from exc


def _table_info(connection: sqlite3.Connection, table: str, create_sql: str) -> TableInfo:
    references = {
        source: f"{target_table}.{target_column}" if target_column else target_table
        for source, target_table, target_column in connection.execute(
            'SELECT "from", "table", "to" FROM pragma_foreign_key_list(?)', (table,)
        )
    }
    columns = [
        ColumnInfo(name=name, type=declared or "", primary_key=pk > 0, references=references.get(name))
        for name, declared, pk in connection.execute("SELECT name, type, pk FROM pragma_table_info(?)", (table,))
    ]
    quoted = '"' + table.replace('"', '""') + '"'
    (row_count,) = connection.execute(f"SELECT count(*) FROM {quoted}").fetchone()
    comment = _TABLE_COMMENT.search(create_sql)
    description = comment.group(1).strip() if comment else ""
    return TableInfo(name=table, description=description, columns=columns, row_count=row_count)


def _table_line(table: TableInfo) -> str:
    columns = ", ".join(_column_text(column) for column in table.columns)
    description = f" — {table.description}" if table.description else ""
    rows = "1 row" if table.row_count == 1 else f"{table.row_count} rows"
    return f"{table.name}({columns}){description} [{rows}]"


def _column_text(column: ColumnInfo) -> str:
    text = f"{column.name} {column.type}".rstrip()
    if column.primary_key:
        text += " PK"
    if column.references:
        text += f" -> {column.references}"
    return text
