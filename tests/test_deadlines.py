"""A dependency that stops answering costs a bounded wait, and the service recovers unaided.

The servers frozen here are the tests' own (tests/frozen.py), stopped with SIGSTOP: their
connections stay open and nothing answers, as in a network partition. The served app runs
under uvicorn in a thread (tests/servers.py) and is asked over real HTTP, each request with
a client timeout: a request that does not come back within its bound fails the test instead
of hanging it. These are liveness checks, not measurements (bench/deadlines.py measures).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import redis

from airoi.db.engine import DEADLINE_GRACE_S, make_engine
from airoi.db.migrate import upgrade
from airoi.ratelimit import STORE_RETRY_S
from airoi.settings import Settings
from tests.conftest import POSTGRES_URL, _unavailable, bearer
from tests.factories import BundleBuilder
from tests.frozen import OwnPostgres, frozen, logged, own_postgres, own_redis
from tests.servers import RunningServer

STATEMENT_TIMEOUT_MS = 1000
# The first request meeting the frozen server waits out one deadline (its statement timeout
# and the grace); the bound leaves it room on a loaded machine.
FIRST_ANSWER_BOUND_S = 3 * (STATEMENT_TIMEOUT_MS / 1000 + DEADLINE_GRACE_S)
# Once the outage is known, requests are answered without asking the server.
LATER_ANSWER_BOUND_S = 2.0
RECOVERY_BOUND_S = 20.0


def _assert_503(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"status", "message", "request_id"}
    assert body["error"]["status"] == 503
    assert int(response.headers["retry-after"]) >= 1


@pytest.fixture(scope="module")
def postgres() -> Iterator[tuple[OwnPostgres, str]]:
    """The tests' own PostgreSQL, migrated and loaded with one account; and its token."""
    if not POSTGRES_URL:
        _unavailable(
            "PostgreSQL tests need AIROI_TEST_POSTGRES_URL (for example "
            "postgresql+psycopg://postgres@127.0.0.1:5432/test); this one builds its own "
            "server but runs only where PostgreSQL tests are enabled"
        )
    with own_postgres() as server:
        writer = make_engine(server.url)
        try:
            upgrade(writer)
            b = BundleBuilder()
            acct = b.account(name="Frozen Co")
            token = b.token(b.user(acct))
            b.initiative(acct, title="Support triage bot")
            b.load(writer, now=datetime(2026, 3, 1, tzinfo=UTC))
        finally:
            writer.dispose()
        yield server, token


@pytest.fixture
def served() -> Iterator[list[RunningServer]]:
    running: list[RunningServer] = []
    yield running
    for server in running:
        server.stop()


def _serve(database: OwnPostgres, served: list[RunningServer]) -> RunningServer:
    """The app on the tests' own PostgreSQL, with a short statement timeout."""
    server = RunningServer(
        Settings(database_url=database.url, statement_timeout_ms=STATEMENT_TIMEOUT_MS)
    )
    served.append(server)
    return server


def _messages(records: list[Any]) -> list[str]:
    return [record.getMessage() for record in records]


@pytest.mark.postgresql
def test_a_frozen_database_is_answered_503_and_served_again_once_it_thaws(
    postgres: tuple[OwnPostgres, str], served: list[RunningServer]
) -> None:
    database, token = postgres
    server = _serve(database, served)
    page = "/api/v1/initiatives"
    with logged("airoi.db") as records, httpx.Client(base_url=server.base_url) as http:
        assert http.get(page, headers=bearer(token), timeout=10).status_code == 200
        with frozen(database.postmaster_pid, with_children=True):
            # Without a deadline of the client's own this waited for as long as the freeze.
            _assert_503(http.get(page, headers=bearer(token), timeout=FIRST_ANSWER_BOUND_S))
            for _ in range(5):
                _assert_503(http.get(page, headers=bearer(token), timeout=LATER_ANSWER_BOUND_S))
            _assert_503(http.get("/readyz", timeout=LATER_ANSWER_BOUND_S))
            assert http.get("/healthz", timeout=LATER_ANSWER_BOUND_S).status_code == 200
        deadline = time.monotonic() + RECOVERY_BOUND_S
        while (status := http.get(page, headers=bearer(token), timeout=10).status_code) != 200:
            assert status == 503
            assert time.monotonic() < deadline, "still 503 long after the database thawed"
            time.sleep(0.2)
        assert http.get("/readyz", timeout=10).status_code == 200
    # One line when it went, one when it came back: not one per request.
    messages = _messages(records)
    assert len(messages) == 2, messages
    assert "did not answer in time" in messages[0]
    assert "answers again" in messages[1]


