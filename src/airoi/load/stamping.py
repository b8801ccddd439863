"""One load at a time per store, and the store's own clock (SEMANTICS R32).

A copy made with `updated_since` (or a resume cursor) is exact only if every change is
stamped later than every stamp a reader could already have seen. So loads take the
store's write lock before they read anything (PostgreSQL: a transaction-scoped advisory
lock; SQLite: `BEGIN IMMEDIATE`, its one write lock), and then take one stamp, later than
every `updated_at` already stored: the store keeps the last stamp it gave in
`store_clock`, so no table is scanned to find it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, func, insert, select, text, update
from sqlalchemy.exc import OperationalError

from airoi.db import tables
from airoi.load.outcome import BundleError, LoadBusy
from airoi.timeutil import format_datetime, truncate_ms

# The advisory lock every load of a PostgreSQL store takes ("airoi ld" as a bigint).
LOCK_KEY = int.from_bytes(b"airoi ld", "big")
_TICK = timedelta(milliseconds=1)  # stamps keep milliseconds (SEMANTICS R3)
_POLL_SECONDS = 0.25  # PostgreSQL: how often the lock is tried again
_SQLITE_TRY_MS = 1000  # SQLite: each try waits this long for the write lock
_SAY_AGAIN_SECONDS = 60  # a waiting load says it still waits this often

Say = Callable[[str], None]


@contextlib.contextmanager
def locked(engine: Engine, *, wait: float, say: Say | None = None) -> Iterator[Connection]:
    """A connection in a transaction that holds the store's write lock, committed when the
    block ends (rolled back on an exception). Waits up to `wait` seconds for another load,
    saying so through `say`; then raises LoadBusy, having written nothing."""
    conn = engine.connect()
    try:
        if engine.dialect.name == "sqlite":
            _begin_immediate(conn, wait, say)
        else:
            conn.begin()
            _advisory_lock(conn, wait, say)
        yield conn
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    finally:
        conn.close()


class _Waiting:
    """The lines a load says while it waits, and the refusal when the wait is over."""

    def __init__(self, wait: float, say: Say | None) -> None:
        self.wait = wait
        self.say = say
        self.started = time.monotonic()
        self.said_at: float | None = None

    def left(self) -> float:
        return self.wait - (time.monotonic() - self.started)

    def busy(self, holder: str = "") -> None:
        """Another load holds the store: say so now and then; refuse once the wait is over."""
        now = time.monotonic()
        if self.left() <= 0:
            raise LoadBusy(
                f"Another load{holder} still holds this store after {self.wait:g} s; nothing "
                "was loaded. Run it again when that load ends, or give --wait more seconds."
            )
        if self.say is None:
            return
        if self.said_at is None:
            self.say(
                f"Another load{holder} is writing to this store; waiting for it to finish "
                f"(up to {self.wait:g} s, --wait sets how long)."
            )
            self.said_at = now
        elif now - self.said_at >= _SAY_AGAIN_SECONDS:
            self.say(f"Still waiting for the other load ({now - self.started:.0f} s so far).")
            self.said_at = now


def _begin_immediate(conn: Connection, wait: float, say: Say | None) -> None:
    """SQLite's write lock, taken before anything is read: `BEGIN IMMEDIATE`."""
    waiting = _Waiting(wait, say)
    previous = conn.exec_driver_sql("PRAGMA busy_timeout").scalar()
    try_ms = 0  # the first try does not wait, so that a wait is said at once
    try:
        while True:
            conn.exec_driver_sql(f"PRAGMA busy_timeout = {try_ms}")
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
                return
            except OperationalError as exc:
                conn.rollback()
                if "locked" not in str(exc.orig) and "busy" not in str(exc.orig):
                    raise
            waiting.busy()
            try_ms = max(1, min(_SQLITE_TRY_MS, int(waiting.left() * 1000)))
    finally:
        conn.exec_driver_sql(f"PRAGMA busy_timeout = {int(previous or 5000)}")


def _advisory_lock(conn: Connection, wait: float, say: Say | None) -> None:
    """PostgreSQL: the load lock of this database, held until the transaction ends."""
    waiting = _Waiting(wait, say)
    attempt = text("SELECT pg_try_advisory_xact_lock(:key)").bindparams(key=LOCK_KEY)
    while not conn.execute(attempt).scalar():
        waiting.busy(_holder(conn))
        time.sleep(max(0.0, min(_POLL_SECONDS, waiting.left())))


def _holder(conn: Connection) -> str:
    """Which server process holds the load lock, and since when, if it can be seen."""
    found = conn.execute(
        text(
            "SELECT a.pid, a.xact_start FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
            " WHERE l.locktype = 'advisory' AND l.granted"
            " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND l.classid = :high AND l.objid = :low AND l.objsubid = 1"
        ).bindparams(high=LOCK_KEY >> 32, low=LOCK_KEY & 0xFFFFFFFF)
    ).first()
    if found is None or found.xact_start is None:
        return ""
    started = found.xact_start.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    return f" (server process {found.pid}, since {started})"


def take_stamp(conn: Connection, now: datetime) -> datetime:
    """The load's one stamp: `now` (naive UTC), or just after the store's last stamp when
    that is not earlier (a clock set back, two loads in one millisecond, a stamp kept as
    given). Call it holding the lock."""
    clock = tables.store_clock
    last = conn.execute(select(clock.c.last_stamp).where(clock.c.id == 1)).scalar()
    if last is None:
        last = latest_stored(conn)
    stamp = truncate_ms(now)
    if last is None or stamp > last:
        return stamp
    if last >= datetime.max - _TICK:
        # Only a stamp kept as given by an earlier version could be this late.
        raise BundleError(
            [f"store: its last stamp {format_datetime(last)} leaves no later moment to stamp with"]
        )
    return last + _TICK


def latest_stored(conn: Connection) -> datetime | None:
    """The latest `updated_at` (or `deleted_at`) the store holds: where the clock starts."""
    latest: datetime | None = None
    for table in tables.metadata.sorted_tables:
        column = table.c.get("updated_at", table.c.get("deleted_at"))
        if column is None:
            continue
        found = conn.execute(select(func.max(column))).scalar()
        if found is not None and (latest is None or found > latest):
            latest = found
    return latest


def advance_clock(conn: Connection, stamp: datetime, latest_given: datetime | None) -> None:
    """Remember the last stamp given: this load's, or a later one it kept as given."""
    last = stamp if latest_given is None or latest_given < stamp else latest_given
    clock = tables.store_clock
    changed = conn.execute(update(clock).where(clock.c.id == 1).values(last_stamp=last))
    if not changed.rowcount:
        conn.execute(insert(clock).values(id=1, last_stamp=last))
