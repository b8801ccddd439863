"""OAuth 2.1 for the tool endpoint (issue 23): metadata, registration, the sign-in page,
codes with PKCE, audience-bound tokens, rotating refresh, and tokens that end with the
personal access token they act as (SPEC 5.2, SEMANTICS R29, R30)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import anyio
import httpx
import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine, select, update

from airoi.app import create_app
from airoi.auth import revoke_token
from airoi.db.tables import accounts, oauth_clients, oauth_codes, oauth_tokens, tokens, users
from airoi.settings import Settings
from airoi.timeutil import utc_now
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
BASE = "http://testserver"
RESOURCE = f"{BASE}/mcp"
REDIRECT = "http://127.0.0.1:5555/callback"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def oauth_client(db_url: str) -> Any:
    # The test client's host is served because the settings say so, as an operator's would.
    app = create_app(Settings(database_url=db_url, allowed_hosts=("testserver",)))
    with TestClient(app, base_url=BASE) as test_client:
        yield test_client
    app.state.engine.dispose()


@pytest.fixture
def pats(engine: Engine) -> dict[str, str]:
    b = BundleBuilder()
    good = b.account(name="Good")
    no_api = b.account(name="No API", api_access=False)
    owner = b.user(good, role="owner")
    admin = b.user(good, role="admin", name="Grace")
    no_api_owner = b.user(no_api, role="owner")
    found = {
        "owner": b.token(owner),
        "admin": b.token(admin),
        "other": b.token(owner),
        "no_api": b.token(no_api_owner),
    }
    b.initiative(good, title="Ticket triage")
    b.load(engine)
    return found


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.decode().rstrip("=")


def register(client: Client, **metadata: Any) -> dict[str, Any]:
    body = {"redirect_uris": [REDIRECT], "client_name": "Test assistant", **metadata}
    response = client.post("/oauth/register", json=body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def authorize(client: Client, reg: dict[str, Any], challenge: str, **extra: str) -> Any:
    params = {
        "response_type": "code",
        "client_id": reg["client_id"],
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-123",
        "resource": RESOURCE,
        **extra,
    }
    return client.get("/oauth/authorize", params=params, follow_redirects=False)


def hidden_fields(page: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', page))


def sign_in(client: Client, location: str, pat: str, action: str = "allow") -> Any:
    page = client.get(location)
    assert page.status_code == 200, page.text
    fields = {k: v.replace("&amp;", "&") for k, v in hidden_fields(page.text).items()}
    return client.post(
        "/oauth/sign-in",
        data={**fields, "token": pat, "action": action},
        headers={"Origin": BASE},
        follow_redirects=False,
    )


def code_of(response: Any) -> dict[str, str]:
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    assert location.startswith(REDIRECT + "?")
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def exchange(client: Client, reg: dict[str, Any], code: str, verifier: str) -> Any:
    return client.post(
        "/oauth/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "client_id": reg["client_id"],
            "client_secret": reg.get("client_secret", ""),
            "code_verifier": verifier,
            "resource": RESOURCE,
        },
    )


def refresh(client: Client, reg: dict[str, Any], token: str) -> Any:
    return client.post(
        "/oauth/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": token,
            "client_id": reg["client_id"],
            "client_secret": reg.get("client_secret", ""),
        },
    )


def signed_code(client: Client, reg: dict[str, Any], pat: str) -> tuple[str, dict[str, str]]:
    """Authorize `reg` and sign in with `pat`: the PKCE verifier, and what the redirect
    carried (the code, the state, the issuer)."""
    verifier, challenge = pkce()
    return verifier, code_of(
        sign_in(client, authorize(client, reg, challenge).headers["location"], pat)
    )


def grant(client: Client, pat: str, **metadata: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A whole grant: registration, sign-in, code exchange; the client and its tokens."""
    reg = register(client, **metadata)
    verifier, challenge = pkce()
    answer = authorize(client, reg, challenge)
    assert answer.status_code == 302, answer.text
    got = code_of(sign_in(client, answer.headers["location"], pat))
    assert got["state"] == "st-123"
    assert got["iss"] == BASE
    issued = exchange(client, reg, got["code"], verifier)
    assert issued.status_code == 200, issued.text
    return reg, issued.json()


def mcp(client: Client, access_token: str, host: str | None = None) -> Any:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {access_token}"}
    if host:
        headers["Host"] = host
    return client.post("/mcp", json=INITIALIZE, headers=headers)


# --- discovery ---------------------------------------------------------------------------


@pytest.mark.store_independent
def test_a_401_from_mcp_names_its_resource_metadata(oauth_client: Client) -> None:
    response = oauth_client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == (
        f'Bearer realm="airoi", resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"'
    )
    # The HTTP API's challenge is unchanged.
    api = oauth_client.get("/api/v1/initiatives")
    assert api.headers["www-authenticate"] == 'Bearer realm="airoi"'


