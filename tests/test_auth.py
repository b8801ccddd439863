"""Bearer tokens and the order of checks (SPEC 5, SEMANTICS R29, R30)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine, select

from airoi.auth import TokenRefused, issue_token, revoke_token
from airoi.db.tables import tokens
from airoi.timeutil import format_datetime, utc_now
from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]


def error_of(response: object) -> dict[str, object]:
    body = response.json()  # type: ignore[attr-defined]
    assert set(body) == {"error"}
    # SPEC 7's two fields, plus the request id that matches the response's X-Request-Id.
    assert set(body["error"]) == {"status", "message", "request_id"}
    assert body["error"]["request_id"] == response.headers["x-request-id"]  # type: ignore[attr-defined]
    assert body["error"]["status"] == response.status_code  # type: ignore[attr-defined]
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body["error"]  # type: ignore[no-any-return]


@pytest.fixture
def accounts(engine: Engine) -> dict[str, str]:
    """Tokens in every state, each on its own account or user."""
    b = BundleBuilder()
    good = b.account(name="Good")
    no_api = b.account(name="No API", api_access=False)
    owner = b.user(good, role="owner")
    gone = b.user(good, role="admin", name="Gone", removed_at="2026-01-01T00:00:00Z")
    no_api_owner = b.user(no_api, role="owner")
    past = format_datetime(utc_now() - timedelta(seconds=5))
    future = format_datetime(utc_now() + timedelta(days=1))
    secrets = {
        "good": b.token(owner),
        "future": b.token(owner, expires_at=future),
        "expired": b.token(owner, expires_at=past),
        "revoked": b.token(owner, revoked_at="2026-01-01T00:00:00Z"),
        "removed": b.token(gone),
        "no_api": b.token(no_api_owner),
        "no_api_revoked": b.token(no_api_owner, revoked_at="2026-01-01T00:00:00Z"),
    }
    b.initiative(good)
    b.load(engine)
    return secrets


def test_good_tokens_read(client: Client, accounts: dict[str, str]) -> None:
    for name in ("good", "future"):
        response = client.get("/api/v1/initiatives", headers=bearer(accounts[name]))
        assert response.status_code == 200, name
        assert len(response.json()["data"]) == 1


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer not-a-token-we-issued"},
    ],
    ids=["missing", "other-scheme", "empty", "unknown"],
)
def test_missing_or_unknown_token_is_401(
    client: Client, accounts: dict[str, str], headers: dict[str, str]
) -> None:
    # SEMANTICS R29
    response = client.get("/api/v1/initiatives", headers=headers)
    assert response.status_code == 401
    error_of(response)
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("state", ["expired", "revoked", "removed"])
def test_expired_revoked_and_removed_are_401(
    client: Client, accounts: dict[str, str], state: str
) -> None:
    # SEMANTICS R29: expires_at at or before now, revoked, or the user removed from the account.
    response = client.get("/api/v1/cost_entries", headers=bearer(accounts[state]))
    assert response.status_code == 401
    error_of(response)


def test_account_without_api_access_is_403(client: Client, accounts: dict[str, str]) -> None:
    # SPEC 5.5
    response = client.get("/api/v1/initiatives", headers=bearer(accounts["no_api"]))
    assert response.status_code == 403
    error_of(response)


def test_401_is_decided_before_403(client: Client, accounts: dict[str, str]) -> None:
    # SEMANTICS R29: a revoked token of an account without API access is 401, not 403.
    response = client.get("/api/v1/initiatives", headers=bearer(accounts["no_api_revoked"]))
    assert response.status_code == 401


def test_auth_is_decided_before_parameters(client: Client, accounts: dict[str, str]) -> None:
    # SEMANTICS R29, R30: 401 and 403 come before any 400.
    assert client.get("/api/v1/initiatives?limit=0&bogus=1").status_code == 401
    response = client.get("/api/v1/initiatives?limit=0", headers=bearer(accounts["no_api"]))
    assert response.status_code == 403
    response = client.get("/api/v1/initiatives?limit=0", headers=bearer(accounts["good"]))
    assert response.status_code == 400


def test_routing_is_decided_before_auth(client: Client, accounts: dict[str, str]) -> None:
    # SEMANTICS R30: unknown route 404 and wrong method 405 (with Allow: GET), even without a token.
    response = client.get("/api/v1/no_such_thing")
    assert response.status_code == 404
    error_of(response)
    for method in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        response = client.request(method, "/api/v1/initiatives")
        assert response.status_code == 405, method
        assert response.headers["allow"] == "GET"
        error_of(response)


def test_head_is_served_like_get_without_a_body(client: Client, accounts: dict[str, str]) -> None:
    # SEMANTICS R30 names GET and HEAD as the methods a route answers.
    response = client.head("/api/v1/initiatives", headers=bearer(accounts["good"]))
    assert response.status_code == 200
    assert response.content == b""


def test_description_needs_no_token(client: Client) -> None:
    response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert response.json()["openapi"].startswith("3.1")


def test_issued_token_is_long_random_and_stored_as_hash(client: Client, engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    admin = b.user(acct, role="admin")
    b.load(engine)
    issued = issue_token(engine, admin, expires_in_days=7)
    other = issue_token(engine, admin)
    assert issued.secret != other.secret
    # 32 random bytes in URL-safe base64 are 43 characters after the prefix.
    assert len(issued.secret.removeprefix("airoi_")) >= 43
    with engine.connect() as conn:
        stored = conn.execute(select(tokens)).mappings().all()
    flat = repr(stored)
    assert issued.secret not in flat and issued.secret[14:] not in flat
    assert client.get("/api/v1/initiatives", headers=bearer(issued.secret)).status_code == 200
    assert issued.expires_at is not None


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_tokens_are_issued_only_to_owner_or_admin(engine: Engine, role: str) -> None:
    b = BundleBuilder()
    acct = b.account()
    user = b.user(acct, role=role)
    b.load(engine)
    with pytest.raises(TokenRefused, match="Owner or Admin"):
        issue_token(engine, user)


@pytest.mark.parametrize("user_id", [0, -5, 2**63, 10**20])
def test_a_user_id_no_store_holds_is_refused_by_a_line(engine: Engine, user_id: int) -> None:
    # 10**20 was an OverflowError traceback on SQLite; 0 and -5 said "no such user".
    with pytest.raises(TokenRefused) as refused:
        issue_token(engine, user_id)
    assert str(refused.value) == (
        "--user must be a user's id, a whole number from 1 to 9223372036854775807."
    )


def test_revoked_token_stops_working(client: Client, engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    owner = b.user(acct, role="owner")
    b.load(engine)
    issued = issue_token(engine, owner)
    assert client.get("/api/v1/metrics", headers=bearer(issued.secret)).status_code == 200
    assert revoke_token(engine, issued.prefix) == issued.prefix
    assert client.get("/api/v1/metrics", headers=bearer(issued.secret)).status_code == 401
    with pytest.raises(TokenRefused):
        revoke_token(engine, issued.prefix)


def test_more_than_a_shown_prefix_revokes_a_whole_token_or_nothing(
    client: Client, engine: Engine
) -> None:
    # BUNDLE.md `token revoke PREFIX`: a value longer than a shown prefix that is no token
    # once revoked the token sharing its first characters, which it does not name.
    b = BundleBuilder()
    owner = b.user(b.account(), role="owner")
    live = b.token(owner, secret="airoi_onlyone1-" + "a" * 40)
    b.load(engine)
    shown = live[:14]
    for given in (live[:-1], live + "x", shown + "-not-a-token"):
        with pytest.raises(TokenRefused) as refused:
            revoke_token(engine, given)
        assert str(refused.value) == (
            f"No token is the one given ({shown}…): give a whole token, "
            "or the prefix shown for it (14 characters at most)."
        )
    assert client.get("/api/v1/metrics", headers=bearer(live)).status_code == 200
    # The prefix as `token issue` and `revoke` print it, ellipsis and all, is the prefix.
    assert revoke_token(engine, f"{shown}…") == shown
    assert client.get("/api/v1/metrics", headers=bearer(live)).status_code == 401


def test_a_whole_token_revokes_exactly_that_token(client: Client, engine: Engine) -> None:
    b = BundleBuilder()
    owner = b.user(b.account(), role="owner")
    first = b.token(owner, secret="airoi_sameprefix-" + "a" * 40)
    second = b.token(owner, secret="airoi_sameprefix-" + "b" * 40)
    b.load(engine)
    shown = first[:14]
    assert second[:14] == shown
    with pytest.raises(TokenRefused) as ambiguous:
        revoke_token(engine, shown)
    assert str(ambiguous.value) == (
        f"2 live tokens share the prefix {shown!r}; give the whole token to revoke one of them."
    )
    # More than the shown prefix, but not a whole token: still ambiguous, and not echoed.
    with pytest.raises(TokenRefused) as partial:
        revoke_token(engine, first[:30])
    assert first[14:30] not in str(partial.value)
    assert revoke_token(engine, first) == shown
    assert client.get("/api/v1/metrics", headers=bearer(first)).status_code == 401
    assert client.get("/api/v1/metrics", headers=bearer(second)).status_code == 200
    with pytest.raises(TokenRefused) as again:
        revoke_token(engine, first)
    assert str(again.value) == f"The token {shown}… is already revoked."
    # One live token left with that prefix: the prefix is enough again.
    assert revoke_token(engine, shown) == shown
    assert client.get("/api/v1/metrics", headers=bearer(second)).status_code == 401
