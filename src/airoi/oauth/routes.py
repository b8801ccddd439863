"""The OAuth routes, each an ASGI route of the app, public (no bearer token asked).

| Route | Methods | What |
| --- | --- | --- |
| /.well-known/oauth-protected-resource[/mcp] | GET | RFC 9728 metadata of /mcp |
| /.well-known/oauth-authorization-server | GET | RFC 8414 metadata |
| /oauth/register | POST | RFC 7591 dynamic client registration (SDK handler) |
| /oauth/authorize | GET | authorization request, checked by the SDK, then to the sign-in page |
| /oauth/sign-in | GET, POST | the page where a person pastes a personal access token |
| /oauth/token | POST | code (PKCE S256) and refresh token exchange (SDK handler) |

SEMANTICS R30 holds for them as for every route: another method is 405 with Allow, before
anything else. Bodies are bounded (the SDK's limit middleware), and nothing a client sends
as a secret reaches a URL or a log line.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from litestar import asgi
from litestar.handlers import ASGIRouteHandler
from litestar.types import Receive, Scope, Send
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler, token_request_adapter
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import construct_redirect_uri
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.auth import (
    InvalidRedirectUriError,
    OAuthClientInformationFull,
    OAuthClientMetadata,
)
from pydantic import AnyUrl, ValidationError
from sqlalchemy import Engine
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import request_response

from airoi.errors import ApiError
from airoi.oauth.clients import SCOPE
from airoi.oauth.codes import MAX_STATE_LENGTH
from airoi.oauth.grants import requested_resources
from airoi.oauth.provider import OAuthProvider
from airoi.oauth.signin import SignInPage, notice
from airoi.oauth.urls import (
    AUTHORIZATION_SERVER_PATH,
    MCP_PATH,
    PROTECTED_RESOURCE_PATH,
    base_url,
    resource_of,
)
from airoi.oauth.writer import digest
from airoi.observability import request_context
from airoi.ratelimit import RateLimiter
from airoi.settings import Settings

AUTHORIZE_PATH = "/oauth/authorize"
TOKEN_PATH = "/oauth/token"  # noqa: S105 - a path
REGISTER_PATH = "/oauth/register"
SIGN_IN_PATH = "/oauth/sign-in"
# The bodies these routes take: a registration is a few hundred bytes of JSON, a token
# request or the sign-in form less than that.
REGISTER_MAX_BODY = 16 * 1024
FORM_MAX_BODY = 8 * 1024
# airoi.app's opt keys: no token asked; the methods an ASGI route serves (R30).
PUBLIC_OPT = "public"
SERVED_METHODS_OPT = "served_methods"

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]
_BASE: ContextVar[str] = ContextVar("airoi_oauth_base")


def current_base() -> str:
    return _BASE.get()


def basic_credentials(request: Request) -> tuple[str, str] | None:
    """The client id and secret of the request's `Authorization: Basic` header (RFC 6749
    2.3.1: each form-encoded, joined by a colon, in base64); None when it has no such header.
    A malformed one is an `AuthenticationError`."""
    header = request.headers.get("Authorization", "")
    if not header.startswith("Basic "):
        return None
    try:
        decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise AuthenticationError("Invalid Basic authentication") from None
    client_id, colon, secret = decoded.partition(":")
    if not colon or not client_id:
        raise AuthenticationError("Invalid Basic authentication")
    return unquote(client_id), unquote(secret)


class HashedSecretAuthenticator(ClientAuthenticator):
    """The SDK's client authentication at the token endpoint, against the hash of the client
    secret that is all the store keeps (RegisteredClient.client_secret holds it). A client of
    `client_secret_basic` may name itself in the Basic header alone (RFC 6749 2.3.1)."""

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        form = await request.form()
        basic = basic_credentials(request)
        client_id = form.get("client_id")
        if basic is not None:
            if client_id and client_id != basic[0]:
                raise AuthenticationError("Invalid Basic authentication")
            client_id = basic[0]
        if not isinstance(client_id, str) or not client_id:
            raise AuthenticationError("Missing client_id")
        client = await self.provider.get_client(client_id)
        if client is None:
            raise AuthenticationError("Invalid client_id")
        given: str | None = None
        method = client.token_endpoint_auth_method
        if method == "client_secret_basic":
            if basic is None:
                raise AuthenticationError("Missing Basic authentication")
            given = basic[1]
        elif method == "client_secret_post":
            posted = form.get("client_secret")
            given = posted if isinstance(posted, str) else None
        elif method != "none":
            raise AuthenticationError("Unsupported client authentication method")
        if method != "none":
            if not client.client_secret or not given:
                raise AuthenticationError("Client secret is required")
            if not hmac.compare_digest(client.client_secret, digest(given)):
                raise AuthenticationError("Invalid client_secret")
        return client


GRANT_TYPES = ("authorization_code", "refresh_token")
TOKEN_FORM = "The token request must be form fields of its grant (RFC 6749)."  # noqa: S105


class CheckedTokenHandler(TokenHandler):
    """The SDK's token endpoint, with a grant type it does not serve refused as RFC 6749
    says (not as a validation error), a request missing a field or holding a malformed one
    refused in one sentence (the SDK's is pydantic's text, one line per fault), and the
    request's `resource` parameters handed to the store, which refuses one that is not the
    grant's (RFC 8707, `invalid_target`)."""

    async def handle(self, request: Request) -> Response:
        form = await request.form()  # kept by the request for the SDK's own reading
        if not form.get("client_id"):
            # A client authenticating by the Basic header need not repeat its id in the form
            # (RFC 6749 2.3.1), where the SDK's models require it: the form the request keeps
            # gains it. A malformed header is the authenticator's to refuse.
            try:
                basic = basic_credentials(request)
            except AuthenticationError:
                basic = None
            if basic is not None:
                form = FormData([*form.multi_items(), ("client_id", basic[0])])
                request._form = form  # the parsed form Starlette keeps for every reader
        grant_type = form.get("grant_type")
        if not grant_type:
            return _token_error("invalid_request", "The grant_type is required.")
        if grant_type not in GRANT_TYPES:
            return _token_error(
                "unsupported_grant_type",
                "The grant_type must be authorization_code or refresh_token.",
            )
        try:
            token_request_adapter.validate_python(dict(form))
        except ValidationError as error:
            try:  # a client that does not authenticate gets the SDK's 401 first, as before
                await self.client_authenticator.authenticate_request(request)
            except AuthenticationError:
                return await super().handle(request)  # type: ignore[no-any-return]
            # The first location part is the grant type (the union's tag), not a field.
            sentence = refusal(error, "The token request", whole=TOKEN_FORM, skip=1)
            return _token_error("invalid_request", sentence)
        resources = tuple(value for value in form.getlist("resource") if isinstance(value, str))
        reset = requested_resources.set(resources)
        try:
            return await super().handle(request)  # type: ignore[no-any-return]
        finally:
            requested_resources.reset(reset)


