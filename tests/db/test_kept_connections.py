"""The engine's shelf: on SQLite a request's connection given back is kept open for the next
request, as one fresh from the pool would be (airoi.db.kept_connections); on a database
server it goes back to the pool."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, event, func, select, text

from airoi.db import kept_connections
from airoi.db.engine import make_engine
from airoi.db.tables import accounts
from tests.factories import BundleBuilder


@pytest.fixture
def served(db_url: str) -> Iterator[Engine]:
    engine = make_engine(db_url, read_only=True, statement_timeout_ms=5_000)
    yield engine
    engine.dispose()


def _accounts(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(accounts)).scalar_one())


def test_sqlite_keeps_what_is_given_back_and_postgresql_returns_it(served: Engine) -> None:
    checkouts: list[int] = []
    event.listen(served, "checkout", lambda *_: checkouts.append(1))
    first = kept_connections.take(served)
    first.execute(select(func.count()).select_from(accounts)).scalar_one()
    assert kept_connections.give_back(first) is None
    second = kept_connections.take(served)
    if served.dialect.name == "sqlite":
        assert second is first  # the same connection, no second checkout of the pool
        assert checkouts == [1]
    else:
        assert second is not first
        assert checkouts == [1, 1]
    assert kept_connections.give_back(second) is None
    assert kept_connections.held(served) == 0


def test_a_shelved_connection_has_no_transaction_left_and_sees_later_writes(
    served: Engine, engine: Engine
) -> None:
    if served.dialect.name != "sqlite":
        pytest.skip("only SQLite keeps connections on a shelf")
    before = _accounts(engine)
    connection = kept_connections.take(served)
    # A statement through SQLAlchemy (which begins a transaction) and one on the driver.
    assert connection.execute(select(func.count()).select_from(accounts)).scalar_one() == before
    connection.connection.driver_connection.execute("SELECT count(*) FROM accounts").fetchall()
    assert connection.in_transaction()
    assert kept_connections.give_back(connection) is None
    assert not connection.in_transaction()
    # Written while it waits on the shelf: the next request reads the store as it is now.
    b = BundleBuilder()
    b.account()
    b.load(engine)
    again = kept_connections.take(served)
    assert again is connection
    count = again.execute(select(func.count()).select_from(accounts)).scalar_one()
    assert count == before + 1
    assert kept_connections.give_back(again) is None


def test_the_shelf_is_bounded_by_its_room_and_the_rest_go_back_to_the_pool(
    sqlite_url: str,
) -> None:
    engine = make_engine(sqlite_url, read_only=True)
    try:
        assert kept_connections.room(engine) == kept_connections.SHELF_SIZE  # the default pool of 5
        taken = [kept_connections.take(engine) for _ in range(kept_connections.SHELF_SIZE + 2)]
        for connection in taken:
            assert kept_connections.give_back(connection) is None
        assert kept_connections.shelved(engine) == kept_connections.SHELF_SIZE
        assert engine.pool.checkedin() == 2  # type: ignore[attr-defined]
        assert kept_connections.held(engine) == 0
    finally:
        engine.dispose()
    # Disposing of the engine empties its shelf as well as its pool.
    assert kept_connections.shelved(engine) == 0


def test_a_pool_of_one_keeps_nothing_aside(sqlite_url: str) -> None:
    # A pool of one (or of two, one kept aside) leaves a tool call or a sign-in a connection.
    for size, room in ((1, 0), (2, 1)):
        engine = create_engine(
            sqlite_url, pool_size=size, max_overflow=0, connect_args={"check_same_thread": False}
        )
        try:
            assert kept_connections.room(engine) == room
            connection = kept_connections.take(engine)
            assert kept_connections.give_back(connection) is None
            assert kept_connections.shelved(engine) == room
        finally:
            engine.dispose()


def test_a_connection_that_cannot_end_its_transaction_is_discarded(served: Engine) -> None:
    if served.dialect.name != "sqlite":
        pytest.skip("PostgreSQL's own case: tests/db/test_dead_connections.py")
    connection = kept_connections.take(served)
    connection.execute(text("SELECT 1")).scalar_one()
    connection.connection.driver_connection.close()  # gone under it
    failure = kept_connections.give_back(connection)
    assert failure is not None  # returned for the caller to log, never raised
    assert kept_connections.shelved(served) == 0
    assert kept_connections.held(served) == 0
    fresh = kept_connections.take(served)
    assert fresh is not connection
    assert fresh.execute(text("SELECT 1")).scalar_one() == 1
    assert kept_connections.give_back(fresh) is None


def test_a_connection_held_while_the_engine_is_disposed_of_is_not_shelved(
    served: Engine,
) -> None:
    # Given back after the dispose, it was shelved and handed to the next request although
    # its pool was gone (the new pool counted -1 connections out).
    held = kept_connections.take(served)
    kept = kept_connections.take(served)
    assert kept_connections.give_back(kept) is None
    served.dispose()
    assert kept_connections.shelved(served) == 0  # what the shelf kept went with the old pool
    assert kept_connections.give_back(held) is None
    assert kept_connections.shelved(served) == 0
    assert kept_connections.held(served) == 0
    fresh = kept_connections.take(served)
    assert fresh is not held and fresh is not kept
    assert fresh.execute(select(func.count()).select_from(accounts)).scalar_one() == 0
    assert kept_connections.give_back(fresh) is None
    assert kept_connections.held(served) == 0
