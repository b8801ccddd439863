"""Liveness and readiness, outside /api/v1 and without a token.

`GET /healthz` says the process answers: it touches no database and no counter store.
`GET /readyz` says the store can be read the way requests read it: a real table, through a
connection of the serving engine held as a request holds it, and every table and column the
service reads is there (on SQLite, the search tool's index too, and the file at the store's
path). 200, or 503 with the SPEC 7 body and Retry-After when the store is away, too slow, or
cannot be read (a file that is not a database, a table missing), each logged as the API logs
a failure (SEMANTICS R15).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import msgspec
from litestar import Request, get
from sqlalchemy import Engine, Select, column, exists, literal, or_, select, table, text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as SATimeoutError

from airoi.db.engine import NO_FILE, missing_sqlite_file
from airoi.db.search_index import FTS_TABLE
from airoi.db.tables import accounts, metadata, tokens, users
from airoi.failures import log_unreadable
from airoi.observability import asked, held_context

HEALTHZ_PATH = "/healthz"
READYZ_PATH = "/readyz"

# What every API request reads first: a token, its user and their account (one row at most;
# never the hash).
_READINESS = (
    select(tokens.c.user_id, accounts.c.id)
    .join(users, users.c.id == tokens.c.user_id)
    .join(accounts, accounts.c.id == users.c.account_id)
    .limit(1)
)
# Every table and column the service reads, named and read no row of: a table dropped or
# renamed under the service (which its requests would meet) makes the store not ready.
_SCHEMA = select(literal(1)).where(
    or_(*(exists(select(*table.c).limit(0)) for table in metadata.sorted_tables))
)


# On SQLite, the search tool's full-text index (airoi.db.search_index), a table of its own
# over tables of its own: a match is asked of it, which reads them (naming it read none).
_SEARCH_INDEX: Select[Any] = (
    select(column("rowid"))
    .select_from(table(FTS_TABLE))
    .where(text(f"{FTS_TABLE} MATCH '\"ready\"'"))
    .limit(1)
)


class Health(msgspec.Struct):
    status: str


@get(HEALTHZ_PATH, opt={"public": True}, include_in_schema=False, sync_to_thread=False)
def healthz() -> Health:
    return Health(status="alive")


@get(READYZ_PATH, opt={"public": True}, include_in_schema=False, sync_to_thread=True)
def readyz(request: Request[Any, Any, Any]) -> Health:
    # In a worker thread: an unreachable server takes up to the connect timeout.
    engine: Engine = request.app.state.engine
    context = held_context(request.scope)  # type: ignore[arg-type]
    try:
        missing = missing_sqlite_file(engine)
        if missing is not None:
            # Removed under the service: kept connections still read the removed file, and
            # every new one fails (airoi.db.engine), so requests answer 503 by turns.
            raise OperationalError("readiness", None, sqlite3.OperationalError(NO_FILE))
        connection = context.hold(engine)
        connection.execute(_READINESS).all()
        connection.execute(_SCHEMA).all()
        if engine.dialect.name == "sqlite":
            connection.execute(_SEARCH_INDEX).all()
    except (DBAPIError, SATimeoutError) as exc:
        route, _ = asked(request.scope)  # type: ignore[arg-type]
        raise log_unreadable(exc, route, context.request_id) from None
    finally:
        context.release()
    return Health(status="ready")


__all__ = [
    "HEALTHZ_PATH",
    "READYZ_PATH",
    "healthz",
    "readyz",
]
