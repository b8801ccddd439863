"""Errors every MCP client reads: a 401, 403, 429 or 503 answered on /mcp is one body that
is both SPEC 7's error and a JSON-RPC error with the request's id, so the official SDK
raises the server's sentence rather than "Server returned an error response" (SEMANTICS
R27, R29; SPEC 7). The HTTP API's bodies stay SPEC 7's alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from litestar.testing import TestClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from sqlalchemy import Engine
from starlette.types import Message

from airoi.app import create_app
from airoi.serving import MAX_BODY_BYTES
from airoi.settings import Settings
from airoi.tools.protocol_errors import (
    MAX_ECHOED_ID_CHARS,
    _RequestBody,
    both_bodies,
    jsonrpc_code,
    request_id_in,
)
from tests.conftest import bearer
from tests.factories import BundleBuilder
from tests.servers import RunningServer, airoi_serve
from tests.tools.conftest import Served
from tests.tools.world import World

# The error bodies' shape; token lookups run on both stores in test_auth.py: SQLite alone
# (tests/conftest.py).
pytestmark = pytest.mark.store_independent

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
UNKNOWN_TOKEN = "airoi_not-a-real-token-" + "y" * 32
# Nothing listens on loopback port 9 (discard): the store is away.
AWAY = "postgresql+psycopg://airoi@127.0.0.1:9/none"


def post(base_url: str, headers: dict[str, str], body: Any = PING) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(
        f"{base_url}/mcp",
        content=content,
        headers={**MCP_HEADERS, "Content-Type": "application/json", **headers},
        timeout=30,
    )


def assert_both(response: Any, status: int, code: int, request_id: Any = 7) -> str:
    """The answer is `status` with one body that is SPEC 7's error and a JSON-RPC error."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert int(response.headers["content-length"]) == len(response.content)
    body = response.json()
    ref = response.headers["x-request-id"]
    message = body["error"]["message"]
    assert isinstance(message, str) and message.endswith(".")
    assert body == {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {
            "code": code,
            "message": message,
            "status": status,
            "request_id": ref,
            "data": {"status": status, "request_id": ref},
        },
    }
    return str(message)


def expired_token(engine: Engine) -> str:
    b = BundleBuilder()
    secret = "airoi_expired-" + "e" * 40
    token = b.token(b.user(b.account()), secret=secret, expires_at="2020-01-01T00:00:00Z")
    b.load(engine)
    return token


def sdk_error(url: str, headers: dict[str, str], calls: int = 1) -> MCPError:
    """The error the official SDK client raises when it connects and lists the tools (`calls`
    times)."""

    async def run() -> MCPError:
        http = create_mcp_http_client(headers=headers)
        try:
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                for _ in range(calls):
                    await client.list_tools()
        except MCPError as exc:
            return exc
        except BaseExceptionGroup as group:  # raised inside the client's block: wrapped
            leaves = group.subgroup(MCPError)
            while leaves is not None and isinstance(leaves.exceptions[0], BaseExceptionGroup):
                leaves = leaves.exceptions[0]
            if leaves is None:
                raise
            return leaves.exceptions[0]  # type: ignore[return-value]
        raise AssertionError("the client was not refused")

    return anyio.run(run)


# The bodies ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [{}, bearer(UNKNOWN_TOKEN), {"Authorization": "Basic abc"}],
    ids=["missing", "unknown", "not-bearer"],
)
def test_a_refused_token_is_both_bodies_with_the_request_id(
    served: Served, world: World, headers: dict[str, str]
) -> None:
    response = post(served.base_url, headers)
    assert_both(response, 401, -32003)
    # The header is the token check's own, unchanged.
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_a_plan_without_api_access_is_both_bodies(served: Served, world: World) -> None:
    response = post(served.base_url, bearer(world.token_no_api))
    message = assert_both(response, 403, -32004)
    assert message == "This account's plan does not include API access."


def test_an_expired_token_says_so_in_both(served: Served, engine: Engine) -> None:
    response = post(served.base_url, bearer(expired_token(engine)))
    assert assert_both(response, 401, -32003) == "The token has expired."


