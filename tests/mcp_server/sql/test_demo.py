"""The demo database: built by sqlite-utils from corpora/database/ (schema.json and one CSV per
table), reproducibly, and answering questions the documents cannot.

Expected values come from the CSV rows, read with the csv module and computed in plain
Python, or are the literal figures the company bible fixes (X3 price, Q2 2025 KPIs).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from mcp_server.errors import IngestError, NotFoundError, RetrievalError
from mcp_server.sql.demo import bundled_database_sources, materialize_database
from mcp_server.sql.guard import ReadOnlyDatabase
from tests.helpers import DEMO_DATABASE_SOURCES, demo_csv, demo_row_counts, demo_tables

REPO = Path(__file__).resolve().parents[3]
GENERATOR = REPO / "scripts" / "generate_demo_data.py"
TABLES = [
    "departments", "employees", "leave_balances", "products", "customers", "orders", "refunds", "support_tickets",
    "quarterly_kpis",
]  # fmt: skip
SQL_TYPES = {"INTEGER": "integer", "REAL": "real", "TEXT": "text"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return materialize_database(DEMO_DATABASE_SOURCES, tmp_path_factory.mktemp("demo") / "company.sqlite")


@pytest.fixture(scope="module")
def db(built: Path) -> ReadOnlyDatabase:
    return ReadOnlyDatabase(built, max_rows=1000)


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """A private copy of the demo sources that a test may edit."""
    return Path(shutil.copytree(DEMO_DATABASE_SOURCES, tmp_path / "sources"))


def index_columns(connection: sqlite3.Connection, index: str) -> tuple[str, ...]:
    columns = connection.execute("SELECT name FROM pragma_index_info(?) ORDER BY seqno", (index,))
    return tuple(name for (name,) in columns)


def one_row(db: ReadOnlyDatabase, sql: str, params: list[object] | None = None) -> list[object]:
    (row,) = db.query(sql, params).rows
    return list(row)


# --- contents ----------------------------------------------------------------------------------------


def test_each_table_holds_its_csv_rows(db: ReadOnlyDatabase) -> None:
    counts = demo_row_counts()
    assert list(counts) == TABLES
    assert {table.name: table.row_count for table in db.schema()} == counts
    fixed = {name: counts[name] for name in ("departments", "employees", "products", "quarterly_kpis")}
    assert fixed == {"departments": 10, "employees": 420, "products": 8, "quarterly_kpis": 11}
    assert 3000 < sum(counts.values()) < 10_000  # "a few thousand rows"


def test_columns_have_the_declared_types_and_nulls_only_where_allowed(built: Path) -> None:
    connection = sqlite3.connect(f"{built.as_uri()}?mode=ro", uri=True)
    try:
        for table in demo_tables():
            for column in table["columns"]:
                kinds = {kind for (kind,) in connection.execute(
                    f'SELECT DISTINCT typeof("{column["name"]}") FROM {table["name"]}'
                )}  # fmt: skip
                allowed = {SQL_TYPES[column["type"]]} | ({"null"} if column.get("nullable") else set())
                assert kinds and kinds <= allowed, (table["name"], column["name"], kinds)
    finally:
        connection.close()


def test_keys_and_indexes_follow_the_schema(built: Path) -> None:
    connection = sqlite3.connect(f"{built.as_uri()}?mode=ro", uri=True)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert connection.execute("PRAGMA foreign_key_check").fetchall() == []
        for table in demo_tables():
            declared_fks = {(fk["column"], fk["references"]) for fk in table.get("foreign_keys", [])}
            actual_fks = {
                (source, f"{target}.{to}")
                for target, source, to in connection.execute(
                    'SELECT "table", "from", "to" FROM pragma_foreign_key_list(?)', (table["name"],)
                )
            }
            assert actual_fks == declared_fks
            pk = [name for name, rank in sorted(
                connection.execute("SELECT name, pk FROM pragma_table_info(?) WHERE pk > 0", (table["name"],)),
                key=lambda column: column[1],
            )]  # fmt: skip
            assert pk == table["primary_key"]
            created = connection.execute(
                "SELECT name, \"unique\" FROM pragma_index_list(?) WHERE origin = 'c'", (table["name"],)
            ).fetchall()
            indexes = {(index_columns(connection, name), bool(unique)) for name, unique in created}
            assert indexes == {(tuple(i["columns"]), i.get("unique", False)) for i in table.get("indexes", [])}
    finally:
        connection.close()


def test_descriptions_say_what_a_row_holds_and_the_as_of_date(db: ReadOnlyDatabase) -> None:
    described = {table.name: table.description for table in db.schema()}
    assert described == {table["name"]: table["description"] for table in demo_tables()}
    for name in ("employees", "leave_balances", "products", "orders", "refunds", "support_tickets", "quarterly_kpis"):
        assert "2025-09-30" in described[name], name
    for name in ("orders", "refunds"):
        assert "'last month' = September 2025" in described[name]
    lines = db.schema_text().splitlines()
    assert [line.split("(", 1)[0] for line in lines] == TABLES  # one line per table for the tool description


# --- answers the documents cannot give -------------------------------------------------------------------


def test_refunds_last_month(db: ReadOnlyDatabase) -> None:
    september = [row for row in demo_csv("refunds") if date.fromisoformat(row["refunded_on"]).month == 9
                 and row["refunded_on"].startswith("2025")]  # fmt: skip
    total = sum(Decimal(row["amount_cny"]) for row in september)
    answer = one_row(
        db, "SELECT count(*), round(sum(amount_cny), 2) FROM refunds WHERE refunded_on BETWEEN ? AND ?",
        ["2025-09-01", "2025-09-30"],
    )  # fmt: skip
    assert answer == [len(september), float(total)]
    assert len(september) >= 5


def test_current_x3_price_and_its_cut(db: ReadOnlyDatabase) -> None:
    assert one_row(
        db, "SELECT price_cny, price_effective_from, previous_price_cny FROM products WHERE name = 'WonderClean X3'"
    ) == [2199.0, "2025-08-15", 2499.0]  # fmt: skip
    assert one_row(db, "SELECT price_cny FROM products WHERE sku = 'WC-X5'") == [3999.0]
    x3 = next(row["id"] for row in demo_csv("products") if row["sku"] == "WC-X3")
    x3_orders = [row for row in demo_csv("orders") if row["product_id"] == x3]
    charged = {(row["ordered_on"] >= "2025-08-15", row["unit_price_cny"]) for row in x3_orders}
    assert charged == {(False, "2499.00"), (True, "2199.00")}  # orders were charged the price of their day


def test_q2_2025_kpis_agree_with_the_quarterly_report(db: ReadOnlyDatabase) -> None:
    kpis = {row["quarter"]: row for row in demo_csv("quarterly_kpis")}
    q2, q1, year_before = kpis["2025-Q2"], kpis["2025-Q1"], kpis["2024-Q2"]
    assert Fraction(int(q2["revenue_cny"]), int(year_before["revenue_cny"])) == Fraction(137, 100)  # +37% year on year
    assert int(q2["dau"]) == 2_800_000 and Fraction(int(q2["dau"]), int(q1["dau"])) == Fraction(112, 100)  # +12% QoQ
    assert (q2["nps"], q2["paid_conversion_pct"], q1["paid_conversion_pct"]) == ("72", "11.2", "8.3")
    attainment = (q2["kpi_attainment_pct"], q2["sales_kpi_attainment_pct"], q2["rnd_kpi_attainment_pct"])
    assert attainment == ("94", "118", "89")
    answer = one_row(
        db, "SELECT revenue_cny, dau, nps, paid_conversion_pct, kpi_attainment_pct, sales_kpi_attainment_pct, "
        "rnd_kpi_attainment_pct, status FROM quarterly_kpis WHERE quarter = ?", ["2025-Q2"],
    )  # fmt: skip
    assert answer == [int(q2["revenue_cny"]), 2_800_000, 72, 11.2, 94, 118, 89, "final"]
    growth = one_row(
        db, "SELECT round(100.0 * q.revenue_cny / p.revenue_cny - 100, 1) FROM quarterly_kpis q "
        "JOIN quarterly_kpis p ON p.quarter = '2024-Q2' WHERE q.quarter = '2025-Q2'",
    )  # fmt: skip
    assert growth == [37.0]


def test_open_support_tickets(db: ReadOnlyDatabase) -> None:
    tickets = demo_csv("support_tickets")
    still_open = [row for row in tickets if row["status"] == "open"]
    assert still_open and all(row["resolved_at"] == "" for row in still_open)
    assert all(row["resolved_at"] > row["opened_at"] for row in tickets if row["status"] == "resolved")
    assert one_row(db, "SELECT count(*) FROM support_tickets WHERE status = 'open'") == [len(still_open)]
    assert one_row(db, "SELECT count(*) FROM support_tickets WHERE resolved_at IS NULL") == [len(still_open)]


def test_orders_last_month_by_product_line(db: ReadOnlyDatabase) -> None:
    lines = {row["id"]: row["product_line"] for row in demo_csv("products")}
    expected: dict[str, Decimal] = {}
    for row in demo_csv("orders"):
        if row["ordered_on"].startswith("2025-09-"):
            line = lines[row["product_id"]]
            expected[line] = expected.get(line, Decimal(0)) + Decimal(row["amount_cny"])
    result = db.query(
        "SELECT p.product_line, round(sum(o.amount_cny), 2) FROM orders o JOIN products p ON p.id = o.product_id "
        "WHERE o.ordered_on LIKE '2025-09-%' GROUP BY p.product_line ORDER BY p.product_line"
    )
    assert result.rows == [[line, float(total)] for line, total in sorted(expected.items())]
    assert set(expected) == {"Service Cloud", "WonderBot Pro", "WonderClean"}


# --- the data agree with the documents' rules ------------------------------------------------------------


def test_order_amounts_follow_the_billing_cycle() -> None:
    months = {"monthly": 1, "annual": 12, "three_year": 36, "one_off": 1}
    discounts = {"monthly": 0, "annual": 10, "three_year": 20, "one_off": 0}
    for row in demo_csv("orders"):
        cycle = row["billing_cycle"]
        assert int(row["discount_pct"]) == discounts[cycle]
        billed = Decimal(row["unit_price_cny"]) * int(row["quantity"]) * months[cycle]
        expected = billed * (100 - discounts[cycle]) / 100
        assert Decimal(row["amount_cny"]) == expected, row
        assert "2024-07-01" <= row["ordered_on"] <= "2025-09-30"


def test_wonderbot_refunds_follow_the_refund_rule() -> None:
    """Full refund within 7 days, pro rata up to day 30, none after (the WonderBot Pro FAQ)."""
    bot_products = {row["id"] for row in demo_csv("products") if row["product_line"] == "WonderBot Pro"}
    orders = {row["id"]: row for row in demo_csv("orders")}
    checked = 0
    for refund in demo_csv("refunds"):
        order = orders[refund["order_id"]]
        assert order["ordered_on"] <= refund["refunded_on"] <= "2025-09-30"
        assert Decimal(refund["amount_cny"]) <= Decimal(order["amount_cny"])
        if order["product_id"] not in bot_products:
            continue
        days = (date.fromisoformat(refund["refunded_on"]) - date.fromisoformat(order["ordered_on"])).days
        paid, refunded = Decimal(order["amount_cny"]), Decimal(refund["amount_cny"])
        assert days < 30
        if days <= 7:
            assert refunded == paid
        else:
            assert abs(refunded - paid * (30 - days) / 30) <= Decimal("0.01")
        checked += 1
    assert checked >= 10


def test_orders_were_charged_the_list_price_of_their_day() -> None:
    """The Service Cloud 2025 price list (from 1 January 2025) and the X3 price cut (15 August 2025)."""
    products = {row["id"]: row for row in demo_csv("products")}
    assert {row["sku"]: row["price_effective_from"] for row in products.values() if row["sku"].startswith("SC-")} == {
        "SC-BASIC": "2025-01-01", "SC-PRO": "2025-01-01", "SC-ENT": "2025-01-01",
    }  # fmt: skip
    for order in demo_csv("orders"):
        product = products[order["product_id"]]
        if product["price_cny"] == "":  # quoted per contract
            continue
        earlier = order["ordered_on"] < product["price_effective_from"] and product["previous_price_cny"]
        assert order["unit_price_cny"] == product["previous_price_cny" if earlier else "price_cny"], order


def test_sla_credits_after_the_june_outage() -> None:
    """The Q2 2025 report: service credits paid to Shanghai-region customers after the 12 June outage."""
    orders = {row["id"]: row for row in demo_csv("orders")}
    customers = {row["id"]: row for row in demo_csv("customers")}
    service_cloud = {row["id"] for row in demo_csv("products") if row["product_line"] == "Service Cloud"}
    credits = [row for row in demo_csv("refunds") if row["reason"].startswith("SLA service credit")]
    assert len(credits) >= 20
    for credit in credits:
        order = orders[credit["order_id"]]
        assert order["product_id"] in service_cloud and customers[order["customer_id"]]["country"] == "CN"
        assert order["ordered_on"] <= "2025-06-12" < credit["refunded_on"] <= "2025-06-30"
        assert Decimal(credit["amount_cny"]) == Decimal(order["unit_price_cny"]) * int(order["quantity"]) / 10


def test_leave_balances_follow_the_handbook() -> None:
    """Tiers of 10/15/20 days after 1/3/5 years; carried-over days are this year's start balance."""
    hired = {row["id"]: date.fromisoformat(row["hire_date"]) for row in demo_csv("employees")}
    balances = {(row["employee_id"], row["year"]): row for row in demo_csv("leave_balances")}
    tiers = {1: "10.0", 2: "10.0", 4: "15.0", 6: "20.0", 7: "20.0", 8: "20.0", 9: "20.0"}
    for (employee, year), row in balances.items():
        # A new tier starts the month after the anniversary, so these years of hire keep one tier all year.
        years_before = int(year) - hired[employee].year
        if years_before in tiers:
            assert row["entitled_days"] == tiers[years_before], (employee, year)
        if years_before == 0:  # joiners: 10 days a year, pro rata from the month they start
            months = 13 - hired[employee].month
            assert abs(Decimal(row["entitled_days"]) - Decimal(months * 10) / 12) <= Decimal("0.25")
        assert Decimal(row["taken_days"]) <= Decimal(row["entitled_days"]) + Decimal(row["carried_over_days"])
        previous = balances.get((employee, str(int(year) - 1)))
        if previous is not None:
            entitled, carried, taken = (
                Decimal(previous[c]) for c in ("entitled_days", "carried_over_days", "taken_days")
            )
            assert Decimal(row["carried_over_days"]) == entitled + carried - taken
    assert {year for _, year in balances} == {"2024", "2025"}


