"""The dashboard's routes, `/` and `/assets/NAME` (docs/dashboard.md), without a browser.

They need no token (the page holds no data; its script reads /api/v1 with the person's
token), serve GET and HEAD only (SEMANTICS R30), answer an unknown file with SPEC 7's body,
carry a strict Content-Security-Policy, and stay out of the API's description. Every file the
page loads is shipped in the package, none from another host, with no inline script or style.
The browser's side is tests/browser/test_dashboard.py.
"""

from __future__ import annotations

import re
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from litestar import Litestar
from litestar.testing import TestClient

from airoi import catalog

# The page and its files read nothing from the store: SQLite alone (tests/conftest.py).
pytestmark = pytest.mark.store_independent

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "src" / "airoi" / "web"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)


# `client` (tests/conftest.py): the served app over an empty store, SQLite and PostgreSQL; the
# page and its files read nothing from it.


class Loaded(HTMLParser):
    """What a page loads (script src, link href), and whatever would run or style inline."""

    def __init__(self) -> None:
        super().__init__()
        self.loaded: list[str] = []
        self.inline: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "script":
            if named.get("src"):
                self.loaded.append(str(named["src"]))
            else:
                self.inline.append("a script without src")
        if tag == "style":
            self.inline.append("a style element")
        if tag == "link" and named.get("href"):
            self.loaded.append(str(named["href"]))
        self.inline += [f"{tag} {name}=" for name, _ in attrs if name == "style"]
        self.inline += [f"{tag} {name}=" for name, _ in attrs if name.startswith("on")]


def test_the_page_needs_no_token_and_says_what_it_may_load(client: TestClient[Litestar]) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    parsed = Loaded()
    parsed.feed(page.text)
    assert parsed.inline == []
    # Every file from this server, under /assets, and each is served with its type.
    assert parsed.loaded, page.text
    kinds = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
    for address in parsed.loaded:
        path, _, version = address.partition("?v=")
        assert path.startswith("/assets/"), address
        served = client.get(address)
        assert served.status_code == 200, address
        assert served.headers["content-type"].startswith(kinds[Path(path).suffix]), address
        assert served.headers["content-security-policy"] == CSP
        shipped = (WEB / "assets" / path.removeprefix("/assets/")).read_bytes()
        assert served.content == shipped
        # Named at its version (the start of its ETag, a digest of its bytes), a file is kept
        # a year without asking again: an upgrade changes the address.
        assert version and served.headers["etag"].strip('"').startswith(version), address
        assert served.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert page.headers["cache-control"] == "no-cache"


@pytest.mark.parametrize("query", ["", "?v=0123456789ab", "?v="])
def test_a_file_at_no_version_or_another_is_asked_again_each_time(
    client: TestClient[Litestar], query: str
) -> None:
    # An older page's address (or none) may name bytes that have changed since: revalidated,
    # and answered 304 while they have not (the ETag is kept).
    response = client.get(f"/assets/dashboard.js{query}")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "no-cache"
    again = client.get(
        f"/assets/dashboard.js{query}", headers={"If-None-Match": response.headers["etag"]}
    )
    assert again.status_code == 304


def test_head_answers_as_get_without_a_body(client: TestClient[Litestar]) -> None:
    # SEMANTICS R30: HEAD is served where GET is.
    for path in ("/", "/assets/dashboard.js"):
        got = client.get(path)
        head = client.head(path)
        assert head.status_code == 200
        assert head.content == b""
        assert head.headers["content-length"] == str(len(got.content))
        assert head.headers["etag"] == got.headers["etag"]


@pytest.mark.parametrize(
    "query", ["utm_source=chat", "utm_source=a&utm_source=b", "window=1yr", "x=%00", "v=1"]
)
def test_a_query_the_page_does_not_read_is_ignored(
    client: TestClient[Litestar], query: str
) -> None:
    # A page for people (a link pasted from a chat, a campaign tag): not refused as the API's
    # unknown parameters are (SEMANTICS R12 is the API's, and stays so under /api/v1).
    for path in ("/", "/assets/dashboard.js"):
        plain = client.get(path)
        response = client.get(f"{path}?{query}")
        assert response.status_code == 200, path
        assert response.content == plain.content


