"""The API's token rows kept by the cache (airoi.token_cache) while the store is unchanged.

SEMANTICS R29: a revoked token, a removed user, an expiry passed and a plan without API
access are refused, and the account's figures (its currency) are the store's. On SQLite the
very next request sees a change committed by another connection (no wait, no window); on
PostgreSQL the change's notification reaches the worker's listener, normally before the next
request and always within the cache's second. A request that finds its token's row kept
runs no token lookup.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from anyio import to_thread
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine, create_engine, event, text, update
from sqlalchemy.pool import StaticPool

from airoi import auth
from airoi.app import create_app
from airoi.auth import issue_token, revoke_token
from airoi.db import kept_connections
from airoi.db.tables import accounts, tokens, users
from airoi.settings import Settings
from airoi.timeutil import utc_now
from airoi.token_cache import CHANNEL, TOKEN_CACHE_S, ChangeListener, TokenCache
from airoi.tokens import hash_token
from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
PATH = "/api/v1/metrics"

# The cache's rows and lookups are counted from the app's start, its listener's notifications
# included: each test has an app of its own (tests/conftest.py).
pytestmark = pytest.mark.fresh_app

# How often a PostgreSQL test asks again while the notification is on its way.
POLL_S = 0.005


@pytest.fixture
def owner(engine: Engine) -> tuple[int, int]:
    """An account with API access and its Owner: (account id, user id)."""
    b = BundleBuilder()
    account = b.account(currency="USD")
    user = b.user(account, role="owner")
    b.load(engine)
    return account, user


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The token lookups run (one entry each), counted where the statement is sent."""
    ran: list[str] = []
    look_up = auth._TOKEN_LOOKUP
    rows = look_up.rows

    def counted(conn: Any, params: Any) -> Any:
        ran.append(conn.dialect.name)
        return rows(conn, params)

    monkeypatch.setattr(look_up, "rows", counted)
    return ran


def listening(client: Client) -> None:
    """On PostgreSQL, wait until the app's listener listens (it connects in its own thread
    after start-up; until then every request asks the store)."""
    cache: TokenCache = client.app.state.token_cache
    if cache.listener is None:
        return
    deadline = time.monotonic() + 10
    while not cache.listener.listening:
        assert time.monotonic() < deadline, "the listener did not connect"
        time.sleep(POLL_S)


def seen(client: Client, engine: Engine, secret: str, wanted: Callable[[Any], bool]) -> None:
    """The change just committed is served: on SQLite by the very next request; on
    PostgreSQL within the cache's second, and well before it (the notification, not the
    second, dropped the row)."""
    response = client.get(PATH, headers=bearer(secret))
    if engine.dialect.name == "sqlite":
        assert wanted(response), response.text
        return
    start = time.monotonic()
    while not wanted(response):
        assert time.monotonic() - start < TOKEN_CACHE_S, "served as it was for a second"
        time.sleep(POLL_S)
        response = client.get(PATH, headers=bearer(secret))
    assert time.monotonic() - start < TOKEN_CACHE_S / 2


def refused(status: int, message: str | None = None) -> Callable[[Any], bool]:
    """An answer of `status` saying exactly `message` (whatever it says, when None)."""

    def check(response: Any) -> bool:
        if response.status_code != status:
            return False
        return message is None or bool(response.json()["error"]["message"] == message)

    return check


def kept(client: Client, secret: str, lookups: list[str]) -> None:
    """The token's row is kept: asked twice more, the store is not asked for it again.

    On PostgreSQL the notification of the change that made the token (its INSERT) may be
    taken in after the first of the two requests, and rightly drop the row it kept; so the
    pair is asked again until it holds, for at most the cache's second. A pair that itself
    took the cache's second or more (a busy machine) proves nothing either way and is asked
    again, at most five times."""
    listening(client)
    start = time.monotonic()
    slow = 0
    while True:
        pair = time.monotonic()
        assert client.get(PATH, headers=bearer(secret)).status_code == 200
        before = len(lookups)
        assert client.get(PATH, headers=bearer(secret)).status_code == 200
        if len(lookups) == before:
            return
        if time.monotonic() - pair >= TOKEN_CACHE_S and slow < 5:
            slow += 1
            start = time.monotonic()
            continue
        assert client.app.state.engine.dialect.name == "postgresql", "looked up again"
        assert time.monotonic() - start < TOKEN_CACHE_S, "not kept for a second"
        time.sleep(POLL_S)


