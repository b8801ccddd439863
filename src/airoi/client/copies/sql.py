"""DuckDB SQL shared by the stores and by `airoi verify`: quoting, reading a statement's
first row, and reading a CSV file of a store back with the types it was written with."""

# ruff: noqa: S608 - SQL names here are fixed column names, always quoted; paths are literals.

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb


def quote_name(name: str) -> str:
    """An SQL name (a table's, a column's) quoted for DuckDB."""
    return '"' + name.replace('"', '""') + '"'


def quote_text(text: str) -> str:
    """An SQL string literal of `text` (a path) for DuckDB."""
    return "'" + text.replace("'", "''") + "'"


def first_row(result: duckdb.DuckDBPyConnection) -> tuple[Any, ...] | None:
    """The first row of a statement's result, read to its end: DuckDB refuses other work on
    the connection (registering a table, a statement) while a result is unfinished."""
    rows = result.fetchall()
    return rows[0] if rows else None


def _csv_text(path: Path) -> str:
    # Every value read as the text written ('' stays '', not null).
    return (
        f"read_csv({quote_text(str(path))}, header = true, all_varchar = true,"
        " allow_quoted_nulls = false)"
    )


def csv_header(conn: duckdb.DuckDBPyConnection, path: Path) -> list[str]:
    """The column names of a CSV file of a store."""
    described = conn.execute(f"DESCRIBE SELECT * FROM {_csv_text(path)}").fetchall()
    return [row[0] for row in described]


def typed_csv(path: Path, header: Iterable[str], types: Iterable[list[str]]) -> str:
    """The SQL reading a CSV file of a store, each column cast from the text written to the
    type `_airoi_columns.json` gives it; a column it does not know stays text."""
    known = dict(types)
    selected = ", ".join(
        f"CAST({quote_name(column)} AS {known.get(column, 'VARCHAR')}) AS {quote_name(column)}"
        for column in header
    )
    return f"(SELECT {selected} FROM {_csv_text(path)})"
