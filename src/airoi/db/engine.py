"""Engines for the store: a writer for the CLI, a read-only one for serving.

The serving path opens the database read-only (SQLite `PRAGMA query_only`,
PostgreSQL `default_transaction_read_only`), so a bug in a handler cannot write.
With `statement_timeout_ms`, a statement running longer is cut (PostgreSQL
`statement_timeout`; SQLite a progress handler that interrupts it) and raises
`OperationalError`, which the app answers 503.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url

# How many SQLite virtual-machine steps run between two looks at the clock.
_SQLITE_PROGRESS_STEPS = 10_000
_DEADLINE = "airoi_deadline"


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


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
            cur.execute("PRAGMA busy_timeout=5000")
            if read_only:
                cur.execute("PRAGMA query_only=ON")
            cur.close()
            if statement_timeout_ms is not None:
                _install_sqlite_timeout(dbapi_conn, record, statement_timeout_ms / 1000)

        if statement_timeout_ms is not None:
            _arm_sqlite_timeout(engine)
        return engine
    connect_args: dict[str, Any] = {}
    options = []
    if read_only:
        options.append("-c default_transaction_read_only=on")
    if statement_timeout_ms is not None:
        options.append(f"-c statement_timeout={statement_timeout_ms}")
        # An unreachable server is given up on as quickly as a slow statement.
        connect_args["connect_timeout"] = max(2, math.ceil(statement_timeout_ms / 1000))
    if options:
        connect_args["options"] = " ".join(options)
    return create_engine(url, connect_args=connect_args, pool_pre_ping=True)


def close_or_discard(connection: Connection) -> Exception | None:
    """Return `connection` to the pool; if that fails, discard it. Never raises.

    Closing rolls the connection's transaction back, which fails when its server has gone
    (a backend terminated, a restart): the connection is then invalidated, so the pool
    drops it and opens a new one when next asked. The failure is returned for the caller
    to log: what was read through the connection before stands.
    """
    try:
        if not connection.closed and not connection.invalidated:
            proxied = connection.connection
            if not connection.in_transaction():
                # Statements run on the driver (airoi.db.prepared) leave the driver's own
                # transaction open: ended here, so that a failure to end it is the caller's
                # to log (the pool's own rollback would log it with the driver's text).
                disarm_deadline(proxied.info)
                proxied.driver_connection.rollback()  # type: ignore[union-attr]
        connection.close()
    except Exception as exc:
        with contextlib.suppress(Exception):
            connection.invalidate()
        with contextlib.suppress(Exception):
            connection.close()
        return exc
    return None


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
