"""The store's gate: at most as many requests as the pool holds wait on the store at once."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.pool import QueuePool

from airoi.errors import ApiError
from airoi.store import StoreGate, pool_capacity


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
