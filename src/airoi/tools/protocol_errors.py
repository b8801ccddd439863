"""Transport errors of /mcp with a fixed message, never the client's input (SEMANTICS R15).

The SDK's streamable HTTP transport answers a body it cannot read as one JSON-RPC message
with the parser's or pydantic's own text: `Validation error: 6 validation errors for
union[JSONRPCRequest, ...] ... input_value='1.0' ... https://errors.pydantic.dev/...`,
which repeats the client's values and carries exception prose. It builds that message
inline (`StreamableHTTPServerTransport._handle_post_request`) and offers no hook, so
`FixedTransportErrors` wraps the mounted app and replaces the error of such a response, a
400 whose body is a JSON-RPC error without an id, before it is sent:

- a body that is not JSON: -32700 "Parse error";
- JSON that is not one request or notification (a batch, `[]`, a wrong `jsonrpc`, a
  malformed envelope): -32600 "Invalid request". The SDK says -32602 (invalid params),
  but JSON-RPC 2.0 (section 5.1) gives -32600 to a body that is not a valid request.

Errors answering a request carry its id and are left alone.

The transport's own refusals before any JSON-RPC (a Content-Type that is not JSON, a Host
or Origin the DNS-rebinding check refuses, a body over its size) are plain text; they are
sent as the error body of SPEC 7 instead, with the request id, under the same status.
Every other answer is left alone.

`UnavailableAs503` answers a call the database failed under (a connection lost, a server
away, a statement cut) with HTTP 503, Retry-After and the SPEC 7 body, in place of the 200
carrying an isError result: a tool error is final to a client, a 503 says to try again.
The tool marks the request's context (`RequestContext.unavailable`) before the transport,
which in JSON-response mode sends its answer once the call is done, starts the answer.

`JsonRpcErrorBodies`, around the whole app, makes every error status answered on /mcp (the
token's 401 and 403, the 429, a 503, the refusals above) one body that both kinds of client
read: SPEC 7's `error.status` and `error.message` (and `request_id`), and a JSON-RPC error
(`jsonrpc`, `id`, `error.code`, the same `error.message`). An SDK that finds a JSON-RPC error
in a non-2xx answer raises it with the server's sentence (the expired token, the plan, the
wait) instead of a generic "Server returned an error response". The id is the request's,
read from its body when it can be (at most `MAX_BODY_BYTES` of it), else null. The headers
(WWW-Authenticate, Retry-After, RateLimit-*) are left as they were, and nothing outside
/mcp is touched: the HTTP API's bodies stay SPEC 7's alone.
"""

from __future__ import annotations

import json
from typing import Any, Final

import msgspec
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from airoi.buffered_answers import holding
from airoi.errors import ErrorBody, ErrorDetail
from airoi.observability import request_context
from airoi.serving import MAX_BODY_BYTES

FIXED_ERRORS: Final[dict[int, dict[str, Any]]] = {
    PARSE_ERROR: {"code": PARSE_ERROR, "message": "Parse error"},
    INVALID_REQUEST: {"code": INVALID_REQUEST, "message": "Invalid request"},
    INVALID_PARAMS: {"code": INVALID_REQUEST, "message": "Invalid request"},
}
# The transport's plain-text refusals, by status, in the words of SPEC 7's error body.
PLAIN_REFUSALS: Final[dict[int, str]] = {
    400: "Send the request as JSON, with Content-Type: application/json.",
    403: "Requests from this Origin are not accepted here.",
    413: "The request body is too large.",
    421: "This host name is not served here; AIROI_ALLOWED_HOSTS names the served ones.",
}
# The statuses held whole: those, and 400 answers whose JSON-RPC error is fixed.
_HELD: Final[frozenset[int]] = frozenset(PLAIN_REFUSALS)


