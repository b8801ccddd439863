"""The /api/v1 token lookup's rows kept by token hash, dropped whenever the store may have
changed them (SEMANTICS R29).

What is kept is the row the lookup read (the token's expiry and revocation, its user's
removal, its account's plan and figures), not a decision: every request still compares the
expiry with now and decides 401 or 403 from the row (airoi.auth). A row is kept at most
`TOKEN_CACHE_S` after it was read from the store, whatever happens, and only while the cache
can tell that the store has not changed since:

- SQLite: `PRAGMA data_version` on the request's own connection changes whenever another
  connection committed to the file, and the connection's own `total_changes` whenever it
  wrote itself. Each pooled connection keeps the pair it saw last; a request whose
  connection reads another pair (or a connection new to the pool) drops every row first.
  Anything committed before the request's check is therefore seen: no window.
- PostgreSQL: revision 0009's triggers on tokens, users and accounts notify `CHANNEL` on
  every write (and TRUNCATE). One connection of the worker's own listens there; a
  notification drops every row. It is read by a thread that waits on its socket, and also
  by each request before it looks at the cache (without waiting: what the server has sent
  by then), so a load is seen as soon as the server has told the listener, normally before
  the next request; at worst the second above. While the listener is not connected (not
  yet, lost, the server away, a hot standby, which cannot LISTEN) the cache is not used:
  every request asks the store, and the thread connects again with a bounded backoff.

A load or a revocation made by this process empties its own caches as it commits
(`changed_here`), on either store.

Every row is tagged with the generation the cache was at when the request checked the
store; dropping the rows moves the generation on, so a row read before a change and put
after it is never served.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from airoi.db.engine import KEEPALIVE
from airoi.failures import failure_class

# How long a row read from the store is kept, at most, whatever else happens.
TOKEN_CACHE_S = 1.0
# Rows kept at once, at most: past it the one read longest ago goes.
TOKEN_CACHE_ENTRIES = 10_000
# Where revision 0009's triggers notify (PostgreSQL).
CHANNEL = "airoi_principals"
# The listener's wait between two attempts to connect: doubled from the first to the last.
RECONNECT_FIRST_S = 0.1
RECONNECT_LAST_S = 5.0
# What each pooled SQLite connection saw last, kept in its pool record's `info`.
_SEEN = "airoi_token_cache_seen"

Row = tuple[Any, ...]
LookUp = Callable[[Connection], Row | None]

log = logging.getLogger("airoi.auth")

# Every cache of this process, for `changed_here`.
_CACHES: weakref.WeakSet[TokenCache] = weakref.WeakSet()


def changed_here() -> None:
    """Tokens, users or accounts changed by this process (a load, a revocation), committed:
    its own caches drop every row at once.

    Another process's change reaches them by the store (SQLite's data_version at the next
    request; PostgreSQL's notification, normally before the next request, at worst within
    `TOKEN_CACHE_S`). A change made in this process, a load and then a request served by the
    same process, needs no wait for the server's notification either.
    """
    for cache in list(_CACHES):
        cache.clear()


class TokenCache:
    """Rows of the token lookup by token hash (see the module's docstring)."""

    def __init__(
        self,
        *,
        ttl_s: float = TOKEN_CACHE_S,
        max_entries: int = TOKEN_CACHE_ENTRIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # Called with the request's connection before the cache is looked at: drops the rows
        # (`clear`) if the store changed, and says whether the cache may be used at all.
        self.watch: Callable[[Connection], bool] = _never
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self.clock = clock
        self.listener: ChangeListener | None = None
        self._entries: dict[str, tuple[Row, int, float]] = {}
        self._generation = 0
        self._lock = threading.Lock()
        _CACHES.add(self)

    @classmethod
    def of(cls, engine: Engine) -> TokenCache:
        """The cache of a serving engine, watching the store as its dialect allows."""
        cache = cls()
        if engine.dialect.name == "sqlite":
            cache.watch = cache._watch_sqlite
        elif engine.dialect.name == "postgresql":
            listener = cache.listener = ChangeListener(_listener_connect(engine), cache.clear)
            cache.watch = lambda _conn: listener.poll()
        return cache  # another database: no way to tell a change, so never used

    def __len__(self) -> int:
        return len(self._entries)

    def start(self) -> None:
        if self.listener is not None:
            self.listener.start()

    def stop(self) -> None:
        if self.listener is not None:
            self.listener.stop()

    def clear(self) -> None:
        """Drop every row; one read before now and put after is not served either."""
        with self._lock:
            self._generation += 1
            self._entries = {}

    def row(self, conn: Connection, token_hash: str, look_up: LookUp) -> Row | None:
        """The row `look_up` reads on `conn` for `token_hash`, unless kept and still good."""
        generation = self._generation if self.watch(conn) else None
        if generation is not None:
            kept = self._fresh(token_hash, generation)
            if kept is not None:
                return kept
        read_at = self.clock()
        row = look_up(conn)
        if row is not None and generation is not None:
            self._put(token_hash, row, generation, read_at)
        return row

    def kept(self, token_hash: str) -> Row | None:
        """The row kept for `token_hash` and still good, where the cache can tell so without a
        connection of the request's (PostgreSQL's listener): nothing here waits, so it is
        asked on the event loop. None: the store is asked (`row`), in a worker thread."""
        listener = self.listener
        if listener is None or not listener.poll():
            return None
        return self._fresh(token_hash, self._generation)

    def _fresh(self, token_hash: str, generation: int) -> Row | None:
        entry = self._entries.get(token_hash)
        if entry is not None and entry[1] == generation and self.clock() - entry[2] < self.ttl_s:
            return entry[0]
        return None

    def _put(self, token_hash: str, row: Row, generation: int, read_at: float) -> None:
        with self._lock:
            if generation != self._generation:
                return  # the store changed since this request checked it
            entries = self._entries
            entries.pop(token_hash, None)
            if len(entries) >= self.max_entries:
                del entries[next(iter(entries))]  # the one read longest ago
            entries[token_hash] = (row, generation, read_at)

    def _watch_sqlite(self, conn: Connection) -> bool:
        proxied = conn.connection
        driver: Any = proxied.driver_connection
        try:
            version = driver.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.OperationalError as exc:
            # The store locked or unreadable: answered now, as the statement's own failure
            # (503), rather than after the lookup waited for the lock as long again.
            raise OperationalError("PRAGMA data_version", None, exc) from None
        except Exception:  # the lookup that follows asks, and answers, as it would
            return False
        # The driver connection too: a record whose connection was replaced starts afresh.
        seen = (driver, version, driver.total_changes)
        if proxied.info.get(_SEEN) != seen:
            proxied.info[_SEEN] = seen
            self.clear()
        return True


def _never(_conn: Connection) -> bool:
    return False


def _listener_connect(engine: Engine) -> Callable[[], Any]:
    """How the listener connects: to the engine's server and database as the engine would
    (the URL's settings win), in autocommit, with keepalives so that a peer that vanished
    is found. It runs no statement but LISTEN, so no statement timeout is set."""
    cargs, cparams = engine.dialect.create_connect_args(engine.url)
    given = set(engine.url.query)
    params = {**cparams, **{k: v for k, v in KEEPALIVE.items() if k not in given}}
    if "connect_timeout" not in given:
        params["connect_timeout"] = 5

    def connect() -> Any:
        import psycopg

        return psycopg.Connection.connect(*cargs, **params, autocommit=True)

    return connect


class ChangeListener:
    """One PostgreSQL connection LISTENing on `CHANNEL`, and the daemon thread that keeps it.

    `on_change` is called on every notification, and whenever listening starts or stops
    (what changed meanwhile was not heard). Nothing of a notification (its payload) or of
    the connection (its parameters, the driver's text) is logged (SEMANTICS R15).
    """

    def __init__(self, connect: Callable[[], Any], on_change: Callable[[], None]) -> None:
        self.listening = False
        self.connects = 0  # how many times it started listening (for tests)
        self._connect = connect
        self._on_change = on_change
        self._conn: Any = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="airoi-token-listener", daemon=True
            )
            self._thread.start()

    def stop(self, wait_s: float = 0.0) -> None:
        """Stop listening: the thread closes the connection and ends (waited on for at most
        `wait_s`; it is a daemon thread, so an exit never waits on it)."""
        self._stopping.set()
        with self._lock:
            self.listening = False
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")
        if self._thread is not None and wait_s > 0:
            self._thread.join(wait_s)

    def poll(self) -> bool:
        """Whether the cache may be used now, after taking in the notifications the server
        has sent so far (without waiting for any)."""
        if not self.listening or not self._lock.acquire(blocking=False):
            return False  # not listening; or the thread is taking them in right now
        try:
            return self.listening and self._take_in()
        finally:
            self._lock.release()

    def _take_in(self) -> bool:
        """Under the lock: read what the server sent and drop the rows if it notified."""
        pgconn = self._conn.pgconn
        try:
            pgconn.consume_input()
            notified = False
            while pgconn.notifies() is not None:
                notified = True
        except Exception:
            self.listening = False  # lost: the thread finds out too, and connects again
            self._on_change()
            return False
        if notified:
            self._on_change()
        return True

    def _run(self) -> None:
        try:
            self._keep_listening()
        finally:
            self._wake_r.close()
            self._wake_w.close()

    def _keep_listening(self) -> None:
        wait_s = RECONNECT_FIRST_S
        unheard = False  # a warning was logged and no line yet says it listens again
        while not self._stopping.is_set():
            failure: Exception | None = None
            try:
                conn = self._connect()
            except Exception as exc:
                conn = None
                failure = exc
            else:
                try:
                    conn.execute(f"LISTEN {CHANNEL}")
                except Exception as exc:
                    with contextlib.suppress(Exception):
                        conn.close()
                    conn = None
                    failure = exc
            if conn is None:
                if not unheard:
                    unheard = True
                    log.warning(
                        "token changes cannot be listened for (%s); every request looks its "
                        "token up until they can",
                        failure_class(failure) if failure else "no connection",
                    )
                self._stopping.wait(wait_s)
                wait_s = min(wait_s * 2, RECONNECT_LAST_S)
                continue
            with self._lock:
                if self._stopping.is_set():
                    conn.close()
                    return
                self._conn = conn
                self._on_change()  # what changed while not listening
                self.listening = True
                self.connects += 1
            if unheard:
                unheard = False
                log.info("token changes are listened for again")
            wait_s = RECONNECT_FIRST_S
            self._listen(conn)
            with self._lock:
                self.listening = False
                self._conn = None
                self._on_change()
            with contextlib.suppress(Exception):
                conn.close()
            if not self._stopping.is_set():
                unheard = True
                log.warning(
                    "the connection listening for token changes was lost; every request "
                    "looks its token up until it is back"
                )

    def _listen(self, conn: Any) -> None:
        """Take in notifications as they come, until the connection is lost or stopped."""
        fd = conn.pgconn.socket
        # Not select.select, which fails on descriptors past 1023 (airoi.db.engine says the
        # same of its look at a pooled connection's socket).
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while not self._stopping.is_set():
            try:
                readable = {ready for ready, _ in poller.poll()}
            except OSError:
                return
            if self._stopping.is_set():
                return
            if fd in readable:
                with self._lock:
                    if not self.listening or not self._take_in():
                        return
