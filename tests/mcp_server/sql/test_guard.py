"""The read-only SQL layer, on real SQLite files: the demo database built from corpora/database/."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcp_server.errors import (
    InvalidQueryError,
    NotFoundError,
    QueryTimeoutError,
    ReadOnlyViolationError,
    RetrievalError,
)
from mcp_server.sql import engine
from mcp_server.sql import guard as sql_module
from mcp_server.sql.demo import materialize_database
from mcp_server.sql.guard import ReadOnlyDatabase, normalise_sql
from tests.helpers import DEMO_DATABASE_SOURCES, demo_csv, demo_row_counts, demo_tables

ROW_COUNTS = demo_row_counts()
CAP = 20
TIMEOUT_S = 0.5


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return materialize_database(DEMO_DATABASE_SOURCES, tmp_path_factory.mktemp("sql") / "company.db")


@pytest.fixture(scope="module")
def db(db_path: Path) -> ReadOnlyDatabase:
    return ReadOnlyDatabase(db_path, name="company", max_rows=CAP, timeout_s=TIMEOUT_S)


def snapshot(path: Path) -> tuple[str, list[str], dict[str, int]]:
    """The file's hash, its directory listing, and every table's row count (read with plain sqlite3)."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    listing = sorted(entry.name for entry in path.parent.iterdir())
    connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        counts = {table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in ROW_COUNTS}
    finally:
        connection.close()
    return digest, listing, counts


@pytest.fixture(scope="module")
def pristine(db_path: Path) -> tuple[str, list[str], dict[str, int]]:
    state = snapshot(db_path)
    assert state[2] == ROW_COUNTS
    return state


# --- normal queries -------------------------------------------------------------------------


def test_select_returns_columns_rows_and_citation(db: ReadOnlyDatabase) -> None:
    result = db.query("SELECT name, title FROM employees WHERE id = 1")
    first = demo_csv("employees")[0]
    assert result.columns == ["name", "title"]
    assert result.rows == [[first["name"], first["title"]]] and first["id"] == "1"
    assert (result.row_count, result.truncated) == (1, False)
    assert re.fullmatch(r"sql:company:[0-9a-f]{8}", result.citation_id)
    assert result.sql == "SELECT name, title FROM employees WHERE id = 1"


def test_join_and_aggregate(db: ReadOnlyDatabase) -> None:
    result = db.query(
        "SELECT d.name, count(*) AS people FROM employees e JOIN departments d ON d.id = e.department_id "
        "GROUP BY d.name ORDER BY people DESC, d.name"
    )
    names = {row["id"]: row["name"] for row in demo_csv("departments")}
    headcount = Counter(names[row["department_id"]] for row in demo_csv("employees"))
    assert result.rows == sorted(([name, people] for name, people in headcount.items()), key=lambda r: (-r[1], r[0]))
    assert result.rows[0] == ["R&D", 150]


def test_cte_recursive_cte_and_values(db: ReadOnlyDatabase) -> None:
    open_tickets = db.query(
        "WITH open AS (SELECT id FROM support_tickets WHERE status = 'open') SELECT count(*) FROM open"
    )
    assert open_tickets.rows == [[sum(row["status"] == "open" for row in demo_csv("support_tickets"))]]
    counted = db.query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5) SELECT sum(x) FROM c")
    assert counted.rows == [[15]]
    assert db.query("VALUES (1, 'a'), (2, 'b')").rows == [[1, "a"], [2, "b"]]


def test_positional_and_named_params(db: ReadOnlyDatabase) -> None:
    query = "SELECT name FROM employees WHERE department_id = ? AND rating_2024 = ? ORDER BY name"
    positional = db.query(query, [3, "A"])
    named = db.query(
        "SELECT name FROM employees WHERE department_id = :dept AND rating_2024 = :rating ORDER BY name",
        {"dept": 3, "rating": "A"},
    )
    product_a = [row for row in demo_csv("employees") if (row["department_id"], row["rating_2024"]) == ("3", "A")]
    expected = sorted([row["name"]] for row in product_a)
    assert positional.rows == named.rows == expected and expected
    assert db.query("SELECT ? IS NULL, ?", [None, True]).rows == [[1, 1]]


