"""One connection per request, given back before the answer is sent.

The token is looked up on the connection the handler then reads through (one taken, not
two), and the connection is given back (to the pool, or on SQLite to the engine's shelf,
airoi.db.kept_connections) by the time the first message of the answer goes out, so a slow
client never holds it. A refused request gives it back too.

A request must never wait on the event loop while it holds its connection: the pool is
checked out from the loop's own thread, so requests that wait holding every connection
would stall the next checkout, and with it the whole worker, until the pool times out.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from sqlalchemy import create_engine, event

from airoi.app import ROUTE_HANDLERS, create_app
from airoi.db import kept_connections
from airoi.settings import Settings
from tests.factories import BundleBuilder

PATHS = ["/api/v1/cost_entries", "/api/v1/initiatives", "/api/v1/roi", "/api/v1/budgets"]


def _scope(path: str, token: str, query: str = "") -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode(),
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
        "headers": [(b"host", b"x"), (b"authorization", f"Bearer {token}".encode())],
    }


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


def _ask(app: Any, path: str, token: str, query: str = "") -> list[dict[str, Any]]:
    """The ASGI messages the app sends for one GET, each with the count of connections a
    request held at the moment it was sent."""
    engine = app.state.engine
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append({**message, "held": kept_connections.held(engine)})

    asyncio.run(app(_scope(path, token, query), _receive, send))
    return sent


def _world(engine: Any) -> tuple[str, int]:
    """An account with a token, an initiative and a cost entry: the token and the initiative."""
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    b.cost_entry(initiative)
    b.load(engine)
    return token, initiative


def test_one_connection_per_request_given_back_before_the_answer(
    db_url: str, engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    token, _ = _world(engine)
    app = create_app(Settings(database_url=db_url))
    served = app.state.engine
    taken: list[int] = []
    checkouts: list[int] = []
    take = kept_connections.take
    monkeypatch.setattr(kept_connections, "take", lambda e: taken.append(1) or take(e))
    event.listen(served, "checkout", lambda *_: checkouts.append(1))
    try:
        for path in PATHS:
            taken.clear()
            sent = _ask(app, path, token)
            assert sent[0]["status"] == 200, sent
            assert len(taken) == 1, path
            assert [m["held"] for m in sent] == [0] * len(sent), path
        # Refused after the lookup (a parameter, then a missing initiative): given back too.
        for query, status in (("limit=0", 400), ("initiative_id=999999", 404)):
            sent = _ask(app, "/api/v1/cost_entries", token, query)
            assert sent[0]["status"] == status
            assert sent[0]["held"] == 0
        assert kept_connections.held(served) == 0
        # SQLite: every request after the first took the connection the one before gave back;
        # a database server: one checkout of the pool per request.
        sqlite = db_url.startswith("sqlite")
        assert len(checkouts) == (1 if sqlite else len(PATHS) + 2)
        assert kept_connections.shelved(served) == (1 if sqlite else 0)
    finally:
        served.dispose()


def test_requests_at_once_never_wait_holding_the_pool(db_url: str, engine: Any) -> None:
    # Six requests at once through a pool of two with no overflow: a request that waited on
    # the loop holding its connection (a dependency resolved in a task group, say) would
    # leave the third checkout blocking the loop until the pool's 2-second timeout.
    token, initiative = _world(engine)
    small = create_engine(
        db_url,
        pool_size=2,
        max_overflow=0,
        pool_timeout=2,
        **({"connect_args": {"check_same_thread": False}} if db_url.startswith("sqlite") else {}),
    )
    app = create_app(Settings(database_url=db_url), engine=small)
    paths = [
        *PATHS,
        f"/api/v1/initiatives/{initiative}",
        "/api/v1/value_entries",
        "/api/v1/metrics",
        "/api/v1/observations",
        "/api/v1/decisions",
        "/api/v1/integrations",
    ]

    async def one(path: str) -> int:
        statuses: list[int] = []

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        await app(_scope(path, token), _receive, send)
        return statuses[0]

    async def at_once(path: str) -> list[int]:
        return list(await asyncio.gather(*(one(path) for _ in range(6))))

    try:
        for path in paths:
            started = time.perf_counter()
            assert asyncio.run(at_once(path)) == [200] * 6, path
            assert time.perf_counter() - started < 1.5, path
    finally:
        small.dispose()


def test_api_handlers_resolve_no_dependency(db_url: str) -> None:
    # Dependencies with no order between them are resolved side by side, in a task group:
    # a request would wait on the loop holding its connection. And even one costs each
    # request its resolution: every handler makes what it reads with from its request
    # (airoi.api.common.reading_of) instead.
    app = create_app(Settings(database_url=db_url))
    try:
        api = [
            handler
            for route in app.routes
            for handler in getattr(route, "route_handlers", ())
            if "GET" in handler.http_methods and route.path.startswith("/api/v1/")
        ]
        assert {handler.handler_name for handler in api} >= {"list_cost_entries", "get_roi"}
        for handler in api:
            assert handler.resolve_dependencies() == {}, handler.handler_name
        readers = [h for h in api if "request" in h.parsed_fn_signature.parameters]
        assert {h.handler_name for h in readers} >= {h.handler_name for h in ROUTE_HANDLERS}
    finally:
        app.state.engine.dispose()


def test_a_connection_not_yet_taken_is_taken_in_a_worker_thread_only(tmp_path: Any) -> None:
    # Where the token cache kept the token's row (PostgreSQL), the handler's thread takes the
    # request's connection on first use; asked on the event loop, it is refused (a checkout
    # there could wait on the server) and none is taken.
    from airoi.api.common import Reading
    from airoi.auth import Principal
    from airoi.observability import RequestContext

    engine = create_engine(f"sqlite:///{tmp_path / 'r.db'}")
    principal = Principal(
        account_id=1, user_id=1, account_currency="USD", fiscal_year_start_month=1
    )
    context = RequestContext(request_id="r", method="GET")
    reading = Reading(principal, context, engine, None, Settings())  # type: ignore[arg-type]

    async def on_the_loop() -> Any:
        return reading.db

    with pytest.raises(RuntimeError, match="worker thread"):
        asyncio.run(on_the_loop())
    assert context.connection is None
    db = reading.db  # in a thread without an event loop: taken, and kept for the request
    assert db is context.connection is reading.db
    context.release()
    assert kept_connections.held(engine) == 0
    engine.dispose()