def test_ratings_are_december_2024_ratings() -> None:
    for row in demo_csv("employees"):
        rated = row["hire_date"] < "2024-10-01"
        assert (row["rating_2024"] in {"S", "A", "B", "C", "D"}) if rated else row["rating_2024"] == ""


# --- reproducibility ---------------------------------------------------------------------------------


def test_rebuilding_gives_identical_bytes(built: Path, sources: Path, tmp_path: Path) -> None:
    again = materialize_database(DEMO_DATABASE_SOURCES, tmp_path / "again" / "company.sqlite")
    elsewhere = materialize_database(sources, tmp_path / "elsewhere" / "other-name.db")
    assert again.read_bytes() == built.read_bytes() == elsewhere.read_bytes()


def test_generator_reproduces_the_checked_in_csvs(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(GENERATOR), "--out", str(tmp_path)], check=True, capture_output=True)
    checked_in = sorted(path.name for path in DEMO_DATABASE_SOURCES.glob("*.csv"))
    assert sorted(path.name for path in tmp_path.iterdir()) == checked_in == sorted(f"{t}.csv" for t in TABLES)
    for name in checked_in:
        assert (tmp_path / name).read_bytes() == (DEMO_DATABASE_SOURCES / name).read_bytes(), name


# --- materialize_database: only when needed, atomically -----------------------------------------------------


