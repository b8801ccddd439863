"""Requests per token (SPEC 7: 429; SPEC 8: over the rate limit is 429), counted after auth.

The budget is per token, keyed by the token's hash (SEMANTICS R15: no token text is
stored), counted only once the token is good (SEMANTICS R29: a 401 stays 401), shared
by the tool endpoint, and shared by every worker through Redis when it is configured.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import httpx
import pytest
import redis
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.app import create_app
from airoi.auth import issue_token
from airoi.db.engine import make_engine
from airoi.ratelimit import LocalWindows, RateLimiter
from airoi.settings import Settings
from airoi.tokens import hash_token
from tests.conftest import _empty, bearer
from tests.factories import BundleBuilder
from tests.frozen import frozen, logged, own_redis
from tests.servers import airoi_serve

# Counted in memory or Redis, never in the store: SQLite alone (tests/conftest.py).
pytestmark = pytest.mark.store_independent

Client = TestClient[Litestar]
HEADERS = (
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "x-ratelimit-limit",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
)
# An hour, so a window never ends inside a test.
THREE_AN_HOUR = "3/hour"
MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


@pytest.fixture
def tokens(engine: Engine) -> dict[str, str]:
    b = BundleBuilder()
    acct = b.account()
    owner = b.user(acct, role="owner")
    no_api = b.account(name="No API", api_access=False)
    secrets = {
        "first": b.token(owner),
        "second": b.token(owner),
        "colleague": b.token(b.user(acct, role="admin", name="Grace")),
        "no_api": b.token(b.user(no_api, role="owner")),
    }
    b.load(engine)
    return secrets


@pytest.fixture
def clients(db_url: str) -> Iterator[ExitStack]:
    with ExitStack() as stack:
        yield stack


def client_of(stack: ExitStack, settings: Settings) -> Client:
    app = create_app(settings)
    stack.callback(app.state.engine.dispose)
    return stack.enter_context(TestClient(app))


def assert_spec_429(response: object) -> None:
    assert response.status_code == 429  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    if response.url.path == "/mcp":  # type: ignore[attr-defined]
        # There a JSON-RPC error too, answering the request's id (MCP_INITIALIZE's 1).
        assert (body.pop("jsonrpc"), body.pop("id"), body["error"].pop("code")) == (
            "2.0",
            1,
            -32005,
        )
        assert body["error"].pop("data")["status"] == 429
    assert set(body) == {"error"}
    assert set(body["error"]) == {"status", "message", "request_id"}
    assert body["error"]["status"] == 429
    assert body["error"]["message"].endswith(".")
    assert int(response.headers["retry-after"]) >= 1  # type: ignore[attr-defined]


def test_over_the_limit_is_429_with_headers(
    db_url: str, tokens: dict[str, str], clients: ExitStack
) -> None:
    client = client_of(clients, Settings(database_url=db_url, rate_limit=THREE_AN_HOUR))
    for remaining in (2, 1, 0):
        response = client.get("/api/v1/initiatives", headers=bearer(tokens["first"]))
        assert response.status_code == 200
        for name in HEADERS:
            assert name in response.headers, name
        assert response.headers["ratelimit-limit"] == "3"
        assert response.headers["x-ratelimit-limit"] == "3"
        assert response.headers["ratelimit-remaining"] == str(remaining)
        assert response.headers["x-ratelimit-remaining"] == str(remaining)
        assert 1 <= int(response.headers["ratelimit-reset"]) <= 3600
    response = client.get("/api/v1/initiatives", headers=bearer(tokens["first"]))
    assert_spec_429(response)
    assert response.headers["ratelimit-remaining"] == "0"
    assert int(response.headers["retry-after"]) <= 3600
    # SEMANTICS R39: the budget is the person's: another token of the same user is refused
    # too; another user of the account still reads.
    assert_spec_429(client.get("/api/v1/metrics", headers=bearer(tokens["second"])))
    assert client.get("/api/v1/metrics", headers=bearer(tokens["colleague"])).status_code == 200


def test_unauthenticated_requests_are_not_counted(
    db_url: str, tokens: dict[str, str], clients: ExitStack
) -> None:
    # SEMANTICS R29, R30: 401 and 403 are decided first and never turn into 429.
    client = client_of(clients, Settings(database_url=db_url, rate_limit=THREE_AN_HOUR))
    for _ in range(5):
        response = client.get("/api/v1/initiatives", headers=bearer("airoi_" + "x" * 43))
        assert response.status_code == 401
        assert "ratelimit-limit" not in response.headers
        assert client.get("/api/v1/initiatives").status_code == 401
        assert client.get("/api/v1/roi", headers=bearer(tokens["no_api"])).status_code == 403
    for _ in range(3):
        response = client.get("/api/v1/initiatives", headers=bearer(tokens["first"]))
        assert response.status_code == 200
    assert_spec_429(client.get("/api/v1/initiatives", headers=bearer(tokens["first"])))
    assert client.get("/api/v1/initiatives").status_code == 401


def test_the_tool_endpoint_counts_against_the_same_budget(
    db_url: str, tokens: dict[str, str], clients: ExitStack
) -> None:
    # SPEC 5.2: one token for both interfaces, so one budget.
    settings = Settings(
        database_url=db_url, rate_limit=THREE_AN_HOUR, allowed_hosts=("testserver.local",)
    )
    client = client_of(clients, settings)
    mcp_headers = {"Accept": "application/json, text/event-stream", **bearer(tokens["first"])}
    assert client.get("/api/v1/initiatives", headers=bearer(tokens["first"])).status_code == 200
    response = client.post("/mcp", json=MCP_INITIALIZE, headers=mcp_headers)
    assert response.status_code == 200
    assert response.headers["ratelimit-remaining"] == "1"
    assert client.get("/api/v1/roi", headers=bearer(tokens["first"])).status_code == 200
    assert_spec_429(client.post("/mcp", json=MCP_INITIALIZE, headers=mcp_headers))
    assert_spec_429(client.get("/api/v1/roi", headers=bearer(tokens["first"])))


def test_workers_share_one_budget_through_redis(
    db_url: str, engine: Engine, clients: ExitStack, redis_url: str
) -> None:
    # Ids of its own: Redis is shared by the tests running beside this one, per person.
    b = BundleBuilder(first_id=10**6 + secrets.randbelow(10**9))
    owner = b.user(b.account(), role="owner")
    b.load(engine)
    # Two app instances stand for two `airoi serve` workers: AIROI_REDIS_URL joins their counts.
    settings = Settings(database_url=db_url, rate_limit=THREE_AN_HOUR, redis_url=redis_url)
    one, two = client_of(clients, settings), client_of(clients, settings)
    # A freshly issued random token: the factory's repeat from run to run, and Redis outlives runs;
    # so does the person's counter, which an earlier run left: it starts afresh.
    token = issue_token(engine, owner).secret
    store = redis.Redis.from_url(redis_url)
    for stale in store.keys(f"*/user:{owner}/*"):
        store.delete(stale)
    assert (
        one.get("/api/v1/initiatives", headers=bearer(token)).headers["ratelimit-remaining"] == "2"
    )
    assert (
        two.get("/api/v1/initiatives", headers=bearer(token)).headers["ratelimit-remaining"] == "1"
    )
    assert (
        one.get("/api/v1/initiatives", headers=bearer(token)).headers["ratelimit-remaining"] == "0"
    )
    assert_spec_429(two.get("/api/v1/initiatives", headers=bearer(token)))
    assert_spec_429(one.get("/api/v1/initiatives", headers=bearer(token)))
    # SEMANTICS R39, R15: the counter is keyed by the person, never by the token.
    keys = [k.decode() for k in store.keys("*")]
    assert any(f"/user:{owner}/" in key for key in keys)
    assert not any(hash_token(token) in key for key in keys)
    assert not any(token in key or token.removeprefix("airoi_") in key for key in keys)


def test_without_redis_every_worker_counts_alone(
    db_url: str, tokens: dict[str, str], clients: ExitStack
) -> None:
    # The contrast to the test above: in memory, each process has its own budget.
    settings = Settings(database_url=db_url, rate_limit=THREE_AN_HOUR)
    one, two = client_of(clients, settings), client_of(clients, settings)
    for client in (one, two):
        response = client.get("/api/v1/initiatives", headers=bearer(tokens["first"]))
        assert response.headers["ratelimit-remaining"] == "2"


def test_an_unreachable_redis_counts_in_memory_and_warns_once(
    db_url: str, tokens: dict[str, str], clients: ExitStack
) -> None:
    # A decision of ours (SPEC is silent): a read-only service stays up while its counter
    # store is away, and counts in each worker's memory meanwhile, so the limit still holds
    # (per worker); the log says so once, not on every request.
    settings = Settings(database_url=db_url, rate_limit="2/hour", redis_url="redis://127.0.0.1:9/0")
    client = client_of(clients, settings)
    with logged("airoi.ratelimit") as warnings:
        statuses = [
            client.get("/api/v1/initiatives", headers=bearer(tokens["first"])) for _ in range(3)
        ]
    assert [r.status_code for r in statuses] == [200, 200, 429]
    assert [r.headers["ratelimit-remaining"] for r in statuses] == ["1", "0", "0"]
    assert_spec_429(statuses[2])
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "not answering" in warnings[0].getMessage()


def test_rate_limit_setting_is_checked() -> None:
    assert Settings.from_env({"AIROI_RATE_LIMIT": "10/second"}).rate_limit == "10/second"
    with pytest.raises(ValueError, match="AIROI_RATE_LIMIT"):
        Settings.from_env({"AIROI_RATE_LIMIT": "lots"})


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_window_in_memory_starts_at_the_first_request_and_ends_after_its_length() -> None:
    clock = Clock(1000.0)
    windows = LocalWindows(clock)
    assert windows.hit("a", 60) == (1, 1060.0)
    clock.now = 1059.5
    assert windows.hit("a", 60) == (2, 1060.0)
    # Each key counts alone.
    assert windows.hit("b", 60) == (1, 1119.5)
    # At the moment the window ends a new one starts, from that request.
    clock.now = 1060.0
    assert windows.hit("a", 60) == (1, 1120.0)


def test_ended_windows_in_memory_are_dropped_without_a_thread() -> None:
    clock = Clock(0.0)
    windows = LocalWindows(clock)
    threads_before = threading.active_count()
    for n in range(100):
        windows.hit(f"token-{n}", 10)
    assert len(windows) == 100
    # The next request after every window ended sweeps them; only its own is left.
    clock.now = 10.0
    assert windows.hit("token-late", 10) == (1, 20.0)
    assert len(windows) == 1
    assert threading.active_count() == threads_before


def test_the_memory_limiter_counts_a_token_to_its_limit() -> None:
    limiter = RateLimiter("2/minute")
    assert limiter.storage is None
    first, second, third = (limiter.hit_here(hash_token("airoi_t")) for _ in range(3))
    assert (first.allowed, first.remaining) == (True, 1)
    assert (second.allowed, second.remaining) == (True, 0)
    assert (third.allowed, third.remaining) == (False, 0)
    assert first.reset_at == third.reset_at
    assert 0 < third.seconds_to_reset() <= 60


@pytest.mark.parametrize(
    "store", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)]
)
def test_more_requests_waiting_on_redis_than_the_pool_holds_are_all_answered(
    store: str, request: pytest.FixtureRequest
) -> None:
    # Redis is asked off the event loop, so a request waits for it: when checkouts were made
    # on the loop, more concurrent requests than the pool has connections (15) left the loop
    # blocked in a checkout until the pool's timeout (30 s), then answered 503. Now at most
    # as many as the pool holds pass the store's gate (airoi.store_access). A Redis of
    # the test's own, stopped for 0.15 s in every 0.2 s, makes each request wait on it.
    url = request.getfixturevalue(f"{store}_url")
    engine = make_engine(url)
    _empty(engine)
    b = BundleBuilder()
    token = b.token(b.user(b.account()))
    b.load(engine)
    engine.dispose()
    with own_redis() as (redis_url, redis_server):
        env = {"AIROI_REDIS_URL": redis_url, "AIROI_RATE_LIMIT": "100000/minute"}
        with airoi_serve(url, **env) as port, ExitStack() as opened:
            pages = f"http://127.0.0.1:{port}/api/v1/initiatives"
            done = threading.Event()
            # A client per thread: one shared by 48 threads once read from a socket another
            # thread had closed ("Bad file descriptor"), on the test's side of the wire.
            own = threading.local()

            def stutter() -> None:
                while not done.is_set():
                    with frozen(redis_server.pid):
                        time.sleep(0.15)
                    time.sleep(0.05)

            def ask(_: int) -> int:
                client = getattr(own, "client", None)
                if client is None:
                    client = own.client = opened.enter_context(httpx.Client(timeout=20))
                return client.get(pages, headers=bearer(token)).status_code

            slowing = threading.Thread(target=stutter)
            slowing.start()
            try:
                with ThreadPoolExecutor(48) as pool:
                    statuses = list(pool.map(ask, range(240)))
            finally:
                done.set()
                slowing.join()
    assert statuses == [200] * 240


@pytest.mark.parametrize("counted", ["in memory", "in Redis"])
def test_a_grant_and_its_refresh_draw_on_their_persons_budget(
    db_url: str, engine: Engine, clients: ExitStack, request: pytest.FixtureRequest, counted: str
) -> None:
    # SEMANTICS R39: each assistant grant, and each refresh of it, opens no fresh budget.
    from tests.oauth.test_grants import BASE, grant, mcp, refresh

    # Ids of its own: Redis is shared by the tests running beside this one, and outlives them.
    b = BundleBuilder(first_id=10**6 + secrets.randbelow(10**9))
    owner = b.user(b.account(), role="owner")
    tokens = {"first": b.token(owner), "second": b.token(owner)}
    b.load(engine)
    redis_url = request.getfixturevalue("redis_url") if counted == "in Redis" else None
    settings = Settings(
        database_url=db_url,
        rate_limit="4/hour",
        allowed_hosts=("testserver",),
        redis_url=redis_url,
    )
    app = create_app(settings)
    clients.callback(app.state.engine.dispose)
    client = clients.enter_context(TestClient(app, base_url=BASE))
    reg, issued = grant(client, tokens["first"])
    assert mcp(client, issued["access_token"]).headers["ratelimit-remaining"] == "3"
    renewed = refresh(client, reg, issued["refresh_token"]).json()
    assert mcp(client, renewed["access_token"]).headers["ratelimit-remaining"] == "2"
    _, second_grant = grant(client, tokens["second"])
    assert mcp(client, second_grant["access_token"]).headers["ratelimit-remaining"] == "1"
    assert client.get("/api/v1/roi", headers=bearer(tokens["first"])).status_code == 200
    assert_spec_429(mcp(client, renewed["access_token"]))
    assert_spec_429(client.get("/api/v1/roi", headers=bearer(tokens["second"])))
