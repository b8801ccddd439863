"""Conditional requests on /api/v1: a strong ETag on every 200, 304 on a matching If-None-Match.

A 304 is only ever the answer to a request that would have been 200: the token is
checked first (SEMANTICS R29, R30) and parameters next (R12).
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import httpx
import pytest
import xxhash
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.app import create_app
from airoi.conditional import GZIP_MIN_BYTES, none_match, takes_gzip
from airoi.conditional import gzipped as gzipped_body
from airoi.settings import Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder

# ETags and 304s are made from the answer's bytes, whichever store gave them: SQLite alone
# (tests/conftest.py).
pytestmark = pytest.mark.store_independent

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


# The test client asks for gzip unless told otherwise.
IDENTITY = {"Accept-Encoding": "identity"}
# The index (/api/v1 itself) too: it had no tag (review).
PATHS = [
    "/api/v1/initiatives",
    "/api/v1/roi",
    "/api/v1/budgets",
    "/api/v1/openapi.json",
    "/api/v1",
]


@pytest.mark.parametrize("path", PATHS)
def test_every_200_has_a_strong_etag_of_its_body(
    served: Client, world: tuple[str, int], path: str
) -> None:
    token, _ = world
    asked = {**bearer(token), **IDENTITY}
    response = served.get(path, headers=asked)
    assert response.status_code == 200
    tag = response.headers["etag"]
    assert not tag.startswith("W/")
    assert tag == f'"{xxhash.xxh3_128_hexdigest(response.content)}"'
    again = served.get(path, headers={**asked, "If-None-Match": tag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == tag
    assert "x-request-id" in again.headers
    # HEAD carries the tag GET would (SEMANTICS R30 serves HEAD like GET).
    assert served.head(path, headers=asked).headers["etag"] == tag


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


def _raw(served: Client, path: str, headers: dict[str, str]) -> tuple[httpx.Response, bytes]:
    """The answer and its body as sent, before any decoding by the client."""
    with served.stream("GET", path, headers=headers) as response:
        return response, b"".join(response.iter_raw())


def _many_initiatives(engine: Engine) -> str:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct, role="owner"))
    for n in range(40):
        b.initiative(acct, title=f"Initiative number {n} of a long list")
    b.load(engine)
    return token


def test_a_client_asking_for_gzip_gets_it_with_a_tag_of_its_own(
    served: Client, engine: Engine
) -> None:
    token = _many_initiatives(engine)
    path = "/api/v1/initiatives?limit=40"
    plain, plain_body = _raw(served, path, {**bearer(token), **IDENTITY})
    assert "content-encoding" not in plain.headers
    assert len(plain_body) >= GZIP_MIN_BYTES
    zipped, zipped_body = _raw(served, path, {**bearer(token), "Accept-Encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert int(zipped.headers["content-length"]) == len(zipped_body) < len(plain_body) / 3
    assert gzip.decompress(zipped_body) == plain_body
    for response in (plain, zipped):
        assert response.headers["vary"] == "Accept-Encoding"
    # Two representations, two strong tags (RFC 9110 8.8.3): the body's, and it with -gzip.
    identity_tag = f'"{xxhash.xxh3_128_hexdigest(plain_body)}"'
    assert plain.headers["etag"] == identity_tag
    assert zipped.headers["etag"] == identity_tag[:-1] + '-gzip"'
    # Each tag matches when its own encoding is asked again, not the other's.
    for encoding, tag, status in [
        ("gzip", zipped.headers["etag"], 304),
        ("gzip", identity_tag, 200),
        ("identity", identity_tag, 304),
        ("identity", zipped.headers["etag"], 200),
    ]:
        headers = {**bearer(token), "Accept-Encoding": encoding, "If-None-Match": tag}
        response, _ = _raw(served, path, headers)
        assert response.status_code == status, (encoding, tag)
        assert response.headers["vary"] == "Accept-Encoding"
    # HEAD says what GET would send (SEMANTICS R30).
    head = served.head(path, headers={**bearer(token), "Accept-Encoding": "gzip"})
    assert head.headers["content-encoding"] == "gzip"
    assert head.headers["etag"] == zipped.headers["etag"]
    assert head.headers["content-length"] == zipped.headers["content-length"]


@pytest.mark.parametrize(
    ("accept_encoding", "gzipped"),
    [
        ("gzip", True),
        ("br, gzip;q=0.5", True),
        ("GZIP", True),
        ("x-gzip", True),
        ("*", True),
        ("gzip;q=0", False),
        ("gzip;q=0.000", False),
        ("*;q=0", False),
        ("identity", False),
        ("br, zstd", False),
        ("", False),
    ],
)
def test_gzip_only_when_the_request_takes_it(
    served: Client, engine: Engine, accept_encoding: str, gzipped: bool
) -> None:
    # RFC 9110 12.5.3: a coding with q=0 is not acceptable; * stands for any coding not named.
    token = _many_initiatives(engine)
    response, body = _raw(
        served,
        "/api/v1/initiatives?limit=40",
        {**bearer(token), "Accept-Encoding": accept_encoding},
    )
    assert response.status_code == 200
    assert (response.headers.get("content-encoding") == "gzip") is gzipped
    assert body[:2] == b"\x1f\x8b" if gzipped else body.startswith(b"{")


def test_small_answers_and_refusals_are_sent_as_they_are(
    served: Client, world: tuple[str, int]
) -> None:
    token, _ = world
    asked = {**bearer(token), "Accept-Encoding": "gzip"}
    small, body = _raw(served, "/api/v1/integrations", asked)
    assert small.status_code == 200
    assert len(body) < GZIP_MIN_BYTES
    assert "content-encoding" not in small.headers
    assert small.headers["vary"] == "Accept-Encoding"
    refused, _ = _raw(served, "/api/v1/initiatives?bogus=1", asked)
    assert refused.status_code == 400
    assert "content-encoding" not in refused.headers


def test_the_same_body_is_gzipped_to_the_same_bytes() -> None:
    # No time in the gzip header: the bytes, and so a cache's copy, are the same each time.
    body = b'{"data": [' + b'{"id": 1, "title": "x"},' * 200 + b"]}"
    assert gzipped_body(body) == gzipped_body(body)
    assert gzip.decompress(gzipped_body(body)) == body


def test_takes_gzip() -> None:
    assert takes_gzip("deflate, gzip;q=1.0")
    assert takes_gzip("gzip ; q=0.001")
    assert not takes_gzip("gzip;q=nonsense")
    assert not takes_gzip(None)
    # A coding named outranks * (RFC 9110 12.5.3).
    assert not takes_gzip("gzip;q=0, *")
