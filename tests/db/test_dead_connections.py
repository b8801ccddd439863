"""A connection that dies under a request, on the HTTP API and on /mcp, with uvicorn serving.

Before the answer is built (the connection lost, the server away, a statement cut) the
request is a 503 with Retry-After and the SPEC 7 body: on /mcp too, as an HTTP 503 the
client may retry, not a tool error, which is final. After the answer is built, a failure
to return the connection (its rollback on a server that has gone) never replaces the
answer: the connection is discarded and the failure logged by its class.

On PostgreSQL the connection's backend is terminated (`pg_terminate_backend`, from another
connection) at the moment each case needs; on SQLite the driver connection is closed under
the pool, or a statement is cut by the statement timeout.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import Connection, Engine, event, text

import airoi.db.kept_connections
import airoi.tools.server
from airoi.db import kept_connections
from airoi.db.engine import make_engine
from airoi.settings import Settings
from tests.conftest import bearer
from tests.servers import RunningServer
from tests.test_health import slow_query
from tests.tools.world import World, build_world

MODERN = "2026-07-28"  # the SDK's single-exchange protocol revision
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}


def terminate_backend(admin: Engine, pid: int) -> None:
    """End PostgreSQL backend `pid` and wait until it is gone."""
    with admin.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
        alive = text("SELECT count(*) FROM pg_stat_activity WHERE pid = :pid")
        while conn.execute(alive, {"pid": pid}).scalar():
            time.sleep(0.005)


def kill(admin: Engine | None, driver_connection: Any) -> None:
    """The driver connection's end: its backend terminated (PostgreSQL), or closed (SQLite)."""
    if admin is not None:
        terminate_backend(admin, driver_connection.info.backend_pid)
    else:
        driver_connection.close()


@pytest.fixture
def admin(db_url: str) -> Iterator[Engine | None]:
    """A connection to the server outside the app's pool (PostgreSQL); None on SQLite."""
    if not db_url.startswith("postgresql"):
        yield None
        return
    engine = make_engine(db_url)
    yield engine
    engine.dispose()


@pytest.fixture
def server(db_url: str) -> Iterator[RunningServer]:
    running = RunningServer(Settings(database_url=db_url))
    yield running
    running.stop()


@pytest.fixture
def world(engine: Engine) -> World:
    return build_world(engine)


@pytest.fixture
def logged() -> Iterator[list[str]]:
    """Every message the `airoi` loggers write while the test runs."""
    messages: list[str] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    logger = logging.getLogger("airoi")
    logger.addHandler(handler)
    yield messages
    logger.removeHandler(handler)


def on_return(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, admin: Engine | None
) -> list[int]:
    """Kill the next connection `module.name` is given back (to the pool or, on SQLite, to
    the engine's shelf), just before it is."""
    real = getattr(module, name)
    killed: list[int] = []

    def killing(connection: Connection) -> Exception | None:
        if not killed:
            killed.append(1)
            kill(admin, connection.connection.driver_connection)
        return real(connection)

    monkeypatch.setattr(module, name, killing)
    return killed


def on_checkout(engine: Engine, admin: Engine, nth: int) -> Callable[[], None]:
    """Terminate the backend of the `nth` connection checked out from now on (1 is the next),
    once the pool has handed it over (after its own look at the connection). Returns the undo."""
    seen: list[int] = []

    def checkout(driver_connection: Any, *_: Any) -> None:
        seen.append(1)
        if len(seen) == nth:
            terminate_backend(admin, driver_connection.info.backend_pid)

    event.listen(engine, "checkout", checkout)
    return lambda: event.remove(engine, "checkout", checkout)


