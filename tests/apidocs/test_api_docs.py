"""The API reference at /api/v1/docs and the index at /api/v1 (airoi.apidocs).

The page is public, GET and HEAD only, under a strict Content-Security-Policy, and loads only
what the server ships; the description at /api/v1/openapi.json is the same with or without it.
tests/browser/test_docs_page.py drives it in a real browser.
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import re
import tomllib
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar, Router, get
from litestar.openapi.plugins import JsonRenderPlugin
from litestar.testing import TestClient

import airoi.app
from airoi import __version__
from airoi.apidocs import (
    ASSETS_PATH,
    DESCRIPTION_PATH,
    DOCS_PATH,
    INDEX_PATH,
    SWAGGER_UI_VERSION,
)
from airoi.app import OPENAPI_PATH, create_app
from airoi.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "src" / "airoi" / "apidocs" / "assets"
# What each kind of reference must answer as.
MEDIA_TYPES = {"script": "text/javascript", "stylesheet": "text/css"}


@pytest.fixture(scope="module")
def app() -> Iterator[Litestar]:
    made = create_app(Settings(database_url="sqlite:///:memory:"))
    yield made
    made.state.engine.dispose()


@pytest.fixture(scope="module")
def client(app: Litestar) -> Iterator[TestClient[Litestar]]:
    with TestClient(app) as test_client:
        yield test_client


class PageParts(HTMLParser):
    """What a page loads (scripts and stylesheets, by where from), its inline code, and every
    address it names."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[tuple[str, str]] = []  # (kind, address)
        self.addresses: list[str] = []
        self.inline_scripts = 0
        self.inline_styles = 0
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        given = {name: value or "" for name, value in attrs}
        self.addresses += [given[name] for name in ("src", "href", "action") if name in given]
        if "style" in given or tag == "style":
            self.inline_styles += 1
        if any(name.startswith("on") for name in given):  # onload=, onclick=: inline script
            self.inline_scripts += 1
        if tag == "script":
            self._in_script = "src" not in given
            if "src" in given:
                self.loads.append(("script", given["src"]))
        if tag == "link" and given.get("rel") == "stylesheet":
            self.loads.append(("stylesheet", given["href"]))

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline_scripts += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False


def page_parts(html: str) -> PageParts:
    parts = PageParts()
    parts.feed(html)
    return parts


def policy(header: str) -> dict[str, list[str]]:
    directives = (part.split() for part in header.split(";") if part.strip())
    return {name: sources for name, *sources in directives}


