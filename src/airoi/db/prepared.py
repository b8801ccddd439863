"""Core statements compiled once per dialect and run on the pooled connection's driver.

A request on a hot path (the token lookup, a list page) runs a statement whose text never
changes; only its values do. `Connection.execute` would look the compiled form up again,
set up an execution context, fire events and wrap every row in a `Row` with the column
types' processing. Measured on a 100-row page that was as much again as the driver's own
work for a one-row lookup, and a quarter more on a page. `Prepared` keeps the compiled
text, the order of its parameters and the types' bind and result processors, and runs it
on the driver cursor of the connection the request already holds.

What `Connection.execute` would do besides, and this keeps:
- values are bound through the types' bind processors (SQLite's datetime text, dates);
- the SQLite statement deadline is armed (`engine.arm_deadline`);
- a driver error is raised as SQLAlchemy's `DBAPIError` (without the values), and a
  connection the driver reports lost is invalidated, so the pool replaces it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Dialect, Select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.compiler import SQLCompiler

from airoi.db.engine import arm_deadline

Processor = Callable[[Any], Any] | None


@dataclass(frozen=True)
class _Compiled:
    sql: str
    # Positional drivers (sqlite3) take a tuple in this order; named ones (psycopg) a dict.
    order: tuple[str, ...] | None
    # Every parameter's value when the caller gives none (literals the statement binds).
    defaults: Mapping[str, Any]
    binders: Mapping[str, Callable[[Any], Any]]


class Prepared:
    """`statement`, compiled on first use for each dialect and kept."""

    def __init__(self, statement: Select[Any]) -> None:
        self.statement = statement
        self._by_dialect: dict[str, _Compiled] = {}
        # One per selected column, None where the driver's value is served as it is. Some
        # depend on the type the driver reports (PostgreSQL numerics), so they are read
        # from the first execution's cursor description.
        self._results: dict[str, tuple[Processor, ...]] = {}

    def _compiled(self, dialect: Dialect) -> _Compiled:
        compiled = self._by_dialect.get(dialect.name)
        if compiled is None:
            compiled = self._by_dialect[dialect.name] = _compile(self.statement, dialect)
        return compiled

    def result_processors(self, dialect: Dialect) -> tuple[Processor, ...]:
        """The column types' result processors (known once the statement has run)."""
        return self._results[dialect.name]

    def rows(self, conn: Connection, params: Mapping[str, Any]) -> list[Sequence[Any]]:
        """Every row as the driver gives it (the column types' result processing not done:
        see `result_processors`)."""
        dialect = conn.dialect
        compiled = self._compiled(dialect)
        values = {**compiled.defaults, **params}
        for name, bind in compiled.binders.items():
            values[name] = bind(values[name])
        bound: Any = values if compiled.order is None else tuple(values[n] for n in compiled.order)
        proxied = conn.connection
        arm_deadline(proxied.info)
        cursor = proxied.driver_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.execute(compiled.sql, bound)
            if dialect.name not in self._results:
                self._results[dialect.name] = _result_processors(
                    self.statement, dialect, cursor.description
                )
            return list(cursor.fetchall())
        except dialect.loaded_dbapi.Error as exc:
            lost = dialect.is_disconnect(exc, proxied, cursor)
            if lost:
                conn.invalidate(exc)
            raise DBAPIError.instance(
                compiled.sql,
                None,
                exc,
                dialect.loaded_dbapi.Error,
                hide_parameters=True,
                connection_invalidated=lost,
                dialect=dialect,
            ) from exc
        finally:
            with suppress(dialect.loaded_dbapi.Error):  # a lost connection's cursor
                cursor.close()

    def first(self, conn: Connection, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        """The first row, with the column types' result processing done; None when none."""
        rows = self.rows(conn, params)
        if not rows:
            return None
        processors = self.result_processors(conn.dialect)
        return tuple(
            value if process is None else process(value)
            for value, process in zip(rows[0], processors, strict=True)
        )


def _compile(statement: Select[Any], dialect: Dialect) -> _Compiled:
    compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    if compiled.escaped_bind_names:
        raise ValueError("a parameter name that needs escaping cannot be prepared")
    defaults: dict[str, Any] = {}
    binders: dict[str, Callable[[Any], Any]] = {}
    for bind, name in compiled.bind_names.items():
        if bind.expanding:
            raise ValueError(f"the expanding parameter {name!r} cannot be prepared")
        if not bind.required:
            defaults[name] = bind.effective_value
        process = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            binders[name] = _none_passes(process)
    order = tuple(compiled.positiontup or ()) if compiled.positional else None
    return _Compiled(compiled.string, order, defaults, binders)


def _result_processors(
    statement: Select[Any], dialect: Dialect, description: Sequence[Sequence[Any]]
) -> tuple[Processor, ...]:
    return tuple(
        column.type.dialect_impl(dialect).result_processor(dialect, described[1])
        for column, described in zip(statement.selected_columns, description, strict=True)
    )


def _none_passes(process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    # SQLAlchemy's processors take None to None already; a custom type's may not.
    return lambda value: None if value is None else process(value)
