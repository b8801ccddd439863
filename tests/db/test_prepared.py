"""Statements prepared on the driver (airoi.db.prepared) keep what Connection.execute gives:
bound values through the column types, typed results, the statement timeout, and driver
errors as SQLAlchemy's DBAPIError without the values (SEMANTICS R15)."""

from __future__ import annotations

from datetime import date, datetime

import pytest
from sqlalchemy import Engine, bindparam, literal_column, select, text
from sqlalchemy.exc import DBAPIError

from airoi.db.engine import make_engine
from airoi.db.prepared import Prepared
from airoi.db.tables import cost_entries
from tests.factories import BundleBuilder


def _world(engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    initiative = b.initiative(acct)
    for entry_id, stamp, start in (
        (1, "2026-03-01T09:30:00.125Z", "2026-03-01"),
        (2, "2026-03-01T09:30:00.126Z", "2026-04-01"),
        (3, "2026-03-02T00:00:00.000Z", None),
    ):
        b.cost_entry(
            initiative,
            id=entry_id,
            updated_at=stamp,
            created_at="2026-01-01T00:00:00Z",
            period_start=start,
            is_estimated=entry_id == 2,
        )
    b.load(engine, keep_stamps=True)


def test_values_are_bound_and_read_through_the_column_types(engine: Engine) -> None:
    _world(engine)
    prepared = Prepared(
        select(cost_entries.c.id, cost_entries.c.period_start, cost_entries.c.is_estimated)
        .where(
            cost_entries.c.updated_at >= bindparam("since", type_=cost_entries.c.updated_at.type),
            cost_entries.c.period_start
            >= bindparam("from_", type_=cost_entries.c.period_start.type),
        )
        .order_by(cost_entries.c.id)
    )
    with engine.connect() as conn:
        # A datetime and a date are bound as the store keeps them (SQLite: text), to the ms.
        params = {"since": datetime(2026, 3, 1, 9, 30, 0, 126_000), "from_": date(2026, 1, 1)}
        rows = prepared.rows(conn, params)
        assert [row[0] for row in rows] == [2]
        # first() gives the types' Python values: a date, a boolean (SQLite keeps 0/1).
        assert prepared.first(conn, params) == (2, date(2026, 4, 1), True)
        assert prepared.first(conn, {**params, "from_": date(2027, 1, 1)}) is None
        processors = prepared.result_processors(conn.dialect)
        assert len(processors) == 3
        assert processors[0] is None  # an integer is served as the driver gives it


def test_a_driver_error_is_a_dbapi_error_without_the_values(engine: Engine) -> None:
    secret = "a-token-hash-that-must-not-show"
    broken = Prepared(
        select(cost_entries.c.id).where(
            literal_column("no_such_column") == bindparam("value", type_=cost_entries.c.notes.type)
        )
    )
    with engine.connect() as conn, pytest.raises(DBAPIError) as raised:
        broken.rows(conn, {"value": secret})
    assert secret not in str(raised.value)
    # Back in the pool, the connection serves the next request.
    with engine.connect() as conn:
        assert conn.execute(text("SELECT 1")).scalar() == 1


def test_the_statement_timeout_cuts_a_prepared_statement(db_url: str) -> None:
    engine = make_engine(db_url, read_only=True, statement_timeout_ms=100)
    if engine.dialect.name == "postgresql":
        slow = select(literal_column("pg_sleep(30)").label("slept"))
    else:
        counted = (
            "(WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n "
            "WHERE x < 3000000000) SELECT count(*) FROM n)"
        )
        slow = select(literal_column(counted).label("counted"))
    try:
        with engine.connect() as conn:
            started = datetime.now()
            with pytest.raises(DBAPIError):
                Prepared(slow).rows(conn, {})
            assert (datetime.now() - started).total_seconds() < 10
    finally:
        engine.dispose()