@pytest.mark.parametrize(
    ("body", "request_id"),
    [
        ({"jsonrpc": "2.0", "id": "call-1", "method": "tools/list"}, "call-1"),
        ({"jsonrpc": "2.0", "id": 0, "method": "ping"}, 0),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, None),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": "x" * (MAX_ECHOED_ID_CHARS + 1), "method": "ping"}, None),
        ([{"jsonrpc": "2.0", "id": 1, "method": "ping"}], None),
        (b'{"jsonrpc": "2.0", "id": 3, "method": ', None),
        (b"", None),
    ],
    ids=[
        "string",
        "zero",
        "notification",
        "null",
        "float",
        "bool",
        "long string",
        "batch",
        "not json",
        "empty",
    ],
)
def test_the_id_is_the_requests_when_it_can_be_read(
    served: Served, world: World, body: Any, request_id: Any
) -> None:
    assert_both(post(served.base_url, {}, body), 401, -32003, request_id)


def test_a_body_past_the_limit_is_not_read_for_its_id(db_url: str, world: World) -> None:
    # In process nothing in front limits the body (`airoi serve` answers 413): the id is not
    # looked for past MAX_BODY_BYTES, and the refusal is the 401 all the same.
    padded = {**PING, "params": {"pad": "x" * MAX_BODY_BYTES}}
    with TestClient(create_app(Settings(database_url=db_url))) as client:
        response = client.post("/mcp", content=json.dumps(padded).encode(), headers=MCP_HEADERS)
        assert_both(response, 401, -32003, None)
        assert_both(client.post("/mcp", json=PING, headers=MCP_HEADERS), 401, -32003)


def test_the_transports_refusals_are_both_too(served: Served, world: World) -> None:
    good = bearer(world.token_a)
    origin = post(served.base_url, {**good, "Origin": "https://evil.example"})
    assert_both(origin, 403, -32004)
    host = post(served.base_url, {**good, "Host": "evil.example"})
    assert_both(host, 421, -32600)
    put = httpx.put(served.mcp_url, json=PING, headers={**MCP_HEADERS, **good}, timeout=10)
    assert_both(put, 405, -32600)
    assert put.headers["allow"] == "POST"
    # The transport's JSON-RPC 400s keep their fixed code and null id, and gain the status.
    parse = post(served.base_url, good, b"{")
    assert parse.status_code == 400
    error = parse.json()["error"]
    assert (parse.json()["id"], error["code"], error["status"]) == (None, -32700, 400)


def test_the_http_api_keeps_spec_7s_body_alone(served: Served, world: World) -> None:
    for headers, status in (({}, 401), (bearer(world.token_no_api), 403)):
        response = httpx.get(f"{served.base_url}/api/v1/initiatives", headers=headers, timeout=10)
        assert response.status_code == status
        assert response.json() == {
            "error": {
                "status": status,
                "message": response.json()["error"]["message"],
                "request_id": response.headers["x-request-id"],
            }
        }


def test_success_and_tool_errors_are_untouched(served: Served, world: World) -> None:
    response = post(served.base_url, bearer(world.token_a))
    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": 7, "result": {}}


# Rate limit and an absent store, on servers of their own --------------------------------


@pytest.fixture
def limited(db_url: str, engine: Engine) -> Iterator[tuple[str, str]]:
    b = BundleBuilder()
    token = b.token(b.user(b.account(), role="owner"))
    b.load(engine)
    server = RunningServer(Settings(database_url=db_url, rate_limit="3/hour"))
    try:
        yield server.base_url, token
    finally:
        server.stop()


def test_over_the_rate_limit_is_both_bodies_with_its_headers(limited: tuple[str, str]) -> None:
    base_url, token = limited
    for _ in range(3):
        assert post(base_url, bearer(token)).status_code == 200
    response = post(base_url, bearer(token))
    message = assert_both(response, 429, -32005)
    wait = int(response.headers["retry-after"])
    assert wait >= 1 and f"{wait} seconds" in message
    assert response.headers["ratelimit-remaining"] == "0"
    assert response.headers["ratelimit-limit"] == "3"


