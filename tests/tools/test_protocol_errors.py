"""Transport errors of /mcp: a fixed JSON-RPC error, never the client's input nor exception text
(SEMANTICS R15), with the codes of JSON-RPC 2.0 section 5.1."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from airoi.tools.protocol_errors import FixedTransportErrors, fixed_body
from tests.conftest import bearer
from tests.tools.conftest import Served
from tests.tools.world import World

# JSON-RPC transport errors, answered before any tool reads the store: SQLite alone
# (tests/conftest.py).
pytestmark = pytest.mark.store_independent

SECRET = "client-value-SECRET"
INVALID_REQUEST = {
    "jsonrpc": "2.0",
    "id": None,
    "error": {"code": -32600, "message": "Invalid request"},
}
PARSE_ERROR = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
LEAKS = (SECRET, "pydantic", "validation error", "input_value", "line 1")


def post(served: Served, token: str, body: bytes, version: str | None) -> httpx.Response:
    headers = {
        **bearer(token),
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    if version is not None:
        headers["mcp-protocol-version"] = version
    return httpx.post(served.mcp_url, content=body, headers=headers, timeout=30)


def assert_fixed(response: httpx.Response, expected: dict[str, Any]) -> None:
    assert response.status_code == 400, response.text
    # SPEC 7's status and request id are added to the fixed error (test_sdk_errors).
    ref = response.headers["x-request-id"]
    added = {"status": 400, "request_id": ref, "data": {"status": 400, "request_id": ref}}
    assert response.json() == {**expected, "error": {**expected["error"], **added}}
    assert int(response.headers["content-length"]) == len(response.content)
    for leak in LEAKS:
        assert leak.lower() not in response.text.lower()


NOT_ONE_REQUEST = {
    "jsonrpc 1.0": {"jsonrpc": "1.0", "id": 1, "method": SECRET},
    "empty array": [],
    "batch": [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": SECRET},
    ],
    "string": SECRET,
    "number": 42,
    "params not an object": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": SECRET},
    "no method": {"jsonrpc": "2.0", "id": 1, "params": {"name": SECRET}},
}


@pytest.mark.parametrize("version", [None, "2025-06-18", "2026-07-28"])
@pytest.mark.parametrize("body", list(NOT_ONE_REQUEST.values()), ids=list(NOT_ONE_REQUEST))
def test_a_body_that_is_not_one_request_is_a_fixed_invalid_request(
    served: Served, world: World, body: Any, version: str | None
) -> None:
    response = post(served, world.token_a, json.dumps(body).encode(), version)
    assert_fixed(response, INVALID_REQUEST)


@pytest.mark.parametrize("version", [None, "2025-06-18", "2026-07-28"])
@pytest.mark.parametrize(
    "body", [b"{" + SECRET.encode(), b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"', b""]
)
def test_a_body_that_is_not_json_is_a_fixed_parse_error(
    served: Served, world: World, body: bytes, version: str | None
) -> None:
    assert_fixed(post(served, world.token_a, body, version), PARSE_ERROR)


@pytest.mark.parametrize("version", [None, "2025-06-18"])
@pytest.mark.parametrize("where", ["id", "method", "argument"])
def test_a_body_that_is_not_utf8_is_a_fixed_parse_error(
    served: Served, world: World, where: str, version: str | None
) -> None:
    # Review: a byte that is not UTF-8 (JSON is UTF-8, RFC 8259 8.1) in the request's id
    # failed inside the transport: a 500 without JSON-RPC, and a logged failure.
    bodies = {
        "id": b'{"jsonrpc":"2.0","id":"\xff","method":"ping"}',
        "method": b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
        "argument": b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":'
        b'{"name":"search","arguments":{"query":"\xff"}}}',
    }
    assert_fixed(post(served, world.token_a, bodies[where], version), PARSE_ERROR)


def test_an_error_answering_a_request_keeps_its_id(served: Served, world: World) -> None:
    # params that are not a tools/call's: the SDK's own fixed error for request 7, untouched.
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": 5}}
    response = post(served, world.token_a, json.dumps(body).encode(), "2025-06-18")
    error = response.json()
    assert error["id"] == 7
    assert error["error"]["code"] == -32602
    assert SECRET not in response.text


def test_fixed_body_leaves_other_bodies_alone() -> None:
    with_id = b'{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params"}}'
    assert fixed_body(with_id) == with_id
    other_code = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Header mismatch"}}'
    assert fixed_body(other_code) == other_code
    assert fixed_body(b"not json") == b"not json"
    assert fixed_body(b'{"error": "x"}') == b'{"error": "x"}'


def run_wrapped(status: int, chunks: list[bytes]) -> list[Message]:
    """The messages FixedTransportErrors sends for an app answering `status` with `chunks`."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        length = str(sum(len(chunk) for chunk in chunks)).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", length)]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        for index, chunk in enumerate(chunks):
            more = index < len(chunks) - 1
            await send({"type": "http.response.body", "body": chunk, "more_body": more})

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    anyio.run(FixedTransportErrors(app), {"type": "http"}, receive, send)
    return sent


def test_the_wrapper_joins_a_chunked_400_and_sets_its_length() -> None:
    original = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": f"x {SECRET}"}}
    ).encode()
    start, body = run_wrapped(400, [original[:10], original[10:]])
    assert start["status"] == 400
    assert json.loads(body["body"]) == INVALID_REQUEST
    headers = dict(start["headers"])
    assert headers[b"content-length"] == str(len(body["body"])).encode()
    assert headers[b"content-type"] == b"application/json"


def test_the_wrapper_passes_other_statuses_through() -> None:
    chunks = [b'{"jsonrpc":"2.0","id":null,', b'"error":{"code":-32602,"message":"kept"}}']
    sent = run_wrapped(200, chunks)
    assert [m.get("body") for m in sent[1:]] == chunks
    assert sent[0]["status"] == 200


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_a_deeply_nested_request_is_refused_not_a_500(
    served: Served, world: World, depth: int
) -> None:
    # A value nested deeper than a decoder recurses, anywhere in the request: the answer is
    # still a fixed refusal, with or without a token (it was a 500 and a logged traceback).
    nested = b'{"jsonrpc":"2.0","id":1,"method":"ping","x":' + b"[" * depth + b"]" * depth + b"}"
    refused = post(served, world.token_a, nested, "2025-06-18")
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] in (-32700, -32600)
    anonymous = httpx.post(
        served.mcp_url,
        content=nested,
        headers={
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        },
        timeout=30,
    )
    assert anonymous.status_code == 401, anonymous.text
    assert anonymous.json()["jsonrpc"] == "2.0"
    assert anonymous.json()["id"] is None
