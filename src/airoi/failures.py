"""How a failure is answered and logged, on every path (SEMANTICS R15).

One rule for the HTTP API, the tool endpoint, readiness, the rate limiter and start-up: a
failure is logged as its class, the route asked and the request id. Never its text: a
database error's text holds the statement, its parameters (a token hash among them) and
the driver's words, which can name the server, the user and a stored value.

A database that is away, too slow or cannot be read is a 503 with Retry-After (SPEC 7);
`database_failure` decides which errors those are.

The libraries under the service log failures of their own, with the same text in them
(SQLAlchemy's pool, psycopg, the MCP SDK). `redact_library_logs` keeps their chatter below
WARNING out of the log unless an operator asks for it, and rewrites what they do log to
its fixed words and the exception's class.
"""

from __future__ import annotations

import logging
import re
import traceback
from types import TracebackType

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, ProgrammingError
from sqlalchemy.exc import TimeoutError as SATimeoutError

from airoi.errors import ApiError

RETRY_AFTER_SECONDS = 5
UNAVAILABLE_MESSAGE = "The database cannot be reached right now; try again shortly."
UNREADABLE_MESSAGE = "The store cannot be read right now; try again shortly."
FAILED_MESSAGE = "The service failed to answer; the error has been logged."

log = logging.getLogger("airoi")


def database_unavailable(message: str = UNAVAILABLE_MESSAGE) -> ApiError:
    return ApiError(503, message, headers={"Retry-After": str(RETRY_AFTER_SECONDS)})


# psycopg's classes for SQLSTATE 42P01 and 42703: a table or column the statement names
# is not in the database.
_SCHEMA_GONE = frozenset({"UndefinedTable", "UndefinedColumn"})


def database_failure(exc: BaseException) -> ApiError | None:
    """A 503 for a database that is away or too slow; None for any other error.

    Only the driver's error class and a few fixed words of SQLite's are looked at.
    """
    if isinstance(exc, SATimeoutError):  # no pooled connection came free in time
        return database_unavailable("The database is busy; try again shortly.")
    if isinstance(exc, ProgrammingError) and type(exc.orig).__name__ in _SCHEMA_GONE:
        # PostgreSQL: a table or column dropped or renamed under the service; the store
        # cannot be read as it is (SQLite says so by an OperationalError, answered below).
        return database_unavailable()
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
    return database_unavailable()


def failure_class(exc: BaseException) -> str:
    """What is logged of an exception: its class, the driver's when the database raised it."""
    orig = exc.orig if isinstance(exc, DBAPIError) else None
    return type(orig or exc).__name__


def log_failure(exc: BaseException, where: str, request_id: str | None) -> ApiError | None:
    """Log `exc` of a request by class, route and request id; the 503 when the database failed.

    A fault of the database is one line with no traceback; any other failure adds where it
    was raised (file, line and the code on it), never the exception's text.
    """
    unavailable = database_failure(exc)
    if unavailable is not None:
        log.warning(
            "database unavailable on %s (request %s): %s", where, request_id, failure_class(exc)
        )
        return unavailable
    log.error(
        "unhandled %s on %s (request %s)\n%s",
        failure_class(exc),
        where,
        request_id,
        raised_at(exc.__traceback__),
    )
    return None


def log_unreadable(exc: BaseException, where: str, request_id: str | None) -> ApiError:
    """Log a store that could not be read (away, or not readable as a store) and give its 503."""
    unavailable = database_failure(exc)
    log.warning(
        "%s on %s (request %s): %s",
        "database unavailable" if unavailable else "store cannot be read",
        where,
        request_id,
        failure_class(exc),
    )
    return unavailable or database_unavailable(UNREADABLE_MESSAGE)


def log_discarded(exc: BaseException, where: str, request_id: str | None) -> None:
    """A connection that failed as it went back to the pool (its server gone): discarded,
    and the answer already built on it stands."""
    log.warning(
        "connection discarded after the answer on %s (request %s): %s",
        where,
        request_id,
        failure_class(exc),
    )


def raised_at(tb: TracebackType | None) -> str:
    return "".join(traceback.format_list(traceback.extract_tb(tb)))


# The loggers of the libraries that see the service's failures: their records can carry a
# statement, its parameters, a connection's summary or the driver's message.
LIBRARY_LOGGERS = ("sqlalchemy", "psycopg", "mcp")
# The exception a request's body raises, read after its client went away (the tool
# endpoint's SDK logs it as an error of its own).
CLIENT_DISCONNECT = "ClientDisconnect"
# A library's message is kept up to the first character that may start a value put into it
# (a repr, a quoted string, key=value, a host:port, a %-placeholder).
_FIXED_WORDS = re.compile(r"[^<>'\"=(:@/%\[{]*")


class LibraryRecord(logging.Filter):
    """Rewrites a library's record to its fixed words and the class of its exception."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if type(exc).__name__ == CLIENT_DISCONNECT:
            return False  # the client's departure, not a failure: its access line says 499
        text = record.msg if isinstance(record.msg, str) else type(record.msg).__name__
        matched = _FIXED_WORDS.match(text)
        words = matched.group().strip() if matched else ""
        classes = [failure_class(exc)] if exc is not None else []
        args = record.args if isinstance(record.args, tuple) else ()
        classes += [failure_class(a) for a in args if isinstance(a, BaseException)]
        record.msg = f"{record.name}: {words or 'event'}"
        if classes:
            record.msg += f" ({', '.join(classes)})"
        record.args = ()
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        return True


_REDACTION = LibraryRecord()


def redact_library_logs() -> None:
    """Apply the log rule to the libraries' loggers (those that exist now: call it once the
    engine and the tool server are made, which creates theirs).

    A library logger nobody configured is set to WARNING: SQLAlchemy logs every statement and
    its parameters at INFO, and rows at DEBUG, whenever the root logger is that verbose.
    """
    manager = logging.root.manager
    names = [
        name
        for name in list(manager.loggerDict)
        if any(name == top or name.startswith(f"{top}.") for top in LIBRARY_LOGGERS)
    ]
    for name in {*LIBRARY_LOGGERS, *names}:
        logger = logging.getLogger(name)
        if name in LIBRARY_LOGGERS and logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)
        if _REDACTION not in logger.filters:
            logger.addFilter(_REDACTION)