def test_the_sdk_shows_the_wait(limited: tuple[str, str]) -> None:
    base_url, token = limited
    error = sdk_error(f"{base_url}/mcp", bearer(token), calls=4)
    assert error.code == -32005
    assert str(error).startswith("Too many requests from this user; try again in ")
    assert error.data["status"] == 429


def test_a_store_that_is_away_is_both_bodies_and_the_sdk_says_so() -> None:
    server = RunningServer(Settings(database_url=AWAY))
    try:
        response = post(server.base_url, bearer(UNKNOWN_TOKEN))
        message = assert_both(response, 503, -32006)
        assert int(response.headers["retry-after"]) >= 1
        error = sdk_error(f"{server.base_url}/mcp", bearer(UNKNOWN_TOKEN))
    finally:
        server.stop()
    assert (error.code, str(error)) == (-32006, message)
    assert "Server returned an error response" not in str(error)


# The official SDK's client --------------------------------------------------------------


def test_the_sdk_shows_the_expired_token_and_the_plan(
    served: Served, world: World, engine: Engine
) -> None:
    expired = sdk_error(served.mcp_url, bearer(expired_token(engine)))
    assert (expired.code, str(expired)) == (-32003, "The token has expired.")
    assert expired.data["status"] == 401
    plan = sdk_error(served.mcp_url, bearer(world.token_no_api))
    assert (plan.code, str(plan)) == (-32004, "This account's plan does not include API access.")
    unknown = sdk_error(served.mcp_url, bearer(UNKNOWN_TOKEN))
    assert unknown.code == -32003
    assert "Server returned an error response" not in str(unknown)


def test_the_sdk_shows_the_expired_token_from_airoi_serve(db_url: str, engine: Engine) -> None:
    token = expired_token(engine)
    with airoi_serve(db_url) as port:
        error = sdk_error(f"http://127.0.0.1:{port}/mcp", bearer(token))
    assert (error.code, str(error)) == (-32003, "The token has expired.")


# The pieces ---------------------------------------------------------------------------


def test_codes_by_status() -> None:
    assert [jsonrpc_code(s) for s in (401, 403, 429, 503)] == [-32003, -32004, -32005, -32006]
    assert [jsonrpc_code(s) for s in (400, 405, 413, 421, 500, 502)] == [
        -32600,
        -32600,
        -32600,
        -32600,
        -32603,
        -32603,
    ]


def test_request_id_in() -> None:
    assert request_id_in(b'{"id": 12, "method": "ping"}') == 12
    assert request_id_in(b'{"method": "ping", "params": {"id": 3}, "id": "a"}') == "a"
    assert request_id_in(b'{"method": "ping", "params": {"id": 3}}') is None
    assert request_id_in(b"[]") is None
    assert request_id_in(b'{"id": {"nested": 1}}') is None


def test_both_bodies_leaves_other_bodies_alone() -> None:
    for body in (b"", b"plain text", b"[]", b'{"error": "invalid_token"}', b'{"detail": "x"}'):
        assert both_bodies(body, 401, 1) is body


def run_request_body(chunks: list[bytes]) -> tuple[Any, int]:
    """The id `_RequestBody` finds when the app read none of `chunks`, and how many it read."""
    given = [
        {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
        for index, chunk in enumerate(chunks)
    ]
    read = 0

    async def receive() -> Message:
        nonlocal read
        read += 1
        return given[read - 1]

    found = anyio.run(_RequestBody(receive).request_id)
    return found, read


def test_the_body_is_read_no_further_than_the_limit() -> None:
    piece = 256 * 1024
    assert run_request_body([b'{"id": 5, ', b'"method": "ping"}']) == (5, 2)
    # Past MAX_BODY_BYTES it stops reading: one chunk past the limit, not all twelve.
    chunks = [b'{"id": 5, "pad": "'] + [b"x" * piece] * 10 + [b'"}']
    found, read = run_request_body(chunks)
    assert found is None
    assert read == MAX_BODY_BYTES // piece + 1