def _token_error(error: str, description: str) -> Response:
    return _json({"error": error, "error_description": description}, status=400, Pragma="no-cache")


# pydantic errors whose message names only what was expected (never the value given).
_PLAIN_ERRORS = frozenset(
    {
        "literal_error",
        "string_type",
        "string_too_long",
        "string_too_short",
        "list_type",
        "int_type",
        "int_parsing",
        "bool_type",
        "dict_type",
        "url_type",
        "url_parsing",
        "url_scheme",
        "url_too_long",
        "too_long",
        "too_short",
    }
)


def refusal(error: ValidationError, subject: str, *, whole: str, skip: int = 0) -> str:
    """One sentence on the first fault `error` found in what `subject` names, never
    repeating what was sent; `whole` when the body is not an object at all. `skip`: leading
    parts of a fault's location that name no field."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"][skip:])
    kind = first["type"]
    if not where or kind in ("json_invalid", "json_type", "model_type", "model_attributes_type"):
        return whole
    if kind == "missing":
        return f"{subject} needs {where}."
    if kind in _PLAIN_ERRORS:
        message = str(first["msg"]).rstrip(".")
        return f"{subject}'s {where} is not valid: {message[:1].lower()}{message[1:]}."
    return f"{subject}'s {where} is not valid."


def metadata_refusal(error: ValidationError) -> str:
    """A registration's refusal (RFC 7591 client metadata)."""
    return refusal(
        error,
        "The client metadata",
        whole="The body must be a JSON object of client metadata (RFC 7591).",
    )


class CheckedRegistrationHandler(RegistrationHandler):
    """The SDK's registration, with a refusal of the metadata in one sentence (the SDK's
    is pydantic's text, one line per fault, some repeating what was sent)."""

    async def handle(self, request: Request) -> Response:
        try:
            OAuthClientMetadata.model_validate_json(await request.body())
        except ValidationError as error:
            return _json(
                {"error": "invalid_client_metadata", "error_description": metadata_refusal(error)},
                status=400,
            )
        answer = await super().handle(request)
        # The reply holds the client's secret: no cache may keep it (RFC 7591, 3.2.1).
        answer.headers["Cache-Control"] = "no-store"
        answer.headers["Pragma"] = "no-cache"
        return answer


