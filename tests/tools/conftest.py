"""The tool endpoint over real HTTP: uvicorn on a loopback port, the real MCP client.

One server per database URL for the whole session (the store is emptied and refilled
per test by the `db_url` fixture; the server reads it live), with today fixed so ROI
windows and budgets are reproducible (SEMANTICS R1).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any, TypeVar

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, Tool
from sqlalchemy import Engine

from airoi.settings import Settings
from tests.conftest import bearer
from tests.servers import RunningServer
from tests.tools.world import World, build_world

TODAY = date(2026, 6, 15)
APP_URL = "https://roi.example.com"
TOOLS_BUDGET = "100000/minute"

T = TypeVar("T")


@pytest.fixture(scope="session")
def _servers() -> Iterator[dict[str, RunningServer]]:
    servers: dict[str, RunningServer] = {}
    yield servers
    for server in servers.values():
        server.stop()


@dataclass
class Served:
    """Both interfaces of one running app: the HTTP API and the tool endpoint."""

    base_url: str

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def api(self, token: str, path: str, **params: Any) -> dict[str, Any]:
        response = httpx.get(
            f"{self.base_url}/api/v1{path}", params=params, headers=bearer(token), timeout=30
        )
        assert response.status_code == 200, response.text
        return response.json()  # type: ignore[no-any-return]

    def with_client(self, token: str, work: Callable[[Client], Awaitable[T]]) -> T:
        async def run() -> T:
            http = create_mcp_http_client(headers=bearer(token))
            async with http, Client(streamable_http_client(self.mcp_url, http_client=http)) as c:
                return await work(c)

        return anyio.run(run)

    def call(
        self, token: str, name: str, arguments: dict[str, Any] | None = None
    ) -> CallToolResult:
        return self.with_client(token, lambda c: c.call_tool(name, arguments or {}))

    def calls(self, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
        """Several calls over one client connection."""

        async def work(c: Client) -> list[CallToolResult]:
            return [await c.call_tool(name, arguments) for name, arguments in calls]

        return self.with_client(token, work)

    def ok(self, token: str, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """A successful call's structured content (checked against its text twin)."""
        result = self.call(token, name, arguments)
        return structured(result)

    def refused(self, token: str, name: str, arguments: dict[str, Any] | None = None) -> str:
        """A refused call's one sentence (SEMANTICS R27)."""
        result = self.call(token, name, arguments)
        return refusal(result)

    def list_tools(self, token: str) -> list[Tool]:
        async def work(c: Client) -> list[Tool]:
            return (await c.list_tools()).tools

        return self.with_client(token, work)


def structured(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def refusal(result: CallToolResult) -> str:
    assert result.is_error, result.structured_content
    assert len(result.content) == 1
    text = getattr(result.content[0], "text", "")
    assert text.endswith("."), text
    assert "\n" not in text, text
    assert "Error executing tool" not in text, text
    return str(text)


def as_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


@pytest.fixture
def served(db_url: str, _servers: dict[str, RunningServer]) -> Served:
    """The running app reading the (empty, migrated) store of `db_url`."""
    if db_url not in _servers:
        _servers[db_url] = RunningServer(
            # Every test's world issues the same token secrets, so the session's calls all
            # count against one budget: far past the default 600 a minute when the whole
            # directory runs. The budget is tested in tests/test_ratelimit.py and
            # test_sdk_errors.py, on servers of their own.
            Settings(database_url=db_url, today=TODAY, app_url=APP_URL, rate_limit=TOOLS_BUDGET)
        )
    return Served(_servers[db_url].base_url)


@pytest.fixture
def world(engine: Engine) -> World:
    """Two accounts with something of every kind (see world.py), plus one without API access."""
    return build_world(engine)
