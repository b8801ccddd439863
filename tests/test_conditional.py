"""Conditional requests on /api/v1: a strong ETag on every 200, 304 on a matching If-None-Match.

A 304 is only ever the answer to a request that would have been 200: the token is
checked first (SEMANTICS R29, R30) and parameters next (R12).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import xxhash
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.app import create_app
from airoi.conditional import none_match
from airoi.settings import Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]


@pytest.fixture
def served(db_url: str) -> Iterator[Client]:
    app = create_app(Settings(database_url=db_url))
    with TestClient(app) as client:
        yield client
    app.state.engine.dispose()


@pytest.fixture
def world(engine: Engine) -> tuple[str, int]:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct, role="owner"))
    b.initiative(acct)
    b.load(engine)
    return token, acct


PATHS = ["/api/v1/initiatives", "/api/v1/roi", "/api/v1/budgets", "/api/v1/openapi.json"]


@pytest.mark.parametrize("path", PATHS)
def test_every_200_has_a_strong_etag_of_its_body(
    served: Client, world: tuple[str, int], path: str
) -> None:
    token, _ = world
    response = served.get(path, headers=bearer(token))
    assert response.status_code == 200
    tag = response.headers["etag"]
    assert not tag.startswith("W/")
    assert tag == f'"{xxhash.xxh3_128_hexdigest(response.content)}"'
    again = served.get(path, headers={**bearer(token), "If-None-Match": tag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == tag
    assert "x-request-id" in again.headers
    # HEAD carries the tag GET would (SEMANTICS R30 serves HEAD like GET).
    assert served.head(path, headers=bearer(token)).headers["etag"] == tag


def test_if_none_match_forms(served: Client, world: tuple[str, int]) -> None:
    token, _ = world
    tag = served.get("/api/v1/initiatives", headers=bearer(token)).headers["etag"]
    for header, status in [
        (tag, 304),
        (f"W/{tag}", 304),  # If-None-Match compares weakly (RFC 9110 13.1.2)
        (f'"other", {tag}', 304),
        ("*", 304),
        ('"other"', 200),
        (tag[:-2] + '"', 200),
    ]:
        response = served.get(
            "/api/v1/initiatives", headers={**bearer(token), "If-None-Match": header}
        )
        assert response.status_code == status, header
        assert response.headers["etag"] == tag
        assert (response.content == b"") == (status == 304)


def test_a_change_changes_the_tag(served: Client, world: tuple[str, int], engine: Engine) -> None:
    token, account = world
    first = served.get("/api/v1/initiatives", headers=bearer(token)).headers["etag"]
    b = BundleBuilder()
    b.initiative(account, title="Another")
    b.load(engine)
    response = served.get("/api/v1/initiatives", headers={**bearer(token), "If-None-Match": first})
    assert response.status_code == 200
    assert response.headers["etag"] != first
    assert len(response.json()["data"]) == 2


def test_refusals_carry_no_tag_and_are_never_304(served: Client, world: tuple[str, int]) -> None:
    token, _ = world
    tag = served.get("/api/v1/initiatives", headers=bearer(token)).headers["etag"]
    # SEMANTICS R29, R30, R12: the token and the parameters are checked before any 304.
    for headers, path, status in [
        ({"If-None-Match": tag}, "/api/v1/initiatives", 401),
        ({**bearer(token), "If-None-Match": "*"}, "/api/v1/initiatives?bogus=1", 400),
        ({**bearer(token), "If-None-Match": "*"}, "/api/v1/initiatives/999999", 404),
    ]:
        response = served.get(path, headers=headers)
        assert response.status_code == status
        assert "etag" not in response.headers
    assert "etag" not in served.get("/healthz").headers


def test_none_match() -> None:
    assert none_match('"a", W/"b"', '"b"')
    assert not none_match('"a"', '"b"')
