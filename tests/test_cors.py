"""Cross-origin reads (SEMANTICS R30, AIROI_CORS_ORIGINS)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.app import create_app
from airoi.settings import Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder

# CORS headers, the same over either store: SQLite alone (tests/conftest.py).
pytestmark = pytest.mark.store_independent

NOTEBOOK = "https://notebook.example.com"
PREFLIGHT = {
    "Origin": NOTEBOOK,
    "Access-Control-Request-Method": "GET",
    "Access-Control-Request-Headers": "authorization",
}


@pytest.fixture
def token(engine: Engine) -> str:
    b = BundleBuilder()
    acct = b.account()
    secret = b.token(b.user(acct))
    b.initiative(acct, title="Invoice capture")
    b.load(engine)
    return secret


def serving(db_url: str, origins: str) -> Iterator[TestClient[Litestar]]:
    app = create_app(
        Settings.from_env({"AIROI_DATABASE_URL": db_url, "AIROI_CORS_ORIGINS": origins})
    )
    with TestClient(app) as client:
        yield client
    app.state.engine.dispose()


@pytest.fixture
def allowing(db_url: str) -> Iterator[TestClient[Litestar]]:
    yield from serving(db_url, f"{NOTEBOOK}, http://localhost:8888")


@pytest.fixture
def closed(db_url: str) -> Iterator[TestClient[Litestar]]:
    yield from serving(db_url, "")


def test_an_allowed_preflight_is_answered_before_the_token(
    allowing: TestClient[Litestar], token: str
) -> None:
    # SEMANTICS R30: the preflight of an allowed origin is answered as one, no token needed.
    response = allowing.options("/api/v1/roi/breakdown", headers=PREFLIGHT)
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == NOTEBOOK
    assert response.headers["access-control-allow-methods"] == "GET, HEAD"
    assert "authorization" in response.headers["access-control-allow-headers"].lower()
    assert "access-control-allow-credentials" not in response.headers
    assert "Origin" in response.headers["vary"]
    # The tool endpoint's own methods and headers.
    mcp = allowing.options("/mcp", headers={**PREFLIGHT, "Access-Control-Request-Method": "POST"})
    assert mcp.status_code == 204
    assert "POST" in mcp.headers["access-control-allow-methods"]
    assert "mcp-session-id" in mcp.headers["access-control-allow-headers"].lower()


def test_answers_to_an_allowed_origin_name_it_errors_included(
    allowing: TestClient[Litestar], token: str
) -> None:
    ok = allowing.get("/api/v1/initiatives", headers={**bearer(token), "Origin": NOTEBOOK})
    assert ok.status_code == 200
    assert ok.headers["access-control-allow-origin"] == NOTEBOOK
    exposed = ok.headers["access-control-expose-headers"]
    assert "ETag" in exposed and "X-Request-Id" in exposed and "RateLimit-Remaining" in exposed
    # A page shows the API's message on 401 (issue: the dashboard reads it).
    refused = allowing.get("/api/v1/initiatives", headers={"Origin": "http://localhost:8888"})
    assert refused.status_code == 401
    assert refused.headers["access-control-allow-origin"] == "http://localhost:8888"
    assert refused.json()["error"]["status"] == 401


def test_other_origins_get_nothing(allowing: TestClient[Litestar], token: str) -> None:
    evil = "https://evil.example.com"
    response = allowing.get("/api/v1/initiatives", headers={**bearer(token), "Origin": evil})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers
    # R30: their OPTIONS is any other method: 405 with Allow: GET.
    preflight = allowing.options("/api/v1/initiatives", headers={**PREFLIGHT, "Origin": evil})
    assert preflight.status_code == 405
    assert preflight.headers["allow"] == "GET"
    assert "access-control-allow-origin" not in preflight.headers


def vary(response: Any) -> list[str]:
    """The names in the answer's Vary headers, however many there are."""
    return [n.strip().lower() for v in response.headers.get_list("vary") for n in v.split(",")]