# The tools' page links (AIROI_APP_URL + a path of airoi/catalog/pages.json), and the dashboard
# view each is sent to, worked out by hand from dashboard.js's hash routes.
PAGE_REDIRECTS = {
    "/roi": "/#/",
    "/initiatives": "/#/",
    "/initiatives/12": "/#/initiatives/12",
    "/initiatives/9223372036854775807": "/#/initiatives/9223372036854775807",
    "/decisions": "/#/",
    "/budgets": "/#/budgets",
    "/integrations": "/#/connections",
    "/integrations/connect/jira": "/#/connections",
    "/budgets?utm_source=chat": "/#/budgets",
}
# Pages the dashboard has no view of: left 404 (and /metrics is the Prometheus endpoint's).
NO_VIEW = {
    "/templates",
    "/templates/{key}",
    "/assessments",
    "/assessments/{id}",
    "/help",
    "/help/{slug}",
    "/settings/organization",
    "/settings/organization/mcp-access",
}


@pytest.mark.parametrize(("path", "view"), sorted(PAGE_REDIRECTS.items()))
def test_an_application_page_link_is_sent_to_the_dashboards_view(
    client: TestClient[Litestar], path: str, view: str
) -> None:
    for method in ("GET", "HEAD"):
        response = client.request(method, path, follow_redirects=False)
        assert response.status_code == 303, (method, path)
        assert response.headers["location"] == view
        assert response.content == b""


@pytest.mark.parametrize(
    "path", ["/initiatives/abc", "/initiatives/012", "/initiatives/0", "/initiatives/1" + "0" * 19]
)
def test_a_page_link_to_no_initiative_is_404(client: TestClient[Litestar], path: str) -> None:
    response = client.get(path, follow_redirects=False)
    assert response.status_code == 404
    assert response.json()["error"]["status"] == 404


def test_every_catalog_page_is_the_dashboard_a_redirect_or_left_alone(
    client: TestClient[Litestar],
) -> None:
    pages = {page.key: page.path for page in catalog.app_pages()}
    asked = {path.split("?")[0] for path in PAGE_REDIRECTS}
    for key, path in pages.items():
        sample = path.replace("{id}", "12").replace("{platform}", "jira")
        if key == "dashboard":
            assert client.get(path).headers["content-type"].startswith("text/html")
        elif key == "metrics":  # the catalog's page collides with the Prometheus endpoint
            metrics = client.get(path)
            assert metrics.status_code == 200
            assert "# HELP" in metrics.text
        elif path in NO_VIEW:
            assert client.get(path, follow_redirects=False).status_code == 404, path
        else:
            assert sample in asked, f"{key}: {path} is neither sent to a view nor left out"


def test_a_kept_copy_is_answered_304(client: TestClient[Litestar]) -> None:
    first = client.get("/assets/dashboard.css")
    again = client.get("/assets/dashboard.css", headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""
    other = client.get("/assets/dashboard.css", headers={"If-None-Match": '"something else"'})
    assert other.status_code == 200


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
@pytest.mark.parametrize("path", ["/", "/assets/dashboard.js", "/assets/no-such.js"])
def test_another_method_is_405_before_anything_else(
    client: TestClient[Litestar], method: str, path: str
) -> None:
    # SEMANTICS R30: 405 with Allow and SPEC 7's body, no token asked.
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    assert response.json()["error"]["status"] == 405


@pytest.mark.parametrize(
    "name",
    [
        "no-such.js",
        "VENDORED.md",  # the vendored files' notes and licence ship, but are not served
        "uPlot.LICENSE",
        "..%2F__init__.py",
        "%2E%2E%2Findex.html",
    ],
)
def test_an_unknown_file_is_404_with_the_error_body(
    client: TestClient[Litestar], name: str
) -> None:
    response = client.get(f"/assets/{name}")
    assert response.status_code == 404
    body = response.json()
    assert body["error"]["status"] == 404
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert "import" not in response.text  # no source file's text


def test_the_description_is_left_as_it_was(client: TestClient[Litestar]) -> None:
    paths = set(client.get("/api/v1/openapi.json").json()["paths"])
    assert paths and all(path.startswith("/api/v1/") for path in paths)


def test_every_shipped_file_is_in_the_package_data() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["package-data"]["airoi"]
    assert {"web/*.html", "web/assets/*"} <= set(shipped)
    # Nothing in the folder but files those patterns take (no subfolder left behind).
    assert all(path.is_file() for path in (WEB / "assets").iterdir())


def test_the_vendored_chart_library_is_the_one_its_notes_name() -> None:
    import hashlib

    notes = (WEB / "assets" / "VENDORED.md").read_text()
    for name in ("uPlot.iife.min.js", "uPlot.min.css"):
        digest = hashlib.sha256((WEB / "assets" / name).read_bytes()).hexdigest()
        assert re.search(rf"{digest}\s+{re.escape(name)}", notes), name
    assert "MIT License" in (WEB / "assets" / "uPlot.LICENSE").read_text()
