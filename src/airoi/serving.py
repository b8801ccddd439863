"""The HTTP layer `airoi serve` runs: uvicorn's httptools protocol, with the limits it lacks.

uvicorn (0.54, httptools) keeps every header byte a client sends (two 100 MiB headers were
answered 200 and left 437 MB in the worker; one 1 GiB header held a core for minutes, as the
parser joins the pieces of a header value one read at a time), and waits for the rest of a
half-sent request forever. h11's `h11_max_incomplete_event_size` bounds the head but answers
400 in plain text, times nothing, and serves at about 0.6x of httptools. So this protocol
stays on httptools and holds, per request:

- the head (request line and headers): `MAX_HEAD_BYTES` in all, else 431; a target past
  `MAX_TARGET_BYTES` is 414. Counted as the bytes arrive, so a larger one is refused having
  read at most one more socket read (64 KiB) of it;
- the body: `MAX_BODY_BYTES` (a Content-Length past it, or a chunked body growing past it),
  else 413;
- time: the head must arrive within the header timeout of its first byte (or of the
  connection's opening), however it trickles in, else 408 (a connection that sent nothing is
  just closed); the body gets as long again from the end of the head. An idle keep-alive
  connection is uvicorn's own (closed after 5 s).

Each refusal is the error body of SPEC 7 with a request id of its own, closes the connection
and is logged on `airoi.http` as one line (the status and the limit; never what was sent).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from typing import Any

import httptools
import msgspec
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from airoi.errors import ErrorBody, ErrorDetail
from airoi.observability import new_request_id, request_context
from airoi.settings import HEADER_TIMEOUT_ENV, header_timeout_from_env

MAX_HEAD_BYTES = 16 * 1024
MAX_TARGET_BYTES = 8 * 1024
MAX_BODY_BYTES = 1024 * 1024
# What a body may take on the wire, chunk framing and trailers included: a trailer is a
# header the head's limit no longer counts, and the parser holds one whole before it hands
# it over.
MAX_BODY_WIRE_BYTES = 2 * MAX_BODY_BYTES + MAX_HEAD_BYTES
PROTOCOL = "airoi.serving:LimitedHttpToolsProtocol"
# Once told to stop (SIGTERM, SIGINT), requests in flight get this long to finish; then they
# are cancelled and the process ends. Without it, one client that never read its answer held
# the stop for as long as it stayed connected, the port already closed. Under the 10 s a
# container runtime gives before SIGKILL.
GRACEFUL_SHUTDOWN_SECONDS = 8

log = logging.getLogger("airoi.http")
_encode = msgspec.json.Encoder().encode


@functools.cache
def header_timeout() -> float:
    """Read once per worker: the variable is the process's (`airoi serve` passes it on)."""
    return header_timeout_from_env(os.environ.get(HEADER_TIMEOUT_ENV))


