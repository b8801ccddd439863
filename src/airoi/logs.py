"""The service's log: every logger of `airoi serve` through one handler on stderr, each record
one line of JSON or of text (AIROI_LOG_FORMAT).

JSON: one object per line with `time` (ISO 8601 UTC to the millisecond, `Z`), `level`,
`logger` and `message`. A record that carries fields (the access line, airoi.observability)
has them beside time, level and logger in place of a message; a traceback, if one is ever
logged, stays inside the object (`exception`, `stack`). Text:
`2026-11-25T22:41:07.123Z INFO airoi.access: GET /api/v1/roi 200 1.234 ms ...`.

What a record says is the log rule's business (SEMANTICS R15, airoi.failures): the libraries'
records are rewritten on their own loggers before any handler sees them, so both formats write
the same words. The libraries stay at WARNING and above whatever AIROI_LOG_LEVEL says: below
it SQLAlchemy logs statements and their values, and the tool SDK a line per call.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

import msgspec

# The record attribute (`extra={FIELDS: {...}}`) whose fields a JSON line holds in place of
# its message.
FIELDS = "fields"
# The service's own loggers, at AIROI_LOG_LEVEL: airoi's and the server's.
SERVICE_LOGGERS = ("airoi", "uvicorn", "uvicorn.error", "uvicorn.asgi")
# At WARNING and above whatever the level: the libraries that see statements, parameters and
# connections (airoi.failures.LIBRARY_LOGGERS), and the server's own access line, which holds
# the query string (the service writes its own, without it).
QUIET_LOGGERS = ("sqlalchemy", "psycopg", "mcp", "uvicorn.access")

_encode = msgspec.json.Encoder().encode


class UtcFormatter(logging.Formatter):
    """`%(asctime)s` as 2026-11-25T22:41:07.123Z."""

    # The last second written, as text: a busy worker writes many lines in each.
    _second: tuple[int, str] = (-1, "")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        whole = int(record.created)
        second, text = self._second
        if whole != second:
            text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
            self._second = (whole, text)
        return f"{text}.{int(record.msecs):03d}Z"


class TextFormatter(UtcFormatter):
    """One line a person reads: time, level, logger, message (a traceback below it)."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")


class JsonFormatter(UtcFormatter):
    """One JSON object on one line per record, in ASCII."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
        }
        fields = record.__dict__.get(FIELDS)
        if isinstance(fields, dict):
            entry.update(fields)
        else:
            entry["message"] = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return one_line(entry)


def one_line(entry: dict[str, Any]) -> str:
    """`entry` as JSON in ASCII: a line break of any kind (U+2028, NEL) escaped, so a reader
    splitting on every line break never cuts it."""
    try:
        text = _encode(entry).decode()
        if text.isascii():
            return text
    except (UnicodeEncodeError, TypeError):  # a lone surrogate, which UTF-8 cannot hold
        pass
    return json.dumps(entry, separators=(",", ":"), default=str)  # rare: the slow way


class ServiceHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The one handler of `airoi serve`'s processes, on stderr."""

    def __init__(self, log_format: str) -> None:
        super().__init__(sys.stderr)
        self.log_format = log_format
        self.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())


def configure_logging(log_format: str, level: str) -> None:
    """Every logger through one handler on stderr in `log_format`; airoi's and the server's
    loggers at `level`, the others at WARNING or above. Once per process: a second call with
    the same format changes nothing (`airoi serve` with one worker calls it before the server
    starts and again as the app is made)."""
    root = logging.getLogger()
    threshold = logging.getLevelName(level.upper())
    if not isinstance(threshold, int):
        raise ValueError(f"not a log level: {level!r}")
    quiet = max(threshold, logging.WARNING)
    current = root.handlers
    if not (
        len(current) == 1
        and isinstance(current[0], ServiceHandler)
        and current[0].log_format == log_format
    ):
        # Whatever was there (a library's basicConfig, a server's own config) is replaced.
        logging.basicConfig(handlers=[ServiceHandler(log_format)], force=True)
    root.setLevel(quiet)
    for name, at in (
        *((name, threshold) for name in SERVICE_LOGGERS),
        *((name, quiet) for name in QUIET_LOGGERS),
        ("airoi.access", logging.NOTSET),  # airoi's level
    ):
        logger = logging.getLogger(name)
        logger.handlers.clear()  # each through the root's handler, and only through it
        logger.propagate = True
        logger.setLevel(at)
    # Python's warnings (a deprecation in a library, say) as records of the `py.warnings`
    # logger, not bare lines on stderr.
    logging.captureWarnings(True)
    # Neither format writes the thread, the process, its name or where the call was made: each
    # record would otherwise look them up, walking the caller's frames for the last, as it is
    # made, and the access line is made for every request (the logging HOWTO's "Optimization").
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    logging._srcfile = None


__all__ = [
    "FIELDS",
    "JsonFormatter",
    "TextFormatter",
    "configure_logging",
    "one_line",
]