def test_introspection_reads_are_allowed(db: ReadOnlyDatabase) -> None:
    assert ["rating_2024"] in db.query("SELECT name FROM pragma_table_info('employees')").rows
    assert db.query("SELECT value FROM json_each('[1, 2]')").rows == [[1], [2]]
    assert ["orders"] in db.query("SELECT name FROM sqlite_master WHERE type = 'table'").rows


def test_row_cap_sets_truncated(db: ReadOnlyDatabase) -> None:
    capped = db.query("SELECT id FROM employees ORDER BY id", max_rows=5)
    assert capped.rows == [[1], [2], [3], [4], [5]]
    assert (capped.row_count, capped.truncated) == (5, True)
    exact = db.query("SELECT id FROM departments", max_rows=ROW_COUNTS["departments"])
    assert (exact.row_count, exact.truncated) == (ROW_COUNTS["departments"], False)
    assert ROW_COUNTS["quarterly_kpis"] < CAP
    assert db.query("SELECT * FROM quarterly_kpis").row_count == ROW_COUNTS["quarterly_kpis"]  # cap not reached


@pytest.mark.parametrize("max_rows", [0, -1, CAP + 1, 10**9, 2.5, True])
def test_max_rows_out_of_range(db: ReadOnlyDatabase, max_rows: object) -> None:
    with pytest.raises(InvalidQueryError, match=f"max_rows must be an integer from 1 to {CAP}"):
        db.query("SELECT 1", max_rows=max_rows)  # type: ignore[arg-type]


def test_long_text_is_clipped_with_marker(db: ReadOnlyDatabase) -> None:
    (cell,) = db.query("SELECT hex(zeroblob(3000))").rows[0]
    assert isinstance(cell, str)
    assert cell.startswith("0" * 2000) and cell.endswith("…[4000 more characters]")
    assert len(cell) == 2000 + len("…[4000 more characters]")


def test_total_result_size_is_bounded(db_path: Path) -> None:
    wide = ReadOnlyDatabase(db_path, max_rows=200)
    result = wide.query(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 150) "
        "SELECT v, v, v, v, v, v, v, v, v, v FROM c, (SELECT hex(zeroblob(1000)) AS v)"
    )
    assert result.truncated
    assert result.row_count == sql_module.MAX_RESULT_CHARS // (10 * 2000)


def test_blobs_and_infinities_are_json_ready(db: ReadOnlyDatabase) -> None:
    result = db.query("SELECT zeroblob(1234), x'00ff', 1e999, -1e999, NULL")
    assert result.rows == [["<blob 1234 bytes>", "<blob 2 bytes>", "inf", "-inf", None]]
    json.dumps(result.model_dump(), allow_nan=False)


def test_citation_ids_normalise_whitespace_and_comments(db: ReadOnlyDatabase) -> None:
    plain = db.query("SELECT name FROM employees WHERE id = 2")
    messy = db.query("  SELECT   name\n\tFROM employees -- who?\n WHERE /* the one */ id = 2 ;; ")
    assert messy.sql == plain.sql
    assert messy.citation_id == plain.citation_id
    assert db.query("SELECT name FROM employees WHERE id = 2").citation_id == plain.citation_id  # stable