def test_a_refused_token_is_said_invalid_in_the_challenge(
    oauth_client: Client, pats: dict[str, str], engine: Engine
) -> None:
    # RFC 6750 3.1: a token sent and refused is error="invalid_token" (a client then gets
    # another, instead of sending it again); none sent, or no bearer one, says only the realm.
    metadata = f'resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp"'
    refused = [f"Bearer {'x' * 43}", f"Bearer {pats['owner']}"]
    revoke_token(engine, pats["owner"])
    for authorization in refused:
        api = oauth_client.get("/api/v1/initiatives", headers={"Authorization": authorization})
        assert api.status_code == 401
        assert api.headers["www-authenticate"] == 'Bearer realm="airoi", error="invalid_token"'
        tool = oauth_client.post(
            "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": authorization}
        )
        assert tool.status_code == 401
        assert tool.headers["www-authenticate"] == (
            f'Bearer realm="airoi", error="invalid_token", {metadata}'
        )
    basic = oauth_client.get("/api/v1/initiatives", headers={"Authorization": "Basic eDp5"})
    assert basic.headers["www-authenticate"] == 'Bearer realm="airoi"'
    # An access token of a grant whose personal token was revoked: the same.
    _, issued = grant(oauth_client, pats["other"])
    revoke_token(engine, pats["other"])
    ended = mcp(oauth_client, issued["access_token"])
    assert ended.status_code == 401
    assert ended.headers["www-authenticate"] == (
        f'Bearer realm="airoi", error="invalid_token", {metadata}'
    )


@pytest.mark.store_independent
def test_metadata_documents(oauth_client: Client) -> None:
    for path in (
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ):
        prm = oauth_client.get(path)
        assert prm.status_code == 200
        assert prm.json()["resource"] == RESOURCE
        assert prm.json()["authorization_servers"] == [BASE]
    asm = oauth_client.get("/.well-known/oauth-authorization-server").json()
    assert asm["issuer"] == BASE
    assert asm["code_challenge_methods_supported"] == ["S256"]
    assert asm["registration_endpoint"] == f"{BASE}/oauth/register"
    assert asm["token_endpoint"] == f"{BASE}/oauth/token"
    assert asm["authorization_endpoint"] == f"{BASE}/oauth/authorize"


@pytest.mark.store_independent
def test_a_fixed_public_url_wins_and_a_foreign_host_gets_no_metadata(db_url: str) -> None:
    app = create_app(Settings(database_url=db_url, public_url="https://roi.example.com"))
    with TestClient(app, base_url=BASE) as fixed:
        prm = fixed.get("/.well-known/oauth-protected-resource", headers={"Host": "evil.test"})
        assert prm.json()["resource"] == "https://roi.example.com/mcp"
    app.state.engine.dispose()
    app = create_app(Settings(database_url=db_url))
    with TestClient(app, base_url=BASE) as derived:
        refused = derived.get(
            "/.well-known/oauth-authorization-server", headers={"Host": "evil.test"}
        )
        assert refused.status_code == 404
    app.state.engine.dispose()


@pytest.mark.store_independent
def test_oauth_routes_answer_only_their_methods(oauth_client: Client) -> None:
    # SEMANTICS R30: another method is 405 with Allow and SPEC 7's body, before anything.
    for method, path, allow in (
        ("POST", "/.well-known/oauth-authorization-server", "GET"),
        ("GET", "/oauth/token", "POST"),
        ("GET", "/oauth/register", "POST"),
        ("DELETE", "/oauth/sign-in", "GET, POST"),
        ("POST", "/oauth/authorize", "GET"),
    ):
        response = oauth_client.request(method, path)
        assert response.status_code == 405, (method, path)
        assert response.headers["allow"] == allow
        assert response.json()["error"]["status"] == 405
        said = {"GET": "Only GET is", "POST": "Only POST is", "GET, POST": "Only GET and POST are"}
        assert response.json()["error"]["message"] == f"{said[allow]} served here."
    # The API still serves GET and HEAD only.
    assert oauth_client.post("/api/v1/initiatives").status_code == 405


# --- registration --------------------------------------------------------------------------


@pytest.mark.store_independent
@pytest.mark.parametrize(
    "uri",
    [
        "http://example.com/callback",  # http off loopback
        "https://example.com/callback#frag",
        "cursor://anysphere/callback",
        # Reads as localhost on the consent page; the code would go to evil.example.
        "https://localhost:8213@evil.example/cb",
        "http://user:pw@127.0.0.1/cb",
    ],
)
def test_registration_takes_https_or_loopback_http_only(oauth_client: Client, uri: str) -> None:
    response = oauth_client.post("/oauth/register", json={"redirect_uris": [uri]})
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_redirect_uri"
    assert "evil" not in response.text and "pw" not in response.text


def test_registration_keeps_only_the_secrets_hash(oauth_client: Client, engine: Engine) -> None:
    reg = register(oauth_client, redirect_uris=["https://claude.ai/api/mcp/auth_callback"])
    assert reg["client_secret"]
    with engine.connect() as conn:
        row = conn.execute(select(oauth_clients)).one()
    assert row.secret_hash == hashlib.sha256(reg["client_secret"].encode()).hexdigest()
    assert reg["client_secret"] not in row.registration


@pytest.mark.parametrize("asked", ["admin", "mcp admin", "openid profile"])
def test_registration_registers_the_one_scope_whatever_was_asked(
    oauth_client: Client, engine: Engine, pats: dict[str, str], asked: str
) -> None:
    # A client that asked for "admin" was answered scope "admin", as if it held it.
    reg, issued = grant(oauth_client, pats["owner"], scope=asked)
    assert reg["scope"] == "mcp"
    with engine.connect() as conn:
        row = conn.execute(select(oauth_clients)).one()
    assert json.loads(row.registration)["scope"] == "mcp"
    assert issued["scope"] == "mcp"


