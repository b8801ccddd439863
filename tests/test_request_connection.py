"""One pooled connection per request, returned before the answer is sent.

The token is looked up on the connection the handler then reads through (one checkout,
not two), and the connection is back in the pool by the time the first message of the
answer goes out, so a slow client never holds it. A refused request returns it too.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import event

from airoi.app import create_app
from airoi.settings import Settings
from tests.factories import BundleBuilder

PATHS = ["/api/v1/cost_entries", "/api/v1/initiatives", "/api/v1/roi", "/api/v1/budgets"]


def _ask(app: Any, path: str, token: str, query: str = "") -> list[dict[str, Any]]:
    """The ASGI messages the app sends for one GET, each with the pool's checked-out count
    at the moment it was sent."""
    pool = app.state.engine.pool
    scope = {
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
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append({**message, "checked_out": pool.checkedout()})

    asyncio.run(app(scope, receive, send))
    return sent


def test_one_checkout_per_request_returned_before_the_answer(db_url: str, engine: Any) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    b.cost_entry(initiative)
    b.load(engine)
    app = create_app(Settings(database_url=db_url))
    checkouts: list[int] = []
    event.listen(app.state.engine, "checkout", lambda *_: checkouts.append(1))
    try:
        for path in PATHS:
            checkouts.clear()
            sent = _ask(app, path, token)
            assert sent[0]["status"] == 200, sent
            assert len(checkouts) == 1, path
            assert [m["checked_out"] for m in sent] == [0] * len(sent), path
        # Refused after the lookup (a parameter, then a missing initiative): returned too.
        for query, status in (("limit=0", 400), ("initiative_id=999999", 404)):
            sent = _ask(app, "/api/v1/cost_entries", token, query)
            assert sent[0]["status"] == status
            assert sent[0]["checked_out"] == 0
        assert app.state.engine.pool.checkedout() == 0
    finally:
        app.state.engine.dispose()
