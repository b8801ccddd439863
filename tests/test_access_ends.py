"""SEMANTICS R29 (changed): a token opens the account only while its user is an Owner or
Admin and not removed. The load that takes either away revokes the user's tokens and ends
their assistant grants for good: restoring the user or the role later opens nothing. The 401
says why in one sentence. The API and /mcp, a personal token and an OAuth access token, and
the sign-in page where a person grants an assistant; both stores."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine, update

from airoi.app import create_app
from airoi.db.tables import users
from airoi.load import load_bundle
from airoi.settings import Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder
from tests.oauth.test_grants import BASE, authorize, grant, mcp, pkce, refresh, register, sign_in

Client = TestClient[Litestar]


@pytest.fixture
def app_client(db_url: str) -> Iterator[Client]:
    app = create_app(Settings(database_url=db_url, allowed_hosts=("testserver",)))
    with TestClient(app, base_url=BASE) as client:
        yield client
    app.state.engine.dispose()


@pytest.fixture
def owner(engine: Engine) -> tuple[int, str]:
    b = BundleBuilder(first_id=300)
    account = b.account()
    user = b.user(account, role="owner", name="Olive")
    b.user(account, role="owner", name="Second owner")  # the account keeps an Owner
    secret = b.token(user)
    b.initiative(account)
    b.load(engine)
    return user, secret


def _api(client: Client, token: str) -> Any:
    return client.get("/api/v1/initiatives", headers=bearer(token))


CHANGES = {
    "demoted": ({"role": "viewer"}, {"role": "owner"}),
    "removed": ({"removed_at": "2026-12-01T00:00:00Z"}, {"removed_at": None}),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_the_load_that_takes_access_away_ends_it_for_good(
    app_client: Client, engine: Engine, owner: tuple[int, str], change: str
) -> None:
    user, pat = owner
    client_reg, issued = grant(app_client, pat)
    access = issued["access_token"]
    assert _api(app_client, pat).status_code == 200
    assert mcp(app_client, pat).status_code == 200
    assert mcp(app_client, access).status_code == 200

    taken, given_back = CHANGES[change]
    report = load_bundle(engine, {"users": [{"id": user, **taken}]})
    assert report.updated["tokens"] == 1  # the user's one token, revoked by the load

    refused = _api(app_client, pat)
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == "The token has been revoked."
    assert mcp(app_client, pat).status_code == 401
    ended = mcp(app_client, access)
    assert ended.status_code == 401
    assert "revoked" in ended.text
    assert refresh(app_client, client_reg, issued["refresh_token"]).status_code == 400
    # No new assistant through the sign-in page either.
    reg = register(app_client)
    location = authorize(app_client, reg, pkce()[1]).headers["location"]
    signed = sign_in(app_client, location, pat)
    assert signed.status_code == 400
    assert "The token has been revoked." in signed.text

    # Given back, nothing reopens: a new token must be issued.
    load_bundle(engine, {"users": [{"id": user, **given_back}]})
    assert _api(app_client, pat).status_code == 401
    assert mcp(app_client, pat).status_code == 401
    assert mcp(app_client, access).status_code == 401
    fresh = BundleBuilder()
    new_pat = fresh.token(user, secret="airoi_" + "n" * 43)
    load_bundle(engine, dict(fresh.data))
    assert _api(app_client, new_pat).status_code == 200


def test_a_holder_no_longer_an_owner_or_admin_is_told_so(
    app_client: Client, engine: Engine, owner: tuple[int, str]
) -> None:
    # A role taken away outside a load (by hand in the store): the token row still says
    # live, and the 401 says why in one sentence.
    user, pat = owner
    _, issued = grant(app_client, pat)
    with engine.begin() as conn:
        conn.execute(update(users).where(users.c.id == user).values(role="member"))
    refused = _api(app_client, pat)
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == (
        "The token's holder is no longer an Owner or Admin of the account."
    )
    ended = mcp(app_client, issued["access_token"])
    assert ended.status_code == 401
    assert "no longer an Owner or Admin" in ended.text