def test_every_answer_is_varied_by_origin_once_origins_are_set(
    db_url: str, allowing: TestClient[Litestar], token: str
) -> None:
    # A shared cache keys by Vary: an answer with no CORS headers (no Origin, another origin)
    # given to an allowed origin fails in its browser, and an allowed origin's given to
    # another lets it read. Only the allowed origins' answers said Vary: Origin.
    page = "/api/v1/initiatives?limit=1"
    gzip = {**bearer(token), "Accept-Encoding": "gzip"}
    answers = [
        allowing.get(page, headers=gzip),
        allowing.get(page, headers={**gzip, "Origin": "https://evil.example.com"}),
        allowing.get(page, headers={**gzip, "Origin": NOTEBOOK}),
        allowing.get("/api/v1/initiatives", headers={"Origin": "https://evil.example.com"}),
    ]
    assert [a.status_code for a in answers] == [200, 200, 200, 401]
    for answer in answers:
        assert vary(answer).count("origin") == 1, answer.headers
    # The compression's Vary is kept beside it (its tests: tests/test_conditional.py).
    for answer in answers[:3]:
        assert "accept-encoding" in vary(answer)
    for client in serving(db_url, "*"):  # the same answer for all, but only with an Origin
        assert vary(client.get(page, headers=bearer(token))).count("origin") == 1
    # And with no origins set, nothing of the kind is added.
    for client in serving(db_url, ""):
        assert "origin" not in vary(client.get(page, headers={**bearer(token), "Origin": NOTEBOOK}))


def test_a_page_may_send_its_own_request_id(allowing: TestClient[Litestar], token: str) -> None:
    # The service answers and logs a sane X-Request-Id as the request's: a page may send one.
    preflight = allowing.options(
        "/api/v1/initiatives",
        headers={**PREFLIGHT, "Access-Control-Request-Headers": "authorization, x-request-id"},
    )
    assert preflight.status_code == 204
    allowed = preflight.headers["access-control-allow-headers"].lower().split(", ")
    assert "x-request-id" in allowed
    answer = allowing.get(
        "/api/v1/initiatives",
        headers={**bearer(token), "Origin": NOTEBOOK, "X-Request-Id": "page-load-42"},
    )
    assert answer.headers["x-request-id"] == "page-load-42"


def test_r30_order_holds_around_the_preflight(allowing: TestClient[Litestar], token: str) -> None:
    # Unknown route: 404 first, preflight or not.
    assert allowing.options("/api/v1/nothing", headers=PREFLIGHT).status_code == 404
    # OPTIONS without Access-Control-Request-Method is no preflight: 405.
    plain = allowing.options("/api/v1/roi", headers={"Origin": NOTEBOOK})
    assert plain.status_code == 405
    # Other methods from an allowed origin are still 405.
    assert allowing.delete("/api/v1/roi", headers={"Origin": NOTEBOOK}).status_code == 405


def test_no_origins_by_default(closed: TestClient[Litestar], token: str) -> None:
    assert Settings.from_env({}).cors_origins == ()
    response = closed.get("/api/v1/initiatives", headers={**bearer(token), "Origin": NOTEBOOK})
    assert "access-control-allow-origin" not in response.headers
    assert closed.options("/api/v1/roi", headers=PREFLIGHT).status_code == 405


def test_any_origin_is_star_never_with_credentials(db_url: str, token: str) -> None:
    for client in serving(db_url, "*"):
        response = client.get("/api/v1/initiatives", headers={**bearer(token), "Origin": NOTEBOOK})
        assert response.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in response.headers


@pytest.mark.parametrize(
    "value",
    [
        "notebook.example.com",  # no scheme
        "https://notebook.example.com/",  # a path
        "ftp://example.com",
        "*, https://a.example.com",
        "https://a.example.com/lab?x=1",
    ],
)
def test_a_bad_origin_list_is_refused_naming_the_setting(value: str) -> None:
    with pytest.raises(ValueError, match="AIROI_CORS_ORIGINS"):
        Settings.from_env({"AIROI_CORS_ORIGINS": value})


def test_origins_are_read_as_a_browser_sends_them() -> None:
    settings = Settings.from_env(
        {
            "AIROI_CORS_ORIGINS": " https://Notebook.Example.com ,http://localhost:8888,http://[::1]:3000"
        }
    )
    assert settings.cors_origins == (
        "https://notebook.example.com",
        "http://localhost:8888",
        "http://[::1]:3000",
    )