@pytest.mark.store_independent
def test_registration_body_is_bounded(oauth_client: Client) -> None:
    big = {"redirect_uris": [REDIRECT], "client_name": "x" * 20_000}
    response = oauth_client.post("/oauth/register", json=big)
    assert response.status_code == 413
    assert response.json()["error"]["status"] == 413
    form = oauth_client.post("/oauth/token", data={"grant_type": "x" * 10_000})
    assert form.status_code == 413


@pytest.mark.store_independent
def test_a_registration_refusal_is_one_sentence_that_repeats_nothing(
    oauth_client: Client,
) -> None:
    cases = [
        (b"{not json", "The body must be a JSON object of client metadata (RFC 7591)."),
        (b"[1, 2]", "The body must be a JSON object of client metadata (RFC 7591)."),
        (b"{}", "The client metadata needs redirect_uris."),
        (
            b'{"redirect_uris": ["<b>not-a-url</b>"]}',
            "The client metadata's redirect_uris.0 is not valid: input should be a valid URL, "
            "relative URL without a base.",
        ),
    ]
    for body, description in cases:
        response = oauth_client.post(
            "/oauth/register", content=body, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 400
        assert response.json() == {
            "error": "invalid_client_metadata",
            "error_description": description,
        }


# --- authorization -------------------------------------------------------------------------


@pytest.mark.store_independent
def test_pkce_plain_is_refused(oauth_client: Client) -> None:
    reg = register(oauth_client)
    verifier = secrets.token_urlsafe(48)
    response = authorize(oauth_client, reg, verifier, code_challenge_method="plain")
    # The client and redirect URI are good, so the error goes back to the client.
    assert response.status_code == 302
    query = parse_qs(urlsplit(response.headers["location"]).query)
    assert query["error"] == ["invalid_request"]
    assert "/oauth/sign-in" not in response.headers["location"]


@pytest.mark.store_independent
@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge": ""}, "invalid_request"),
        ({"resource": "https://elsewhere.example/mcp"}, "invalid_target"),
    ],
)
def test_an_error_sent_back_to_the_client_names_the_issuer(
    oauth_client: Client, extra: dict[str, str], error: str
) -> None:
    # RFC 9207: the metadata says authorization responses carry iss, errors included; those
    # the SDK made left it out.
    _, challenge = pkce()
    response = authorize(oauth_client, register(oauth_client), challenge, **extra)
    assert response.status_code == 302
    assert response.headers["location"].startswith(REDIRECT + "?")
    query = parse_qs(urlsplit(response.headers["location"]).query)
    assert query["error"] == [error]
    assert query["iss"] == [BASE]
    assert query["state"] == ["st-123"]
    metadata = oauth_client.get("/.well-known/oauth-authorization-server").json()
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert metadata["issuer"].rstrip("/") == BASE


@pytest.mark.store_independent
def test_pkce_method_must_be_given(oauth_client: Client) -> None:
    reg = register(oauth_client)
    _, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": reg["client_id"],
        "redirect_uri": REDIRECT,
        "code_challenge": challenge,
        "state": "st-123",
        "resource": RESOURCE,
    }
    response = oauth_client.get("/oauth/authorize", params=params, follow_redirects=False)
    assert response.status_code == 302
    query = parse_qs(urlsplit(response.headers["location"]).query)
    assert response.headers["location"].startswith(REDIRECT + "?")
    assert query["error"] == ["invalid_request"]
    assert query["error_description"] == [
        "The code_challenge_method is required and must be S256 (PKCE)."
    ]
    assert query["state"] == ["st-123"] and query["iss"] == [BASE]
    # Without a registered client to send it to, the error is answered here.
    unknown = oauth_client.get(
        "/oauth/authorize", params={**params, "client_id": "nobody"}, follow_redirects=False
    )
    assert unknown.status_code == 400
    assert unknown.json() == {
        "error": "invalid_request",
        "error_description": "The client_id is not one registered here.",
    }


@pytest.mark.store_independent
def test_a_long_state_is_refused_and_not_sent_back(oauth_client: Client) -> None:
    reg = register(oauth_client)
    _, challenge = pkce()
    long_state = "s" * 1_001
    # Even with another fault the SDK would answer at the redirect URI (a plain PKCE method).
    for extra in ({}, {"code_challenge_method": "plain"}):
        response = authorize(oauth_client, reg, challenge, state=long_state, **extra)
        assert response.status_code == 400
        assert "location" not in response.headers
        assert response.json() == {
            "error": "invalid_request",
            "error_description": "The state is longer than 1000 characters.",
        }
    assert authorize(oauth_client, reg, challenge, state="s" * 1_000).status_code == 302


def test_a_redirect_uri_not_registered_exactly_is_refused(oauth_client: Client) -> None:
    reg = register(oauth_client)
    _, challenge = pkce()
    for other in (REDIRECT + "/", "http://127.0.0.1:5556/callback", "https://evil.test/cb"):
        response = authorize(oauth_client, reg, challenge, redirect_uri=other)
        # Never redirected to an unregistered URI: answered here.
        assert response.status_code == 400, other
        assert response.json()["error"] == "invalid_request"


@pytest.mark.store_independent
def test_a_token_for_another_resource_is_not_issued(oauth_client: Client) -> None:
    reg = register(oauth_client)
    _, challenge = pkce()
    response = authorize(oauth_client, reg, challenge, resource="https://other.example/mcp")
    assert response.status_code == 302
    query = parse_qs(urlsplit(response.headers["location"]).query)
    assert query["error"] == ["invalid_target"]


