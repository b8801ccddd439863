"""HEAD over a real server: GET's headers without its body, on a connection that stays open.

SEMANTICS R30 serves HEAD on every route GET is served on. What a unit test client cannot
show is the server's side: uvicorn decides from its own scope whether to send a body, so
these tests run uvicorn (both of its HTTP implementations) and talk to it with http.client,
one keep-alive connection per test.
"""

from __future__ import annotations

import http.client
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import pytest
from sqlalchemy import Engine

from airoi.logs import JsonFormatter
from airoi.settings import Settings
from tests.factories import BundleBuilder
from tests.servers import RunningServer

# HEAD's framing by uvicorn, the same over either store: SQLite alone (tests/conftest.py).
pytestmark = pytest.mark.store_independent

# Headers that differ between any two requests, whatever the method.
_PER_REQUEST = {"date", "x-request-id"}


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class Seeded:
    token: str
    initiative_id: int


class LoggedErrors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def seeded(engine: Engine) -> Seeded:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    b.load(engine)
    return Seeded(token=token, initiative_id=initiative)


@pytest.fixture(params=["httptools", "h11"])
def server(request: pytest.FixtureRequest, db_url: str) -> Iterator[RunningServer]:
    http_impl: Literal["httptools", "h11"] = request.param
    running = RunningServer(Settings(database_url=db_url), http=http_impl)
    yield running
    running.stop()


@pytest.fixture
def logged_errors() -> Iterator[LoggedErrors]:
    """Errors uvicorn logs (an exception in the app, a short body), which reach no client."""
    handler = LoggedErrors()
    loggers = [logging.getLogger(name) for name in ("uvicorn.error", "litestar", "airoi")]
    for logger in loggers:
        logger.addHandler(handler)
    yield handler
    for logger in loggers:
        logger.removeHandler(handler)


def ask(conn: http.client.HTTPConnection, method: str, path: str, token: str | None) -> Answer:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    conn.request(method, path, headers=headers)
    response = conn.getresponse()
    body = response.read()
    return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, body)


def comparable(headers: dict[str, str]) -> dict[str, str]:
    # The rate-limit headers count this very request, so they change from one to the next.
    return {k: v for k, v in headers.items() if k not in _PER_REQUEST and "ratelimit" not in k}


@pytest.mark.parametrize(
    ("path", "with_token", "status"),
    [
        ("/healthz", False, 200),
        ("/readyz", False, 200),
        ("/api/v1/openapi.json", False, 200),
        ("/api/v1/initiatives", True, 200),
        ("/api/v1/initiatives/{initiative_id}", True, 200),
        ("/api/v1/roi", True, 200),
        ("/api/v1/initiatives", False, 401),
        ("/api/v1/initiatives?limit=0", True, 400),
        ("/api/v1/initiatives/999999", True, 404),
        ("/api/v1/no_such_thing", False, 404),
        ("/mcp", False, 405),  # the tool endpoint serves POST alone
    ],
)
def test_head_then_get_on_one_connection(
    server: RunningServer,
    seeded: Seeded,
    logged_errors: LoggedErrors,
    path: str,
    with_token: bool,
    status: int,
) -> None:
    # SEMANTICS R30: HEAD is GET without the body. Rewriting the server's scope to GET made
    # uvicorn expect Content-Length bytes, log "Response content shorter than Content-Length"
    # and reset the connection, so the GET after it failed.
    path = path.format(initiative_id=seeded.initiative_id)
    token = seeded.token if with_token else None
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        head = ask(conn, "HEAD", path, token)
        sock = conn.sock
        get = ask(conn, "GET", path, token)
        assert conn.sock is sock and sock is not None, "the connection was not kept open"
        head_again = ask(conn, "HEAD", path, token)
    finally:
        conn.close()
    assert head.status == get.status == head_again.status == status
    assert head.body == head_again.body == b""
    assert get.body
    assert int(get.headers["content-length"]) == len(get.body)
    assert comparable(head.headers) == comparable(get.headers) == comparable(head_again.headers)
    if path.startswith("/api/v1/") and status == 200:
        assert head.headers["etag"] == get.headers["etag"]
    assert not logged_errors.records, [r.getMessage() for r in logged_errors.records]


JSON = JsonFormatter()  # as `airoi serve` writes the access line by default


def test_head_keeps_the_matched_route_for_the_access_log(
    server: RunningServer, seeded: Seeded, caplog: pytest.LogCaptureFixture
) -> None:
    # The route template reaches the access log and the metrics for HEAD as it does for GET.
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    path = f"/api/v1/initiatives/{seeded.initiative_id}"
    with caplog.at_level(logging.INFO, logger="airoi.access"):
        try:
            assert ask(conn, "HEAD", path, seeded.token).status == 200
        finally:
            conn.close()
        # The line is written once the answer is sent, in the server's thread.
        deadline = time.monotonic() + 10
        lines: list[str] = []
        while not lines and time.monotonic() < deadline:
            lines = [JSON.format(r) for r in caplog.records if r.name == "airoi.access"]
            time.sleep(0.01)
    assert len(lines) == 1, lines
    line = json.loads(lines[0])
    assert (line["method"], line["status"]) == ("HEAD", 200)
    assert line["route"].startswith("/api/v1/initiatives/{id"), line
    metrics = server.app.state.metrics.render()
    assert f'method="HEAD",route="{line["route"]}",status="200"' in metrics