def test_citation_ids_distinguish_params_and_literals(db: ReadOnlyDatabase) -> None:
    query = "SELECT name FROM employees WHERE id = ?"
    two, three = db.query(query, [2]), db.query(query, [3])
    assert two.citation_id != three.citation_id
    assert db.query(query, [2]).citation_id == two.citation_id
    assert db.query("SELECT 'a  b'").citation_id != db.query("SELECT 'a b'").citation_id
    named = "SELECT :a + :b"
    assert db.query(named, {"a": 1, "b": 2}).citation_id == db.query(named, {"b": 2, "a": 1}).citation_id


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("  SELECT  1 ;; ", "SELECT 1"),
        ("select/*x*/1", "select 1"),
        ("SELECT 'a  --b; /*' -- c\n FROM t", "SELECT 'a  --b; /*' FROM t"),
        ("/* lead */ WITH x AS (SELECT 1) SELECT * FROM x;", "WITH x AS (SELECT 1) SELECT * FROM x"),
        ('SELECT "it""s ; here", [a;b], `c;d` FROM t', 'SELECT "it""s ; here", [a;b], `c;d` FROM t'),
        ("SELECT 1 /* unterminated", "SELECT 1"),
        ("SELECT 6-3--2", "SELECT 6-3"),
    ],
)
def test_normalise_sql(raw: str, normalised: str) -> None:
    assert normalise_sql(raw) == normalised


def test_literals_with_comment_markers_still_run(db: ReadOnlyDatabase) -> None:
    result = db.query("SELECT ';--' AS \"x  y\", '/* no */' -- real comment")
    assert result.columns == ["x  y", "'/* no */'"]
    assert result.rows == [[";--", "/* no */"]]


def test_queries_from_many_threads(db: ReadOnlyDatabase) -> None:
    def count(table: str) -> int:
        value = db.query(f"SELECT count(*) FROM {table}").rows[0][0]
        assert isinstance(value, int)
        return value

    tables = list(ROW_COUNTS) * 10
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(count, tables)) == [ROW_COUNTS[table] for table in tables]


# --- schema -----------------------------------------------------------------------------------


def test_schema_lists_every_table_with_description(db: ReadOnlyDatabase) -> None:
    tables = {table.name: table for table in db.schema()}
    assert list(tables) == list(ROW_COUNTS)  # creation order
    descriptions = {table["name"]: table["description"] for table in demo_tables()}
    for name, rows in ROW_COUNTS.items():
        assert tables[name].row_count == rows
        assert tables[name].description == descriptions[name] != ""
    employees = {column.name: column for column in tables["employees"].columns}
    assert employees["id"].primary_key and employees["id"].type == "INTEGER"
    assert employees["department_id"].references == "departments.id"
    assert employees["manager_id"].references == "employees.id"
    assert not employees["name"].primary_key and employees["name"].references is None
    leave = {column.name: column for column in tables["leave_balances"].columns}
    assert leave["employee_id"].primary_key and leave["year"].primary_key


def test_schema_text_is_one_line_per_table(db: ReadOnlyDatabase) -> None:
    lines = db.schema_text().splitlines()
    assert len(lines) == len(ROW_COUNTS)
    by_table = {line.split("(", 1)[0]: line for line in lines}
    assert set(by_table) == set(ROW_COUNTS)
    employees = by_table["employees"]
    assert employees.startswith("employees(id INTEGER PK, name TEXT,")
    assert "department_id INTEGER -> departments.id" in employees
    assert "— One row per employee on 2025-09-30:" in employees
    assert employees.endswith(f"[{ROW_COUNTS['employees']} rows]")
    for table in db.schema():
        assert table.description in by_table[table.name]


def test_schema_without_comment_has_empty_description(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "plain.db")
    connection.executescript("CREATE TABLE t (a INTEGER PRIMARY KEY); INSERT INTO t VALUES (1);")
    connection.close()
    plain = ReadOnlyDatabase(tmp_path / "plain.db")
    assert plain.name == "plain"
    assert plain.schema_text() == "t(a INTEGER PK) [1 row]"


# --- opening ----------------------------------------------------------------------------------


def test_missing_database_is_not_found_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    with pytest.raises(NotFoundError, match="No SQL database at"):
        ReadOnlyDatabase(missing)
    assert not missing.exists()


