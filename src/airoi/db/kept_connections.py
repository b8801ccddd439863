"""Connections kept between requests on SQLite: a request's connection taken from, and given
back to, its engine's shelf.

On SQLite the connections a request gives back are kept open, each still checked out of the
pool with its `Connection` around it, and the next request takes one from the shelf: the
pool's checkout and return and a new `Connection` cost a request 50.8 µs where taking from
the shelf and giving back cost 8.6 (the two measured alone, side by side; the limit-100 page
takes about 1,100 µs in process). What the pool did on the way back is done here as well:
the transaction is ended (a read-only one: nothing is lost) and the statement deadline
disarmed, so a shelved connection is as one fresh from the pool. A connection that cannot be
given back so is discarded, as the pool would. At most `room` wait there; past it, and on a
database server (where the pool's checkout also asks whether the server has gone, which a
connection kept aside would skip), a connection goes back to the pool as before.

A shelved connection is checked out of the pool while it waits, so the pool's count of
checked-out connections includes the shelf's (`shelved`); no request holds it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine, event
from sqlalchemy.pool import QueuePool

from airoi.db.engine import close_or_discard, discard, end_transaction

# Connections kept aside per engine, at most: as many as a worker's requests hold at once on
# SQLite, where every request's database work up to its answer runs on the event loop.
SHELF_SIZE = 4


@dataclass
class _Shelf:
    room: int  # how many may wait here (`room`); 0: none is ever kept
    idle: list[Connection] = field(default_factory=list)
    # How many times the engine was disposed of: a connection checked out before then is of
    # a pool the engine no longer has, and is never shelved.
    disposals: int = 0


# Under this key of a connection's `info`: the shelf's `disposals` when it was checked out.
_CHECKED_OUT_AT = "airoi_shelf_disposals"


_SHELVES: weakref.WeakKeyDictionary[Engine, _Shelf] = weakref.WeakKeyDictionary()


def room(engine: Engine) -> int:
    """How many connections the engine's shelf keeps at most: none on a database server, nor
    for a pool of one; else `SHELF_SIZE`, leaving at least one of the pool's own connections
    (beside its overflow) to what takes none from the shelf (a tool call, a sign-in)."""
    pool = engine.pool
    if engine.dialect.name != "sqlite" or not isinstance(pool, QueuePool):
        return 0
    return max(0, min(SHELF_SIZE, pool.size() - 1))


def _shelf(engine: Engine) -> _Shelf:
    """The engine's shelf, made on first use with its room."""
    shelf = _SHELVES.get(engine)
    if shelf is None:
        shelf = _SHELVES.setdefault(engine, _Shelf(room(engine)))
        if shelf.room:
            # Disposing of the engine drops what its pool keeps, and what its shelf keeps too.
            event.listen(engine, "engine_disposed", _disposed)
    return shelf


def _disposed(engine: Engine) -> None:
    shelf = _SHELVES.get(engine)
    if shelf is not None:
        shelf.disposals += 1
    clear(engine)


def take(engine: Engine) -> Connection:
    """A connection of `engine`: one from its shelf, or else one checked out of its pool."""
    shelf = _shelf(engine)
    idle = shelf.idle
    if idle:
        try:
            return idle.pop()
        except IndexError:  # taken meanwhile by another thread
            pass
    connection = engine.connect()
    if shelf.room:
        connection.info[_CHECKED_OUT_AT] = shelf.disposals
    return connection


def give_back(connection: Connection) -> Exception | None:
    """Shelve `connection`, or return it to its pool; discard it if either fails. Never
    raises: the failure is returned for the caller to log (`close_or_discard`)."""
    shelf = _shelf(connection.engine)
    if (
        len(shelf.idle) >= shelf.room
        or connection.closed
        or connection.invalidated
        or connection.info.get(_CHECKED_OUT_AT) != shelf.disposals
    ):
        return close_or_discard(connection)
    try:
        end_transaction(connection)
    except Exception as exc:
        discard(connection)
        return exc
    shelf.idle.append(connection)
    return None


def shelved(engine: Engine) -> int:
    """How many of the engine's connections wait on its shelf."""
    shelf = _SHELVES.get(engine)
    return 0 if shelf is None else len(shelf.idle)


def held(engine: Engine) -> int:
    """How many of the engine's connections are checked out of its pool and not on its
    shelf: those a request or a tool call holds."""
    checked_out = engine.pool.checkedout() if isinstance(engine.pool, QueuePool) else 0
    return checked_out - shelved(engine)


def clear(engine: Engine) -> None:
    """Return every shelved connection to the pool (before the engine is disposed of)."""
    shelf = _SHELVES.get(engine)
    while shelf is not None and shelf.idle:
        close_or_discard(shelf.idle.pop())


__all__ = ["SHELF_SIZE", "clear", "give_back", "held", "room", "shelved", "take"]
