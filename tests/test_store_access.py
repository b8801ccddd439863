"""The store's gate: at most as many requests as the pool holds wait on the store at once."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import QueuePool

from airoi.db.engine import make_engine
from airoi.db.migrate import upgrade
from airoi.errors import ApiError
from airoi.store_access import StoreGate, pool_capacity


def test_a_place_is_waited_for_then_refused_503_with_retry_after() -> None:
    gate = StoreGate(capacity=2, wait_s=0.2)

    async def run() -> tuple[float, ApiError]:
        first = await gate.enter()
        await gate.enter()
        started = time.monotonic()
        with pytest.raises(ApiError) as refused:
            await gate.enter()
        waited = time.monotonic() - started
        # Given back once, however often it is called: one place frees, not two.
        first()
        first()
        await gate.enter()
        with pytest.raises(ApiError):
            await gate.enter()
        return waited, refused.value

    waited, refused = asyncio.run(run())
    assert 0.15 <= waited < 2.0
    assert refused.status == 503
    assert int(refused.headers["Retry-After"]) >= 1


def test_a_waiting_request_enters_as_soon_as_a_place_is_given_back() -> None:
    gate = StoreGate(capacity=1, wait_s=5.0)

    async def run() -> float:
        leave = await gate.enter()
        asyncio.get_running_loop().call_later(0.05, leave)
        started = time.monotonic()
        await gate.enter()
        return time.monotonic() - started

    assert asyncio.run(run()) < 1.0


def test_each_event_loop_has_its_own_places() -> None:
    # A test client runs the app on a loop of its own: places taken on one are not owed on
    # another (nor is a semaphore of one loop awaited on another).
    gate = StoreGate(capacity=1, wait_s=0.1)
    asyncio.run(gate.enter())
    asyncio.run(gate.enter())


@pytest.mark.parametrize(("size", "overflow", "capacity"), [(5, 10, 15), (2, 0, 2), (3, 4, 7)])
def test_the_gate_lets_in_as_many_as_the_pool_holds(
    size: int, overflow: int, capacity: int, tmp_path: Path
) -> None:
    engine = create_engine(
        f"sqlite:///{tmp_path / 'store.db'}",
        poolclass=QueuePool,
        pool_size=size,
        max_overflow=overflow,
    )
    try:
        assert pool_capacity(engine) == capacity
    finally:
        engine.dispose()


def test_only_an_sqlite_store_in_wal_mode_is_read_on_the_event_loop(tmp_path: Path) -> None:
    # A writer's lock leaves readers of a store in another journal mode waiting (the busy
    # timeout), the event loop with them; in WAL mode it never does (airoi.store_access).
    path = tmp_path / "store.db"
    writer = make_engine(f"sqlite:///{path}")  # every load's engine leaves the store in WAL
    upgrade(writer)
    writer.dispose()
    serving = make_engine(f"sqlite:///{path}", read_only=True)
    try:
        assert StoreGate.of(serving).in_place is True
        serving.dispose()
        by_hand = sqlite3.connect(path)
        by_hand.execute("PRAGMA journal_mode=DELETE")
        by_hand.close()
        assert StoreGate.of(serving).in_place is False
    finally:
        serving.dispose()
    # No file there: nothing is opened (that would make an empty one), nothing read in place.
    absent = make_engine(f"sqlite:///{tmp_path / 'absent.db'}", read_only=True)
    assert StoreGate.of(absent).in_place is False
    assert not (tmp_path / "absent.db").exists()
    assert StoreGate.of(make_engine("sqlite://", read_only=True)).in_place is True


@pytest.mark.postgresql
def test_a_database_server_is_never_read_on_the_event_loop(postgresql_url: str) -> None:
    engine = make_engine(postgresql_url, read_only=True)
    try:
        assert StoreGate.of(engine).in_place is False
    finally:
        engine.dispose()


def test_a_serving_engine_makes_no_file_where_its_store_was_removed(tmp_path: Path) -> None:
    # A store removed while served: the next connection made an empty file there, and every
    # connection opened on it failed ("no such table", 503) even once the store was back.
    path = tmp_path / "store.db"
    upgrade(make_engine(f"sqlite:///{path}"))
    serving = make_engine(f"sqlite:///{path}", read_only=True)
    try:
        with serving.connect() as connection:
            assert connection.exec_driver_sql("SELECT count(*) FROM accounts").scalar() == 0
        serving.dispose()
        path.rename(tmp_path / "aside.db")
        with pytest.raises(OperationalError), serving.connect():
            pass  # answered 503 (airoi.failures)
        assert not path.exists()
        (tmp_path / "aside.db").rename(path)
        with serving.connect() as connection:
            assert connection.exec_driver_sql("SELECT count(*) FROM accounts").scalar() == 0
    finally:
        serving.dispose()


@pytest.mark.postgresql
def test_a_request_takes_the_connection_given_back_last(postgresql_url: str) -> None:
    # A sequential client (a copy walking a list) after a burst of concurrent requests went
    # round every pooled connection in turn (the pool's default, first in first out), each a
    # server process of its own with its caches cold: the walk ran at 0.61x of its ceiling
    # (bench.ceiling). The connection given back last is handed out next.
    from airoi.settings import DEFAULT_STATEMENT_TIMEOUT_MS

    serving = make_engine(
        postgresql_url, read_only=True, statement_timeout_ms=DEFAULT_STATEMENT_TIMEOUT_MS
    )
    try:
        held = [serving.connect() for _ in range(3)]
        drivers = [conn.connection.driver_connection for conn in held]
        for conn in held:  # the last given back is held[2]
            conn.close()
        for _ in range(3):
            with serving.connect() as again:
                assert again.connection.driver_connection is drivers[2]
    finally:
        serving.dispose()