def test_materialize_builds_once_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "data" / "company.db"
    assert materialize_database(DEMO_DATABASE_SOURCES, target) == target
    assert sorted(p.name for p in target.parent.iterdir()) == ["company.db", "company.db.sha256"]
    before = target.stat()
    materialize_database(DEMO_DATABASE_SOURCES, target)
    after = target.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_materialize_rebuilds_when_a_csv_changes(sources: Path, tmp_path: Path) -> None:
    target = materialize_database(sources, tmp_path / "company.db")
    stamp = (tmp_path / "company.db.sha256").read_text()
    with (sources / "departments.csv").open("a", encoding="utf-8") as handle:
        handle.write("11,Legal,WL-1100,Shanghai\n")
    materialize_database(sources, target)
    assert ReadOnlyDatabase(target).query("SELECT name FROM departments WHERE id = 11").rows == [["Legal"]]
    assert (tmp_path / "company.db.sha256").read_text() != stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == ["company.db", "company.db.sha256", "sources"]


def test_materialize_rebuilds_when_the_schema_changes(sources: Path, tmp_path: Path) -> None:
    target = materialize_database(sources, tmp_path / "company.db")
    schema = sources / "schema.json"
    schema.write_text(schema.read_text(encoding="utf-8").replace("One row per department:", "Each department:"))
    materialize_database(sources, target)
    (departments, *_) = ReadOnlyDatabase(target).schema()
    assert departments.description.startswith("Each department:")


