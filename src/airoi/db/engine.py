"""Engines for the store: a writer for the CLI, a read-only one for serving.

The serving path opens the database read-only (SQLite `PRAGMA query_only`,
PostgreSQL `default_transaction_read_only`), so a bug in a handler cannot write.
With `statement_timeout_ms`, a statement running longer is cut (PostgreSQL
`statement_timeout`; SQLite a progress handler that interrupts it) and raises
`OperationalError`, which the app answers 503.

On PostgreSQL the serving engine also keeps deadlines of its own, because a server that
stops answering (frozen, or cut off by a partition) cannot enforce its statement timeout,
and a request's database work holds a worker thread (see `airoi.store_access`) as long as
it waits:
- connecting gives up after `connect_timeout` (at least 2 s, libpq's floor);
- every wait on a connection's socket (a statement and its rows, a commit, a rollback)
  gives up one second past the statement timeout: the server's own cancel comes first
  whenever the server answers at all. The connection is then closed (its protocol state
  is unknown) and the pool replaces it;
- a pooled connection whose server side has gone (its backend terminated, the server
  restarted) is replaced at checkout without asking the server (`server_has_gone`);
- TCP keepalives and `tcp_user_timeout` let the kernel find a peer that vanished from the
  network (they do not fire for a server process that is stopped on a live host: its
  kernel still acknowledges, hence the deadline above);
- a connection is in autocommit, so giving it back to the pool never waits on the server;
- after a deadline passes, the database is taken as away (`DatabaseBreaker`): every
  checkout is refused at once, answered 503, instead of each request spending the deadline
  in a worker thread again; a thread probes the server each second and the engine serves
  again as soon as it answers. One warning when it goes, one line when it is back.

A setting given in the URL's query (`?keepalives_idle=60`) wins over these defaults.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import select
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.pool import PoolProxiedConnection, QueuePool

# How many SQLite virtual-machine steps run between two looks at the clock.
_SQLITE_PROGRESS_STEPS = 10_000
_DEADLINE = "airoi_deadline"
# How long past the statement timeout a wait on the server's socket is given up on.
DEADLINE_GRACE_S = 1.0
# How often a database taken as away is asked again.
PROBE_INTERVAL_S = 1.0
# A pooled connection idle this long is probed by the kernel, then every interval, and
# dropped after this many probes go unanswered: a vanished peer is found in 30 s.
KEEPALIVE = {
    "keepalives": 1,
    "keepalives_idle": 15,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}

logger = logging.getLogger("airoi.db")
# SQLite's own words for a file it cannot open.
NO_FILE = "unable to open database file"
# How long SQLite waits for a lock another connection holds (at most a statement's time).
SQLITE_BUSY_MS = 5000


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def sqlite_file(url: URL) -> str | None:
    """The path of an SQLite store's file; None for a URI, memory or another database."""
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:") or url.query.get("uri"):
        return None
    return database


def sqlite_text_encoding(engine: Engine) -> str | None:
    """The text encoding of an SQLite store (`PRAGMA encoding`): UTF-8, as `airoi init` makes
    one, unless its file was made otherwise before; None for another database."""
    if engine.dialect.name != "sqlite":
        return None
    with engine.connect() as conn:
        return str(conn.exec_driver_sql("PRAGMA encoding").scalar())


def missing_sqlite_file(engine: Engine) -> str | None:
    """The path of the engine's SQLite file when there is none (a path mistyped, a store
    never made): opening it would make an empty one. None for a file that is there, a URI,
    memory or another database."""
    path = sqlite_file(engine.url)
    return None if path is None or os.path.exists(path) else path


def no_store_at(path: str) -> str:
    """What a command that reads a store says of an SQLite path with no file there."""
    return (
        f"There is no store at {path}. Run `airoi init` (or `airoi demo`) to make one, or set "
        "AIROI_DATABASE_URL to the store"
    )


