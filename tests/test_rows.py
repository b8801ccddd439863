"""Rows served straight from the query: the database's datetime text and positional Structs.

SEMANTICS R3: datetimes are served in UTC with millisecond precision and a Z. The store keeps
milliseconds only, and the database formats them (`iso_ms`); Python's own formatting
(`format_datetime`, still used where a row is finished in Python) must give the same text.

Every list's rows are a Shape's, and each list's pages are compared, byte for byte, with the
rows written here from its table as SPEC 2 says they are served.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import DateTime, Engine, Integer, String, literal, select

from airoi.rows import Shape, iso_ms
from airoi.timeutil import format_datetime, truncate_ms
from tests.conftest import bearer
from tests.every_list import LISTS, every_list

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
    from airoi.reports.decisions import DECISION, DECISIONS
    from airoi.reports.initiatives import INITIATIVE, INITIATIVES
    from airoi.reports.integrations import INTEGRATION, INTEGRATIONS
    from airoi.reports.metrics import METRIC, METRICS
    from airoi.reports.observations import OBSERVATION, OBSERVATIONS
    from airoi.reports.value_entries import VALUE_ENTRIES, VALUE_ENTRY

    for query, shape in (
        (COST_ENTRIES, COST_ENTRY),
        (VALUE_ENTRIES, VALUE_ENTRY),
        (OBSERVATIONS, OBSERVATION),
        (INITIATIVES, INITIATIVE),
        (DECISIONS, DECISION),
        (INTEGRATIONS, INTEGRATION),
        (METRICS, METRIC),
    ):
        assert query.serves_keyset(sqlite.dialect())
        assert not query.serves_keyset(postgresql.psycopg.dialect())
        for after in (FROM_START, AFTER_ROW, AFTER_SAME_STAMP, AFTER_LATER_STAMP):
            served = query.statement(frozenset(), after, served=True)
            assert len(served.selected_columns) == shape.width
            keyed = query.statement(frozenset(), after)
            assert len(keyed.selected_columns) == shape.width + 2


class Maybe(msgspec.Struct):
    x: int
    inner: Inner | None


def test_an_optional_nested_shape_is_null_where_its_first_column_is(engine: Engine) -> None:
    def shape(a: int | None) -> Shape[Maybe]:
        inner = Shape(Inner, literal(a, Integer()), literal("b", String()), optional=True)
        return Shape(Maybe, literal(1, Integer()), inner)

    with engine.connect() as conn:
        rows = [conn.execute(select(*shape(a).columns)).one() for a in (None, 0, 7)]
    assert shape(None).builder()(rows) == [
        Maybe(1, None),
        Maybe(1, Inner(0, "b")),
        Maybe(1, Inner(7, "b")),
    ]


def test_an_optional_shape_is_told_apart_by_a_column() -> None:
    with pytest.raises(TypeError, match="optional Maybe is told apart by a column first"):
        Shape(Maybe, Shape(Inner, literal(1), literal("b")), literal(2), optional=True)


# What each list serves that is no column of the same name, written here from SPEC 2 and
# SEMANTICS R14, R34, R35 (not from the Shapes): each from the table's row and the names of
# the account's people.
Derived = dict[str, Callable[[Any, dict[int, str]], Any]]


def _person(person_id: int | None, names: dict[int, str]) -> dict[str, Any] | None:
    return None if person_id is None else {"id": person_id, "name": names.get(person_id, "")}


def _source(row: Any, names: dict[int, str]) -> dict[str, Any]:
    return {
        "type": row.source_type,
        "ref": row.source_ref,
        "connection_id": row.source_connection_id,
    }


def _reported_on(row: Any, names: dict[int, str]) -> Any:
    return row.entry_date


DERIVED: dict[str, Derived] = {
    "initiatives": {"owner": lambda row, names: _person(row.owner_id, names)},
    "cost_entries": {"reported_on": _reported_on, "source": _source},
    "value_entries": {
        "reported_on": _reported_on,
        "counts_toward_roi": lambda row, names: row.status == "approved",
        "source": _source,
    },
    "metrics": {},
    "observations": {"source": _source},
    "decisions": {
        # continue -> Continue, scale -> Scale, ...
        "outcome_label": lambda row, names: row.outcome.capitalize(),
        "stage_changed": lambda row, names: row.stage_before != row.stage_after,
        "decided_by": lambda row, names: _person(row.decided_by_id, names),
    },
    "integrations": {"connected_by": lambda row, names: _person(row.connected_by_id, names)},
    "deletions": {"id": lambda row, names: row.record_id},
}


def _wire(value: Any) -> Any:
    """A stored value as SEMANTICS R3 serves it (a datetime in UTC to the millisecond)."""
    return format_datetime(value) if isinstance(value, datetime) else value


def _expected(engine: Engine, path: str, account: int) -> list[dict[str, Any]]:
    """The list's rows of `account`, in keyset order, as the service should serve them: read
    from the table as it is and written field by field."""
    from airoi.db import tables
    from airoi.reports.cost_entries import CostEntry
    from airoi.reports.decisions import Decision
    from airoi.reports.deletions import Deletion
    from airoi.reports.initiatives import Initiative
    from airoi.reports.integrations import Integration
    from airoi.reports.metrics import Metric
    from airoi.reports.observations import Observation
    from airoi.reports.value_entries import ValueEntry

    structs: dict[str, type[msgspec.Struct]] = {
        "initiatives": Initiative,
        "cost_entries": CostEntry,
        "value_entries": ValueEntry,
        "metrics": Metric,
        "observations": Observation,
        "decisions": Decision,
        "integrations": Integration,
        "deletions": Deletion,
    }
    struct = structs[path]
    table = getattr(tables, path)
    order = ("deleted_at", "seq") if path == "deletions" else ("updated_at", "id")
    derived = DERIVED[path]
    with engine.connect() as conn:
        names: dict[int, str] = dict(
            conn.execute(select(tables.users.c.id, tables.users.c.name)).all()
        )
        rows = conn.execute(
            select(table)
            .where(table.c.account_id == account)
            .order_by(*(table.c[name] for name in order))
        ).all()
    return [
        {
            name: derived[name](row, names) if name in derived else _wire(getattr(row, name))
            for name in struct.__struct_encode_fields__
        }
        for row in rows
    ]


@pytest.mark.parametrize("path", LISTS)
def test_every_list_serves_its_tables_rows_byte_for_byte(
    client: TestClient[Litestar], engine: Engine, path: str
) -> None:
    # Each page's body is the one written from the table's rows here: every field in SPEC
    # order, each value as the wire has it, whether the database wrote the row's JSON
    # (SQLite, rows without a float) or the Struct was built and encoded.
    world = every_list(engine)
    expected = _expected(engine, path, world.account)
    assert len(expected) == world.rows[path]
    served: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 3, "include_sample": "true"}
        if path != "initiatives":
            del params["include_sample"]
        if cursor is not None:
            params["cursor"] = cursor
        response = client.get(f"/api/v1/{path}", params=params, headers=bearer(world.token))
        assert response.status_code == 200, response.text
        page = response.json()["page"]
        rows = expected[len(served) : len(served) + 3]
        assert response.content == msgspec.json.encode({"data": rows, "page": page})
        served += rows
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(served) == len(expected)
    if path == "initiatives":
        # One by id: the same row as in the list.
        for row in expected:
            response = client.get(f"/api/v1/initiatives/{row['id']}", headers=bearer(world.token))
            assert response.content == msgspec.json.encode(row)
