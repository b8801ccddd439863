"""What every request leaves behind: its X-Request-Id, one access-log line, and metrics.

`observe(app, metrics)` wraps the app's ASGI handler outermost. It gives each
request a `RequestContext` in its scope, which the inner layers fill (the
authentication middleware sets the account and the rate-limit headers and holds
the request's database connection; the error handler reads the request id into
the error body), and on the way out it returns the connection to the pool, adds
the context's headers to the response, writes one line on the `airoi.access` logger
(its fields beside time, level and logger in JSON, airoi.logs) and counts the request by
route template and status.

The log line holds the method, the path without its query string (only in the form its
route serves, ids in digits; null otherwise), the route template, the status, the duration,
the account id and the request id: never a query value, a token, an e-mail address or a
credential (SEMANTICS R15).
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from random import getrandbits
from typing import TYPE_CHECKING, Any, cast

import msgspec
from litestar import Litestar, Request, Response, get
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client import values as prometheus_values
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from airoi.conditional import GZIP_MIN_BYTES, gzipped, takes_gzip
from airoi.db import kept_connections
from airoi.errors import ApiError, ErrorBody, ErrorDetail
from airoi.failures import FAILED_MESSAGE, log_discarded, log_failure
from airoi.logs import FIELDS
from airoi.tokens import SECRET_MIN_LENGTH

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

SCOPE_KEY = "airoi.request"
# What a request is logged and counted as when its client went away before the answer.
CLIENT_CLOSED = 499
REQUEST_ID_HEADER = "X-Request-Id"
METRICS_PATH = "/metrics"
# Set by `airoi serve` for its workers (the library reads it when first imported).
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LABELS = ("method", "route", "status")
UNMATCHED_ROUTE = "unmatched"
# Any other method a client makes up is counted as "other", so labels stay few.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"})

# A client's own id is echoed and logged when it is plain and shorter than any token (R29),
# so a token sent as one, by mistake, never is (R15); otherwise one is made up.
_SANE_REQUEST_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._:-]{{0,{SECRET_MIN_LENGTH - 2}}}")
# Latency buckets in seconds: a keyset page is about a millisecond, a timeout five seconds.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

access_log = logging.getLogger("airoi.access")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass
class RequestContext:
    request_id: str
    method: str
    account_id: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    # The one pooled connection a request reads through: the token lookup checks it out,
    # the handler uses it, and it goes back to the pool before the first byte of the answer
    # is sent (or when the request ends, whichever is first), so it is never held while
    # the answer waits on a slow client.
    connection: Connection | None = None
    # The request's scope, whose route template names the request in a log line.
    scope: Scope | None = field(default=None, repr=False)
    # Set by a layer that answers 200 inside a protocol of its own (the tool endpoint) when
    # the database failed under it: the answer is this 503 instead (SPEC 7).
    unavailable: ApiError | None = None
    # Gives back the request's place at the store's gate (airoi.store_access): when its answer
    # starts, or when it ends.
    leave_gate: Callable[[], None] | None = None
    # The client went away before its answer began (its body cut short): logged and counted
    # as 499, the status proxies give a request its client closed, not as the app's failure.
    client_gone: bool = False
    # The server refused the request's body while the app read it (413, 408: airoi.serving)
    # and answered so itself: logged and counted under that status.
    refused: int | None = None

    def hold(self, engine: Engine) -> Connection:
        """The request's connection, taken on first call (airoi.db.kept_connections): only ever
        called in a worker thread where a checkout may wait on a server (airoi.store_access)."""
        if self.connection is None:
            self.connection = kept_connections.take(engine)
        return self.connection

    def release(self) -> None:
        """Give the request's connection back; one that fails to go back is discarded and
        logged, and whatever was answered from it stands. Never raises."""
        connection, self.connection = self.connection, None
        if connection is None:
            return
        failure = kept_connections.give_back(connection)
        if failure is not None:
            log_discarded(failure, self.route(), self.request_id)

    def leave(self) -> None:
        """Give back the request's place at the store's gate, if it has one."""
        leave_gate, self.leave_gate = self.leave_gate, None
        if leave_gate is not None:
            leave_gate()

    def route(self) -> str:
        """The route template asked (the path, when it is in its route's form)."""
        if self.scope is None:
            return UNMATCHED_ROUTE
        route, path = asked(self.scope)
        return path or route


def request_context(scope: MutableMapping[str, Any]) -> RequestContext | None:
    context = scope.get(SCOPE_KEY)
    return context if isinstance(context, RequestContext) else None


def held_context(scope: MutableMapping[str, Any]) -> RequestContext:
    """The request's context, which `observe` gives every HTTP request (the layers that hold
    the request's connection rely on it being there to return it)."""
    context = request_context(scope)
    if context is None:
        raise RuntimeError("the app's outermost layer gives every request a context")
    return context


def request_id_of(request: Request[Any, Any, Any]) -> str | None:
    context = request_context(request.scope)  # type: ignore[arg-type]
    return context.request_id if context else None


def _request_id(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            text = bytes(value).decode("latin-1")
            if _SANE_REQUEST_ID.fullmatch(text):
                return text
            break
    return new_request_id()


def new_request_id() -> str:
    """An id for a request whose client sent none (or one not echoed): a correlation id, not
    a secret. 128 bits of the process's own generator (seeded from the system's randomness,
    and again in a forked child), 32 hex digits as uuid4().hex wrote them; uuid4 asked the
    kernel for each, a system call on every request."""
    return f"{getrandbits(128):032x}"


class Metrics:
    """Request counts and a latency histogram by method, route template and status, and the
    process metrics, in the Prometheus text format.

    One process (an app made by `create_app`, or `airoi serve` with one worker): a registry of
    the app's own. Several workers (`airoi serve --workers N`, which sets
    PROMETHEUS_MULTIPROC_DIR before they start): each worker records into its own files in
    that directory and `render` sums every worker's, so any worker answers the same totals
    (a counter never goes back because another worker answered the scrape). There, the
    process metrics are each worker's, labelled by pid (`WorkerProcesses`).
    """

    def __init__(self, directory: str | None = None) -> None:
        self.directory = directory
        self.registry = CollectorRegistry()
        if directory and not getattr(prometheus_values.ValueClass, "_multiprocess", False):
            # The library picks where values live when it is first imported.
            raise RuntimeError(
                f"{MULTIPROC_ENV} must be set before the process imports prometheus_client"
            )
        self.requests = Counter(
            "airoi_http_requests",
            "Requests answered, by method, route and status.",
            LABELS,
            registry=None,
        )
        self.durations = Histogram(
            "airoi_http_request_duration_seconds",
            "Time to answer, by method, route and status.",
            LABELS,
            buckets=BUCKETS,
            registry=None,
        )
        # Not registered: recorded in memory, or into the directory's files when there is one.
        # One pair of children per series, found with one dict look-up per request.
        self._series: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        if directory:
            self.registry.register(WorkerFiles(directory))
            self.registry.register(WorkerProcesses(directory))
        else:
            self.registry.register(_WithoutCreated(self.requests, self.durations))
            ProcessCollector(registry=self.registry)

    @classmethod
    def from_env(cls) -> Metrics:
        """Across workers when PROMETHEUS_MULTIPROC_DIR names a directory, else this process."""
        return cls(os.environ.get(MULTIPROC_ENV) or None)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, status)
        series = self._series.get(key)
        if series is None:
            labels = (method, route, str(status))
            series = self._series.setdefault(
                key, (self.requests.labels(*labels), self.durations.labels(*labels))
            )
        series[0].inc()
        series[1].observe(seconds)

    def exposition(self) -> bytes:
        """The Prometheus text exposition format, served as `CONTENT_TYPE_LATEST`."""
        return generate_latest(self.registry)

    def render(self) -> str:
        return self.exposition().decode()


class _WithoutCreated:
    """One process's request metrics without the `_created` series, which the
    multiprocess aggregate has not either: the same series whatever the worker count."""

    def __init__(self, *metrics: Counter | Histogram) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[Metric]:
        for metric in self._metrics:
            for family in metric.collect():
                family.samples = [s for s in family.samples if not s.name.endswith("_created")]
                yield family


# The files the metrics library writes in a multiprocess directory: counter_<pid>.db,
# histogram_<pid>.db, gauge_<mode>_<pid>.db, summary_<pid>.db. Only these are ever removed
# there: an operator's directory may hold other files (a SQLite store among them).
_WORKER_FILE = re.compile(r"(?:counter|histogram|summary|gauge_[a-z]+)_([0-9]+)\.db")


def clear_worker_files(directory: Path) -> None:
    """Remove the metrics library's files from `directory`, and nothing else."""
    for path in directory.iterdir():
        if _WORKER_FILE.fullmatch(path.name) and path.is_file():
            path.unlink(missing_ok=True)


def worker_files(directory: str) -> list[str]:
    return sorted(
        os.path.join(directory, name)
        for name in os.listdir(directory)
        if _WORKER_FILE.fullmatch(name)
    )


class WorkerFiles:
    """Every worker's metrics, summed: what the library's MultiProcessCollector gives, read
    from the library's own files alone (it would read any other `*.db` file there too, and
    fail on it)."""

    def __init__(self, directory: str) -> None:
        self._directory = directory

    def collect(self) -> Iterable[Metric]:
        merged: Iterable[Metric] = MultiProcessCollector.merge(  # type: ignore[no-untyped-call]
            worker_files(self._directory), accumulate=True
        )
        return merged


class WorkerProcesses:
    """The process metrics (CPU, memory, open files, start time) of every live worker, each
    labelled by its pid, read from /proc when scraped: one worker's own numbers would jump
    between scrapes as the workers take turns answering, and a gauge summed over workers
    says nothing of any one of them. A worker is known by its files in the directory (it
    has answered a request) or by answering this scrape; one is taken only while it runs
    beside this one (same parent), so a pid reused by another program is not."""

    def __init__(self, directory: str) -> None:
        self._directory = directory

    def pids(self) -> list[int]:
        own, parent = os.getpid(), os.getppid()
        found = {own}
        for name in os.listdir(self._directory):
            match = _WORKER_FILE.fullmatch(name)
            if match:
                found.add(int(match.group(1)))
        return sorted(pid for pid in found if pid == own or _parent_of(pid) == parent)

    def collect(self) -> Iterable[Metric]:
        families: dict[str, Metric] = {}
        for pid in self.pids():
            for family in ProcessCollector(pid=_constant(pid), registry=None).collect():
                merged = families.get(family.name)
                if merged is None:
                    merged = families[family.name] = Metric(
                        family.name, family.documentation, family.type
                    )
                for sample in family.samples:
                    merged.add_sample(sample.name, {**sample.labels, "pid": str(pid)}, sample.value)
        return list(families.values())


def _constant(pid: int) -> Callable[[], int]:
    return lambda: pid


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            # pid (comm) state ppid ...: comm may hold spaces and parentheses.
            return int(stat.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def log_access(
    method: str,
    path: str | None,
    route: str,
    status: int,
    seconds: float,
    account_id: int | None,
    request_id: str,
) -> None:
    """Write the access line of one request: never a query value, a token, an e-mail address or
    a credential (SEMANTICS R15). In JSON its fields stand beside time, level and logger
    (airoi.logs); in text they are the message."""
    if not access_log.isEnabledFor(logging.INFO):
        return
    duration_ms = round(seconds * 1000, 3)
    fields = {
        "method": method,
        "path": path,
        "route": route,
        "status": status,
        "duration_ms": duration_ms,
        "account_id": account_id,
        "request_id": request_id,
    }
    access_log.info(
        "%s %s %s %s ms account %s request %s",
        method,
        route if path is None else path,
        status,
        duration_ms,
        "-" if account_id is None else account_id,
        request_id,
        extra={FIELDS: fields},
    )


_ROUTE_FORMS: dict[str, re.Pattern[str]] = {}


def asked(scope: Scope) -> tuple[str, str | None]:
    """The route template a request matched ("unmatched" if none), and its path as it may be
    logged (`loggable_path`)."""
    route = scope.get("path_template") or UNMATCHED_ROUTE
    return route, loggable_path(scope.get("path", ""), route)


def loggable_path(path: str, route: str) -> str | None:
    """`path` when it is its route's own, each path parameter a whole number; else None.

    A client's path is its own text: a token pasted into it, an e-mail address, a query
    string escaped into it (SEMANTICS R15). The route template always says what was asked."""
    if path == route:
        return path
    if route == UNMATCHED_ROUTE or "{" not in route:
        return None
    form = _ROUTE_FORMS.get(route)
    if form is None:
        parts = re.split(r"\{[^}]*\}", route)
        form = _ROUTE_FORMS[route] = re.compile("[0-9]{1,19}".join(map(re.escape, parts)))
    return path if form.fullmatch(path) else None


# This request's answer could not be written: its connection was gone (set in the request's
# own task, where the server logs what follows the app's return).
_ANSWER_LOST: ContextVar[bool] = ContextVar("airoi_answer_lost", default=False)
_UNFINISHED = "ASGI callable returned without completing response."


def _connection_lost(exc: Exception) -> bool:
    """Whether the server's `send` failed because the client's connection is gone: a reset
    socket (OSError), or uvloop's closed transport. The server marks only the last request it
    read from a connection as disconnected; when the client pipelined several and left, the
    one still answering writes to the closed transport, and uvloop raises this RuntimeError."""
    return isinstance(exc, OSError) or (
        isinstance(exc, RuntimeError) and str(exc).endswith("the handler is closed")
    )


class _UnfinishedAfterLoss(logging.Filter):
    """Drops the server's error that a request's answer was left unfinished when that answer's
    connection was gone: the access line says 499 for it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_ANSWER_LOST.get() and record.getMessage() == _UNFINISHED)


_UNFINISHED_AFTER_LOSS = _UnfinishedAfterLoss()


def observe(app: Litestar, metrics: Metrics) -> None:
    """Wrap the app's ASGI handler: request id, context headers, access log, metrics."""
    inner: Any = app.asgi_handler
    server_log = logging.getLogger("uvicorn.error")
    if _UNFINISHED_AFTER_LOSS not in server_log.filters:
        server_log.addFilter(_UNFINISHED_AFTER_LOSS)

    async def handler(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        context = RequestContext(request_id=_request_id(scope), method=scope["method"], scope=scope)
        scope[SCOPE_KEY] = context
        started = time.perf_counter()
        status = 500
        answered = lost = False

        if scope["method"] == "POST":  # the one method served with a body (/mcp, OAuth)
            read = receive

            async def receive() -> Message:
                message = await read()
                if message["type"] == "http.disconnect" and not answered:
                    context.client_gone = True
                return message

        async def send_with_headers(message: Message) -> None:
            nonlocal status, answered, lost
            if lost:
                return  # nothing more reaches a client that is gone
            if message["type"] == "http.response.start":
                answered = True
                context.release()
                context.leave()
                status = message["status"]
                extra = [(REQUEST_ID_HEADER.lower(), context.request_id)]
                extra += [(k.lower(), v) for k, v in context.response_headers.items()]
                names = {name.encode() for name, _ in extra}
                headers = [(k, v) for k, v in message.get("headers", ()) if k.lower() not in names]
                headers += [(k.encode(), v.encode("latin-1")) for k, v in extra]
                message = {**message, "headers": headers}
            try:
                await send(message)
            except Exception as exc:
                if not _connection_lost(exc):
                    raise
                # As the server does for a client it knows is gone: the rest is not sent,
                # and the app finishes as if it had been.
                lost = context.client_gone = True
                _ANSWER_LOST.set(True)

        try:
            await inner(scope, receive, send_with_headers)
        except Exception as exc:
            # What got past the app's error handler (a failure while the answer was being
            # sent): logged by the one rule, never handed to the server, which would log its
            # text with a traceback and answer a plain-text 500 (SEMANTICS R15).
            unavailable = log_failure(exc, context.route(), context.request_id)
            if not answered:
                error = unavailable or ApiError(500, FAILED_MESSAGE)
                await send_with_headers(_error_start(error))
                await send_with_headers(_error_body(error, context.request_id))
        finally:
            context.release()
            context.leave()
            context.scope = None  # no cycle through the scope: freed by reference counting
            seconds = time.perf_counter() - started
            if context.refused is not None:
                status = context.refused
            elif lost or (context.client_gone and (not answered or status >= 500)):
                status = CLIENT_CLOSED
            route, path = asked(scope)
            method = context.method if context.method in _METHODS else "other"
            metrics.observe(method, route, status, seconds)
            log_access(
                context.method, path, route, status, seconds, context.account_id, context.request_id
            )

    app.asgi_handler = cast(Any, handler)


def _error_start(error: ApiError) -> Message:
    headers = [(name.lower().encode(), value.encode()) for name, value in error.headers.items()]
    headers.append((b"content-type", b"application/json"))
    return {"type": "http.response.start", "status": error.status, "headers": headers}


def _error_body(error: ApiError, request_id: str) -> Message:
    detail = ErrorDetail(status=error.status, message=error.message, request_id=request_id)
    return {"type": "http.response.body", "body": msgspec.json.encode(ErrorBody(error=detail))}


@get(
    METRICS_PATH,
    opt={"public": True},  # app.PUBLIC_OPT: no token
    include_in_schema=False,
    # In a worker thread: the text of a hundred series takes tens of milliseconds to write,
    # which would hold every other request of the worker on its event loop meanwhile.
    sync_to_thread=True,
)
def metrics_endpoint(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Prometheus metrics (summed over the workers, when there are several); no token (it
    names routes, never accounts)."""
    metrics: Metrics = request.app.state.metrics
    body = metrics.exposition()
    # Given whole, so the framework adds no charset of its own to it.
    headers = {"content-type": CONTENT_TYPE_LATEST, "vary": "Accept-Encoding"}
    # Prometheus asks for gzip; each route and status answered adds ~2 KB of histogram lines.
    if takes_gzip(request.headers.get("accept-encoding")) and len(body) >= GZIP_MIN_BYTES:
        body = gzipped(body)
        headers["content-encoding"] = "gzip"
    return Response(body, headers=headers)


__all__ = [
    "METRICS_PATH",
    "Metrics",
    "RequestContext",
    "held_context",
    "log_access",
    "metrics_endpoint",
    "new_request_id",
    "observe",
    "request_context",
    "request_id_of",
]