def test_a_kept_token_runs_no_lookup(
    client: Client, engine: Engine, owner: tuple[int, int], lookups: list[str]
) -> None:
    issued = issue_token(engine, owner[1])
    listening(client)
    for _ in range(3):
        response = client.get(PATH, headers=bearer(issued.secret))
        assert response.status_code == 200
    assert len(lookups) == 1
    # A remembered token is still counted against its budget on every request (SPEC 8).
    first = client.get(PATH, headers=bearer(issued.secret))
    second = client.get(PATH, headers=bearer(issued.secret))
    assert int(second.headers["ratelimit-remaining"]) == (
        int(first.headers["ratelimit-remaining"]) - 1
    )
    # The handler still reads through the request's one connection, returned after.
    assert kept_connections.held(client.app.state.engine) == 0
    # A token the store does not know is asked for every time (nothing kept for it).
    for _ in range(2):
        assert client.get(PATH, headers=bearer("airoi_" + "n" * 40)).status_code == 401
    assert len(lookups) == 1 + 2


def test_a_kept_token_on_a_server_makes_one_hop_to_a_worker_thread(
    client: Client,
    engine: Engine,
    owner: tuple[int, int],
    lookups: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # On PostgreSQL a row the listener vouches for is decided on the event loop: the
    # request's one hop is its handler's, whose thread checks the connection out (a checkout
    # can wait on the server, so never on the loop).
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite reads in place, on the event loop (airoi.store_access)")
    issued = issue_token(engine, owner[1])
    kept(client, issued.secret, lookups)
    hops: list[str] = []
    run_sync = to_thread.run_sync

    async def counted(func: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(func, "__name__", repr(func)))
        return await run_sync(func, *args, **kwargs)

    checked_out_on_loop: list[bool] = []
    app_engine: Engine = client.app.state.engine

    def on_checkout(*_: Any) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            checked_out_on_loop.append(False)
        else:
            checked_out_on_loop.append(True)

    event.listen(app_engine, "checkout", on_checkout)
    monkeypatch.setattr(to_thread, "run_sync", counted)
    start = time.monotonic()
    try:
        while True:
            hops.clear()
            checked_out_on_loop.clear()
            before = len(lookups)
            response = client.get(PATH, headers=bearer(issued.secret))
            assert response.status_code == 200, response.text
            if len(lookups) == before:  # else dropped meanwhile by a late notification
                break
            assert time.monotonic() - start < TOKEN_CACHE_S, "not kept for a second"
    finally:
        event.remove(app_engine, "checkout", on_checkout)
    assert len(hops) == 1, hops
    assert checked_out_on_loop == [False]
    assert kept_connections.held(app_engine) == 0


def test_the_lookup_itself_is_counted_on_sqlite(
    client: Client, engine: Engine, owner: tuple[int, int]
) -> None:
    # The statements the driver runs, seen by SQLite itself: the second request on an
    # unchanged store sends no token lookup.
    if engine.dialect.name != "sqlite":
        pytest.skip("SQLite's own trace of the statements run")
    sent: list[str] = []
    app_engine: Engine = client.app.state.engine

    @event.listens_for(app_engine, "checkout")
    def _trace(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
        dbapi_conn.set_trace_callback(sent.append)

    issued = issue_token(engine, owner[1])
    for _ in range(2):
        assert client.get(PATH, headers=bearer(issued.secret)).status_code == 200
    token_lookups = [sql for sql in sent if "FROM tokens JOIN users" in sql]
    assert len(token_lookups) == 1
    assert any("FROM metrics" in sql for sql in sent[-3:])


def test_a_revocation_is_seen(
    client: Client, engine: Engine, owner: tuple[int, int], lookups: list[str]
) -> None:
    issued = issue_token(engine, owner[1])
    kept(client, issued.secret, lookups)
    # By another process (the CLI's revoke): seen through the store, not this process's own
    # emptying of its caches (test_a_load_or_revocation_in_this_process_empties_...).
    revoked_elsewhere(engine, issued.secret)
    seen(client, engine, issued.secret, refused(401, "The token has been revoked."))


def test_a_removed_user_is_seen(
    client: Client, engine: Engine, owner: tuple[int, int], lookups: list[str]
) -> None:
    issued = issue_token(engine, owner[1])
    kept(client, issued.secret, lookups)
    with engine.begin() as conn:
        conn.execute(update(users).where(users.c.id == owner[1]).values(removed_at=utc_now()))
    removed = refused(401, "The token's holder can no longer open the account.")
    seen(client, engine, issued.secret, removed)


def test_a_plan_without_api_access_is_seen(
    client: Client, engine: Engine, owner: tuple[int, int], lookups: list[str]
) -> None:
    issued = issue_token(engine, owner[1])
    kept(client, issued.secret, lookups)
    with engine.begin() as conn:
        conn.execute(update(accounts).where(accounts.c.id == owner[0]).values(api_access=False))
    seen(client, engine, issued.secret, refused(403))


def test_an_expiry_set_later_is_seen(
    client: Client, engine: Engine, owner: tuple[int, int], lookups: list[str]
) -> None:
    issued = issue_token(engine, owner[1])
    kept(client, issued.secret, lookups)
    with engine.begin() as conn:
        conn.execute(update(tokens).values(expires_at=utc_now() - timedelta(seconds=1)))
    seen(client, engine, issued.secret, refused(401, "The token has expired."))


def test_an_expiry_arriving_is_refused_from_the_kept_row(
    client: Client,
    engine: Engine,
    owner: tuple[int, int],
    lookups: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The row is kept, not the decision: the expiry is compared with now on every request.
    issued = issue_token(engine, owner[1], expires_in_days=1)
    assert issued.expires_at is not None
    kept(client, issued.secret, lookups)
    before = len(lookups)
    later = issued.expires_at
    monkeypatch.setattr("airoi.auth.utc_now", lambda: later)
    response = client.get(PATH, headers=bearer(issued.secret))
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "The token has expired."
    assert len(lookups) == before  # refused from the kept row


def test_a_currency_changed_by_a_load_is_seen(
    client: Client, engine: Engine, lookups: list[str]
) -> None:
    # The loader changes the account's currency; the account's figures follow at once
    # (a principal kept as it was served the old currency).
    def bundle(currency: str) -> tuple[BundleBuilder, str]:
        b = BundleBuilder()
        account = b.account(currency=currency)
        user = b.user(account, role="owner")
        return b, b.token(user)

    b, secret = bundle("USD")
    b.load(engine)
    listening(client)
    assert client.get("/api/v1/roi", headers=bearer(secret)).json()["currency"] == "USD"
    kept(client, secret, lookups)
    b, _ = bundle("EUR")
    b.load(engine)
    seen(
        client,
        engine,
        secret,
        lambda _r: client.get("/api/v1/roi", headers=bearer(secret)).json()["currency"] == "EUR",
    )


def test_a_token_moved_to_another_account_is_seen(
    client: Client, engine: Engine, lookups: list[str]
) -> None:
    # The same secret, loaded again for another account after the store was emptied (as the
    # property tests do between examples): its requests read the new account's rows.
    def bundle(name: str, first_id: int) -> tuple[BundleBuilder, str]:
        b = BundleBuilder(first_id=first_id)
        account = b.account(name=name)
        b.initiative(account, title=f"Of {name}")
        return b, b.token(b.user(account, role="owner"))

    b, secret = bundle("the first", 1)
    b.load(engine)
    kept(client, secret, lookups)
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("TRUNCATE initiatives, tokens, users, accounts CASCADE"))
        else:
            for table in ("initiatives", "tokens", "users", "accounts"):
                conn.execute(text(f"DELETE FROM {table}"))  # noqa: S608 - fixed names
    b, again = bundle("the second", 100)
    assert again == secret
    b.load(engine)

    def of_the_second(_response: Any) -> bool:
        listed = client.get("/api/v1/initiatives", headers=bearer(secret))
        return bool(
            listed.status_code == 200
            and [i["title"] for i in listed.json()["data"]] == ["Of the second"]
        )

    seen(client, engine, secret, of_the_second)


def test_a_writer_on_the_same_connection_is_seen(tmp_path: Any) -> None:
    # PRAGMA data_version does not change for a connection's own commits: the connection's
    # own count of changes does. One connection shared by the app and the writer.
    from airoi.db.migrate import upgrade

    url = f"sqlite:///{tmp_path / 'one.db'}"
    shared = create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
    upgrade(shared)
    b = BundleBuilder()
    account = b.account()
    user = b.user(account, role="owner")
    b.load(shared)
    issued = issue_token(shared, user)
    app = create_app(Settings(database_url=url), shared)
    with TestClient(app) as client:
        assert client.get(PATH, headers=bearer(issued.secret)).status_code == 200
        assert client.get(PATH, headers=bearer(issued.secret)).status_code == 200
        assert len(app.state.token_cache) == 1
        revoke_token(shared, issued.prefix)
        assert client.get(PATH, headers=bearer(issued.secret)).status_code == 401
    shared.dispose()


def test_a_row_read_before_a_change_and_put_after_is_not_kept() -> None:
    cache = TokenCache()
    cache.watch = lambda _conn: True
    row = ("row",)

    def look_up_during_a_change(_conn: Any) -> tuple[Any, ...]:
        cache.clear()  # another request saw a change while this one read the store
        return row

    assert cache.row(None, "h", look_up_during_a_change) == row  # type: ignore[arg-type]
    assert len(cache) == 0
    assert cache.row(None, "h", lambda _c: row) == row  # type: ignore[arg-type]
    assert len(cache) == 1


def test_a_load_or_revocation_in_this_process_empties_its_caches_at_once(
    engine: Engine, owner: tuple[int, int]
) -> None:
    # A change this process committed needs no notification (SEMANTICS R29): a load, then a
    # revocation, each leave every cache of the process empty before they return.
    kept = [TokenCache(), TokenCache()]
    for cache in kept:
        cache.watch = lambda _conn: True
        cache.row(None, "h", lambda _c: ("row",))  # type: ignore[arg-type]
        assert len(cache) == 1
    BundleBuilder().load(engine)  # an empty bundle: nothing written, still a load
    assert [len(cache) for cache in kept] == [0, 0]
    issued = issue_token(engine, owner[1])
    for cache in kept:
        cache.row(None, "h", lambda _c: ("row",))  # type: ignore[arg-type]
    revoke_token(engine, issued.secret)
    assert [len(cache) for cache in kept] == [0, 0]


def test_a_row_is_kept_a_second_at_most_and_the_oldest_goes_first() -> None:
    now = [1000.0]
    cache = TokenCache(max_entries=2, clock=lambda: now[0])
    cache.watch = lambda _conn: True
    asked: list[str] = []

    def look_up(token_hash: str) -> Callable[[Any], tuple[Any, ...]]:
        def read(_conn: Any) -> tuple[Any, ...]:
            asked.append(token_hash)
            return (token_hash,)

        return read

    conn: Any = None
    cache.row(conn, "a", look_up("a"))
    now[0] += TOKEN_CACHE_S - 0.001
    cache.row(conn, "a", look_up("a"))
    assert asked == ["a"]
    now[0] += 0.001  # a second since it was read: asked again, whatever else happened
    cache.row(conn, "a", look_up("a"))
    assert asked == ["a", "a"]
    cache.row(conn, "b", look_up("b"))
    cache.row(conn, "c", look_up("c"))  # full: "a", read longest ago, goes
    assert len(cache) == 2
    cache.row(conn, "b", look_up("b"))
    cache.row(conn, "a", look_up("a"))
    assert asked == ["a", "a", "b", "c", "a"]


def test_a_cache_that_cannot_tell_a_change_keeps_nothing() -> None:
    cache = TokenCache()  # no way to watch the store
    asked: list[str] = []

    def look_up(_conn: Any) -> tuple[Any, ...]:
        asked.append("a")
        return ("a",)

    for _ in range(2):
        cache.row(None, "a", look_up)  # type: ignore[arg-type]
    assert asked == ["a", "a"]
    assert len(cache) == 0


@pytest.fixture
def pg_client(db_url: str, engine: Engine) -> Iterator[Client]:
    if engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL's listener")
    app = create_app(Settings(database_url=db_url))
    with TestClient(app) as test_client:
        yield test_client
    app.state.engine.dispose()


def _listener_backends(engine: Engine) -> list[int]:
    with engine.connect() as conn:
        return list(
            conn.execute(
                text(
                    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                    "AND query = :listen"
                ),
                {"listen": f"LISTEN {CHANNEL}"},
            ).scalars()
        )


def kept_while_listening(
    client: Client, engine: Engine, user_id: int, lookups: list[str]
) -> tuple[str, ChangeListener]:
    """A new token of `user_id` whose row the app keeps, and the app's listener."""
    issued = issue_token(engine, user_id)
    kept(client, issued.secret, lookups)
    cache: TokenCache = client.app.state.token_cache
    assert cache.listener is not None
    return issued.secret, cache.listener


def revoked_elsewhere(engine: Engine, secret: str) -> None:
    """`secret` revoked as another process would: not through this process's revoke_token,
    which empties this process's caches itself."""
    with engine.begin() as conn:
        conn.execute(
            update(tokens)
            .where(tokens.c.token_hash == hash_token(secret))
            .values(revoked_at=utc_now())
        )


def test_a_stopped_listener_leaves_the_cache_unused(
    pg_client: Client, engine: Engine, owner: tuple[int, int], lookups: list[str]
) -> None:
    secret, listener = kept_while_listening(pg_client, engine, owner[1], lookups)
    listener.stop(wait_s=5)
    assert not listener.listening
    before = len(lookups)
    assert pg_client.get(PATH, headers=bearer(secret)).status_code == 200
    assert len(lookups) == before + 1  # asked the store
    revoked_elsewhere(engine, secret)
    assert pg_client.get(PATH, headers=bearer(secret)).status_code == 401  # at once


def test_a_lost_listener_is_bypassed_then_connects_again(
    pg_client: Client, engine: Engine, owner: tuple[int, int], lookups: list[str]
) -> None:
    secret, listener = kept_while_listening(pg_client, engine, owner[1], lookups)
    connects = listener.connects
    with engine.connect() as conn:
        for pid in _listener_backends(engine):
            # Waiting (up to 5 s) until the backend has exited: without the wait it could
            # still be there, its connection open and not yet forwarding, when the revocation
            # below commits; that window is the cache's one second (docs/operating.md).
            gone = conn.execute(text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": pid})
            assert gone.scalar()
    # No listener hears the revocation: whichever of the request and the listener's thread
    # finds the connection lost first, the store is asked (or a listener connected since
    # has dropped the rows).
    revoked_elsewhere(engine, secret)
    assert pg_client.get(PATH, headers=bearer(secret)).status_code == 401
    deadline = time.monotonic() + 10
    while listener.connects == connects or not listener.listening:
        assert time.monotonic() < deadline, "the listener did not connect again"
        time.sleep(POLL_S)
    issued = issue_token(engine, owner[1])
    kept(pg_client, issued.secret, lookups)  # in use again