def call_tool(
    server: RunningServer, token: str, name: str, version: str | None = None, **arguments: Any
) -> httpx.Response:
    """A tools/call POSTed to /mcp, under protocol `version` (the SDK's default if None)."""
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    if version == MODERN:  # a self-contained request: the envelope rides in _meta
        body["params"]["_meta"] = {  # type: ignore[index]
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    return httpx.post(
        f"{server.base_url}/mcp",
        content=json.dumps(body),
        headers={
            **bearer(token),
            **MCP_HEADERS,
            **({"mcp-protocol-version": version} if version else {}),
            **({"mcp-method": "tools/call", "mcp-name": name} if version == MODERN else {}),
        },
        timeout=30,
    )


def tool_result(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def assert_503(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert int(response.headers["retry-after"]) >= 1
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    error = body["error"]
    assert error["status"] == 503
    assert error["request_id"] == response.headers["x-request-id"]
    if response.url.path != "/mcp":
        assert set(body) == {"error"}
        assert set(error) == {"status", "message", "request_id"}
        return
    # On /mcp the body is a JSON-RPC error too, answering the tools/call's id (7).
    assert (body["jsonrpc"], body["id"], error["code"]) == ("2.0", 7, -32006)
    assert error["data"] == {"status": 503, "request_id": error["request_id"]}


API_PATHS = ["/api/v1/initiatives", "/api/v1/roi", "/api/v1/budgets", "/api/v1/integrations"]


@pytest.mark.parametrize("path", API_PATHS)
def test_a_connection_lost_after_the_page_was_read_leaves_the_answer(
    server: RunningServer,
    world: World,
    admin: Engine | None,
    logged: list[str],
    monkeypatch: pytest.MonkeyPatch,
    path: str,
) -> None:
    url = server.base_url + path
    expected = httpx.get(url, headers=bearer(world.token_a), timeout=30)
    assert expected.status_code == 200
    killed = on_return(monkeypatch, airoi.db.kept_connections, "give_back", admin)
    response = httpx.get(url, headers=bearer(world.token_a), timeout=30)
    assert killed
    # The plain-text 500 this was: the page stands, as computed.
    assert response.status_code == 200, response.text
    assert response.json() == expected.json()
    assert kept_connections.held(server.app.state.engine) == 0
    discarded = [m for m in logged if m.startswith("connection discarded after the answer")]
    if admin is None:
        # SQLite: returning the closed connection fails; it is discarded, and said so.
        assert discarded == [
            f"connection discarded after the answer on {path} (request "
            f"{response.headers['x-request-id']}): {discarded[0].rsplit(': ', 1)[1]}"
        ]
    else:
        # PostgreSQL: the serving connection is in autocommit, so going back to the pool asks
        # nothing of the server and cannot fail; the next checkout finds it dead.
        assert discarded == []
    # The dead connection was dropped: the next requests read through a new one.
    for _ in range(3):
        assert httpx.get(url, headers=bearer(world.token_a), timeout=30).json() == expected.json()


def test_a_connection_lost_after_a_tool_answered_leaves_the_answer(
    server: RunningServer,
    world: World,
    admin: Engine | None,
    logged: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = tool_result(call_tool(server, world.token_a, "list_initiatives"))
    assert not expected.get("isError")
    killed = on_return(monkeypatch, airoi.tools.server, "close_or_discard", admin)
    result = tool_result(call_tool(server, world.token_a, "list_initiatives"))
    assert killed
    assert result == expected  # not "The tool failed to answer"
    assert kept_connections.held(server.app.state.engine) == 0
    discarded = any(m.startswith("connection discarded after the answer on /mcp") for m in logged)
    assert discarded is (admin is None)  # PostgreSQL: autocommit, nothing asked on return
    assert tool_result(call_tool(server, world.token_a, "list_initiatives")) == expected


ON_POSTGRESQL = [
    pytest.mark.postgresql,
    pytest.mark.parametrize("db_url", ["postgresql"], indirect=True),
]


@pytest.mark.parametrize("path", API_PATHS)
@ON_POSTGRESQL[0]
@ON_POSTGRESQL[1]
def test_a_backend_terminated_before_the_answer_is_503(
    server: RunningServer, world: World, admin: Engine, logged: list[str], path: str
) -> None:
    undo = on_checkout(server.app.state.engine, admin, 1)
    try:
        response = httpx.get(server.base_url + path, headers=bearer(world.token_a), timeout=30)
    finally:
        undo()
    assert_503(response)
    assert any(m.startswith("database unavailable on ") for m in logged), logged
    assert kept_connections.held(server.app.state.engine) == 0
    again = httpx.get(server.base_url + path, headers=bearer(world.token_a), timeout=30)
    assert again.status_code == 200


@pytest.mark.parametrize(
    ("name", "arguments"),
    [("list_initiatives", {}), ("get_roi_summary", {}), ("list_integrations", {})],
)
@ON_POSTGRESQL[0]
@ON_POSTGRESQL[1]
def test_a_backend_terminated_under_a_tool_is_an_http_503(
    server: RunningServer,
    world: World,
    admin: Engine,
    logged: list[str],
    name: str,
    arguments: dict[str, Any],
) -> None:
    # The token is looked up on the first connection; the tool reads on the second.
    undo = on_checkout(server.app.state.engine, admin, 2)
    try:
        response = call_tool(server, world.token_a, name, **arguments)
    finally:
        undo()
    assert_503(response)  # retryable; it was a 200 with a final isError result
    assert f"database unavailable on /mcp tool {name} (request " in "\n".join(logged)
    assert kept_connections.held(server.app.state.engine) == 0
    assert not tool_result(call_tool(server, world.token_a, name, **arguments)).get("isError")


@pytest.mark.parametrize("version", [None, "2025-06-18", MODERN])
def test_a_statement_cut_under_a_tool_is_an_http_503(
    db_url: str,
    world: World,
    logged: list[str],
    monkeypatch: pytest.MonkeyPatch,
    version: str | None,
) -> None:
    # SQLite's way of a database failing under a tool: the statement timeout interrupts it.
    real = airoi.tools.server.service.initiative_list

    def slow(db: Connection, *args: Any, **kwargs: Any) -> Any:
        slow_query(db)
        return real(db, *args, **kwargs)

    monkeypatch.setattr(airoi.tools.server.service, "initiative_list", slow)
    server = RunningServer(Settings(database_url=db_url, statement_timeout_ms=100))
    try:
        response = call_tool(server, world.token_a, "list_initiatives", version)
        assert_503(response)
        assert "longer than the service allows" in response.json()["error"]["message"]
        assert any(
            m.startswith("database unavailable on /mcp tool list_initiatives") for m in logged
        )
        monkeypatch.setattr(airoi.tools.server.service, "initiative_list", real)
        answered = tool_result(call_tool(server, world.token_a, "list_initiatives", version))
        assert not answered.get("isError")
    finally:
        server.stop()


def last_statement(admin: Engine, pid: int) -> str:
    """What backend `pid` last ran, as the server itself records it."""
    with admin.connect() as conn:
        query = text("SELECT query FROM pg_stat_activity WHERE pid = :pid")
        return str(conn.execute(query, {"pid": pid}).scalar_one())


@pytest.fixture
def served_engine(db_url: str) -> Iterator[Engine]:
    """An engine made as the service makes its own (read only, with a statement timeout)."""
    engine = make_engine(db_url, read_only=True, statement_timeout_ms=5000)
    yield engine
    engine.dispose()


def pooled_backend(engine: Engine, statement: str = "SELECT pg_backend_pid()") -> int:
    """The backend of a connection checked out, asked `statement`, and returned to the pool."""
    with engine.connect() as conn:
        return int(conn.execute(text(statement)).scalar_one())


@ON_POSTGRESQL[0]
@ON_POSTGRESQL[1]
def test_a_healthy_pooled_connection_is_reused_without_a_round_trip(
    served_engine: Engine, admin: Engine
) -> None:
    marker = "SELECT pg_backend_pid() AS pooled_connection_marker"
    pid = pooled_backend(served_engine, marker)
    with served_engine.connect() as conn:
        assert conn.connection.driver_connection.info.backend_pid == pid
        # A ping at checkout would be the backend's last statement now.
        assert last_statement(admin, pid) == marker
        assert conn.execute(text("SELECT pg_backend_pid()")).scalar_one() == pid


@ON_POSTGRESQL[0]
@ON_POSTGRESQL[1]
def test_a_pooled_connection_whose_backend_was_terminated_is_never_handed_out(
    served_engine: Engine, admin: Engine
) -> None:
    pid = pooled_backend(served_engine)
    terminate_backend(admin, pid)  # while the connection rests in the pool
    assert pooled_backend(served_engine) != pid
    assert served_engine.pool.checkedin() == 1  # the dead one dropped, not kept beside


@ON_POSTGRESQL[0]
@ON_POSTGRESQL[1]
def test_requests_after_the_pooled_backends_were_terminated_are_answered(
    server: RunningServer, world: World, admin: Engine, logged: list[str]
) -> None:
    pooled: set[int] = set()

    def checkin(driver_connection: Any, _record: Any) -> None:
        if driver_connection is not None:
            pooled.add(driver_connection.info.backend_pid)

    engine = server.app.state.engine
    event.listen(engine, "checkin", checkin)
    url = f"{server.base_url}/api/v1/initiatives"
    expected = httpx.get(url, headers=bearer(world.token_a), timeout=30)
    assert expected.status_code == 200
    assert pooled and engine.pool.checkedout() == 0
    terminated = set(pooled)
    for pid in terminated:
        terminate_backend(admin, pid)
    pooled.clear()
    for _ in range(3):
        response = httpx.get(url, headers=bearer(world.token_a), timeout=30)
        assert response.status_code == 200, response.text
        assert response.json() == expected.json()
    assert pooled and not pooled & terminated
    assert not [m for m in logged if m.startswith("database unavailable")]
