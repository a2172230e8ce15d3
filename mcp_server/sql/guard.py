"""Strictly read-only SQL over one SQLite file.

:class:`ReadOnlyDatabase` runs one SELECT per call and returns a bounded, JSON-ready
:class:`~mcp_server.models.SqlResult` with a citation id. It is plain Python (no MCP)
and safe to share between threads: every statement runs on its own short-lived connection
in a worker process.

Defence in depth, outermost first; layers 1-3 each refuse writes on their own (the
tests switch the outer layers off to prove it):

1. **Statement check** (:func:`normalise_sql`): comments stripped, whitespace collapsed,
   trailing semicolons dropped; exactly one statement, whose first keyword is
   SELECT, WITH or VALUES; params of plain types only.
2. **Authorizer** and 3. **Connection** (:mod:`mcp_server.sql.engine`): SQLite refuses
   every action but reading while compiling; the connection is read-only, ``query_only``,
   with limits on value size, SQL length, columns, bound variables and attachments.
4. **Time and size**: a progress handler interrupts statements after ``timeout_s``; rows,
   cell sizes and the total result size are capped (:mod:`mcp_server.sql.engine`).
5. **CPU**: the statement runs in a worker process that is killed if it is still running
   shortly after ``timeout_s`` (:mod:`mcp_server.sql.sandbox`), so no single slow function
   call outlives its deadline.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from mcp_server.citation_ids import SqlRef
from mcp_server.errors import InvalidQueryError, NotFoundError, ReadOnlyViolationError
from mcp_server.models import ColumnInfo, SqlResult, SqlValue, TableInfo
from mcp_server.sql.engine import MAX_PARAMS, MAX_SQL_BYTES, MAX_VALUE_BYTES, Guard, Statement, open_connection
from mcp_server.sql.sandbox import SqlSandbox

MAX_RESULT_CHARS = 1_000_000
"""Default total characters of cell text returned per query; rows beyond it are cut (``truncated``)."""
READ_STATEMENTS = frozenset({"SELECT", "WITH", "VALUES"})
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
    return str(SqlRef(database, hashlib.sha256(material.encode("utf-8")).hexdigest()[:8]))


class ReadOnlyDatabase:
    """A SQLite file that can be queried but never modified, with bounded results.

    ``max_rows`` is both the default and the ceiling of the per-call ``max_rows``.
    ``max_result_chars`` caps the cell text of one result (rows beyond it are cut).
    ``name`` (default: the file stem) appears in citation ids. ``memory_mb`` bounds SQLite's heap
    for one statement, its sorts and temporary tables included (they never go to disk).
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
        memory_mb: int = 256,
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
        self.memory_mb = memory_mb
        self._require_file()
        self._sandbox = SqlSandbox(self.path)

    def close(self) -> None:
        """Stop the worker processes that run the queries (a later query starts new ones)."""
        self._sandbox.close()

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
        self._require_file()
        found = self._sandbox.run(
            Statement(
                sql=normalised,
                params=list(bound) if isinstance(bound, tuple) else bound,
                max_rows=limit,
                timeout_s=self.timeout_s,
                max_value_chars=self.max_value_chars,
                max_result_chars=self.max_result_chars,
                memory_mb=self.memory_mb,
            )
        )
        return SqlResult(
            columns=found["columns"],
            rows=found["rows"],
            row_count=len(found["rows"]),
            truncated=found["truncated"],
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
        """The schema in one line per table:
        ``employees(id INTEGER PK, department_id INTEGER -> departments.id, ...) — what it holds [12 rows]``."""
        return "\n".join(_table_line(table) for table in self.schema())

    def tables_text(self) -> str:
        """The tables and their columns' names in one short line each, for the ``sql_query`` description:
        ``employees(id, department_id, ...) [12 rows]``; types, keys and what a row holds are in :meth:`schema`."""
        return "\n".join(
            f"{table.name}({', '.join(column.name for column in table.columns)}) [{_rows(table.row_count)}]"
            for table in self.schema()
        )

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
        """A fresh guarded connection in this process, for the server's own statements (the schema)."""
        self._require_file()
        guard = Guard(self.timeout_s)
        connection = open_connection(self.path, guard)
        try:
            yield connection
        except sqlite3.Error as exc:
            raise guard.translate(exc) from exc
        finally:
            connection.close()


def _require_read_statement(normalised: str) -> None:
    first = _FIRST_WORD.match(normalised)
    keyword = first.group().upper() if first else ""
    if keyword not in READ_STATEMENTS:
        raise ReadOnlyViolationError(
            f"Only read-only queries are allowed (SELECT, WITH ... SELECT, or VALUES); this statement "
            f"starts with {keyword!r}. Rewrite it as a SELECT; the database cannot be changed."
        )


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
    return f"{table.name}({columns}){description} [{_rows(table.row_count)}]"


def _rows(count: int) -> str:
    return "1 row" if count == 1 else f"{count} rows"


def _column_text(column: ColumnInfo) -> str:
    text = f"{column.name} {column.type}".rstrip()
    if column.primary_key:
        text += " PK"
    if column.references:
        text += f" -> {column.references}"
    return text