class CheckedAuthorizationHandler(AuthorizationHandler):
    """The SDK's authorization endpoint, after checks of its own: a `state` longer than
    MAX_STATE_LENGTH is refused without being sent back, a client_id not registered is
    refused without being repeated (the SDK's message quotes it), and `code_challenge_method`
    must be given (S256; the SDK takes it as S256 when it is missing)."""

    async def handle(self, request: Request) -> Response:
        params = request.query_params
        state = params.get("state")
        if state is not None and len(state) > MAX_STATE_LENGTH:
            # Not redirected: the redirect would carry the state back.
            return _json(
                {
                    "error": "invalid_request",
                    "error_description": f"The state is longer than {MAX_STATE_LENGTH} characters.",
                },
                status=400,
            )
        client_id = params.get("client_id")
        if client_id and await self.provider.get_client(client_id) is None:
            return _json(
                {
                    "error": "invalid_request",
                    "error_description": "The client_id is not one registered here.",
                },
                status=400,
            )
        if not params.get("code_challenge_method"):
            return await self._refuse(
                params,
                "invalid_request",
                "The code_challenge_method is required and must be S256 (PKCE).",
            )
        return with_issuer(await super().handle(request), current_base())

    async def _refuse(self, params: Any, error: str, description: str) -> Response:
        """The error at the client's redirect URI when the request names a registered client
        and one of its redirect URIs, as the SDK answers; else 400 here."""
        client_id = params.get("client_id")
        client = await self.provider.get_client(client_id) if client_id else None
        redirect: AnyUrl | None = None
        if client is not None and params.get("redirect_uri"):
            try:
                redirect = client.validate_redirect_uri(AnyUrl(params["redirect_uri"]))
            except (ValidationError, InvalidRedirectUriError):
                redirect = None
        if redirect is None:
            return _json({"error": error, "error_description": description}, status=400)
        url = construct_redirect_uri(
            str(redirect),
            error=error,
            error_description=description,
            state=params.get("state"),
            iss=current_base(),
        )
        return RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})


def with_issuer(answer: Response, issuer: str) -> Response:
    """An error sent back to the client's redirect URI names the issuer, as every
    authorization response must where the metadata says so (RFC 9207; the SDK's own leave it
    out): `iss` is added to a redirect that carries `error` and no `iss`."""
    location = answer.headers.get("location")
    if not 300 <= answer.status_code < 400 or location is None:
        return answer
    parts = urlsplit(location)
    query = parse_qsl(parts.query, keep_blank_values=True)
    names = {name for name, _ in query}
    if "error" in names and "iss" not in names:
        query.append(("iss", issuer))
        answer.headers["location"] = urlunsplit(parts._replace(query=urlencode(query)))
    return answer


def bounded(app: Any, max_body: int) -> Any:
    """`app` taking bodies of at most `max_body` bytes: a larger declared length is refused
    413 with SPEC 7's body; a chunked body is cut by the SDK's limit as it arrives."""
    limited = RequestBodyLimitMiddleware(app, max_body)

    async def guard(scope: Any, receive: Any, send: Any) -> None:
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > max_body:
                raise ApiError(413, f"The request body is larger than {max_body} bytes.")
        await limited(scope, receive, send)

    return guard


def _json(
    body: dict[str, Any], cache: str = "no-store", status: int = 200, **headers: str
) -> Response:
    return Response(
        json.dumps(body, separators=(",", ":")),
        status_code=status,
        media_type="application/json",
        headers={"Cache-Control": cache, **headers},
    )


def address_key(scope: Any) -> str:
    """The rate limit's key for the request's client address (its hash: an address is a
    person's, and not for a counter store to keep). Behind a proxy it is the address uvicorn
    takes from X-Forwarded-For when the proxy is one of FORWARDED_ALLOW_IPS."""
    client = scope.get("client")
    host = str(client[0]) if client else "-"
    return "oauth-address:" + hashlib.sha256(host.encode("utf-8")).hexdigest()


def _request_id_of(scope: Any) -> str | None:
    context = request_context(scope)
    return context.request_id if context else None


