"""Column types of the store that differ by database.

`Timestamp` is a naive-UTC datetime (SEMANTICS R3). PostgreSQL keeps it as a
`timestamp`. SQLite has no datetime type, so the text it keeps is chosen: the
very text the API serves, `2026-03-01T09:30:00.125Z` (fixed width and UTC, so
text order is time order). A page is then read without formatting a value per
row, in SQL or in Python.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeEngine

from airoi.timeutil import format_datetime


def _store(value: datetime | None) -> str | None:
    return None if value is None else format_datetime(value)


def read_stored_datetime(value: str) -> datetime:
    # The served form ends in Z; fromisoformat would then give an aware datetime.
    return datetime.fromisoformat(value[:-1] if value.endswith("Z") else value)


def _read(value: str | None) -> datetime | None:
    return None if value is None else read_stored_datetime(value)


class ServedTextDatetime(sqlite.DATETIME):
    """SQLite's storage of a Timestamp: the served text, milliseconds and a Z."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any]:
        return _store

    def result_processor(self, dialect: Dialect, coltype: object) -> Callable[[Any], Any]:
        return _read


def _store_lower_bound(value: datetime | None) -> str | None:
    """A lower bound finer than the stored millisecond, as the first stored text at or after it:
    `.300999` is `.301`, so that `>=` leaves out a row kept at `.300`, as the exact
    comparison does where the store keeps a datetime."""
    if value is None:
        return None
    finer = value.microsecond % 1000
    if finer:
        try:
            value += timedelta(microseconds=1000 - finer)
        except OverflowError:
            # After 9999-12-31T23:59:59.999, the last millisecond a store can hold: no row is
            # at or after it. The Z's text followed by anything sorts after every stored text.
            return format_datetime(value) + "~"
    return format_datetime(value)


class ServedTextLowerBound(ServedTextDatetime):
    """A lower bound compared with SQLite's stored text (see `LowerBound`)."""

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any]:
        return _store_lower_bound


def LowerBound() -> DateTime:
    """The type of a value a Timestamp column is compared `>=` with (updated_since): on
    SQLite a value finer than the millisecond is rounded up to the next one, so the
    comparison with the stored millisecond text is exact; PostgreSQL compares exactly."""
    return DateTime().with_variant(ServedTextLowerBound(), "sqlite")


def stores_served_text(column_type: TypeEngine[Any], dialect: Dialect) -> bool:
    """Whether a column of this type holds, on this dialect, exactly the text the API serves
    (a Timestamp on SQLite): then the served text is the stored value, to the last digit."""
    return isinstance(column_type.dialect_impl(dialect), ServedTextDatetime)


def Timestamp() -> DateTime:
    return DateTime().with_variant(ServedTextDatetime(), "sqlite")