def test_the_page_is_public_under_a_strict_policy_and_loads_only_from_the_server(
    client: TestClient[Litestar],
) -> None:
    response = client.get(DOCS_PATH)  # no token
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    csp = policy(response.headers["content-security-policy"])
    assert csp["default-src"] == ["'none'"]
    assert csp["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval'
    assert csp["style-src"] == ["'self'"]
    assert csp["connect-src"] == ["'self'"]  # the description and "Try it out" only
    assert csp["frame-ancestors"] == ["'none'"]
    assert response.headers["x-content-type-options"] == "nosniff"

    parts = page_parts(response.text)
    assert parts.inline_scripts == 0
    assert parts.inline_styles == 0
    assert {kind for kind, _ in parts.loads} == {"script", "stylesheet"}
    # Every address is a path on this server: no scheme, no other host, no protocol-relative.
    assert parts.addresses
    for address in parts.addresses:
        assert re.fullmatch(r"/(?!/)[^:]*|data:,", address), address
    assert "http:" not in response.text and "https:" not in response.text
    assert f'data-description-url="{DESCRIPTION_PATH}"' in response.text


def test_a_token_is_not_needed_and_a_bad_one_is_not_looked_at(
    client: TestClient[Litestar],
) -> None:
    for headers in ({}, {"Authorization": "Bearer airoi_not-a-token"}, {"Authorization": "x"}):
        assert client.get(DOCS_PATH, headers=headers).status_code == 200
        assert client.get(INDEX_PATH, headers=headers).status_code == 200


def test_every_asset_the_page_loads_answers_with_its_type(client: TestClient[Litestar]) -> None:
    parts = page_parts(client.get(DOCS_PATH).text)
    assert len(parts.loads) == 4  # Swagger UI's bundle and stylesheet, the page's own two
    for kind, address in parts.loads:
        response = client.get(address)
        assert response.status_code == 200, address
        media_type = response.headers["content-type"].split(";")[0]
        assert media_type == MEDIA_TYPES[kind], address
        assert response.headers["x-content-type-options"] == "nosniff"
        name, _, version = address.rsplit("/", 1)[1].partition("?v=")
        shipped = (ASSETS / name).read_bytes()
        assert response.content == shipped
        # Named at its version (from its bytes), it is kept a year without asking again.
        assert version == hashlib.sha256(shipped).hexdigest()[:12]
        assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
        # Conditional GET, as every 200 under /api/v1/: a browser revalidates and gets 304.
        again = client.get(address, headers={"If-None-Match": response.headers["etag"]})
        assert again.status_code == 304
        assert again.headers["etag"] == response.headers["etag"]
        head = client.head(address)  # SEMANTICS R30
        assert head.status_code == 200
        assert head.content == b""


@pytest.mark.parametrize("query", ["", "?v=0123456789ab", "?v="])
def test_an_asset_at_no_version_or_another_is_asked_again_each_time(
    client: TestClient[Litestar], query: str
) -> None:
    # An older page's address (or none) may name bytes that have changed since: revalidated.
    response = client.get(f"{ASSETS_PATH}/docs.js{query}")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["etag"]
    assert client.get(DOCS_PATH).headers["cache-control"] == "no-cache"


def test_an_asset_is_sent_gzipped_once_compressed(client: TestClient[Litestar]) -> None:
    """Compressed once by its handler, not again per request by airoi.conditional: the bytes
    sent are one gzip of the file, with a tag of their own (RFC 9110 8.8.3)."""
    address = f"{DOCS_PATH}/assets/swagger-ui-bundle.js"
    shipped = (ASSETS / "swagger-ui-bundle.js").read_bytes()
    tags = set()
    for _ in range(2):
        with client.stream("GET", address, headers={"Accept-Encoding": "gzip"}) as response:
            sent = b"".join(response.iter_raw())
        assert response.headers["content-encoding"] == "gzip"
        assert response.headers["vary"] == "Accept-Encoding"
        assert int(response.headers["content-length"]) == len(sent) < len(shipped) // 3
        assert gzip.decompress(sent) == shipped
        tags.add(response.headers["etag"])
    plain = client.get(address, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    assert plain.content == shipped
    assert len(tags) == 1 and plain.headers["etag"] not in tags
    revalidated = client.get(
        address, headers={"Accept-Encoding": "gzip", "If-None-Match": tags.pop()}
    )
    assert revalidated.status_code == 304


def test_the_vendored_files_are_the_packages_own() -> None:
    """VENDORED.md's hashes are of the npm package's files; a hand edit shows up here."""
    record = (ASSETS / "VENDORED.md").read_text()
    assert f"swagger-ui-dist {SWAGGER_UI_VERSION}" in record
    hashes = dict(re.findall(r"^\| `([^`]+)` \|[^|]*\| `([0-9a-f]{64})` \|$", record, re.M))
    assert set(hashes) == {
        "swagger-ui-bundle.js",
        "swagger-ui.css",
        "swagger-ui-bundle.js.LICENSE.txt",
        "swagger-ui.LICENSE",
        "swagger-ui.NOTICE",
    }
    for name, digest in hashes.items():
        assert hashlib.sha256((ASSETS / name).read_bytes()).hexdigest() == digest, name
    bundle = (ASSETS / "swagger-ui-bundle.js").read_text()
    assert f'PACKAGE_VERSION:"{SWAGGER_UI_VERSION}"' in bundle
    assert "Apache License" in (ASSETS / "swagger-ui.LICENSE").read_text()


def test_the_package_ships_every_asset() -> None:
    """The wheel takes package data by pyproject.toml's patterns: each shipped file matches one."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["airoi"]
    shipped = [path.relative_to(ROOT / "src" / "airoi").as_posix() for path in ASSETS.iterdir()]
    assert len(shipped) == 8
    for name in shipped:
        assert any(fnmatch.fnmatch(name, pattern) for pattern in patterns), name


def test_the_index_answers_where_things_are(client: TestClient[Litestar], app: Litestar) -> None:
    response = client.get(INDEX_PATH)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "name": "airoi",
        "version": __version__,
        "links": {"openapi": "/api/v1/openapi.json", "docs": "/api/v1/docs", "dashboard": "/"},
    }
    answers = {
        "openapi": "application/json",
        "docs": "text/html; charset=utf-8",
    }
    for name, media_type in answers.items():
        link = client.get(response.json()["links"][name])
        assert link.status_code == 200, name
        assert link.headers["content-type"] == media_type, name
    assert client.head(INDEX_PATH).status_code == 200


def test_the_index_links_to_the_dashboard(client: TestClient[Litestar], app: Litestar) -> None:
    if not any(route.path == "/" for route in app.routes):
        pytest.skip("the dashboard at / is not served by this build yet")
    dashboard = client.get(client.get(INDEX_PATH).json()["links"]["dashboard"])
    assert dashboard.status_code == 200
    assert dashboard.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize(
    "path", [INDEX_PATH, DOCS_PATH, f"{DOCS_PATH}/assets/docs.js", f"{DOCS_PATH}/nothing"]
)
def test_other_methods_are_405(client: TestClient[Litestar], method: str, path: str) -> None:
    # SEMANTICS R30: a method the route does not serve is 405 with Allow: GET, before any token.
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    assert response.json()["error"]["status"] == 405


@pytest.mark.parametrize(
    "path",
    [
        f"{DOCS_PATH}/nothing",
        f"{DOCS_PATH}/openapi.json",  # the framework's copy of the description is not added
        f"{DOCS_PATH}/oauth2-redirect.html",  # nor the plugin's OAuth2 page
        f"{DOCS_PATH}/assets/swagger-ui.LICENSE",  # shipped, not served
        f"{DOCS_PATH}/assets/VENDORED.md",
        f"{DOCS_PATH}/assets/__init__.py",
        f"{DOCS_PATH}/assets/..%2F__init__.py",
        f"{DOCS_PATH}/assets/swagger-ui-bundle.js.map",
    ],
)
def test_anything_else_under_the_docs_is_the_apis_404(
    client: TestClient[Litestar], path: str
) -> None:
    response = client.get(path)
    assert response.status_code == 404
    assert response.json()["error"] == {
        "status": 404,
        "message": "No such route.",
        "request_id": response.headers["x-request-id"],
    }


@pytest.mark.parametrize(
    "target",
    [f"{INDEX_PATH}?format=html", f"{DESCRIPTION_PATH}?utm_source=chat", f"{INDEX_PATH}?a=1&a=2"],
)
def test_an_unknown_query_is_refused_by_the_api(client: TestClient[Litestar], target: str) -> None:
    # SEMANTICS R12: the index and the description are the API's, and as strict as the rest.
    response = client.get(target)
    assert response.status_code == 400
    assert "Unknown query parameter" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "query", ["url=https://example.org/x.json", "utm_source=chat&utm_source=again", "x=%00"]
)
def test_the_page_ignores_a_query_it_does_not_read(
    client: TestClient[Litestar], query: str
) -> None:
    # A page for people, not the API (SEMANTICS R12 is the API's): a link pasted from a chat
    # opens it. ?url= still loads no other description: the page is the same bytes, and
    # Swagger UI reads no query (queryConfigEnabled is off).
    plain = client.get(DOCS_PATH)
    response = client.get(f"{DOCS_PATH}?{query}")
    assert response.status_code == 200
    assert response.content == plain.content
    assert "example.org" not in response.text
    asset = client.get(f"{ASSETS_PATH}/docs.js?{query}")
    assert asset.status_code == 200
    assert "queryConfigEnabled: false" in asset.text


def test_the_description_is_the_same_without_the_docs(
    client: TestClient[Litestar], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app built with the framework's bare JSON plugin somewhere out of the way and no
    index describes itself byte for byte as the served app does: the docs add nothing."""
    served = client.get(OPENAPI_PATH)
    assert DESCRIPTION_PATH == OPENAPI_PATH
    paths = served.json()["paths"]
    assert not [path for path in paths if path == INDEX_PATH or path.startswith(DOCS_PATH)]

    @get("/_nothing", include_in_schema=False, sync_to_thread=False)
    def nothing() -> None:
        return None

    def bare_router(_: Any) -> Router:
        return Router("/_bare", route_handlers=[], include_in_schema=False)

    monkeypatch.setattr(airoi.app, "ApiDocsPage", lambda: JsonRenderPlugin(path="/x.json"))
    monkeypatch.setattr(airoi.app, "docs_router", bare_router)
    monkeypatch.setattr(airoi.app, "api_index", nothing)
    bare = create_app(Settings(database_url="sqlite:///:memory:"))
    try:
        assert not any(route.path.startswith(DOCS_PATH) for route in bare.routes)
        with TestClient(bare) as bare_client:
            assert bare_client.get(OPENAPI_PATH).content == served.content
    finally:
        bare.state.engine.dispose()