# What needs no database is answered while requests wait on a frozen one: well within the
# deadline those requests wait out (the statement timeout and the grace, 2 s here).
NO_WAIT_BOUND_S = 0.5


@pytest.mark.postgresql
def test_health_and_refusals_never_wait_on_requests_waiting_for_a_frozen_database(
    postgres: tuple[OwnPostgres, str], served: list[RunningServer]
) -> None:
    # Issue: a worker ran its requests' database work on its event loop, so while one request
    # waited on the frozen server /healthz waited with it, up to the whole deadline.
    database, token = postgres
    server = _serve(database, served)
    page = "/api/v1/initiatives"
    with httpx.Client(base_url=server.base_url) as http:
        assert http.get(page, headers=bearer(token), timeout=10).status_code == 200
        with frozen(database.postmaster_pid, with_children=True):
            answers: list[int] = []

            def wait_on_the_database() -> None:
                with httpx.Client(base_url=server.base_url) as waiting:
                    got = waiting.get(page, headers=bearer(token), timeout=FIRST_ANSWER_BOUND_S)
                    answers.append(got.status_code)

            waiters = [threading.Thread(target=wait_on_the_database) for _ in range(4)]
            for waiter in waiters:
                waiter.start()
            time.sleep(0.3)  # the four are in the store's hands by now
            alive = [waiter.is_alive() for waiter in waiters]
            started = time.monotonic()
            assert http.get("/healthz", timeout=NO_WAIT_BOUND_S).status_code == 200
            # SEMANTICS R29: no token is a 401 before the store is asked.
            assert http.get(page, timeout=NO_WAIT_BOUND_S).status_code == 401
            took = time.monotonic() - started
            for waiter in waiters:
                waiter.join(FIRST_ANSWER_BOUND_S + 1)
        assert alive == [True] * 4, "the requests were answered before the checks ran"
        assert took < NO_WAIT_BOUND_S
        assert answers == [503] * 4


def test_a_frozen_rate_limit_store_is_counted_in_memory_then_in_it_again(
    db_url: str, served: list[RunningServer]
) -> None:
    from airoi.db.engine import make_engine as writer_of

    b = BundleBuilder()
    token = b.token(b.user(b.account()))
    writer = writer_of(db_url)
    b.load(writer, now=datetime(2026, 3, 1, tzinfo=UTC))
    writer.dispose()
    with own_redis() as (redis_url, redis_server):
        server = RunningServer(
            Settings(database_url=db_url, rate_limit="3/hour", redis_url=redis_url)
        )
        served.append(server)
        page = "/api/v1/initiatives"
        with logged("airoi.ratelimit") as records, httpx.Client(base_url=server.base_url) as http:

            def remaining() -> tuple[int, str]:
                response = http.get(page, headers=bearer(token), timeout=LATER_ANSWER_BOUND_S)
                return response.status_code, response.headers.get("ratelimit-remaining", "")

            assert remaining() == (200, "2")  # counted in Redis: 1 of 3
            with frozen(redis_server.pid):
                # Counted in this process meanwhile, afresh: the limit still holds.
                assert [remaining() for _ in range(4)] == [
                    (200, "2"),
                    (200, "1"),
                    (200, "0"),
                    (429, "0"),
                ]
                for _ in range(5):
                    assert http.get("/healthz", timeout=LATER_ANSWER_BOUND_S).status_code == 200
            # Once the store is asked again (after STORE_RETRY_S), the count is Redis' again:
            # the requests counted in memory meanwhile are not in it (the one that timed out
            # may be: it reached the store's socket before the freeze).
            deadline = time.monotonic() + STORE_RETRY_S + RECOVERY_BOUND_S
            answer = remaining()
            while not any("answers again" in m for m in _messages(records)):
                assert time.monotonic() < deadline, "Redis was never asked again"
                time.sleep(0.2)
                answer = remaining()
            store = redis.Redis.from_url(redis_url, socket_timeout=5)
            [key] = store.keys("*")
            assert int(store.get(key) or 0) in {2, 3}
            assert answer == (200, str(3 - int(store.get(key) or 0)))
    messages = _messages(records)
    assert len(messages) == 2, messages
    assert "not answering (TimeoutError)" in messages[0]
    assert "answers again" in messages[1]


