"""The store as a request reaches it: no wait on a database server from the event loop.

Every wait on a database server (a pool checkout, a new connection, a statement and its
rows) is made in a worker thread, so the event loop keeps answering what needs no database while a
request waits or the database is away: `/healthz`, a refusal, a light page beside a heavy
one. A request of /api/v1 on PostgreSQL makes one such hop, its handler's, which checks out
the request's connection on first use, when the token cache can vouch for the token's row
without the store (`TokenCache.kept`, decided on the loop); otherwise two: the token lookup
(which checks out the connection) and the handler (which reads through it). Each hop waits
for the interpreter twice (going, coming back), behind whatever heavy answers compute
meanwhile: with four such answers beside it, the limit-100 page's median went from 7-8 ms to
4-6 ms with one hop instead of two (bench/README.md). On SQLite in WAL
mode, a file on this machine that no server or writer can leave waiting, the lookup (about
45 µs) and a list page are made on the loop, where a hop would cost several times as much,
and the handlers that compute over the account alone hop (`read_in_place`). The tools
run in worker threads of the SDK's own making and check out a connection there.

A request that will read the store first passes the `StoreGate`: at most as many requests
as the pool has connections hold or wait on one at once, the others wait on the event loop
(which costs nothing) for at most the pool's own timeout, then answer 503. So a checkout in
a worker thread never waits on the pool, and a request holding a connection never waits for
a worker thread held by one waiting for a connection. The worker threads of an event loop
are as many as the gate lets in (`size_worker_threads`).
"""

from __future__ import annotations

import asyncio
import functools
import os
import sqlite3
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from anyio import to_thread
from sqlalchemy import Engine
from sqlalchemy.pool import QueuePool

from airoi.db.engine import sqlite_file
from airoi.failures import database_unavailable

BUSY_MESSAGE = "The service is busy; try again shortly."
# How long the journal mode is waited for, when the app is made, behind a writer's lock.
_PROBE_WAIT_S = 1.0
P = ParamSpec("P")
T = TypeVar("T")


def read_in_place(engine: Engine) -> bool:
    """Whether short reads of this store are made where they are asked, on the event loop:
    an SQLite file in WAL mode (every load leaves it so), on this machine, whose readers no
    writer leaves waiting. In another journal mode (set by hand) a writer's lock leaves each
    reader waiting up to the busy timeout, the event loop with it: that store is read in
    worker threads, as a server is. Asked once, when the app is made, on a connection of its
    own outside the engine's pool. Never by reading the file itself: closing a descriptor of
    a file SQLite has open drops every lock this process holds on it (POSIX), and another
    process then takes the store as unused (a disk I/O error here)."""
    if engine.dialect.name != "sqlite":
        return False
    path = sqlite_file(engine.url)
    if path is None:  # memory has no other writer; a URI's file is taken as one that can wait
        return engine.url.database in (None, "", ":memory:")
    if not os.path.exists(path):
        return False  # nothing to read, and opening it would make an empty file
    try:
        probe = sqlite3.connect(path, timeout=_PROBE_WAIT_S)
        try:
            mode = probe.execute("PRAGMA journal_mode").fetchone()[0]
        finally:
            probe.close()
    except sqlite3.Error:  # locked or unreadable now: taken as a store that can wait
        return False
    return str(mode).lower() == "wal"


def pool_capacity(engine: Engine) -> int:
    """How many connections the engine's pool holds at most (its size and its overflow)."""
    pool = engine.pool
    if isinstance(pool, QueuePool):
        overflow = pool._max_overflow  # the pool says it nowhere public
        if overflow >= 0:
            return pool.size() + overflow
        return pool.size() + 64  # unbounded overflow: the gate still bounds what waits
    return 1


def pool_timeout(engine: Engine) -> float:
    return float(getattr(engine.pool, "_timeout", 30.0))


class StoreGate:
    """At most `capacity` requests of one event loop hold or wait on the store at once."""

    def __init__(self, capacity: int, wait_s: float, *, in_place: bool = False) -> None:
        self.capacity = capacity
        self.wait_s = wait_s
        self.in_place = in_place  # short reads made on the event loop (`read_in_place`)
        # One semaphore per event loop: a test client runs each app on a loop of its own.
        self._semaphores: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, engine: Engine) -> StoreGate:
        return cls(pool_capacity(engine), pool_timeout(engine), in_place=read_in_place(engine))

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.capacity)
        return semaphore

    async def enter(self) -> Callable[[], None]:
        """Wait for a place (503 after `wait_s`); returns what gives it back, once."""
        semaphore = self._semaphore()
        if semaphore.locked():
            try:
                async with asyncio.timeout(self.wait_s):
                    await semaphore.acquire()
            except TimeoutError:
                raise database_unavailable(BUSY_MESSAGE) from None
        else:
            # A place is free: taken at once, without arming a timer that would be cancelled.
            await semaphore.acquire()
        given_back = False

        def leave() -> None:
            nonlocal given_back
            if not given_back:
                given_back = True
                semaphore.release()

        return leave


def size_worker_threads(app: Any) -> None:
    """On start-up: the event loop's worker threads as many as the gate lets requests in (a
    few more for what runs there without passing it: `/readyz`, `/metrics`)."""
    gate: StoreGate = app.state.store_gate
    to_thread.current_default_thread_limiter().total_tokens = gate.capacity + 4


def keyset_page(handler: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """A list page read along its index (`airoi.listing`), at most 500 rows: on SQLite in
    WAL mode (`read_in_place`) run where it is asked, on the event loop (a local file, 1 to
    5 ms, where the hop to a worker thread and back cost the limit-100 page a quarter of its
    rate); elsewhere in a worker thread, since a server (or a writer's lock) can leave it
    waiting. Every list but `/budgets` is one. Handlers that compute over the account
    (`/roi`, `/budgets`) always run in a worker thread (`sync_to_thread=True`): hundreds of
    milliseconds on a large account."""

    @functools.wraps(handler)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        request: Any = kwargs["request"]  # the handler's airoi.api.common.ApiRequest
        gate: StoreGate = request.app.state.store_gate
        if gate.in_place:
            return handler(*args, **kwargs)
        return await to_thread.run_sync(functools.partial(handler, *args, **kwargs))

    return run


__all__ = ["BUSY_MESSAGE", "StoreGate", "keyset_page", "pool_capacity", "size_worker_threads"]