class RefusedBeforeApp(Exception):
    """A request refused before the app sees it, with the status and sentence it is answered."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def head_too_large() -> RefusedBeforeApp:
    return RefusedBeforeApp(
        431, f"The request's headers pass {MAX_HEAD_BYTES} bytes in all; send fewer or shorter."
    )


def body_too_large() -> RefusedBeforeApp:
    return RefusedBeforeApp(413, f"The request's body passes {MAX_BODY_BYTES} bytes; send less.")


def refusal(
    status: int,
    message: str,
    default_headers: list[tuple[bytes, bytes]],
    request_id: str | None = None,
) -> bytes:
    """A whole response: SPEC 7's body, and `Connection: close`. `request_id` is the app's
    for a request it was reading (its access line then says this status too)."""
    where = "before the app" if request_id is None else "while the app read it"
    request_id = request_id or new_request_id()
    body = _encode(
        ErrorBody(error=ErrorDetail(status=status, message=message, request_id=request_id))
    )
    lines = [STATUS_LINE[status]]
    for name, value in default_headers:
        lines += [name, b": ", value, b"\r\n"]
    lines += [
        b"content-type: application/json\r\n",
        b"x-content-type-options: nosniff\r\n",  # as every answer (airoi.response_headers)
        b"content-length: %d\r\n" % len(body),
        b"x-request-id: %s\r\n" % request_id.encode(),
        b"connection: close\r\n\r\n",
        body,
    ]
    log.warning("refused %d %s: %s (request %s)", status, where, message, request_id)
    return b"".join(lines)


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the head, body and time limits above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout()
        self.in_head = True  # between a request's first byte (or the opening) and its last header
        self.head_bytes = 0  # bytes read since the head began, an upper bound of its size
        self.body_bytes = 0
        self.body_wire_bytes = 0  # bytes read while the body was awaited
        self.awaiting_body = False
        self.refused = False
        self.read_deadline: asyncio.TimerHandle | None = None

    # The deadline: one timer, for the head and then for the body of the request being read,
    # armed when a read leaves either unfinished (a whole request in one read arms none).
    def _arm(self) -> None:
        self._disarm()
        self.read_deadline = self.loop.call_later(self.header_timeout, self._read_timed_out)

    def _disarm(self) -> None:
        if self.read_deadline is not None:
            self.read_deadline.cancel()
            self.read_deadline = None

    def _read_timed_out(self) -> None:
        self.read_deadline = None
        if self.transport.is_closing():
            return
        if self.awaiting_body and self.flow.read_paused:
            self._arm()  # the app has not read what came: not the client's delay
            return
        cycle = self.cycle
        if cycle is None and self.head_bytes == 0:
            self.transport.close()  # opened and sent nothing: no request to answer
        elif cycle is not None and self.awaiting_body and cycle.response_started:
            self.transport.close()
        else:
            what = "body" if self.awaiting_body else "headers"
            self._refuse(
                RefusedBeforeApp(
                    408, f"The request's {what} did not arrive within {self.header_timeout:g} s."
                )
            )

    def _refuse(self, refused: RefusedBeforeApp) -> None:
        self.refused = True
        self._disarm()
        cycle = self.cycle
        # An answer has begun and not ended (this request's, or the one before a pipelined
        # or kept-alive head), or this request is answered: no other can follow it.
        answered = (
            cycle is not None
            and cycle.response_started
            and (not cycle.response_complete or not self.in_head)
        )
        request_id = None
        if cycle is not None and not cycle.response_complete:
            # The app, if it is reading this request's body, sees the client gone; a request
            # it has is answered under its own id, and its access line says this status.
            cycle.disconnected = True
            cycle.message_event.set()
            context = request_context(cycle.scope) if not answered else None  # type: ignore[arg-type]
            if context is not None:
                context.refused = refused.status
                request_id = context.request_id
        if not self.transport.is_closing():
            if not answered:
                self.transport.write(
                    refusal(
                        refused.status,
                        refused.message,
                        self.server_state.default_headers,
                        request_id,
                    )
                )
            self.transport.close()

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.refused:
            return
        if self.in_head:
            self.head_bytes += len(data)
        elif self.awaiting_body:
            self.body_wire_bytes += len(data)
            if self.body_wire_bytes > MAX_BODY_WIRE_BYTES:
                self._refuse(body_too_large())
                return
        try:
            self._feed(data)
        except RefusedBeforeApp as refused:
            self._refuse(refused)
            return
        if self.refused:
            return
        if self.in_head and self.head_bytes > MAX_HEAD_BYTES:
            self._refuse(head_too_large())
        elif (self.in_head or self.awaiting_body) and self.read_deadline is None:
            self._arm()

    def _feed(self, data: bytes) -> None:
        # uvicorn's data_received, with a refusal raised in a parser callback told apart from
        # a malformed request (httptools raises it as the context of its callback error).
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            if isinstance(exc.__context__, RefusedBeforeApp):
                raise exc.__context__ from None
            self._invalid()
        except httptools.HttpParserError:
            self._invalid()
        except httptools.HttpParserUpgrade:
            self._disarm()  # the connection is no longer HTTP's
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()

    def _invalid(self) -> None:
        self._refuse(RefusedBeforeApp(400, "The request is not valid HTTP/1.1."))

    def send_400_response(self, msg: str) -> None:
        self._refuse(RefusedBeforeApp(400, "The request is not valid HTTP/1.1."))

    # httptools callbacks
    def on_message_begin(self) -> None:
        super().on_message_begin()
        if not self.in_head:  # the next request on this connection (or pipelined)
            self.in_head = True
            self.head_bytes = 0
        self.body_bytes = self.body_wire_bytes = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > MAX_TARGET_BYTES:
            raise RefusedBeforeApp(
                414, f"The request's target passes {MAX_TARGET_BYTES} bytes; send a shorter one."
            )

    def on_headers_complete(self) -> None:
        size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        if size > MAX_HEAD_BYTES:
            raise head_too_large()
        for name, value in self.headers:
            if name == b"content-length":
                declared = value.strip()
                if declared.isdigit() and int(declared[:20]) > MAX_BODY_BYTES:
                    raise body_too_large()
        self.in_head = False
        self.awaiting_body = True
        self._disarm()  # the body's deadline starts now, if the body is not all here
        super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        self.body_bytes += len(body)
        if self.body_bytes > MAX_BODY_BYTES:
            raise body_too_large()
        super().on_body(body)

    def on_message_complete(self) -> None:
        self.awaiting_body = False
        self._disarm()
        super().on_message_complete()


__all__ = [
    "MAX_BODY_BYTES",
    "MAX_HEAD_BYTES",
    "MAX_TARGET_BYTES",
    "PROTOCOL",
    "LimitedHttpToolsProtocol",
    "header_timeout",
]
