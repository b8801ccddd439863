"""Responses no shared cache keeps and no browser sniffs: every route and every tool.

- every response carries `X-Content-Type-Options: nosniff`;
- every answer with an account's data (`/api/v1`'s data routes, `/mcp`) says `Cache-Control:
  private, no-cache` (or stricter), and ETag revalidation keeps working;
- the client registration reply, which holds a client secret, says `no-store`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.app import create_app
from airoi.settings import Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder

# Response headers, the same over either store: SQLite alone (tests/conftest.py).
pytestmark = pytest.mark.store_independent

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
KEPT_PRIVATE = re.compile(r"(private.*no-cache|no-cache.*private|no-store)")


@pytest.fixture
def app_client(db_url: str) -> Iterator[TestClient[Litestar]]:
    app = create_app(Settings(database_url=db_url, allowed_hosts=("testserver.local",)))
    with TestClient(app) as client:
        yield client
    app.state.engine.dispose()


@pytest.fixture
def seeded(engine: Engine) -> tuple[str, int]:
    b = BundleBuilder()
    account = b.account()
    token = b.token(b.user(account, role="owner"))
    initiative = b.initiative(account)
    b.cost_entry(initiative, period_start="2026-01-05")
    b.load(engine)
    return token, initiative


def _paths(app: Litestar, initiative: int) -> list[str]:
    paths = []
    for route in app.routes:
        path = re.sub(r"\{\w+:\w+\}", str(initiative), route.path)
        if "{" not in path:
            paths.append(path)
    return sorted(set(paths))


def test_every_route_says_nosniff_and_keeps_account_data_private(
    app_client: TestClient[Litestar], seeded: tuple[str, int]
) -> None:
    token, initiative = seeded
    app: Any = app_client.app
    walked = 0
    for path in _paths(app, initiative):
        if path == "/mcp":
            continue  # the tools' walk below
        response = app_client.get(path, headers=bearer(token))
        assert response.headers.get("x-content-type-options") == "nosniff", path
        walked += 1
        data = path.startswith("/api/v1/") and not path.startswith(
            ("/api/v1/docs", "/api/v1/openapi")
        )
        if data:
            assert response.status_code in (200, 400), (path, response.status_code)
            assert KEPT_PRIVATE.search(response.headers.get("cache-control", "")), path
    assert walked >= 20
    # Errors too: a 401 and a 404 say nosniff.
    for response in (app_client.get("/api/v1/roi"), app_client.get("/no/such/page")):
        assert response.headers["x-content-type-options"] == "nosniff"


def test_etag_revalidation_keeps_working(
    app_client: TestClient[Litestar], seeded: tuple[str, int]
) -> None:
    token, _ = seeded
    first = app_client.get("/api/v1/cost_entries", headers=bearer(token))
    assert first.headers["cache-control"] == "private, no-cache"
    tag = first.headers["etag"]
    again = app_client.get("/api/v1/cost_entries", headers={**bearer(token), "If-None-Match": tag})
    assert again.status_code == 304
    assert again.headers["cache-control"] == "private, no-cache"
    assert again.headers["x-content-type-options"] == "nosniff"


def test_every_tool_answer_is_kept_private(
    app_client: TestClient[Litestar], seeded: tuple[str, int]
) -> None:
    token, _ = seeded

    def post(method: str, params: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return app_client.post(
            "/mcp", content=json.dumps(body), headers={**bearer(token), **MCP_HEADERS}
        )

    listed = post("tools/list", {})
    assert listed.status_code == 200, listed.text
    tools = [tool["name"] for tool in listed.json()["result"]["tools"]]
    assert len(tools) >= 10
    for response in [
        listed,
        *(post("tools/call", {"name": name, "arguments": {}}) for name in tools),
    ]:
        assert response.status_code == 200
        assert response.headers["x-content-type-options"] == "nosniff"
        assert KEPT_PRIVATE.search(response.headers["cache-control"])
    refused = app_client.post("/mcp", json={})  # no token: still nosniff
    assert refused.headers["x-content-type-options"] == "nosniff"


def test_the_registration_reply_with_a_secret_is_not_stored(db_url: str) -> None:
    app = create_app(Settings(database_url=db_url, allowed_hosts=("testserver",)))
    try:
        with TestClient(app, base_url="http://testserver") as client:
            reply = client.post(
                "/oauth/register",
                json={
                    "redirect_uris": ["http://127.0.0.1:5555/callback"],
                    "client_name": "An assistant",
                    "token_endpoint_auth_method": "client_secret_post",
                },
            )
        assert reply.status_code == 201, reply.text
        assert reply.json().get("client_secret")
        assert reply.headers["cache-control"] == "no-store"
        assert reply.headers["x-content-type-options"] == "nosniff"
    finally:
        app.state.engine.dispose()