def test_database_removed_after_opening(tmp_path: Path) -> None:
    path = materialize_database(DEMO_DATABASE_SOURCES, tmp_path / "company.db")
    database = ReadOnlyDatabase(path)
    path.unlink()
    with pytest.raises(NotFoundError):
        database.query("SELECT 1")
    assert not path.exists()


@pytest.mark.parametrize("kwargs", [{"name": "bad name"}, {"name": "a:b"}, {"max_rows": 0}, {"timeout_s": 0}])
def test_constructor_rejects_bad_settings(db_path: Path, kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ReadOnlyDatabase(db_path, **kwargs)  # type: ignore[arg-type]


# --- hostile inputs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Raises:
    error: type[RetrievalError]
    phrase: str


@dataclass(frozen=True)
class Bounded:
    """The query runs, within the row cap (and with exactly ``rows`` rows when given)."""

    rows: int | None = None


ROV, IQE, QTO = ReadOnlyViolationError, InvalidQueryError, QueryTimeoutError
CROSS_JOIN = "FROM employees a, employees b, employees c, employees d, employees e, employees f, employees g"
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
NEW_DEPT = "INTO departments (name, cost_center, office) VALUES ('x', 'y', 'z')"

HOSTILE = [
    # writes and DDL: the statement check names the keyword
    pytest.param(f"INSERT {NEW_DEPT}", None, Raises(ROV, "starts with 'INSERT'"), id="insert"),
    pytest.param(f"INSERT {NEW_DEPT} RETURNING id", None, Raises(ROV, "starts with 'INSERT'"), id="insert-returning"),
    pytest.param("UPDATE employees SET rating_2024 = 5", None, Raises(ROV, "starts with 'UPDATE'"), id="update"),
    pytest.param("DELETE FROM employees", None, Raises(ROV, "starts with 'DELETE'"), id="delete"),
    pytest.param(f"REPLACE {NEW_DEPT}", None, Raises(ROV, "starts with 'REPLACE'"), id="replace"),
    pytest.param("CREATE TABLE x (a)", None, Raises(ROV, "starts with 'CREATE'"), id="create-table"),
    pytest.param("CREATE TEMP TABLE x (a)", None, Raises(ROV, "starts with 'CREATE'"), id="create-temp-table"),
    pytest.param("CREATE INDEX i ON employees (name)", None, Raises(ROV, "starts with 'CREATE'"), id="create-index"),
    pytest.param("CREATE VIEW v AS SELECT 1", None, Raises(ROV, "starts with 'CREATE'"), id="create-view"),
    pytest.param(
        "CREATE TRIGGER t AFTER INSERT ON employees BEGIN DELETE FROM orders; END",
        None,
        Raises(ROV, "starts with 'CREATE'"),
        id="create-trigger",
    ),
    pytest.param("DROP TABLE employees", None, Raises(ROV, "starts with 'DROP'"), id="drop"),
    pytest.param("ALTER TABLE employees ADD COLUMN x", None, Raises(ROV, "starts with 'ALTER'"), id="alter"),
    pytest.param("EXPLAIN DELETE FROM employees", None, Raises(ROV, "starts with 'EXPLAIN'"), id="explain"),
    # writes behind a read keyword: the authorizer refuses them
    pytest.param(
        "WITH x AS (SELECT 1) DELETE FROM employees", None, Raises(ROV, "DELETE on employees"), id="cte-delete"
    ),
    pytest.param(
        f"WITH x AS (SELECT 1) INSERT {NEW_DEPT}", None, Raises(ROV, "INSERT on departments"), id="cte-insert"
    ),
    pytest.param(
        "WITH x AS (SELECT 1) UPDATE employees SET rating_2024 = 1",
        None,
        Raises(ROV, "UPDATE on employees"),
        id="cte-update",
    ),
    # more than one statement
    pytest.param("SELECT 1; DROP TABLE employees", None, Raises(ROV, "one statement per call"), id="stacked-drop"),
    pytest.param(
        "SELECT 1 /* ; */ ; DELETE FROM employees -- ;",
        None,
        Raises(ROV, "one statement per call"),
        id="stacked-hidden",
    ),
    pytest.param("SELECT 1;SELECT 2", None, Raises(ROV, "one statement per call"), id="stacked-selects"),
    # files, attachments, maintenance, transactions
    pytest.param("ATTACH DATABASE '{tmp}/evil.db' AS evil", None, Raises(ROV, "starts with 'ATTACH'"), id="attach"),
    pytest.param("DETACH DATABASE main", None, Raises(ROV, "starts with 'DETACH'"), id="detach"),
    pytest.param("VACUUM", None, Raises(ROV, "starts with 'VACUUM'"), id="vacuum"),
    pytest.param("VACUUM INTO '{tmp}/copy.db'", None, Raises(ROV, "starts with 'VACUUM'"), id="vacuum-into"),
    pytest.param("REINDEX", None, Raises(ROV, "starts with 'REINDEX'"), id="reindex"),
    pytest.param("ANALYZE", None, Raises(ROV, "starts with 'ANALYZE'"), id="analyze"),
    pytest.param("BEGIN IMMEDIATE", None, Raises(ROV, "starts with 'BEGIN'"), id="begin"),
    pytest.param("COMMIT", None, Raises(ROV, "starts with 'COMMIT'"), id="commit"),
    pytest.param("SAVEPOINT s", None, Raises(ROV, "starts with 'SAVEPOINT'"), id="savepoint"),
    # pragmas and risky functions
    pytest.param("PRAGMA journal_mode = DELETE", None, Raises(ROV, "starts with 'PRAGMA'"), id="pragma-journal-mode"),
    pytest.param("PRAGMA writable_schema = 1", None, Raises(ROV, "starts with 'PRAGMA'"), id="pragma-writable-schema"),
    pytest.param("PRAGMA user_version = 5", None, Raises(ROV, "starts with 'PRAGMA'"), id="pragma-user-version"),
    pytest.param("PRAGMA query_only = OFF", None, Raises(ROV, "starts with 'PRAGMA'"), id="pragma-query-only-off"),
    pytest.param(
        "SELECT * FROM pragma_user_version", None, Raises(ROV, "table-valued function that is not available"),
        id="pragma-tvf",
    ),
    pytest.param(
        "SELECT * FROM pragma_database_list", None, Raises(ROV, "the ones you can use are json_each"),
        id="pragma-database-list",
    ),
    pytest.param("SELECT load_extension('x')", None, Raises(ROV, "load_extension() is disabled"), id="load-extension"),
    pytest.param(
        "SELECT hex(fts3_tokenizer('simple'))", None, Raises(ROV, "fts3_tokenizer() is disabled"), id="fts3-tokenizer"
    ),
    # resource bombs: interrupted by the time limit, refused by the size limits, or capped
    pytest.param(f"{ENDLESS}SELECT count(*) FROM c", None, Raises(QTO, "interrupted after 0.5 s"), id="cte-bomb"),
    pytest.param(f"{ENDLESS}SELECT x FROM c", None, Bounded(CAP), id="cte-endless-rows"),
    pytest.param(
        f"{ENDLESS}SELECT length(group_concat(hex(zeroblob(500)))) FROM c",
        None,
        Raises(QTO, "Add a LIMIT"),
        id="group-concat-bomb",
    ),
    pytest.param(f"SELECT count(*) {CROSS_JOIN}", None, Raises(QTO, "interrupted"), id="cross-join-count"),
    pytest.param(
        f"SELECT a.name, g.name {CROSS_JOIN} ORDER BY random()", None, Raises(QTO, "interrupted"), id="cross-join-sort"
    ),
    pytest.param(f"SELECT a.name, g.name {CROSS_JOIN}", None, Bounded(CAP), id="cross-join-rows"),
    pytest.param("SELECT randomblob(1000000000)", None, Raises(IQE, "exceed 100,000 bytes"), id="randomblob"),
    pytest.param("SELECT zeroblob(1000000000)", None, Raises(IQE, "exceed 100,000 bytes"), id="zeroblob"),
    pytest.param(
        "SELECT length(replace(replace(replace(hex(zeroblob(10000)), '0', '0000'), '0', '0000'), '0', '0000'))",
        None,
        Raises(IQE, "exceed 100,000 bytes"),
        id="nested-replace-bomb",
    ),
    pytest.param("SELECT printf('%.*c', 2147483647, 'x')", None, Raises(ROV, "printf() is disabled"), id="printf-bomb"),
    pytest.param("SELECT format('%.999999999c', 'x')", None, Raises(ROV, "format() is disabled"), id="format-bomb"),
    pytest.param("SELECT '" + "a" * 200_000 + "'", None, Raises(IQE, "the limit is 100,000"), id="sql-200kb"),
    pytest.param("SELECT " + ", ".join(["1"] * 150), None, Raises(IQE, "too many columns"), id="too-many-columns"),
    pytest.param("SELECT " + "(" * 1200 + "1" + ")" * 1200, None, Raises(IQE, "SQLite rejected"), id="deep-nesting"),
    # malformed SQL
    pytest.param("SELECT * FROM WHERE", None, Raises(IQE, "syntax error"), id="syntax-error"),
    pytest.param("SELECT * FROM salaries", None, Raises(IQE, "no such table: salaries"), id="unknown-table"),
    pytest.param("SELECT salary FROM employees", None, Raises(IQE, "against the schema"), id="unknown-column"),
    pytest.param("", None, Raises(IQE, "empty"), id="empty"),
    pytest.param(" \n\t ", None, Raises(IQE, "empty"), id="whitespace"),
    pytest.param("-- nothing here\n/* nor here */", None, Raises(IQE, "empty"), id="comment-only"),
    pytest.param(";;", None, Raises(IQE, "empty"), id="semicolons-only"),
    pytest.param("SELECT\u00a0*\u00a0FROM employees", None, Raises(IQE, "syntax error"), id="no-break-spaces"),
    pytest.param("SELECT '\ud800'", None, Raises(IQE, "lone surrogates"), id="lone-surrogate"),
    # params: injection is inert, wrong shapes are refused
    pytest.param(
        "SELECT * FROM employees WHERE name = ?", ["x'; DROP TABLE employees; --"], Bounded(0), id="inject-positional"
    ),
    pytest.param("SELECT * FROM employees WHERE name = :name", {"name": "' OR '1'='1"}, Bounded(0), id="inject-named"),
    pytest.param("SELECT * FROM employees WHERE name LIKE ?", ["%' OR 1=1 --"], Bounded(0), id="inject-like"),
    pytest.param("SELECT ?", [{"a": 1}], Raises(IQE, "is a dict"), id="param-dict-value"),
    pytest.param("SELECT :a", {"a": [1, 2]}, Raises(IQE, "is a list"), id="param-list-value"),
    pytest.param("SELECT ?", [b"raw"], Raises(IQE, "is a bytes"), id="param-bytes"),
    pytest.param("SELECT ?", "abc", Raises(IQE, "params must be a list"), id="params-string"),
    pytest.param("SELECT ?", 5, Raises(IQE, "params must be a list"), id="params-number"),
    pytest.param("SELECT ?", [2**70], Raises(IQE, "64-bit integer"), id="param-huge-int"),
    pytest.param("SELECT ?", ["a" * 200_000], Raises(IQE, "longer than 100,000 bytes"), id="param-too-long"),
    pytest.param("SELECT ?", ["\udc00"], Raises(IQE, "lone surrogates"), id="param-surrogate"),
    pytest.param("SELECT ?", list(range(101)), Raises(IQE, "at most 100"), id="too-many-params"),
    pytest.param("SELECT ?", [1, 2], Raises(IQE, "Incorrect number of bindings"), id="extra-param"),
    pytest.param("SELECT :a", {"b": 1}, Raises(IQE, "binding parameter :a"), id="missing-named-param"),
    pytest.param("SELECT ?", {"a": 1}, Raises(IQE, "has no name"), id="dict-for-positional"),
    pytest.param(
        "SELECT 1 WHERE 1 IN (" + ", ".join(["?"] * 150) + ")",
        None,
        Raises(IQE, "too many SQL variables"),
        id="placeholders",
    ),
]


@pytest.mark.parametrize(("statement", "params", "expected"), HOSTILE)
def test_hostile_input_is_refused_or_bounded(
    db: ReadOnlyDatabase,
    db_path: Path,
    pristine: tuple[str, list[str], dict[str, int]],
    tmp_path: Path,
    statement: str,
    params: object,
    expected: Raises | Bounded,
) -> None:
    statement = statement.replace("{tmp}", str(tmp_path))
    started = time.monotonic()
    if isinstance(expected, Raises):
        with pytest.raises(expected.error) as caught:
            db.query(statement, params)  # type: ignore[arg-type]
        assert expected.phrase in str(caught.value)
    else:
        result = db.query(statement, params)  # type: ignore[arg-type]
        assert result.row_count <= CAP
        if expected.rows is not None:
            assert result.row_count == expected.rows
    assert time.monotonic() - started < 10 * TIMEOUT_S
    assert list(tmp_path.iterdir()) == []  # no ATTACH or VACUUM INTO file
    assert snapshot(db_path) == pristine  # same bytes, no journal or WAL files, every row still there


def test_hostile_table_is_large_enough() -> None:
    assert len(HOSTILE) >= 30


# --- each inner layer refuses writes on its own -----------------------------------------------------

WRITES = [
    "DELETE FROM employees",
    f"INSERT {NEW_DEPT}",
    "UPDATE employees SET rating_2024 = 1",
    "DROP TABLE orders",
    "CREATE TABLE x (a)",
    "PRAGMA user_version = 5",
]


@pytest.mark.parametrize("statement", WRITES)
def test_authorizer_refuses_writes_without_statement_check(
    monkeypatch: pytest.MonkeyPatch,
    db: ReadOnlyDatabase,
    db_path: Path,
    pristine: tuple[str, list[str], dict[str, int]],
    statement: str,
) -> None:
    monkeypatch.setattr(sql_module, "_require_read_statement", lambda normalised: None)
    with pytest.raises(ReadOnlyViolationError, match="Refused: the statement needs"):
        db.query(statement)
    assert snapshot(db_path) == pristine


CONNECTION_REFUSES = [
    *((statement, ReadOnlyViolationError, "readonly database") for statement in WRITES),
    ("ATTACH DATABASE '{tmp}/evil.db' AS evil", InvalidQueryError, "too many attached databases"),
    ("VACUUM INTO '{tmp}/copy.db'", InvalidQueryError, "too many attached databases"),
    ("PRAGMA journal_mode = WAL", ReadOnlyViolationError, "readonly database"),
]


@pytest.mark.parametrize(("statement", "error", "phrase"), CONNECTION_REFUSES)
def test_connection_refuses_writes_without_statement_check_or_authorizer(
    monkeypatch: pytest.MonkeyPatch,
    db_path: Path,
    pristine: tuple[str, list[str], dict[str, int]],
    tmp_path: Path,
    statement: str,
    error: type[RetrievalError],
    phrase: str,
) -> None:
    monkeypatch.setattr(engine.Guard, "authorize", lambda self, *args: sqlite3.SQLITE_OK)
    unchecked = engine.Statement(
        sql=statement.replace("{tmp}", str(tmp_path)), params=[], max_rows=CAP, timeout_s=TIMEOUT_S,
        max_value_chars=100, max_result_chars=1000, memory_mb=64,
    )  # fmt: skip
    with pytest.raises(error, match=phrase):
        engine.run_statement(db_path, unchecked)  # in this process, where the authorizer is switched off
    assert list(tmp_path.iterdir()) == []
    assert snapshot(db_path) == pristine
