"""The checked-in sources of a database: a JSON schema and one CSV file per table, read and checked.

A sources directory holds::

    schema.json     {"tables": [...]}: each table's name, a one-line description of what a
                    row holds, its columns (name, type INTEGER/REAL/TEXT, nullable), primary
                    key, foreign keys ("table.column") and indexes, in creation order
    <table>.csv     UTF-8, a header naming the table's columns in schema order, then one
                    line per row; an empty cell is NULL (allowed only in nullable columns)

:mod:`mcp_server.sql.demo` builds a SQLite file from them. Everything here only
reads and checks; each error names the file (and line and column) and what to fix.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mcp_server.errors import IngestError, NotFoundError
from mcp_server.models import SqlValue

SCHEMA_FILE = "schema.json"
DIGEST_VERSION = b"ragmcp-database-sources/1\n"
"""Prefix of the sources digest; bump it when the build turns the same sources into a different file."""

_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]*")
_INTEGER = re.compile(r"-?[0-9]+")

ColumnType = Literal["INTEGER", "REAL", "TEXT"]
Row = tuple[SqlValue, ...]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ColumnSpec(_Spec):
    name: str = Field(pattern=_IDENTIFIER.pattern)
    type: ColumnType
    nullable: bool = False


class ForeignKeySpec(_Spec):
    column: str
    references: str = Field(pattern=rf"{_IDENTIFIER.pattern}\.{_IDENTIFIER.pattern}", description="'table.column'")

    @property
    def target(self) -> tuple[str, str]:
        table, column = self.references.split(".")
        return table, column


class IndexSpec(_Spec):
    columns: list[str] = Field(min_length=1)
    unique: bool = False


class TableSpec(_Spec):
    name: str = Field(pattern=_IDENTIFIER.pattern)
    description: str = Field(min_length=1, pattern=r"^[^\r\n]+$")
    columns: list[ColumnSpec] = Field(min_length=1)
    primary_key: list[str] = Field(min_length=1)
    foreign_keys: list[ForeignKeySpec] = []
    indexes: list[IndexSpec] = []

    @property
    def column_names(self) -> list[str]:
        return [column.name for column in self.columns]

    @model_validator(mode="after")
    def _columns_exist(self) -> Self:
        names = self.column_names
        if len(set(names)) != len(names):
            raise ValueError(f"table {self.name} names a column twice")
        used = [*self.primary_key, *(fk.column for fk in self.foreign_keys)]
        used += [column for index in self.indexes for column in index.columns]
        unknown = sorted(set(used) - set(names))
        if unknown:
            raise ValueError(f"table {self.name} has no column {', '.join(unknown)}; declare it under columns")
        return self


class DatabaseSchema(_Spec):
    tables: list[TableSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _references_resolve(self) -> Self:
        defined: dict[str, TableSpec] = {}
        for table in self.tables:
            if table.name in defined:
                raise ValueError(f"table {table.name} is declared twice")
            defined[table.name] = table
            for fk in table.foreign_keys:
                target_table, target_column = fk.target
                target = defined.get(target_table)
                if target is None:
                    raise ValueError(
                        f"{table.name}.{fk.column} references {fk.references}, but {target_table} is not declared "
                        "before it; list referenced tables first"
                    )
                if target_column not in target.column_names:
                    raise ValueError(f"{table.name}.{fk.column} references {fk.references}, which does not exist")
        return self


def load_schema(directory: Path) -> DatabaseSchema:
    """The schema in ``directory/schema.json``, validated.

    :raises NotFoundError: the directory or its schema file does not exist.
    :raises IngestError: the file is not valid JSON or does not describe a valid schema.
    """
    path = directory / SCHEMA_FILE
    if not path.is_file():
        raise NotFoundError(
            f"No database schema at {path}; a database sources directory needs {SCHEMA_FILE} "
            "and one CSV per table."
        )
    try:
        return DatabaseSchema.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise IngestError(f"Invalid database schema {path}: {exc}. Fix the file and retry.") from exc


def source_files(directory: Path, schema: DatabaseSchema) -> list[Path]:
    """The schema file, then each table's CSV in schema order.

    :raises NotFoundError: a table has no CSV file.
    :raises IngestError: a CSV file belongs to no table of the schema.
    """
    files = [directory / SCHEMA_FILE, *(directory / f"{table.name}.csv" for table in schema.tables)]
    missing = [path.name for path in files if not path.is_file()]
    if missing:
        raise NotFoundError(
            f"Missing database source {', '.join(missing)} in {directory}; every table in {SCHEMA_FILE} "
            "needs a CSV file named after it."
        )
    stray = sorted(path.name for path in directory.glob("*.csv") if path not in files)
    if stray:
        raise IngestError(
            f"{', '.join(stray)} in {directory} belongs to no table in {SCHEMA_FILE}; "
            "declare the table there or remove the file."
        )
    return files


def sources_digest(files: list[Path]) -> str:
    """sha256 over the files' names, sizes and bytes, in the given order."""
    digest = hashlib.sha256(DIGEST_VERSION)
    for path in files:
        data = path.read_bytes()
        digest.update(f"{path.name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def read_rows(path: Path, table: TableSpec) -> list[Row]:
    """The rows of ``table`` from its CSV file, each value converted to its column's type.

    :raises IngestError: unreadable text, a header that differs from the schema, a row with
        the wrong number of cells, a value that is not of its column's type, or an empty cell
        in a column that is not nullable.
    """
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle, strict=True)
            header = next(reader, None)
            if header != table.column_names:
                raise IngestError(
                    f"{path}: the header is {header!r} but {SCHEMA_FILE} declares the columns "
                    f"{table.column_names!r}; make them the same, in the same order."
                )
            return [_convert(path, reader.line_num, table, cells) for cells in reader]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise IngestError(f"{path} is not a readable UTF-8 CSV file ({exc}); fix the file and retry.") from exc


def _convert(path: Path, line: int, table: TableSpec, cells: list[str]) -> Row:
    if len(cells) != len(table.columns):
        raise IngestError(
            f"{path}, line {line}: {len(cells)} cells for {len(table.columns)} columns; "
            "quote cells that contain commas."
        )
    return tuple(_value(path, line, column, cell) for column, cell in zip(table.columns, cells))


def _value(path: Path, line: int, column: ColumnSpec, cell: str) -> SqlValue:
    if cell == "":
        if column.nullable:
            return None
        raise IngestError(
            f"{path}, line {line}: {column.name} is empty but not nullable; fill it in "
            'or mark the column "nullable": true in the schema.'
        )
    if column.type == "TEXT":
        return cell
    if column.type == "INTEGER" and _INTEGER.fullmatch(cell):
        return int(cell)
    if column.type == "REAL":
        try:
            number = float(cell)
        except ValueError:
            pass
        else:
            if math.isfinite(number):
                return number
    raise IngestError(f"{path}, line {line}: {column.name} = {cell!r} is not {column.type}; write a plain number.")