def test_the_sign_in_page(oauth_client: Client, pats: dict[str, str]) -> None:
    reg = register(oauth_client)
    _, challenge = pkce()
    location = authorize(oauth_client, reg, challenge).headers["location"]
    assert location.startswith(f"{BASE}/oauth/sign-in?")
    page = oauth_client.get(location)
    assert page.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp
    assert "form-action 'self' http://127.0.0.1:5555" in csp
    assert "<script" not in page.text and "style=" not in page.text
    assert '<input type="password" id="token" name="token"' in page.text
    assert {"client_id", "redirect_uri", "code_challenge", "state", "csrf"} <= set(
        hidden_fields(page.text)
    )
    assert "Test assistant" in page.text
    cookie = page.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie


def test_the_sign_in_form_refuses_a_forged_post(oauth_client: Client, pats: dict[str, str]) -> None:
    reg = register(oauth_client)
    _, challenge = pkce()
    location = authorize(oauth_client, reg, challenge).headers["location"]
    page = oauth_client.get(location)
    fields = {k: v.replace("&amp;", "&") for k, v in hidden_fields(page.text).items()}
    data = {**fields, "token": pats["owner"], "action": "allow"}
    # Another site's page posting the form: its Origin.
    foreign = oauth_client.post(
        "/oauth/sign-in", data=data, headers={"Origin": "https://evil.test"}, follow_redirects=False
    )
    assert foreign.status_code == 403
    # No nonce cookie (a cross-site post does not carry a SameSite=Strict cookie).
    oauth_client.cookies.clear()
    no_cookie = oauth_client.post("/oauth/sign-in", data=data, follow_redirects=False)
    assert no_cookie.status_code == 403
    # A request whose hidden fields were changed (another challenge) fails its signature.
    page = oauth_client.get(location)
    fields = {k: v.replace("&amp;", "&") for k, v in hidden_fields(page.text).items()}
    tampered = {**fields, "code_challenge": "A" * 43, "token": pats["owner"], "action": "allow"}
    assert oauth_client.post("/oauth/sign-in", data=tampered).status_code == 400


def test_a_sign_in_request_issues_one_code(
    oauth_client: Client, pats: dict[str, str], engine: Engine
) -> None:
    reg = register(oauth_client)
    _, challenge = pkce()
    location = authorize(oauth_client, reg, challenge).headers["location"]
    page = oauth_client.get(location)
    nonce = oauth_client.cookies["airoi_oauth_nonce"]
    fields = {k: v.replace("&amp;", "&") for k, v in hidden_fields(page.text).items()}
    data = {**fields, "token": pats["owner"], "action": "allow"}

    def post() -> Any:
        return oauth_client.post(
            "/oauth/sign-in", data=data, headers={"Origin": BASE}, follow_redirects=False
        )

    first = post()
    assert code_of(first)["code"]
    # The nonce cookie ends with the code; the same form posted again with it is refused.
    assert "airoi_oauth_nonce" not in oauth_client.cookies
    again = oauth_client.post(
        "/oauth/sign-in",
        data=data,
        headers={"Origin": BASE, "Cookie": f"airoi_oauth_nonce={nonce}"},
        follow_redirects=False,
    )
    assert again.status_code == 400
    assert "This sign-in request has been used." in again.text
    assert "location" not in again.headers
    # So is the page reloaded (a fresh nonce) and posted.
    reloaded = sign_in(oauth_client, location, pats["owner"])
    assert reloaded.status_code == 400
    with engine.connect() as conn:
        assert len(conn.execute(select(oauth_codes)).all()) == 1
    # A new request from the assistant (a new PKCE challenge) signs in as before.
    fresh = authorize(oauth_client, reg, pkce()[1]).headers["location"]
    assert code_of(sign_in(oauth_client, fresh, pats["owner"]))["code"]


