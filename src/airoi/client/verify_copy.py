"""The copy `airoi verify` reads: the format of a store, and an in-memory DuckDB with a view
of each list the figures are recomputed from (`open_copy`), over the store `airoi pull`
wrote (a DuckDB file, or a directory of Parquet or CSV files), which is only read."""

# ruff: noqa: S608 - SQL names here are fixed table and column names; values are parameters.

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Final

import duckdb

from airoi.client.copies.layout import FILE_FORMATS, STATE_FILE, STATE_TABLE, Format
from airoi.client.copies.sql import first_row, quote_name, quote_text
from airoi.client.copies.targets import duckdb_file_problem, held_formats
from airoi.client.errors import CopyError


def store_format(store: Path, fmt: str | None = None) -> Format:
    """The format of the store at `store`: as given, or as its files show."""
    if fmt is not None and fmt not in ("duckdb", "parquet", "csv"):
        raise CopyError(f"Unknown format {fmt!r}: use duckdb, parquet or csv.")
    if not store.exists():
        raise CopyError(f"There is no store at {store}: make one with airoi pull --to {store}.")
    held = held_formats(store)
    if fmt in FILE_FORMATS and held and fmt not in held:
        raise CopyError(
            f"{store} holds .{held[0]} files, not .{fmt}: give --format {held[0]}, or leave it out."
        )
    if fmt is not None:
        return fmt  # type: ignore[return-value]
    if store.is_file():
        return "duckdb"
    if held:
        return held[0]  # type: ignore[return-value]
    raise CopyError(
        f"{store} holds no .parquet or .csv files of airoi pull: give --format, or pull into it."
    )


# Each view: the columns verify reads, as (name, type, required). A required column that a
# table lacks means a copy pulled before the service served it; an optional one reads null.
_COLUMNS: Final[dict[str, tuple[tuple[str, str, bool], ...]]] = {
    "initiatives": (("id", "BIGINT", True), ("is_sample", "BOOLEAN", True)),
    "cost_entries": (
        ("initiative_id", "BIGINT", True),
        ("cost_category", "VARCHAR", True),
        ("currency", "VARCHAR", False),
        ("amount_cents", "BIGINT", True),
        ("account_amount_cents", "BIGINT", True),
        ("reported_on", "DATE", True),
    ),
    "value_entries": (
        ("initiative_id", "BIGINT", True),
        ("status", "VARCHAR", True),
        ("currency", "VARCHAR", False),
        ("amount_cents", "BIGINT", True),
        ("account_amount_cents", "BIGINT", True),
        ("reported_on", "DATE", True),
    ),
}


# The columns the figures are grouped by: a copy row without one belongs to no scope.
_KEYS: Final = (("initiatives", "id"), ("cost_entries", "initiative_id"),
                ("value_entries", "initiative_id"))  # fmt: skip


def open_copy(store: Path, fmt: Format) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with views `copy_initiatives`, `copy_cost_entries` and
    `copy_value_entries` over the store, which is only read. A resource the store has no
    table (or file) for had no rows when it was pulled: its view is empty."""
    conn = duckdb.connect(":memory:")
    try:
        conn.execute("SET TimeZone = 'UTC'")
        sources = _sources(conn, store, fmt)
        for name, columns in _COLUMNS.items():
            _create_view(conn, name, sources.get(name), columns, store)
        for name, key in _KEYS:
            found = first_row(conn.execute(f"SELECT count(*) FROM copy_{name} WHERE {key} IS NULL"))
            if found and found[0]:
                raise CopyError(
                    f"The {name} of the store at {store} hold {found[0]} rows with no {key},"
                    " which airoi pull never writes: the copy was changed. Pull into a new"
                    " target (or pull again with --full-refresh)."
                )
    except duckdb.Error as exc:
        conn.close()
        raise CopyError(f"The store at {store} could not be read ({first_line(exc)}).") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def first_line(exc: BaseException) -> str:
    """An error in one line: its type, and the first line of its message."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _sources(conn: duckdb.DuckDBPyConnection, store: Path, fmt: Format) -> dict[str, str]:
    """Each resource's table as a FROM clause; resources with no rows are left out."""
    if fmt == "duckdb":
        if not store.is_file():
            raise CopyError(f"{store} is not a DuckDB file (give --format parquet or csv?).")
        problem = duckdb_file_problem(store)
        if problem is not None:
            raise CopyError(f"{store} is not a DuckDB file ({problem}): no copy airoi pull made.")
        try:
            conn.execute(f"ATTACH {quote_text(str(store))} AS pulled (READ_ONLY)")
        except duckdb.Error as exc:
            raise CopyError(
                f"{store} could not be opened as a DuckDB store ({first_line(exc)})."
            ) from exc
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'pulled'"
            ).fetchall()
        }
        # The state `airoi pull` keeps beside the data tells a store from any other file.
        if STATE_TABLE not in tables:
            raise CopyError(f"{store} is not a store of airoi pull (it has no {STATE_TABLE}).")
        return {name: f"pulled.{quote_name(name)}" for name in _COLUMNS if name in tables}
    if not store.is_dir():
        raise CopyError(f"{store} is not a directory of {fmt} files.")
    if not (store / STATE_FILE).exists():
        raise CopyError(f"{store} is not a store of airoi pull (it has no {STATE_FILE}).")
    found: dict[str, str] = {}
    for name in _COLUMNS:
        path = store / f"{name}.{fmt}"
        if not path.exists():
            continue
        if fmt == "parquet":
            found[name] = f"read_parquet({quote_text(str(path))})"
        else:
            # Every value as the text written, then cast below: no type guessed from a sample.
            found[name] = f"read_csv({quote_text(str(path))}, header = true, all_varchar = true)"
    return found


def _create_view(
    conn: duckdb.DuckDBPyConnection,
    name: str,
    source: str | None,
    columns: Sequence[tuple[str, str, bool]],
    store: Path,
) -> None:
    view = quote_name(f"copy_{name}")
    if source is None:
        selected = ", ".join(f"CAST(NULL AS {kind}) AS {quote_name(c)}" for c, kind, _ in columns)
        conn.execute(f"CREATE VIEW {view} AS SELECT {selected} WHERE false")
        return
    present = {row[0] for row in conn.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
    missing = [column for column, _, required in columns if required and column not in present]
    if missing:
        raise CopyError(
            f"The {name} of the store at {store} have no {', '.join(missing)} column: the copy "
            "was pulled from a service that did not serve it. Pull into a new target."
        )
    selected = ", ".join(
        f"CAST({quote_name(c) if c in present else 'NULL'} AS {kind}) AS {quote_name(c)}"
        for c, kind, _ in columns
    )
    conn.execute(f"CREATE VIEW {view} AS SELECT {selected} FROM {source}")