def fixed_body(body: bytes) -> bytes:
    """`body` with a fixed error when it is a transport error the table covers, else as it was."""
    try:
        message = json.loads(body)
    except ValueError:
        return body
    if not isinstance(message, dict) or message.get("id", 0) is not None:
        return body
    error = message.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    if not isinstance(code, int) or code not in FIXED_ERRORS:
        return body
    fixed = {"jsonrpc": "2.0", "id": None, "error": FIXED_ERRORS[code]}
    return json.dumps(fixed, separators=(",", ":")).encode()


class FixedTransportErrors:
    """ASGI wrapper: a 400 answer is held until its body is complete, then sent fixed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_fixed(held: Message, body: bytes) -> None:
            status = held["status"]
            headers = [
                (name, value)
                for name, value in held.get("headers", [])
                if name.lower() not in (b"content-length", b"content-type")
            ]
            if _is_json(held):
                body = fixed_body(body)
            else:
                context = request_context(scope)
                detail = ErrorDetail(
                    status=status,
                    message=PLAIN_REFUSALS[status],
                    request_id=context.request_id if context else None,
                )
                body = msgspec.json.encode(ErrorBody(error=detail))
            headers.append((b"content-type", b"application/json"))
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**held, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, holding(send, _HELD, send_fixed))


class UnavailableAs503:
    """ASGI wrapper: the answer of a request whose context was marked unavailable is its 503."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        context = request_context(scope)
        replaced = False

        async def send_or_replace(message: Message) -> None:
            nonlocal replaced
            unavailable = context.unavailable if context is not None else None
            if message["type"] == "http.response.start" and unavailable is not None:
                replaced = True
                detail = ErrorDetail(
                    status=unavailable.status,
                    message=unavailable.message,
                    request_id=context.request_id if context else None,
                )
                body = msgspec.json.encode(ErrorBody(error=detail))
                headers = [(k.lower().encode(), v.encode()) for k, v in unavailable.headers.items()]
                headers.append((b"content-type", b"application/json"))
                headers.append((b"content-length", str(len(body)).encode()))
                await send(
                    {
                        "type": "http.response.start",
                        "status": unavailable.status,
                        "headers": headers,
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
            if replaced:  # the transport's own answer, replaced: not sent
                return
            await send(message)

        await self.app(scope, receive, send_or_replace)


def _is_json(start: Message) -> bool:
    for name, value in start.get("headers", []):
        if name.lower() == b"content-type":
            return bytes(value).split(b";")[0].strip().lower() == b"application/json"
    return False


# The JSON-RPC code of an HTTP refusal on /mcp, by status. The MCP specification leaves
# -32000..-32019 to implementations; the official Python SDK raises -32000 (connection
# closed) and -32001 (request timed out) itself, on the client side, and -32002 is retired
# (never to be reused), so these start at -32003: a client telling a timeout from a refused
# token by code never takes the one for the other. Any other 4xx is -32600 (invalid
# request) and any other 5xx -32603 (internal error), as JSON-RPC 2.0 names them.
UNAUTHENTICATED: Final = -32003  # 401: the token is missing, unknown, expired or revoked
FORBIDDEN: Final = -32004  # 403: the plan has no API access (or the Origin is refused)
RATE_LIMITED: Final = -32005  # 429: too many requests with this token; Retry-After says when
UNAVAILABLE: Final = -32006  # 503: the store is away; Retry-After says when to try again
REFUSAL_CODES: Final[dict[int, int]] = {
    401: UNAUTHENTICATED,
    403: FORBIDDEN,
    429: RATE_LIMITED,
    503: UNAVAILABLE,
}
ERROR_STATUSES: Final = frozenset(range(400, 600))
# A request id longer than this is not repeated (null instead): an error body stays small.
MAX_ECHOED_ID_CHARS: Final = 200


def jsonrpc_code(status: int) -> int:
    """The JSON-RPC error code of an HTTP error status answered on /mcp."""
    code = REFUSAL_CODES.get(status)
    if code is not None:
        return code
    return INTERNAL_ERROR if status >= 500 else INVALID_REQUEST


class _Envelope(msgspec.Struct):
    id: int | str | None = None


def request_id_in(body: bytes) -> int | str | None:
    """The JSON-RPC id of the request `body` holds; None when it has none, is not one request
    (not JSON, a batch), or its id is not an integer or a short string."""
    try:
        request_id = msgspec.json.decode(body, type=_Envelope).id
    # A value nested deeper than the decoder recurses (about 1,000 levels) is no request either,
    # nor a string that is not UTF-8 (the decoder raises that as it is).
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError):
        return None
    if isinstance(request_id, str) and len(request_id) > MAX_ECHOED_ID_CHARS:
        return None
    return request_id


def both_bodies(
    body: bytes, status: int, request_id: int | str | None, request_ref: str | None = None
) -> bytes:
    """`body`, an error body of SPEC 7 or a JSON-RPC error, as one object that is both; any
    other body as it was.

    `error.data` repeats the status and request id: an SDK keeps only `code`, `message` and
    `data` of a JSON-RPC error, so that is where its user can read them."""
    try:
        message = json.loads(body)
    except ValueError:
        return body
    error = message.get("error") if isinstance(message, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str):
        return body
    if "jsonrpc" in message:  # the transport's own (fixed) JSON-RPC error: its id and code stay
        code = error.get("code")
        if not isinstance(code, int):
            return body
        request_id = message.get("id")
    else:
        code = jsonrpc_code(status)
        request_ref = error.get("request_id", request_ref)
    detail: dict[str, Any] = {"code": code, "message": error["message"], "status": status}
    data: dict[str, Any] = {"status": status}
    if isinstance(request_ref, str):
        detail["request_id"] = data["request_id"] = request_ref
    detail["data"] = data
    both = {"jsonrpc": "2.0", "id": request_id, "error": detail}
    return json.dumps(both, separators=(",", ":"), ensure_ascii=False).encode()


class _RequestBody:
    """The request's body as the app reads it, kept (up to `MAX_BODY_BYTES`) to find its id."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self.chunks: list[bytes] = []
        self.size = 0
        self.complete = False
        self.too_large = False

    async def receive(self) -> Message:
        message = await self._receive()
        self._keep(message)
        return message

    def _keep(self, message: Message) -> None:
        if message["type"] != "http.request":  # the client has gone
            self.complete = True
            return
        chunk = message.get("body", b"")
        if not self.too_large and chunk:
            self.size += len(chunk)
            if self.size > MAX_BODY_BYTES:
                self.too_large = True
                self.chunks.clear()
            else:
                self.chunks.append(chunk)
        if not message.get("more_body", False):
            self.complete = True

    async def request_id(self) -> int | str | None:
        """The id of the request; what the app has not read of the body is read first, and
        no more of it than `MAX_BODY_BYTES` (`airoi serve` refuses a longer one anyway)."""
        while not (self.complete or self.too_large):
            self._keep(await self._receive())
        if self.too_large or not self.chunks:
            return None
        return request_id_in(b"".join(self.chunks))


class JsonRpcErrorBodies:
    """ASGI wrapper of the whole app: an error answered on `path` is held until its body is
    complete, then sent as `both_bodies` makes it, with its headers as they were."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.path):
            await self.app(scope, receive, send)
            return
        body = _RequestBody(receive)

        async def send_both(start: Message, answer: bytes) -> None:
            # The route the framework matched: /mcp, and "/mcp/" routed to it; not a 404 below.
            shaped = answer
            if scope.get("path_template") == self.path and answer:
                context = request_context(scope)
                shaped = both_bodies(
                    answer,
                    start["status"],
                    await body.request_id(),
                    context.request_id if context else None,
                )
            if shaped is not answer:
                answer = shaped
                headers = [
                    (name, value)
                    for name, value in start.get("headers", [])
                    if name.lower() != b"content-length"
                ]
                headers.append((b"content-length", str(len(answer)).encode()))
                start = {**start, "headers": headers}
            await send(start)
            await send({"type": "http.response.body", "body": answer})

        await self.app(scope, body.receive, holding(send, ERROR_STATUSES, send_both))