def test_materialize_rebuilds_when_the_stamp_is_missing(tmp_path: Path) -> None:
    target = materialize_database(DEMO_DATABASE_SOURCES, tmp_path / "company.db")
    inode, stamp = target.stat().st_ino, (tmp_path / "company.db.sha256").read_text()
    (tmp_path / "company.db.sha256").unlink()
    materialize_database(DEMO_DATABASE_SOURCES, target)
    assert target.stat().st_ino != inode
    assert (tmp_path / "company.db.sha256").read_text() == stamp


def test_broken_sources_keep_the_old_database(sources: Path, tmp_path: Path) -> None:
    target = materialize_database(sources, tmp_path / "company.db")
    before = target.read_bytes()
    csv_path = sources / "refunds.csv"
    csv_path.write_text(csv_path.read_text(encoding="utf-8") + "999,not-an-order,2025-09-30,1.00,x\n", encoding="utf-8")
    with pytest.raises(IngestError, match="order_id = 'not-an-order' is not INTEGER"):
        materialize_database(sources, target)
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["company.db", "sources"]  # no temp file; stamp gone


def test_bundled_sources_are_found() -> None:
    assert bundled_database_sources(REPO / "corpora") == DEMO_DATABASE_SOURCES


# --- bad sources: a clear error, and nothing written ---------------------------------------------------------