def make_engine(
    url: str, *, read_only: bool = False, statement_timeout_ms: int | None = None
) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_engine(url, connect_args={"check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, record: Any) -> None:
            cur = dbapi_conn.cursor()
            if parsed.database and parsed.database != ":memory:" and not read_only:
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA foreign_keys=ON")
            # A store locked by a writer (one not in WAL mode) is waited on no longer than a
            # statement may run.
            busy_ms = SQLITE_BUSY_MS
            if statement_timeout_ms is not None:
                busy_ms = min(busy_ms, statement_timeout_ms)
            cur.execute(f"PRAGMA busy_timeout={busy_ms}")
            if read_only:
                cur.execute("PRAGMA query_only=ON")
            cur.close()
            if statement_timeout_ms is not None:
                _install_sqlite_timeout(dbapi_conn, record, statement_timeout_ms / 1000)

        if statement_timeout_ms is not None:
            _arm_sqlite_timeout(engine)
        path = sqlite_file(parsed)
        if read_only and path is not None:
            _open_only_what_is_there(engine, path)
        return engine
    connect_args: dict[str, Any] = {}
    options = []
    if read_only:
        options.append("-c default_transaction_read_only=on")
    if statement_timeout_ms is not None:
        options.append(f"-c statement_timeout={statement_timeout_ms}")
    if options:
        connect_args["options"] = " ".join(options)
    if statement_timeout_ms is None:
        engine = create_engine(url, connect_args=connect_args)
        _replace_gone_on_checkout(engine)
        return engine
    deadline_s = statement_timeout_ms / 1000 + DEADLINE_GRACE_S
    defaults: dict[str, Any] = {
        # An unreachable server is given up on as quickly as a slow statement.
        "connect_timeout": max(2, math.ceil(statement_timeout_ms / 1000)),
        **KEEPALIVE,
        "tcp_user_timeout": math.ceil(deadline_s * 1000),
    }
    connect_args.update({k: v for k, v in defaults.items() if k not in parsed.query})
    return _guarded_engine(url, connect_args, deadline_s, autocommit=read_only)


def _open_only_what_is_there(engine: Engine, path: str) -> None:
    """A serving engine opens its file as SQLite opens any (`query_only` keeps it from
    writing), which makes an empty file where none is: a store removed while served left one
    behind, and the connections opened on it failed until a restart. A new connection to a
    file that is not there fails as SQLite's own do (an `OperationalError`, answered 503), and
    the file is read again once it is back."""

    @event.listens_for(engine, "do_connect")
    def _only_a_file_there(dialect: Any, record: Any, cargs: Any, cparams: Any) -> None:
        if not os.path.exists(path):
            raise sqlite3.OperationalError(NO_FILE)


def _driver_errors() -> tuple[type[Exception], type[Exception], type[Exception]]:
    """psycopg's classes, imported where PostgreSQL is used: the refusal and deadline
    errors are the driver's `OperationalError`, so SQLAlchemy wraps them as it wraps the
    driver's own and the app answers them 503 (`airoi.failures.database_failure`)."""
    import psycopg

    class DatabaseNotAnswering(psycopg.OperationalError):
        """A wait on the server's socket passed its deadline."""

    class DatabaseTakenAsAway(psycopg.OperationalError):
        """Refused without asking: the database did not answer in time a moment ago."""

    return DatabaseNotAnswering, DatabaseTakenAsAway, psycopg.errors.ConnectionTimeout


class DatabaseBreaker:
    """Whether the database is taken as away, and the thread that asks it until it answers.

    `away` is read without the lock on every checkout: a stale read lets one request
    through to the server (and its deadline) or refuses one more, nothing worse.
    """

    def __init__(self, probe: Callable[[], None], interval_s: float = PROBE_INTERVAL_S) -> None:
        self.away = False
        self.outages = 0
        self._probe = probe
        self._interval_s = interval_s
        self._lock = threading.Lock()

    def trip(self, what: str) -> None:
        with self._lock:
            if self.away:
                return
            self.away = True
            self.outages += 1
        logger.warning(
            "database did not answer in time (%s); requests are answered 503 without asking "
            "it meanwhile",
            what,
        )
        threading.Thread(
            target=_watch, args=(weakref.ref(self),), name="airoi-db-probe", daemon=True
        ).start()

    def _recovered(self) -> None:
        with self._lock:
            self.away = False
        logger.warning("database answers again; requests reach it")


def _watch(breaker_ref: weakref.ReferenceType[DatabaseBreaker]) -> None:
    """Asks the database every interval until it answers (or its engine is gone)."""
    while True:
        breaker = breaker_ref()
        if breaker is None:
            return
        time.sleep(breaker._interval_s)
        try:
            breaker._probe()
        except Exception:  # any failure means: still away
            del breaker
            continue
        breaker._recovered()
        return


def _guarded_engine(
    url: str, connect_args: dict[str, Any], deadline_s: float, *, autocommit: bool
) -> Engine:
    import psycopg

    not_answering, taken_as_away, connect_timeout = _driver_errors()

    class DeadlineConnection(psycopg.Connection[Any]):
        """A connection whose every wait on the server gives up after `deadline_s`."""

        breaker: DatabaseBreaker | None = None

        def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
            if self.breaker is not None and self.breaker.away:
                # A connection checked out before the database went away (a request that
                # was waiting on something else) is not let spend the deadline again.
                self.close()
                raise not_answering("the database is taken as away until it answers again")
            try:
                return super().wait(gen, interval, deadline_s if timeout is None else timeout)
            except psycopg.OperationalError as exc:
                if type(exc).__name__ != "_WaitTimeout":  # the wait's own, private class
                    raise
                self.close()  # mid-protocol: the pool must not hand it out again
                if self.breaker is not None:
                    self.breaker.trip("no answer on a connection")
                raise not_answering(
                    f"the database did not answer within {deadline_s:g} s"
                ) from None

        def rollback(self) -> None:
            # Closing ends the transaction as well, without waiting on the server. A rollback
            # is what returns a request's connection to the pool, after its answer is made:
            # the answer must not fail for it.
            if self.breaker is not None and self.breaker.away:
                self.close()
                return
            try:
                super().rollback()
            except not_answering:
                return  # closed by `wait`, and the database taken as away

    def probe() -> None:
        with DeadlineConnection.connect(*cargs, **cparams) as conn:
            conn.execute("SELECT 1")

    guard = DatabaseBreaker(probe)

    class GuardedPool(QueuePool):
        """Refuses a checkout at once while the database is taken as away."""

        breaker = guard  # a class attribute: the pool a dispose makes keeps it
        # Logged as SQLAlchemy's pool, so the log rule (airoi.failures) covers its records.
        _sqla_logger_namespace = "sqlalchemy.pool.impl.QueuePool"

        def connect(self) -> PoolProxiedConnection:
            if guard.away:
                raise taken_as_away("the database is taken as away until it answers again")
            return super().connect()

    # Serving (`autocommit`): each statement its own transaction (read-only by
    # default_transaction_read_only): no BEGIN before a request's first statement, and
    # returning the connection to the pool sends nothing (its rollback has no transaction to
    # end), so it never waits on the server. Statements of one request saw a snapshot each
    # already (read committed). A writer (the OAuth steps) keeps its transactions: what it
    # writes in one is written whole or not at all.
    engine = create_engine(
        url,
        connect_args=connect_args,
        poolclass=GuardedPool,
        # The connection given back last is handed out next: a sequential client (a copy's
        # walk) after a burst of concurrent requests otherwise went round every pooled
        # connection, each a server process with cold caches (its walk 0.6x of the ceiling's
        # where it is 1.0x so, bench/README.md), and the ones left idle can be closed.
        pool_use_lifo=True,
        **({"isolation_level": "AUTOCOMMIT"} if autocommit else {}),
    )
    cargs_list, cparams = engine.dialect.create_connect_args(engine.url)
    cargs = tuple(cargs_list)
    cparams.update(connect_args)

    @event.listens_for(engine, "do_connect")
    def _connect(_dialect: Any, _record: Any, args: Any, params: Any) -> DeadlineConnection:
        if guard.away:  # the pool's own reconnect of a connection gone at checkout comes here
            raise taken_as_away("the database is taken as away until it answers again")
        try:
            conn = DeadlineConnection.connect(*args, **params)
        except connect_timeout:
            guard.trip("no answer to a new connection")
            raise
        conn.breaker = guard
        return conn

    _replace_gone_on_checkout(engine)
    return engine


def server_has_gone(driver_connection: Any) -> bool:
    """Whether the server side of an idle psycopg connection has gone, asked of this end only.

    A connection at rest in the pool has nothing owed to it: its last statement was answered
    in full, and no LISTEN is ever issued. So anything readable on its socket is the server's
    last word (the FATAL of a backend terminated or of a shutdown) or the end of the stream.
    A server that has gone silent without closing (frozen, partitioned) is not seen here: the
    first statement's deadline finds it (`DatabaseBreaker`). A healthy connection taken as gone
    in error only costs a new one.
    """
    if driver_connection.closed:  # closed by the deadline, or found broken by the driver
        return True
    poller = select.poll()  # not select.select, which fails on descriptors past 1023
    poller.register(driver_connection.fileno(), select.POLLIN)  # a hang-up is reported always
    return bool(poller.poll(0))


def _replace_gone_on_checkout(engine: Engine) -> None:
    """The pool replaces a connection whose server has gone before handing it out.

    It stands in for `pool_pre_ping`, which asks the server (an empty statement) at every
    checkout: a round trip a request, about 7% of a 100-row page on PostgreSQL.
    """

    @event.listens_for(engine, "checkout")
    def _checkout(driver_connection: Any, _record: Any, _proxy: Any) -> None:
        if server_has_gone(driver_connection):
            # The pool invalidates the record and checks out again on a new connection.
            raise DisconnectionError("the server closed the connection while it was pooled")


def breaker_of(engine: Engine) -> DatabaseBreaker | None:
    """The engine's breaker (PostgreSQL serving engines only)."""
    return getattr(engine.pool, "breaker", None)


def close_or_discard(connection: Connection) -> Exception | None:
    """Return `connection` to the pool; if that fails, discard it. Never raises.

    Closing rolls the connection's transaction back, which fails when its server has gone
    (a backend terminated, a restart): the connection is then invalidated, so the pool
    drops it and opens a new one when next asked. The failure is returned for the caller
    to log: what was read through the connection before stands.
    """
    try:
        if not connection.closed and not connection.invalidated:
            # Ended here, so that a failure to end it is the caller's to log (the pool's own
            # rollback would log it with the driver's text).
            end_transaction(connection)
        connection.close()
    except Exception as exc:
        discard(connection)
        return exc
    return None


def end_transaction(connection: Connection) -> None:
    """End what `connection` holds open, with no statement deadline for it: its transaction,
    and the driver's own, which statements run on the driver (airoi.db.prepared) leave
    open. Raises what the driver raises."""
    proxied = connection.connection
    disarm_deadline(proxied.info)
    if connection.in_transaction():
        connection.rollback()
    proxied.driver_connection.rollback()  # type: ignore[union-attr]


def discard(connection: Connection) -> None:
    """Invalidate `connection` (its pool drops it and opens a new one when next asked) and
    close it. Never raises."""
    with contextlib.suppress(Exception):
        connection.invalidate()
    with contextlib.suppress(Exception):
        connection.close()


class _Deadline:
    """When the running statement on one SQLite connection is to be interrupted."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = math.inf

    def arm(self) -> None:
        self.at = time.monotonic() + self.seconds

    def disarm(self) -> None:
        self.at = math.inf


def arm_deadline(info: dict[Any, Any]) -> None:
    """Give the statement about to run its time, from now (given the connection's `info`).

    SQLAlchemy's own executions are armed by an event; code running a statement on the
    driver itself calls this. Without a statement timeout (or on PostgreSQL, where the
    server keeps it) there is nothing to arm.
    """
    deadline = info.get(_DEADLINE)
    if deadline is not None:
        deadline.arm()


def disarm_deadline(info: dict[Any, Any]) -> None:
    """No deadline for what runs next on the connection (ending its transaction)."""
    deadline = info.get(_DEADLINE)
    if deadline is not None:
        deadline.disarm()


def _install_sqlite_timeout(dbapi_conn: Any, record: Any, seconds: float) -> None:
    """A progress handler interrupting the running statement once its deadline has passed."""
    deadline = record.info[_DEADLINE] = _Deadline(seconds)

    def past_deadline() -> int:
        return 1 if time.monotonic() > deadline.at else 0

    dbapi_conn.set_progress_handler(past_deadline, _SQLITE_PROGRESS_STEPS)


def _arm_sqlite_timeout(engine: Engine) -> None:
    """Each statement gets its seconds from its start (fetching its rows included)."""

    @event.listens_for(engine, "before_cursor_execute")
    def _start(conn: Any, *_args: Any) -> None:
        arm_deadline(conn.info)

    @event.listens_for(engine, "reset")
    def _disarm(_dbapi_conn: Any, record: Any, _reset_state: Any) -> None:
        # The pool's own rollback on return must never be interrupted.
        disarm_deadline(record.info)