def _store_with_a_token(tmp_path: Any) -> tuple[Any, str]:
    """An SQLite store of one account, and its owner's token."""
    path = tmp_path / "locked.db"
    made = make_engine(f"sqlite:///{path}")
    upgrade(made)
    b = BundleBuilder()
    token = b.token(b.user(b.account(), role="owner"))
    b.load(made)
    made.dispose()
    return path, token


def test_a_locked_sqlite_store_is_waited_on_no_longer_than_a_statement(tmp_path: Any) -> None:
    # A store in rollback-journal mode (not WAL) is unreadable while a writer holds its lock.
    # A request waited SQLite's fixed 5 s whatever the statement limit; then, the token
    # cache's check of the store and the token lookup after it each waited the limit.
    from litestar.testing import TestClient

    from airoi.app import create_app

    path, token = _store_with_a_token(tmp_path)
    limit_s = 1.0
    settings = Settings(database_url=f"sqlite:///{path}", statement_timeout_ms=int(limit_s * 1000))
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=DELETE")
    with TestClient(create_app(settings)) as client:
        assert client.get("/api/v1/initiatives", headers=bearer(token)).status_code == 200
        writer.execute("BEGIN EXCLUSIVE")
        try:
            for _ in range(2):  # and the same again: nothing of the first wait is kept
                started = time.monotonic()
                answer = client.get("/api/v1/initiatives", headers=bearer(token))
                waited = time.monotonic() - started
                assert answer.status_code == 503
                assert limit_s * 0.9 < waited < limit_s * 1.7
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        client.app.state.engine.dispose()


def test_requests_waiting_on_a_locked_sqlite_store_wait_side_by_side_and_health_not_at_all(
    tmp_path: Any, served: list[RunningServer]
) -> None:
    # Issue 20 (no head-of-line blocking): a store not in WAL mode was read on the event loop
    # as one in WAL is, so while a writer held its lock four requests waited one after
    # another (answered 503 at about 1, 2, 3 and 4 limits) and /healthz waited behind them.
    # Such a store is now read in worker threads, as a database server is (airoi.store_access).
    path, token = _store_with_a_token(tmp_path)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=DELETE")  # by hand: every load leaves a store in WAL
    limit_s = 1.0
    server = RunningServer(
        Settings(database_url=f"sqlite:///{path}", statement_timeout_ms=int(limit_s * 1000))
    )
    served.append(server)
    page = "/api/v1/initiatives"
    try:
        with httpx.Client(base_url=server.base_url) as http:
            assert http.get(page, headers=bearer(token), timeout=10).status_code == 200
            writer.execute("BEGIN EXCLUSIVE")
            answers: list[tuple[int, float]] = []
            started = time.monotonic()

            def wait_on_the_lock() -> None:
                with httpx.Client(base_url=server.base_url) as waiting:
                    got = waiting.get(page, headers=bearer(token), timeout=6 * limit_s)
                    answers.append((got.status_code, time.monotonic() - started))

            waiters = [threading.Thread(target=wait_on_the_lock) for _ in range(4)]
            for waiter in waiters:
                waiter.start()
            time.sleep(0.3)  # the four wait on the lock by now
            alive = [waiter.is_alive() for waiter in waiters]
            asked = time.monotonic()
            assert http.get("/healthz", timeout=NO_WAIT_BOUND_S).status_code == 200
            health_took = time.monotonic() - asked
            for waiter in waiters:
                waiter.join(6 * limit_s + 1)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert alive == [True] * 4, "the requests were answered before /healthz was asked"
    assert health_took < NO_WAIT_BOUND_S
    assert [status for status, _ in answers] == [503] * 4
    # Side by side: the last answered about one limit after the start, not four.
    assert max(took for _, took in answers) < 2.5 * limit_s, answers
