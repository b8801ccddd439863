"""The OAuth sign-in page in a real browser (docs/assistants.md): a connector's user pastes a
token, presses Allow or Deny, and the browser lands on the connector's redirect URI.

HTTP tests of the page send the form with an Origin they choose; a browser sends the one the
page's own headers decide (Fetch: a page whose referrer policy is no-referrer posts its forms
with `Origin: null`, which the page refuses as another site's). Only a browser shows that the
form can be sent at all.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.servers import ServedDemo as Served
from tests.servers import demo_served

CALLBACK = "http://127.0.0.1:9/callback"  # never reached: the browser's request is answered here


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with demo_served(tmp_path_factory.mktemp("signin")) as demo:
        yield demo


def sign_in_page(served: Served) -> tuple[str, str, str]:
    """A registered public client's sign-in page; its client id and PKCE verifier."""
    client = httpx.post(
        f"{served.origin}/oauth/register",
        json={"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"},
    ).json()
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    authorized = httpx.get(
        f"{served.origin}/oauth/authorize",
        params={
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": CALLBACK,
            "code_challenge": challenge.decode().rstrip("="),
            "code_challenge_method": "S256",
            "state": "kept-state",
        },
    )
    assert authorized.status_code == 302, authorized.text
    return authorized.headers["location"], client["client_id"], verifier


def landing(browser: Any, served: Served, page_url: str, button: str) -> tuple[str, list[Any], Any]:
    """Press `button` on the sign-in page (the token pasted): where the browser went, the
    headers of the form's POST and those of the request to the connector."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(10_000)
    posted: list[Any] = []
    page.on("request", lambda r: posted.append(r.headers) if r.method == "POST" else None)
    page.route(f"{CALLBACK}**", lambda route: route.fulfill(status=200, body="back"))
    try:
        page.goto(page_url)
        page.fill("#token", served.token)
        with page.expect_request(lambda r: r.url.startswith(CALLBACK)) as reached:
            page.click(f"button[value={button}]")
        return reached.value.url, posted, reached.value.headers
    finally:
        context.close()


def test_allow_in_a_browser_sends_the_connector_a_code(browser: Any, served: Served) -> None:
    page_url, client_id, verifier = sign_in_page(served)
    url, posted, to_connector = landing(browser, served, page_url, "allow")

    # The form was sent from its own page, as that page (not as Origin: null).
    assert [headers.get("origin") for headers in posted] == [served.origin]
    query = parse_qs(urlsplit(url).query)
    assert query["state"] == ["kept-state"] and query["iss"] == [served.origin]
    exchanged = httpx.post(
        f"{served.origin}/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": query["code"][0],
            "code_verifier": verifier,
            "client_id": client_id,
            "redirect_uri": CALLBACK,
        },
    )
    assert exchanged.status_code == 200, exchanged.text
    assert exchanged.json()["token_type"].lower() == "bearer"
    # The page's address (the authorization request's query) never rides to the connector.
    assert "referer" not in to_connector


def test_deny_in_a_browser_tells_the_connector(browser: Any, served: Served) -> None:
    page_url, _, _ = sign_in_page(served)
    url, _, _ = landing(browser, served, page_url, "deny")
    query = parse_qs(urlsplit(url).query)
    assert query["error"] == ["access_denied"] and query["state"] == ["kept-state"]