def per_address(app: Any, limiter: RateLimiter, *, page: bool = False) -> Any:
    """`app` counted against the client address's budget (AIROI_OAUTH_RATE_LIMIT) before it
    reads anything; over it, 429 with Retry-After: an OAuth error (JSON), or for the sign-in
    page (`page`, a person's browser) a notice. GET of the page is not counted."""

    async def guard(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("method") in ("GET", "HEAD"):
            await app(scope, receive, send)
            return
        standing = await limiter.hit(
            address_key(scope), where=scope.get("path", ""), request_id=_request_id_of(scope)
        )
        if standing.allowed:
            await app(scope, receive, send)
            return
        wait = standing.seconds_to_reset()
        message = f"Too many requests from this address; try again in {wait} seconds."
        refusal: Response
        if page:
            refusal = notice(429, message)
            refusal.headers["Retry-After"] = str(wait)
        else:
            refusal = _json(
                {"error": "temporarily_unavailable", "error_description": message},
                status=429,
                **{"Retry-After": str(wait)},
            )
        await refusal(scope, receive, send)

    return guard


def protected_resource_metadata(base: str) -> dict[str, Any]:
    return {
        "resource": resource_of(base),
        "authorization_servers": [base],
        "scopes_supported": [SCOPE],
        "bearer_methods_supported": ["header"],
        "resource_name": "airoi",
    }


def authorization_server_metadata(base: str) -> dict[str, Any]:
    return {
        "issuer": base,
        "authorization_endpoint": base + AUTHORIZE_PATH,
        "token_endpoint": base + TOKEN_PATH,
        "registration_endpoint": base + REGISTER_PATH,
        "scopes_supported": [SCOPE],
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": [
            "client_secret_post",
            "client_secret_basic",
            "none",
        ],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
    }


class OAuthRoutes:
    """The OAuth route handlers of one app, and the provider behind them."""

    def __init__(self, engine: Engine, settings: Settings) -> None:
        self.settings = settings
        self.provider = OAuthProvider(settings, lambda: resource_of(current_base()))
        self.page = SignInPage(
            engine, settings, self.provider.clients, self.provider.codes, current_base
        )
        self.provider.sign_in_url = self.page.url_for
        registration = CheckedRegistrationHandler(
            self.provider,
            ClientRegistrationOptions(enabled=True, valid_scopes=None, default_scopes=[SCOPE]),
        )
        token = CheckedTokenHandler(self.provider, HashedSecretAuthenticator(self.provider))
        # Registration, the token endpoint and the sign-in form take no token and write: a
        # budget per client address, so that one caller cannot fill the registered clients
        # or wear the store down (the bound on clients, airoi.oauth.clients, is the backstop).
        self.limiter = RateLimiter(settings.oauth_rate_limit, settings.redis_url)
        authorize = CheckedAuthorizationHandler(self.provider)
        self.route_handlers: list[ASGIRouteHandler] = [
            self._route(PROTECTED_RESOURCE_PATH, ("GET",), self._protected_resource),
            self._route(PROTECTED_RESOURCE_PATH + MCP_PATH, ("GET",), self._protected_resource),
            self._route(AUTHORIZATION_SERVER_PATH, ("GET",), self._authorization_server),
            self._route(
                REGISTER_PATH,
                ("POST",),
                per_address(
                    bounded(request_response(registration.handle), REGISTER_MAX_BODY),
                    self.limiter,
                ),
            ),
            self._route(AUTHORIZE_PATH, ("GET",), request_response(authorize.handle)),
            self._route(
                TOKEN_PATH,
                ("POST",),
                per_address(bounded(request_response(token.handle), FORM_MAX_BODY), self.limiter),
            ),
            self._route(
                SIGN_IN_PATH,
                ("GET", "POST"),
                per_address(
                    bounded(request_response(self.page.handle), FORM_MAX_BODY),
                    self.limiter,
                    page=True,
                ),
            ),
        ]

    async def _protected_resource(self, scope: Any, receive: Any, send: Any) -> None:
        await _json(protected_resource_metadata(current_base()))(scope, receive, send)

    async def _authorization_server(self, scope: Any, receive: Any, send: Any) -> None:
        await _json(authorization_server_metadata(current_base()))(scope, receive, send)

    def _route(self, path: str, methods: tuple[str, ...], app: Any) -> ASGIRouteHandler:
        settings = self.settings

        @asgi(
            path,
            copy_scope=True,
            name=f"oauth:{path}",
            opt={PUBLIC_OPT: True, SERVED_METHODS_OPT: methods},
        )
        async def serve(scope: Scope, receive: Receive, send: Send) -> None:
            base = base_url(scope, settings)
            if base is None:
                raise ApiError(404, "No such route.")
            # A route is matched with or without a trailing slash; the SDK's handlers read
            # nothing of the path.
            reset = _BASE.set(base)
            try:
                await app(scope, receive, send)
            finally:
                _BASE.reset(reset)

        return serve

    def close(self) -> None:
        self.provider.close()
