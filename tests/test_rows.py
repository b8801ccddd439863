"""Rows served straight from the query: the database's datetime text and positional Structs.

SEMANTICS R3: datetimes are served in UTC with millisecond precision and a Z. The store keeps
milliseconds only, and the database formats them (`iso_ms`); Python's own formatting
(`format_datetime`, still used where a row is finished in Python) must give the same text.
"""

from __future__ import annotations

from datetime import datetime

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import DateTime, Engine, Integer, String, literal, select

from airoi.rows import Shape, iso_ms
from airoi.timeutil import format_datetime, truncate_ms

EDGES = [
    datetime(2026, 3, 1, 9, 30, 0, 125_000),
    datetime(2000, 1, 1),
    datetime(2024, 2, 29, 23, 59, 59, 999_000),
    datetime(1999, 12, 31, 23, 59, 59, 1_000),
    datetime(2026, 11, 23, 0, 0, 0, 10_000),
]


def served(engine: Engine, value: datetime | None) -> str | None:
    with engine.connect() as conn:
        text: str | None = conn.execute(select(iso_ms(literal(value, DateTime())))).scalar()
    return text


def test_iso_ms_matches_python_formatting_at_the_edges(engine: Engine) -> None:
    # SEMANTICS R3
    for value in EDGES:
        assert served(engine, value) == format_datetime(value)
    assert served(engine, datetime(2026, 3, 1, 9, 30, 0, 125_000)) == "2026-03-01T09:30:00.125Z"
    assert served(engine, None) is None


@settings(max_examples=60)
@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 12, 31)))
def test_iso_ms_matches_python_formatting(sqlite_url: str, value: datetime) -> None:
    # SEMANTICS R3: what the loader stores (milliseconds) is served as Python would write it.
    from airoi.db.engine import make_engine

    stored = truncate_ms(value)
    engine = make_engine(sqlite_url)
    try:
        assert served(engine, stored) == format_datetime(stored)
    finally:
        engine.dispose()


class Inner(msgspec.Struct):
    a: int
    b: str | None


class Outer(msgspec.Struct):
    x: int
    inner: Inner
    y: str
    z: int


def test_shape_builds_nested_structs_positionally(engine: Engine) -> None:
    shape = Shape(
        Outer,
        literal(1, Integer()),
        Shape(Inner, literal(2, Integer()), literal(None, String())),
        literal("three", String()),
        literal(4, Integer()),
    )
    with engine.connect() as conn:
        rows = conn.execute(select(*shape.columns, literal(99, Integer()))).all()
    # Columns after the Shape's own (the keyset ones) are ignored.
    (built,) = shape.builder()(rows)
    assert built == Outer(x=1, inner=Inner(a=2, b=None), y="three", z=4)
    assert msgspec.json.encode(built) == b'{"x":1,"inner":{"a":2,"b":null},"y":"three","z":4}'


def test_shape_builder_applies_each_columns_processor_in_place() -> None:
    shape = Shape(Outer, literal(1), Shape(Inner, literal(2), literal(3)), literal(4), literal(5))
    rows = [(1, 2, "b", "y", 4, "keyset"), (10, 20, None, "yy", 40, "keyset")]
    # Column 2 (Inner.b) and column 3 (y) are processed; the others pass as they are.
    builder = shape.builder([None, None, lambda v: None if v is None else v.upper(), str.title])
    assert builder(rows) == [
        Outer(x=1, inner=Inner(a=2, b="B"), y="Y", z=4),
        Outer(x=10, inner=Inner(a=20, b=None), y="Yy", z=40),
    ]
    assert builder([]) == []


def test_shape_refuses_a_column_count_that_does_not_match_the_fields() -> None:
    with pytest.raises(TypeError, match="Outer has 4 fields, given 3"):
        Shape(Outer, literal(1), literal(2), literal(3))


def test_shaped_lists_read_the_keyset_from_the_served_columns_where_it_is_stored_so() -> None:
    # SQLite keeps a datetime as the served text, so the cursor is made from the last row's
    # served id and updated_at and the page selects each column once. PostgreSQL may hold
    # finer precision than is served, so there the stored value is selected for the cursor
    # (the walks themselves: test_lists, SEMANTICS R13).
    from sqlalchemy.dialects import postgresql, sqlite

    from airoi.listing import AFTER_LATER_STAMP, AFTER_ROW, AFTER_SAME_STAMP, FROM_START
    from airoi.reports.cost_entries import COST_ENTRIES, COST_ENTRY
    from airoi.reports.observations import OBSERVATION, OBSERVATIONS
    from airoi.reports.value_entries import VALUE_ENTRIES, VALUE_ENTRY

    for query, shape in (
        (COST_ENTRIES, COST_ENTRY),
        (VALUE_ENTRIES, VALUE_ENTRY),
        (OBSERVATIONS, OBSERVATION),
    ):
        assert query.serves_keyset(sqlite.dialect())
        assert not query.serves_keyset(postgresql.psycopg.dialect())
        for after in (FROM_START, AFTER_ROW, AFTER_SAME_STAMP, AFTER_LATER_STAMP):
            served = query.statement(frozenset(), after, served=True)
            assert len(served.selected_columns) == shape.width
            keyed = query.statement(frozenset(), after)
            assert len(keyed.selected_columns) == shape.width + 2