def test_a_bad_token_is_asked_again_and_deny_goes_back(
    oauth_client: Client, pats: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    reg = register(oauth_client)
    _, challenge = pkce()
    location = authorize(oauth_client, reg, challenge).headers["location"]
    wrong = "airoi_" + "w" * 43
    bad = sign_in(oauth_client, location, wrong)
    assert bad.status_code == 400
    assert "The token is not valid." in bad.text
    assert wrong not in bad.text and wrong not in caplog.text
    no_api = sign_in(oauth_client, location, pats["no_api"])
    assert no_api.status_code == 403
    # Pasted as the header's value, the token is still taken.
    assert code_of(sign_in(oauth_client, location, f"Bearer {pats['owner']}"))["code"]
    denied = code_of(sign_in(oauth_client, location, "", action="deny"))
    assert denied == {"error": "access_denied", "state": "st-123", "iss": BASE}


# --- tokens ------------------------------------------------------------------------------


def test_a_grant_reads_mcp_as_the_personal_tokens_user(
    oauth_client: Client, pats: dict[str, str], engine: Engine
) -> None:
    _, issued = grant(oauth_client, pats["owner"])
    assert issued["token_type"] == "Bearer"
    assert issued["expires_in"] == 3600
    assert mcp(oauth_client, issued["access_token"]).status_code == 200
    # Stored hashed only.
    with engine.connect() as conn:
        stored = {row.token_hash for row in conn.execute(select(oauth_tokens))}
    assert hashlib.sha256(issued["access_token"].encode()).hexdigest() in stored
    assert issued["access_token"] not in stored and issued["refresh_token"] not in stored
    # The HTTP API keeps to personal tokens (another resource).
    api = oauth_client.get(
        "/api/v1/initiatives", headers={"Authorization": f"Bearer {issued['access_token']}"}
    )
    assert api.status_code == 401


def test_a_code_is_used_once_and_needs_its_verifier(
    oauth_client: Client, pats: dict[str, str]
) -> None:
    reg = register(oauth_client)
    verifier, got = signed_code(oauth_client, reg, pats["owner"])
    wrong = exchange(oauth_client, reg, got["code"], secrets.token_urlsafe(48))
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    assert exchange(oauth_client, reg, got["code"], verifier).status_code == 200
    again = exchange(oauth_client, reg, got["code"], verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_a_code_presented_again_ends_the_tokens_of_its_first_use(
    oauth_client: Client, pats: dict[str, str]
) -> None:
    # OAuth 2.1 4.1.3: a code used twice means someone else holds a copy.
    reg = register(oauth_client)
    verifier, got = signed_code(oauth_client, reg, pats["owner"])
    first = exchange(oauth_client, reg, got["code"], verifier)
    assert first.status_code == 200
    issued = first.json()
    assert mcp(oauth_client, issued["access_token"]).status_code == 200
    again = exchange(oauth_client, reg, got["code"], verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert mcp(oauth_client, issued["access_token"]).status_code == 401
    assert refresh(oauth_client, reg, issued["refresh_token"]).status_code == 400
    # The used code is never taken as a token.
    assert mcp(oauth_client, got["code"]).status_code == 401


def test_a_token_for_another_audience_is_refused(
    oauth_client: Client, pats: dict[str, str]
) -> None:
    _, issued = grant(oauth_client, pats["owner"])
    # The same token presented to this service under another name (another resource).
    response = mcp(oauth_client, issued["access_token"], host="localhost")
    assert response.status_code == 401
    assert (
        'resource_metadata="http://localhost/.well-known/' in response.headers["www-authenticate"]
    )


def test_a_token_request_for_another_resource_is_refused(
    oauth_client: Client, pats: dict[str, str]
) -> None:
    # RFC 8707: a `resource` at the token endpoint must be the one the grant was made for.
    reg = register(oauth_client)
    verifier, got = signed_code(oauth_client, reg, pats["owner"])
    request = {
        "grant_type": "authorization_code",
        "code": got["code"],
        "redirect_uri": REDIRECT,
        "client_id": reg["client_id"],
        "client_secret": reg["client_secret"],
        "code_verifier": verifier,
    }
    for wrong in (f"{BASE}/api/v1", "http://evil.example/mcp"):
        refused = oauth_client.post("/oauth/token", data={**request, "resource": wrong})
        assert refused.status_code == 400
        assert refused.json() == {
            "error": "invalid_target",
            "error_description": f"The resource must be {RESOURCE}.",
        }
    # The code was not spent by the refusals; without a resource it is the grant's.
    issued = oauth_client.post("/oauth/token", data=request)
    assert issued.status_code == 200, issued.text
    refresh_request = {
        "grant_type": "refresh_token",
        "refresh_token": issued.json()["refresh_token"],
        "client_id": reg["client_id"],
        "client_secret": reg["client_secret"],
    }
    evil = oauth_client.post(
        "/oauth/token", data={**refresh_request, "resource": "http://evil.example/mcp"}
    )
    assert evil.status_code == 400 and evil.json()["error"] == "invalid_target"
    same = oauth_client.post("/oauth/token", data={**refresh_request, "resource": RESOURCE + "/"})
    assert same.status_code == 200, same.text


@pytest.mark.store_independent
def test_an_unknown_grant_type_is_unsupported(oauth_client: Client) -> None:
    reg = register(oauth_client)
    for grant_type in ("password", "client_credentials"):
        response = oauth_client.post(
            "/oauth/token",
            data={
                "grant_type": grant_type,
                "client_id": reg["client_id"],
                "client_secret": reg["client_secret"],
            },
        )
        assert response.status_code == 400
        assert response.json() == {
            "error": "unsupported_grant_type",
            "error_description": "The grant_type must be authorization_code or refresh_token.",
        }
    missing = oauth_client.post("/oauth/token", data={"client_id": reg["client_id"]})
    assert missing.status_code == 400
    assert missing.json()["error"] == "invalid_request"


@pytest.mark.store_independent
def test_a_token_request_refusal_is_one_sentence_that_repeats_nothing(
    oauth_client: Client,
) -> None:
    reg = register(oauth_client)
    who = {"client_id": reg["client_id"], "client_secret": reg["client_secret"]}
    code = {"grant_type": "authorization_code", **who}
    cases = [
        ({**code, "code_verifier": "v" * 43}, "The token request needs code."),
        ({**code, "code": "c"}, "The token request needs code_verifier."),
        (
            {**code, "code": "c", "code_verifier": "v" * 43, "redirect_uri": "<b>not-a-url</b>"},
            "The token request's redirect_uri is not valid: input should be a valid URL, "
            "relative URL without a base.",
        ),
        ({"grant_type": "refresh_token", **who}, "The token request needs refresh_token."),
    ]
    for form, description in cases:
        response = oauth_client.post("/oauth/token", data=form)
        assert response.status_code == 400
        assert response.json() == {"error": "invalid_request", "error_description": description}
        assert response.headers["cache-control"] == "no-store"
    # A client that does not authenticate is refused as that first (401), whatever else.
    stranger = oauth_client.post(
        "/oauth/token", data={**code, "client_secret": "not-the-secret", "code_verifier": "v"}
    )
    assert stranger.status_code == 401 and stranger.json()["error"] == "invalid_client"


def test_refresh_tokens_rotate(oauth_client: Client, pats: dict[str, str]) -> None:
    reg, first = grant(oauth_client, pats["owner"])
    second = refresh(oauth_client, reg, first["refresh_token"])
    assert second.status_code == 200, second.text
    second_tokens = second.json()
    assert second_tokens["refresh_token"] != first["refresh_token"]
    assert mcp(oauth_client, second_tokens["access_token"]).status_code == 200
    # The access token the refresh replaced has ended.
    assert mcp(oauth_client, first["access_token"]).status_code == 401
    # The old refresh token is refused; presented again, it ends the whole grant.
    reused = refresh(oauth_client, reg, first["refresh_token"])
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    assert mcp(oauth_client, second_tokens["access_token"]).status_code == 401
    assert refresh(oauth_client, reg, second_tokens["refresh_token"]).status_code == 400


def test_a_client_of_client_secret_basic_authenticates_by_the_header_alone(
    oauth_client: Client, pats: dict[str, str]
) -> None:
    # The metadata names client_secret_basic and registration grants it, but the token
    # endpoint answered 401 "Missing client_id" to a client giving its id and secret in the
    # Basic header alone, as RFC 6749 2.3.1 has it (the form need not repeat the id).
    reg = register(oauth_client, token_endpoint_auth_method="client_secret_basic")
    assert reg["token_endpoint_auth_method"] == "client_secret_basic"

    def basic(client_id: str, secret: str) -> dict[str, str]:
        pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode()}

    verifier, got = signed_code(oauth_client, reg, pats["owner"])
    form = {
        "grant_type": "authorization_code",
        "code": got["code"],
        "redirect_uri": REDIRECT,
        "code_verifier": verifier,
        "resource": RESOURCE,
    }
    wrong = oauth_client.post(
        "/oauth/token", data=form, headers=basic(reg["client_id"], "not-the-secret")
    )
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    issued = oauth_client.post(
        "/oauth/token", data=form, headers=basic(reg["client_id"], reg["client_secret"])
    )
    assert issued.status_code == 200, issued.text
    tokens_issued = issued.json()
    assert mcp(oauth_client, tokens_issued["access_token"]).status_code == 200
    again = {"grant_type": "refresh_token", "refresh_token": tokens_issued["refresh_token"]}
    refreshed = oauth_client.post(
        "/oauth/token", data=again, headers=basic(reg["client_id"], reg["client_secret"])
    )
    assert refreshed.status_code == 200, refreshed.text
    # An id in the form that is not the header's, or the secret in the form alone, is refused.
    other = register(oauth_client)
    mixed = oauth_client.post(
        "/oauth/token",
        data={
            **again,
            "refresh_token": refreshed.json()["refresh_token"],
            "client_id": other["client_id"],
        },
        headers=basic(reg["client_id"], reg["client_secret"]),
    )
    assert mixed.status_code == 401
    posted = refresh(oauth_client, reg, refreshed.json()["refresh_token"])
    assert posted.status_code == 401 and posted.json()["error"] == "invalid_client"


def test_a_refresh_token_belongs_to_its_client(oauth_client: Client, pats: dict[str, str]) -> None:
    _, issued = grant(oauth_client, pats["owner"])
    other = register(oauth_client)
    assert refresh(oauth_client, other, issued["refresh_token"]).status_code == 400


def test_tokens_end_when_the_personal_token_is_revoked(
    oauth_client: Client, pats: dict[str, str], engine: Engine
) -> None:
    reg, issued = grant(oauth_client, pats["owner"])
    _, untouched = grant(oauth_client, pats["other"])
    revoke_token(engine, pats["owner"])
    response = mcp(oauth_client, issued["access_token"])
    assert response.status_code == 401
    assert refresh(oauth_client, reg, issued["refresh_token"]).json()["error"] == "invalid_grant"
    assert mcp(oauth_client, untouched["access_token"]).status_code == 200


def test_tokens_end_when_the_personal_token_expires(
    oauth_client: Client, pats: dict[str, str], engine: Engine
) -> None:
    reg, issued = grant(oauth_client, pats["owner"])
    pat_hash = hashlib.sha256(pats["owner"].encode()).hexdigest()
    with engine.begin() as conn:
        conn.execute(
            update(tokens)
            .where(tokens.c.token_hash == pat_hash)
            .values(expires_at=utc_now() - timedelta(seconds=1))
        )
    assert mcp(oauth_client, issued["access_token"]).status_code == 401
    assert refresh(oauth_client, reg, issued["refresh_token"]).status_code == 400


def test_tokens_end_when_the_user_is_removed(
    oauth_client: Client, pats: dict[str, str], engine: Engine
) -> None:
    reg, issued = grant(oauth_client, pats["admin"])
    with engine.begin() as conn:
        conn.execute(update(users).where(users.c.name == "Grace").values(removed_at=utc_now()))
    assert mcp(oauth_client, issued["access_token"]).status_code == 401
    assert refresh(oauth_client, reg, issued["refresh_token"]).status_code == 400
    # A code signed for before the removal is not exchanged after it either.
    reg = register(oauth_client)
    verifier, challenge = pkce()
    with engine.begin() as conn:
        conn.execute(update(users).where(users.c.name == "Grace").values(removed_at=None))
    got = code_of(
        sign_in(
            oauth_client, authorize(oauth_client, reg, challenge).headers["location"], pats["admin"]
        )
    )
    with engine.begin() as conn:
        conn.execute(update(users).where(users.c.name == "Grace").values(removed_at=utc_now()))
    assert exchange(oauth_client, reg, got["code"], verifier).json()["error"] == "invalid_grant"


def test_no_token_is_issued_once_the_account_loses_api_access(
    oauth_client: Client, pats: dict[str, str], engine: Engine
) -> None:
    # The plan changed after the sign-in: /mcp answers the access token 403, and a refresh
    # (or a code signed for before) is refused rather than issuing tokens it would refuse.
    reg, issued = grant(oauth_client, pats["owner"])
    reg_later = register(oauth_client)
    verifier, challenge = pkce()
    location = authorize(oauth_client, reg_later, challenge).headers["location"]
    got = code_of(sign_in(oauth_client, location, pats["owner"]))
    with engine.begin() as conn:
        conn.execute(update(accounts).where(accounts.c.name == "Good").values(api_access=False))
    assert mcp(oauth_client, issued["access_token"]).status_code == 403
    refused = refresh(oauth_client, reg, issued["refresh_token"])
    assert refused.status_code == 400
    assert refused.json() == {
        "error": "invalid_grant",
        "error_description": "This account's plan does not include API access.",
    }
    assert exchange(oauth_client, reg_later, got["code"], verifier).json()["error"] == (
        "invalid_grant"
    )
    # Given back, the grant goes on: the refresh token was not spent by the refusal.
    with engine.begin() as conn:
        conn.execute(update(accounts).where(accounts.c.name == "Good").values(api_access=True))
    again = refresh(oauth_client, reg, issued["refresh_token"])
    assert again.status_code == 200, again.json()
    assert mcp(oauth_client, again.json()["access_token"]).status_code == 200


def test_an_expired_access_token_is_refused(
    oauth_client: Client, pats: dict[str, str], engine: Engine
) -> None:
    _, issued = grant(oauth_client, pats["owner"])
    with engine.begin() as conn:
        conn.execute(
            update(oauth_tokens)
            .where(oauth_tokens.c.kind == "access")
            .values(expires_at=utc_now() - timedelta(seconds=1))
        )
    response = mcp(oauth_client, issued["access_token"])
    assert response.status_code == 401


def test_codes_expire(oauth_client: Client, pats: dict[str, str], engine: Engine) -> None:
    reg = register(oauth_client)
    verifier, got = signed_code(oauth_client, reg, pats["owner"])
    with engine.begin() as conn:
        conn.execute(update(oauth_codes).values(expires_at=utc_now() - timedelta(seconds=1)))
    assert exchange(oauth_client, reg, got["code"], verifier).json()["error"] == "invalid_grant"


# --- bounds and the writer ----------------------------------------------------------------


def test_the_oauth_writer_writes_only_oauth_tables(db_url: str, pats: dict[str, str]) -> None:
    from sqlalchemy import text

    from airoi.oauth.writer import WriteOutsideOAuth, writer_engine

    writer = writer_engine(Settings(database_url=db_url))
    try:
        with writer.begin() as conn:
            assert conn.execute(select(tokens.c.token_hash)).first() is not None  # reads
            conn.execute(oauth_codes.delete())  # writes its own tables
        for statement in (
            update(tokens).values(revoked_at=None),
            tokens.delete(),
            text("DELETE FROM tokens"),
        ):
            with pytest.raises(WriteOutsideOAuth), writer.begin() as conn:
                conn.execute(statement)
    finally:
        writer.dispose()


def test_registered_clients_are_bounded(
    oauth_client: Client, engine: Engine, pats: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from airoi.oauth import clients as registered_clients

    monkeypatch.setattr(registered_clients, "MAX_CLIENTS", 2)
    granted, _ = grant(oauth_client, pats["owner"])
    flood = register(oauth_client)
    # At the bound a new client takes the place of the oldest never granted a code, so a
    # flood of registrations cannot lock a new assistant out.
    newcomer = register(oauth_client)
    with engine.connect() as conn:
        held = {row.client_id for row in conn.execute(select(oauth_clients.c.client_id))}
    assert held == {granted["client_id"], newcomer["client_id"]}
    assert flood["client_id"] not in held
    # Refused only when every client holds a grant.
    grant(oauth_client, pats["owner"])
    full = oauth_client.post("/oauth/register", json={"redirect_uris": [REDIRECT]})
    assert full.status_code == 400
    assert full.json()["error"] == "invalid_client_metadata"


def test_a_client_never_granted_is_dropped_after_an_hour(
    oauth_client: Client, engine: Engine
) -> None:
    old = register(oauth_client)
    recent = register(oauth_client)
    with engine.begin() as conn:
        conn.execute(
            update(oauth_clients)
            .where(oauth_clients.c.client_id == old["client_id"])
            .values(created_at=utc_now() - timedelta(minutes=61))
        )
    newest = register(oauth_client)
    with engine.connect() as conn:
        held = {row.client_id for row in conn.execute(select(oauth_clients.c.client_id))}
    assert held == {recent["client_id"], newest["client_id"]}


def test_unauthenticated_oauth_posts_are_limited_per_address(db_url: str) -> None:
    app = create_app(
        Settings(database_url=db_url, oauth_rate_limit="3/minute", allowed_hosts=("testserver",))
    )
    try:
        with TestClient(app, base_url=BASE) as client:
            for _ in range(2):
                register(client)
            # The token endpoint and the sign-in form share the address's budget.
            assert client.post("/oauth/token", data={"grant_type": "x"}).status_code == 400
            over = [
                client.post("/oauth/register", json={"redirect_uris": [REDIRECT]}),
                client.post("/oauth/token", data={"grant_type": "refresh_token"}),
            ]
            for response in over:
                assert response.status_code == 429
                assert 1 <= int(response.headers["retry-after"]) <= 60
                body = response.json()
                assert body["error"] == "temporarily_unavailable"
                assert body["error_description"].startswith("Too many requests from this address")
            page = client.post("/oauth/sign-in", data={}, headers={"Origin": BASE})
            assert page.status_code == 429
            assert "Too many requests" in page.text and page.headers["retry-after"]
            # Reading is not counted: metadata and the sign-in page's GET still answer.
            assert client.get("/.well-known/oauth-authorization-server").status_code == 200
            assert client.get("/oauth/sign-in").status_code == 400

        # Another address has a budget of its own (the ASGI scope's client, as uvicorn sets
        # it from the socket or a trusted proxy's X-Forwarded-For).
        async def from_another_address() -> int:
            transport = httpx.ASGITransport(app=app, client=("203.0.113.9", 4000))
            async with httpx.AsyncClient(transport=transport, base_url=BASE) as other:
                body = {"redirect_uris": [REDIRECT]}
                return (await other.post("/oauth/register", json=body)).status_code

        assert anyio.run(from_another_address) == 201
    finally:
        app.state.engine.dispose()


def test_workers_share_the_oauth_budget_through_redis(db_url: str, redis_url: str) -> None:
    # Two app instances stand for two workers; AIROI_REDIS_URL joins their counts. A random
    # address: Redis outlives test runs.
    settings = Settings(
        database_url=db_url,
        oauth_rate_limit="2/hour",
        redis_url=redis_url,
        allowed_hosts=("testserver",),
    )
    apps = [create_app(settings), create_app(settings)]
    address = f"2001:db8::{secrets.randbelow(65536):x}:{secrets.randbelow(65536):x}"

    async def register_through(app: Litestar) -> int:
        transport = httpx.ASGITransport(app=app, client=(address, 4000))
        async with httpx.AsyncClient(transport=transport, base_url=BASE) as client:
            body = {"redirect_uris": [REDIRECT]}
            return (await client.post("/oauth/register", json=body)).status_code

    try:
        statuses = [anyio.run(register_through, app) for app in (*apps, apps[0], apps[1])]
        assert statuses == [201, 201, 429, 429]
        # The counter is keyed by the address's hash, never the address.
        import redis

        keys = [key.decode() for key in redis.Redis.from_url(redis_url).keys("*oauth-address*")]
        assert any(hashlib.sha256(address.encode()).hexdigest() in key for key in keys)
        assert not any(address in key for key in keys)
    finally:
        for app in apps:
            app.state.engine.dispose()


def test_live_grants_per_personal_token_are_bounded(
    oauth_client: Client, pats: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from airoi.oauth import grants as oauth_grants

    monkeypatch.setattr(oauth_grants, "MAX_GRANTS_PER_TOKEN", 2)
    grants = [grant(oauth_client, pats["owner"])[1] for _ in range(3)]
    # The oldest grant ended when the third began; the two latest read.
    assert mcp(oauth_client, grants[0]["access_token"]).status_code == 401
    assert [mcp(oauth_client, g["access_token"]).status_code for g in grants[1:]] == [200, 200]


@pytest.mark.store_independent
def test_metadata_answers_head(oauth_client: Client) -> None:
    response = oauth_client.head("/.well-known/oauth-authorization-server")
    assert response.status_code == 200
    assert response.content == b""


def test_a_grant_keeps_two_refresh_tokens_however_often_it_refreshes(
    oauth_client: Client, pats: dict[str, str], engine: Engine
) -> None:
    reg, issued = grant(oauth_client, pats["owner"])
    for _ in range(4):
        issued = refresh(oauth_client, reg, issued["refresh_token"]).json()
    with engine.connect() as conn:
        kinds = sorted(row.kind for row in conn.execute(select(oauth_tokens)))
    # The live access and refresh tokens; the last refresh token used, the code until it
    # would have expired and the sign-in request until it expires (each to tell a replay).
    assert kinds == ["access", "code", "refresh", "refresh", "sign-in"]
    assert mcp(oauth_client, issued["access_token"]).status_code == 200


@pytest.mark.store_independent
def test_a_test_clients_host_is_served_only_when_the_settings_name_it(db_url: str) -> None:
    # The served host list comes from settings alone: `testserver` (a test client's name) is
    # no host of the service's unless AIROI_ALLOWED_HOSTS names it.
    app = create_app(Settings(database_url=db_url))
    try:
        with TestClient(app, base_url=BASE) as client:
            for path in (
                "/.well-known/oauth-authorization-server",
                "/.well-known/oauth-protected-resource",
                "/oauth/authorize",
            ):
                assert client.get(path).status_code == 404, path
    finally:
        app.state.engine.dispose()
