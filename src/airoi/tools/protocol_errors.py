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
"""

from __future__ import annotations

import json
from typing import Any, Final

import msgspec
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from airoi.errors import ErrorBody, ErrorDetail
from airoi.held import holding
from airoi.observability import request_context

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
