"""The token cache: a good token's principal taken as it was for at most a second (SEMANTICS
R29), so a revocation, a removed user, a plan without API access or a changed expiry takes
effect within that second, and an expiry that arrives takes effect at once.

The cache's clock is stepped by hand: nothing here waits or times the code.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine, update

from airoi.auth import TOKEN_CACHE_S, Principal, TokenCache, issue_token, revoke_token
from airoi.db.tables import accounts, tokens, users
from airoi.timeutil import utc_now
from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
PATH = "/api/v1/metrics"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(client: Client) -> Clock:
    clock = Clock()
    cache: TokenCache = client.app.state.token_cache
    cache.clock = clock
    return clock


@pytest.fixture
def owner(engine: Engine) -> tuple[int, int]:
    """An account with API access and its Owner: (account id, user id)."""
    b = BundleBuilder()
    account = b.account()
    user = b.user(account, role="owner")
    b.load(engine)
    return account, user


PRINCIPAL = Principal(account_id=1, user_id=2, account_currency="USD", fiscal_year_start_month=1)


def test_an_entry_lasts_less_than_its_second() -> None:
    clock = Clock()
    cache = TokenCache(clock=clock)
    asked_at = clock.now
    cache.put("h", PRINCIPAL, None, asked_at)
    clock.now = asked_at + TOKEN_CACHE_S - 0.001
    assert cache.get("h") == PRINCIPAL
    clock.now = asked_at + TOKEN_CACHE_S
    assert cache.get("h") is None
    assert len(cache) == 0  # the lapsed entry is dropped
    assert cache.get("other") is None


def test_the_second_counts_from_when_the_store_was_asked() -> None:
    # An entry put late (a slow lookup) lasts no longer than a second from the asking.
    clock = Clock()
    cache = TokenCache(clock=clock)
    asked_at = clock.now
    clock.now += 0.9
    cache.put("h", PRINCIPAL, None, asked_at)
    clock.now = asked_at + 1.0
    assert cache.get("h") is None


def test_an_expiry_is_compared_on_every_request() -> None:
    clock = Clock()
    cache = TokenCache(clock=clock)
    cache.put("h", PRINCIPAL, utc_now() - timedelta(milliseconds=1), clock.now)
    assert cache.get("h") is None  # SEMANTICS R29: expires_at at or before now
    cache.put("h", PRINCIPAL, utc_now() + timedelta(days=1), clock.now)
    assert cache.get("h") == PRINCIPAL


def test_a_full_cache_drops_what_lapsed_then_everything() -> None:
    clock = Clock()
    cache = TokenCache(clock=clock, max_entries=2)
    cache.put("a", PRINCIPAL, None, clock.now)
    clock.now += 2
    cache.put("b", PRINCIPAL, None, clock.now)
    cache.put("c", PRINCIPAL, None, clock.now)  # full: "a" has lapsed and goes
    assert len(cache) == 2
    assert cache.get("b") == PRINCIPAL and cache.get("c") == PRINCIPAL
    cache.put("d", PRINCIPAL, None, clock.now)  # full, none lapsed: all go but the new one
    assert len(cache) == 1
    assert cache.get("d") == PRINCIPAL


def test_no_second_keeps_nothing() -> None:
    cache = TokenCache(0.0)
    cache.put("h", PRINCIPAL, None, 0.0)
    assert len(cache) == 0


def test_a_revocation_takes_effect_within_a_second(
    client: Client, engine: Engine, owner: tuple[int, int], clock: Clock
) -> None:
    # SEMANTICS R29: a revoked token is 401.
    issued = issue_token(engine, owner[1])
    assert client.get(PATH, headers=bearer(issued.secret)).status_code == 200
    revoke_token(engine, issued.prefix)
    clock.now += TOKEN_CACHE_S
    response = client.get(PATH, headers=bearer(issued.secret))
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "The token is not valid."


def test_a_removed_user_is_refused_within_a_second(
    client: Client, engine: Engine, owner: tuple[int, int], clock: Clock
) -> None:
    # SEMANTICS R29: a token whose user was removed from the account is 401.
    issued = issue_token(engine, owner[1])
    assert client.get(PATH, headers=bearer(issued.secret)).status_code == 200
    with engine.begin() as conn:
        conn.execute(update(users).where(users.c.id == owner[1]).values(removed_at=utc_now()))
    clock.now += TOKEN_CACHE_S
    response = client.get(PATH, headers=bearer(issued.secret))
    assert response.status_code == 401
    assert "can no longer open the account" in response.json()["error"]["message"]


def test_a_plan_without_api_access_is_refused_within_a_second(
    client: Client, engine: Engine, owner: tuple[int, int], clock: Clock
) -> None:
    issued = issue_token(engine, owner[1])
    assert client.get(PATH, headers=bearer(issued.secret)).status_code == 200
    with engine.begin() as conn:
        conn.execute(update(accounts).where(accounts.c.id == owner[0]).values(api_access=False))
    clock.now += TOKEN_CACHE_S
    assert client.get(PATH, headers=bearer(issued.secret)).status_code == 403


def test_an_expiry_set_later_takes_effect_within_a_second(
    client: Client, engine: Engine, owner: tuple[int, int], clock: Clock
) -> None:
    issued = issue_token(engine, owner[1])
    assert client.get(PATH, headers=bearer(issued.secret)).status_code == 200
    with engine.begin() as conn:
        conn.execute(update(tokens).values(expires_at=utc_now() - timedelta(seconds=1)))
    clock.now += TOKEN_CACHE_S
    response = client.get(PATH, headers=bearer(issued.secret))
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "The token has expired."


def test_an_expiry_arriving_takes_effect_at_once(
    client: Client,
    engine: Engine,
    owner: tuple[int, int],
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The clock of the cache does not move: the cached expiry alone refuses the token.
    issued = issue_token(engine, owner[1], expires_in_days=1)
    assert issued.expires_at is not None
    assert client.get(PATH, headers=bearer(issued.secret)).status_code == 200
    later: datetime = issued.expires_at
    monkeypatch.setattr("airoi.auth.utc_now", lambda: later)
    response = client.get(PATH, headers=bearer(issued.secret))
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "The token has expired."


def test_a_good_token_is_remembered_and_a_bad_one_is_not(
    client: Client, engine: Engine, owner: tuple[int, int], clock: Clock
) -> None:
    cache: TokenCache = client.app.state.token_cache
    issued = issue_token(engine, owner[1])
    assert client.get(PATH, headers=bearer("airoi_" + "n" * 40)).status_code == 401
    assert len(cache) == 0
    assert client.get(PATH, headers=bearer(issued.secret)).status_code == 200
    assert len(cache) == 1
    # A remembered token is still counted against its budget on every request (SPEC 8).
    first = client.get(PATH, headers=bearer(issued.secret))
    second = client.get(PATH, headers=bearer(issued.secret))
    remaining = int(first.headers["ratelimit-remaining"])
    assert int(second.headers["ratelimit-remaining"]) == remaining - 1


def test_a_remembered_token_reads_a_page_through_one_connection(
    client: Client, engine: Engine, owner: tuple[int, int], clock: Clock
) -> None:
    # A keyset page asked with a remembered token checks its connection out itself (in its
    # worker thread on PostgreSQL): still one checkout, returned before the answer.
    issued = issue_token(engine, owner[1])
    pool = client.app.state.engine.pool
    for path in ("/api/v1/cost_entries", "/api/v1/cost_entries", "/api/v1/initiatives"):
        response = client.get(path, headers=bearer(issued.secret))
        assert response.status_code == 200, path
        assert response.json()["data"] == []
        assert pool.checkedout() == 0
    # SEMANTICS R31: a missing initiative is 404 on the page's own connection.
    response = client.get("/api/v1/cost_entries?initiative_id=999", headers=bearer(issued.secret))
    assert response.status_code == 404
    assert pool.checkedout() == 0
    assert len(client.app.state.token_cache) == 1
