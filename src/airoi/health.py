"""Liveness and readiness, outside /api/v1 and without a token.

`GET /healthz` says the process answers (no database). `GET /readyz` says the
database answers too: 200, or 503 with the SPEC 7 body and Retry-After.
"""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, get
from sqlalchemy import Engine, text
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as SATimeoutError

from airoi.errors import ApiError

HEALTHZ_PATH = "/healthz"
READYZ_PATH = "/readyz"
RETRY_AFTER_SECONDS = 5


class Health(msgspec.Struct):
    status: str


def database_unavailable(message: str) -> ApiError:
    return ApiError(503, message, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


@get(HEALTHZ_PATH, opt={"public": True}, include_in_schema=False, sync_to_thread=False)
def healthz() -> Health:
    return Health(status="alive")


@get(READYZ_PATH, opt={"public": True}, include_in_schema=False, sync_to_thread=True)
def readyz(request: Request[Any, Any, Any]) -> Health:
    # In a worker thread: an unreachable server takes up to the connect timeout.
    engine: Engine = request.app.state.engine
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))
    return Health(status="ready")


def database_failure(exc: Exception) -> ApiError | None:
    """A 503 for a database that is away or too slow; None for any other error.

    Only class names are looked at and logged: the statement and its parameters
    (a token hash among them) never reach a log line (SEMANTICS R15).
    """
    if isinstance(exc, SATimeoutError):  # no pooled connection came free in time
        return database_unavailable("The database is busy; try again shortly.")
    if not isinstance(exc, OperationalError | InterfaceError):
        return None
    cause = exc.orig
    if type(cause).__name__ == "QueryCanceled" or str(cause) == "interrupted":
        return database_unavailable(
            "The request took longer than the service allows; try again shortly."
        )
    if "readonly" in str(cause) or "read-only" in str(cause):  # a write attempt is a bug: 500
        return None
    if str(cause) == "integer overflow":  # SQLite: a sum past 64 bits, not a database away: 500
        return None
    return database_unavailable("The database cannot be reached right now; try again shortly.")
