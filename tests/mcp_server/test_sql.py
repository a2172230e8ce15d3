"""The read-only SQL layer and the demo database, on real SQLite files built from corpora/company.sql."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcp_server import sql as sql_module
from mcp_server.demo_database import bundled_database_script, materialize_database
from mcp_server.errors import (
    IngestError,
    InvalidQueryError,
    NotFoundError,
    QueryTimeoutError,
    ReadOnlyViolationError,
    RetrievalError,
)
from mcp_server.sql import ReadOnlyDatabase, normalise_sql

CORPORA = Path(__file__).resolve().parents[2] / "corpora"
SCRIPT = CORPORA / "company.sql"
ROW_COUNTS = {"departments": 5, "employees": 12, "leave_balances": 14, "products": 4, "customers": 6, "invoices": 15}
CAP = 20
TIMEOUT_S = 0.5


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return materialize_database(SCRIPT, tmp_path_factory.mktemp("sql") / "company.db")


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
    assert result.columns == ["name", "title"]
    assert result.rows == [["Amara Okafor", "Chief Technology Officer"]]
    assert (result.row_count, result.truncated) == (1, False)
    assert re.fullmatch(r"sql:company:[0-9a-f]{8}", result.citation_id)
    assert result.sql == "SELECT name, title FROM employees WHERE id = 1"


def test_join_and_aggregate(db: ReadOnlyDatabase) -> None:
    result = db.query(
        "SELECT d.name, count(*) AS people FROM employees e JOIN departments d ON d.id = e.department_id "
        "GROUP BY d.name ORDER BY people DESC, d.name"
    )
    assert result.rows[0] == ["Engineering", 4]
    assert sum(row[1] for row in result.rows) == 12  # type: ignore[misc]


def test_cte_recursive_cte_and_values(db: ReadOnlyDatabase) -> None:
    open_total = db.query(
        "WITH open AS (SELECT amount FROM invoices WHERE status != 'paid') SELECT sum(amount) FROM open"
    )
    assert open_total.rows == [[1195.0]]
    counted = db.query("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 5) SELECT sum(x) FROM c")
    assert counted.rows == [[15]]
    assert db.query("VALUES (1, 'a'), (2, 'b')").rows == [[1, "a"], [2, "b"]]


def test_positional_and_named_params(db: ReadOnlyDatabase) -> None:
    positional = db.query("SELECT name FROM employees WHERE department_id = ? AND rating = ? ORDER BY name", [1, "A"])
    named = db.query(
        "SELECT name FROM employees WHERE department_id = :dept AND rating = :rating ORDER BY name",
        {"dept": 1, "rating": "A"},
    )
    assert positional.rows == named.rows == [["Jonas Weber"], ["Priya Raman"]]
    assert db.query("SELECT ? IS NULL, ?", [None, True]).rows == [[1, 1]]


def test_introspection_reads_are_allowed(db: ReadOnlyDatabase) -> None:
    assert ["rating"] in db.query("SELECT name FROM pragma_table_info('employees')").rows
    assert db.query("SELECT value FROM json_each('[1, 2]')").rows == [[1], [2]]
    assert ["invoices"] in db.query("SELECT name FROM sqlite_master WHERE type = 'table'").rows


def test_row_cap_sets_truncated(db: ReadOnlyDatabase) -> None:
    capped = db.query("SELECT id FROM employees ORDER BY id", max_rows=5)
    assert capped.rows == [[1], [2], [3], [4], [5]]
    assert (capped.row_count, capped.truncated) == (5, True)
    exact = db.query("SELECT id FROM employees", max_rows=12)
    assert (exact.row_count, exact.truncated) == (12, False)
    assert db.query("SELECT * FROM leave_balances").row_count == 14  # default cap (20) not reached


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
    for name, rows in ROW_COUNTS.items():
        assert tables[name].row_count == rows
        assert tables[name].description.startswith(("One row per", "Annual leave per"))
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
    assert "— One row per employee:" in employees and employees.endswith("[12 rows]")
    for table in db.schema():
        assert table.description in by_table[table.name]


def test_schema_without_comment_has_empty_description(tmp_path: Path) -> None:
    script = tmp_path / "plain.sql"
    script.write_text("CREATE TABLE t (a INTEGER PRIMARY KEY); INSERT INTO t VALUES (1);")
    plain = ReadOnlyDatabase(materialize_database(script, tmp_path / "plain.db"))
    assert plain.name == "plain"
    assert plain.schema_text() == "t(a INTEGER PK) [1 row]"


# --- opening ----------------------------------------------------------------------------------


def test_missing_database_is_not_found_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nope.db"
    with pytest.raises(NotFoundError, match="No SQL database at"):
        ReadOnlyDatabase(missing)
    assert not missing.exists()


def test_database_removed_after_opening(tmp_path: Path) -> None:
    path = materialize_database(SCRIPT, tmp_path / "company.db")
    database = ReadOnlyDatabase(path)
    path.unlink()
    with pytest.raises(NotFoundError):
        database.query("SELECT 1")
    assert not path.exists()


@pytest.mark.parametrize("kwargs", [{"name": "bad name"}, {"name": "a:b"}, {"max_rows": 0}, {"timeout_s": 0}])
def test_constructor_rejects_bad_settings(db_path: Path, kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ReadOnlyDatabase(db_path, **kwargs)  # type: ignore[arg-type]


# --- materialize_database -------------------------------------------------------------------------


def test_materialize_builds_once_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "data" / "company.db"
    assert materialize_database(SCRIPT, target) == target
    assert sorted(p.name for p in target.parent.iterdir()) == ["company.db", "company.db.sha256"]
    before = target.stat()
    materialize_database(SCRIPT, target)
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_materialize_rebuilds_when_script_changes(tmp_path: Path) -> None:
    script = tmp_path / "company.sql"
    script.write_text(SCRIPT.read_text(encoding="utf-8"), encoding="utf-8")
    target = tmp_path / "company.db"
    materialize_database(script, target)
    script.write_text(
        script.read_text(encoding="utf-8") + "\nINSERT INTO departments VALUES (6, 'Legal', 'CC-600', 'Paris');\n"
    )
    materialize_database(script, target)
    assert ReadOnlyDatabase(target).query("SELECT name FROM departments WHERE id = 6").rows == [["Legal"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["company.db", "company.db.sha256", "company.sql"]


def test_materialize_rebuilds_when_stamp_missing(tmp_path: Path) -> None:
    target = materialize_database(SCRIPT, tmp_path / "company.db")
    inode = target.stat().st_ino
    (tmp_path / "company.db.sha256").unlink()
    materialize_database(SCRIPT, target)
    assert target.stat().st_ino != inode
    assert (tmp_path / "company.db.sha256").read_text() == hashlib.sha256(SCRIPT.read_bytes()).hexdigest()


def test_materialize_broken_script_keeps_old_database(tmp_path: Path) -> None:
    target = materialize_database(SCRIPT, tmp_path / "company.db")
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    broken = tmp_path / "broken.sql"
    broken.write_text("CREATE TABLE t (a);\nINSERT INTO nowhere VALUES (1);\n")
    with pytest.raises(IngestError, match="no such table: nowhere"):
        materialize_database(broken, target)
    assert hashlib.sha256(target.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.sql", "company.db"]


def test_missing_scripts_are_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        materialize_database(tmp_path / "none.sql", tmp_path / "x.db")
    with pytest.raises(NotFoundError):
        bundled_database_script(tmp_path)
    assert bundled_database_script(CORPORA) == SCRIPT
    assert list(tmp_path.iterdir()) == []


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
NEW_DEPT = "INTO departments (name, cost_center, location) VALUES ('x', 'y', 'z')"

HOSTILE = [
    # writes and DDL: the statement check names the keyword
    pytest.param(f"INSERT {NEW_DEPT}", None, Raises(ROV, "starts with 'INSERT'"), id="insert"),
    pytest.param(f"INSERT {NEW_DEPT} RETURNING id", None, Raises(ROV, "starts with 'INSERT'"), id="insert-returning"),
    pytest.param("UPDATE employees SET rating = 5", None, Raises(ROV, "starts with 'UPDATE'"), id="update"),
    pytest.param("DELETE FROM employees", None, Raises(ROV, "starts with 'DELETE'"), id="delete"),
    pytest.param(f"REPLACE {NEW_DEPT}", None, Raises(ROV, "starts with 'REPLACE'"), id="replace"),
    pytest.param("CREATE TABLE x (a)", None, Raises(ROV, "starts with 'CREATE'"), id="create-table"),
    pytest.param("CREATE TEMP TABLE x (a)", None, Raises(ROV, "starts with 'CREATE'"), id="create-temp-table"),
    pytest.param("CREATE INDEX i ON employees (name)", None, Raises(ROV, "starts with 'CREATE'"), id="create-index"),
    pytest.param("CREATE VIEW v AS SELECT 1", None, Raises(ROV, "starts with 'CREATE'"), id="create-view"),
    pytest.param(
        "CREATE TRIGGER t AFTER INSERT ON employees BEGIN DELETE FROM invoices; END",
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
        "WITH x AS (SELECT 1) UPDATE employees SET rating = 1",
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
        "SELECT * FROM pragma_user_version", None, Raises(ROV, "table-valued functions are available"), id="pragma-tvf"
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
    "UPDATE employees SET rating = 1",
    "DROP TABLE invoices",
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
    db: ReadOnlyDatabase,
    db_path: Path,
    pristine: tuple[str, list[str], dict[str, int]],
    tmp_path: Path,
    statement: str,
    error: type[RetrievalError],
    phrase: str,
) -> None:
    monkeypatch.setattr(sql_module, "_require_read_statement", lambda normalised: None)
    monkeypatch.setattr(sql_module._Guard, "authorize", lambda self, *args: sqlite3.SQLITE_OK)
    with pytest.raises(error, match=phrase):
        db.query(statement.replace("{tmp}", str(tmp_path)))
    assert list(tmp_path.iterdir()) == []
    assert snapshot(db_path) == pristine