def edit(name: str, old: str, new: str, count: int = 1) -> Callable[[Path], None]:
    """A change to one source file: the first ``count`` occurrences of ``old`` become ``new``."""

    def apply(sources: Path) -> None:
        path = sources / name
        text = path.read_text(encoding="utf-8")
        assert old in text, (name, old)
        path.write_text(text.replace(old, new, count), encoding="utf-8")

    return apply


def write(name: str, data: bytes) -> Callable[[Path], None]:
    def apply(sources: Path) -> None:
        (sources / name).write_bytes(data)

    return apply


def remove(name: str) -> Callable[[Path], None]:
    def apply(sources: Path) -> None:
        (sources / name).unlink()

    return apply


def schema_edit(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def apply(sources: Path) -> None:
        path = sources / "schema.json"
        schema = json.loads(path.read_text(encoding="utf-8"))
        change(schema)
        path.write_text(json.dumps(schema), encoding="utf-8")

    return apply


def _table(schema: dict[str, Any], name: str) -> dict[str, Any]:
    return next(table for table in schema["tables"] if table["name"] == name)


BAD_SOURCES = [
    pytest.param(remove("refunds.csv"), NotFoundError, "Missing database source refunds.csv", id="missing-csv"),
    pytest.param(remove("schema.json"), NotFoundError, "No database schema at", id="missing-schema"),
    pytest.param(write("schema.json", b"{tables: []"), IngestError, "Invalid database schema", id="schema-not-json"),
    pytest.param(write("schema.json", b'{"tables": []}'), IngestError, "at least 1 item", id="schema-no-tables"),
    pytest.param(edit("schema.json", '"type": "REAL"', '"type": "MONEY"'), IngestError, "'INTEGER', 'REAL' or 'TEXT'",
                 id="unknown-type"),
    pytest.param(schema_edit(lambda s: _table(s, "orders").update(primary_key=["order_id"])), IngestError,
                 "table orders has no column order_id", id="unknown-pk-column"),
    pytest.param(schema_edit(lambda s: s["tables"].reverse()), IngestError,
                 "is not declared before it", id="reference-to-later-table"),
    pytest.param(schema_edit(lambda s: _table(s, "refunds").update(description="two\nlines")), IngestError,
                 "description", id="multi-line-description"),
    pytest.param(write("notes.csv", b"a\n1\n"), IngestError, "notes.csv in", id="stray-csv"),
    pytest.param(edit("departments.csv", "cost_center", "cost_centre"), IngestError, "the header is", id="header"),
    pytest.param(write("departments.csv", b""), IngestError, "the header is None", id="empty-csv"),
    pytest.param(edit("products.csv", "\n1,SC-BASIC", "\nx,SC-BASIC"), IngestError,
                 "products.csv, line 2: id = 'x' is not INTEGER", id="not-integer"),
    pytest.param(edit("orders.csv", ",0,9999.00\n", ",0,inf\n"), IngestError, "amount_cny = 'inf' is not REAL",
                 id="not-finite"),
    pytest.param(edit("departments.csv", "R&D", ""), IngestError, "name is empty but not nullable",
                 id="empty-not-null"),
    pytest.param(edit("departments.csv", "R&D,", "R&D,extra,"), IngestError, "5 cells for 4 columns", id="extra-cell"),
    pytest.param(write("refunds.csv", b"id,order_id,refunded_on,amount_cny,reason\n1,1,\xff,1.0,x\n"), IngestError,
                 "not a readable UTF-8 CSV", id="not-utf8"),
    pytest.param(edit("departments.csv", "\n2,", "\n1,"), IngestError, "UNIQUE constraint failed: departments.id",
                 id="duplicate-pk"),
    pytest.param(edit("departments.csv", "\n2,R&D", "\n2,Executive Office"), IngestError,
                 "UNIQUE constraint failed: departments.name", id="unique-index"),
    pytest.param(edit("refunds.csv", "\n1,", "\n1,999999", 1), IngestError,
                 "refunds.csv row id=1: order_id points at no orders row", id="dangling-foreign-key"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "error", "phrase"), BAD_SOURCES)
def test_bad_sources_are_refused_with_a_clear_message(
    sources: Path, tmp_path: Path, change: Callable[[Path], None], error: type[RetrievalError], phrase: str
) -> None:
    change(sources)
    target = tmp_path / "out" / "company.db"
    with pytest.raises(error) as caught:
        materialize_database(sources, target)
    assert phrase in str(caught.value)
    assert not target.parent.exists() or list(target.parent.iterdir()) == []
