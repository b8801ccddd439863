"""The sign-in page: where a person lets an assistant act as them (SPEC 5.2).

The authorization endpoint (the SDK's handler) checks the client, its redirect URI and the
PKCE challenge, then sends the browser here with the request in the query, signed with a key
made from the store's secret (or AIROI_SECRET_KEY) and good for REQUEST_SECONDS. The page is
one form: the request in hidden fields, an `<input type="password">` for a personal access
token issued under MCP Access, Allow and Deny. Its POST answers 303 to the client's redirect
URI, with a code and the state (Allow with a good token) or `error=access_denied` (Deny).

Against a forged POST: a random nonce in a SameSite=Strict, HttpOnly cookie set with the
page, and a hidden field that is the HMAC of that nonce and the request's signature; a POST
whose Origin is not this service's is refused as well. A signed request issues one code: the
store keeps its signature's hash until it expires (airoi.oauth.codes), so the form posted
again, or the page reloaded and posted, is refused. The page runs no script, and its
Content-Security-Policy allows none; the token travels only in the POST's body and is never
logged, put in a URL or shown again.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import json
import secrets
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

from anyio import to_thread
from mcp.server.auth.provider import AuthorizationParams, construct_redirect_uri
from mcp.shared.auth import OAuthClientInformationFull
from sqlalchemy import Engine
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from airoi.auth import Principal, authenticate
from airoi.db.secret import read_store_secret, signing_secret
from airoi.errors import ApiError
from airoi.oauth.clients import RegisteredClients
from airoi.oauth.codes import AuthorizationCodes, RequestUsed
from airoi.oauth.urls import resource_of
from airoi.oauth.writer import digest
from airoi.settings import Settings

REQUEST_SECONDS = 600
COOKIE = "airoi_oauth_nonce"
FIELDS = ("client_id", "redirect_uri", "code_challenge", "state", "resource", "expires")
MAX_TOKEN_LENGTH = 512
USED = "This sign-in request has been used. Start again from your assistant."
EXPIRED = "This sign-in request is not valid or has expired. Start again from your assistant."


class SignInPage:
    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        clients: RegisteredClients,
        codes: AuthorizationCodes,
        base: Callable[[], str],
    ) -> None:
        self._engine = engine
        self._clients = clients
        self._codes = codes
        self._base = base
        self._given = settings.secret_key
        self._key: bytes | None = None

    @staticmethod
    def _derive(secret: bytes) -> bytes:
        # A key of the sign-in page's own: the secret also signs cursors.
        return hmac.new(secret, b"airoi oauth sign-in v1", hashlib.sha256).digest()

    async def _ready(self) -> None:
        """The signing key read (once, in a worker thread: the store may be slow to answer)."""
        if self._key is None:
            await to_thread.run_sync(self._signing_key)

    def _signing_key(self) -> bytes:
        if self._key is None:
            with self._engine.connect() as conn:
                secret = signing_secret(read_store_secret(conn), self._given)
            if secret is None:
                raise ApiError(503, "The service is not ready to sign in; try again later.")
            self._key = self._derive(secret)
        return self._key

    def _mac(self, *parts: str) -> str:
        message = json.dumps(parts, separators=(",", ":")).encode("utf-8")
        return hmac.new(self._signing_key(), message, hashlib.sha256).hexdigest()

    # --- the request, signed -----------------------------------------------------------

    async def url_for(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """The sign-in page for a request the authorization endpoint found good."""
        await self._ready()
        base = self._base()
        fields = {
            "client_id": client.client_id,
            "redirect_uri": str(params.redirect_uri),
            "code_challenge": params.code_challenge,
            "state": params.state or "",
            "resource": resource_of(base),
            "expires": str(int(time.time()) + REQUEST_SECONDS),
        }
        fields["signature"] = self._mac("request", *(fields[name] for name in FIELDS))
        return f"{base}/oauth/sign-in?{urlencode(fields)}"

    def _request_of(self, given: Mapping[str, Any]) -> dict[str, str] | None:
        """The signed request in `given` (a query or a form), or None when it is not one this
        service signed or it has expired."""
        fields: dict[str, str] = {}
        for name in (*FIELDS, "signature"):
            value = given.get(name)
            if not isinstance(value, str) or len(value) > 4000:
                return None
            fields[name] = value
        expected = self._mac("request", *(fields[name] for name in FIELDS))
        if not hmac.compare_digest(expected, fields["signature"]):
            return None
        if not fields["expires"].isdigit() or int(fields["expires"]) < time.time():
            return None
        return fields

    def _csrf(self, nonce: str, signature: str) -> str:
        return self._mac("csrf", nonce, signature)

    # --- the page ----------------------------------------------------------------------

    async def handle(self, request: Request) -> Response:
        await self._ready()
        if request.method == "GET":
            fields = self._request_of(request.query_params)
            if fields is None:
                return notice(400, EXPIRED)
            nonce = secrets.token_urlsafe(32)
            response = await self._form(fields, nonce, message=None, status=200)
            response.set_cookie(
                COOKIE,
                nonce,
                max_age=REQUEST_SECONDS,
                path="/oauth/sign-in",
                secure=self._base().startswith("https:"),
                httponly=True,
                samesite="strict",
            )
            return response
        return await self._submitted(request)

    async def _submitted(self, request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() != self._base():
            return notice(403, "This form can only be sent from its own page.")
        form = await request.form()
        fields = self._request_of(form)
        if fields is None:
            return notice(400, EXPIRED)
        nonce = request.cookies.get(COOKIE, "")
        given = form.get("csrf")
        if (
            not nonce
            or not isinstance(given, str)
            or not hmac.compare_digest(self._csrf(nonce, fields["signature"]), given)
        ):
            return notice(403, "This form has expired. Go back, reload the page and try again.")
        state = fields["state"] or None
        if form.get("action") != "allow":
            return _redirect(
                construct_redirect_uri(
                    fields["redirect_uri"], error="access_denied", state=state, iss=self._base()
                )
            )
        token = form.get("token")
        token = token.strip() if isinstance(token, str) else ""
        if token[:7].lower() == "bearer ":  # pasted as the header's value
            token = token[7:].strip()
        if not token or len(token) > MAX_TOKEN_LENGTH:
            return await self._form(fields, nonce, "Paste a personal access token.", 400)
        try:
            await to_thread.run_sync(self._check, token)
        except ApiError as refusal:
            # The page asks again: 400 for a token that is not good (a 401 would need a
            # WWW-Authenticate challenge, and the page is no bearer resource), 403 as the API.
            status = 403 if refusal.status == 403 else 400
            return await self._form(fields, nonce, refusal.message, status)
        try:
            code = await to_thread.run_sync(
                self._codes.issue,
                fields["client_id"],
                fields["redirect_uri"],
                fields["code_challenge"],
                fields["resource"],
                digest(token),
                # One code a signed request: the same form posted again (or the page reloaded
                # and posted) is refused.
                digest("sign-in request:" + fields["signature"]),
                datetime.fromtimestamp(int(fields["expires"]), UTC).replace(tzinfo=None),
            )
        except LookupError:
            return notice(400, "The assistant is no longer registered. Start again from it.")
        except RequestUsed:
            return notice(400, USED)
        response = _redirect(
            construct_redirect_uri(fields["redirect_uri"], code=code, state=state, iss=self._base())
        )
        response.delete_cookie(COOKIE, path="/oauth/sign-in")
        return response

    def _check(self, token: str) -> Principal:
        """The token's principal, as the API would take it (401 and 403 as ApiError)."""
        with self._engine.connect() as conn:
            return authenticate(conn, f"Bearer {token}")

    async def _form(
        self, fields: dict[str, str], nonce: str, message: str | None, status: int
    ) -> Response:
        client = await self._clients.get(fields["client_id"])
        name = (client.client_name if client else None) or "An assistant"
        redirect = urlsplit(fields["redirect_uri"])
        hidden = "".join(
            f'<input type="hidden" name="{name_}" value="{html.escape(fields[name_])}">'
            for name_ in (*FIELDS, "signature")
        )
        csrf = html.escape(self._csrf(nonce, fields["signature"]))
        notice = f'<p role="alert"><strong>{html.escape(message)}</strong></p>' if message else ""
        body = (
            '<!doctype html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<title>Allow an assistant - airoi</title></head><body><main>"
            f"<h1>Allow {html.escape(name[:200])} to read this account</h1>"
            f"<p>It will read with your personal access token, as you, and send you back to "
            f"<strong>{html.escape(redirect.netloc)}</strong>. Every tool only reads.</p>"
            "<p>Paste a personal access token issued under MCP Access "
            "(Organization Settings). It is not shown to the assistant.</p>"
            f"{notice}"
            '<form method="post" action="/oauth/sign-in">'
            f"{hidden}"
            f'<input type="hidden" name="csrf" value="{csrf}">'
            '<label for="token">Personal access token</label> '
            '<input type="password" id="token" name="token" autocomplete="off" '
            f'maxlength="{MAX_TOKEN_LENGTH}" required> '
            '<button type="submit" name="action" value="allow">Allow</button> '
            '<button type="submit" name="action" value="deny" formnovalidate>Deny</button>'
            "</form></main></body></html>"
        )
        origin = f"{redirect.scheme}://{redirect.netloc}"
        return HTMLResponse(body, status_code=status, headers=_page_headers(origin))


def _page_headers(redirect_origin: str | None = None) -> dict[str, str]:
    # No script, style or frame; the form posts here, whose answer redirects to the client
    # (form-action covers the redirect too).
    form_action = "'self'" + (f" {redirect_origin}" if redirect_origin else "")
    return {
        "Content-Security-Policy": (
            f"default-src 'none'; form-action {form_action}; frame-ancestors 'none'; "
            "base-uri 'none'"
        ),
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        # Not no-referrer: a page under that policy posts its forms with `Origin: null`
        # (Fetch), which `_submitted` refuses as another site's. same-origin names this
        # page's origin to itself alone; the redirect to the client carries no Referer.
        "Referrer-Policy": "same-origin",
        "Cache-Control": "no-store",
    }


def notice(status: int, message: str) -> Response:
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>airoi</title></head><body><main>"
        f"<p>{html.escape(message)}</p></main></body></html>"
    )
    return HTMLResponse(body, status_code=status, headers=_page_headers())


def _redirect(url: str) -> Response:
    return RedirectResponse(url, status_code=303, headers=_page_headers())
