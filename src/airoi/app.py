"""create_app(settings): the HTTP API at /api/v1, its error handling, auth and strict parameters.

The order of checks is SEMANTICS R30: routing (404, 405) first, then the token
(401 before 403, in the authentication middleware), then parameters (400), then
existence (404).
"""

import functools
import gc
import logging
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Union, cast

import msgspec
from anyio import to_thread
from litestar import Litestar, Request, Response, Router, get
from litestar.datastructures import State
from litestar.enums import ScopeType
from litestar.exceptions import HTTPException, ValidationException
from litestar.handlers import HTTPRouteHandler
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme
from litestar.params import ParameterKwarg
from litestar.types import ASGIApp, Receive, Scope, Send
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from airoi import __version__
from airoi.api import (
    breakdown,
    budgets,
    business_cases,
    cost_entries,
    decisions,
    deletions,
    initiatives,
    integrations,
    metrics,
    observations,
    roi,
    value_entries,
)
from airoi.api.common import (
    ERROR_RESPONSES,
    SUCCESS_HEADERS,
    ApiOperation,
    Int64SchemaPlugin,
    documented_headers,
)
from airoi.api.described import described
from airoi.apidocs import ApiDocsPage, api_index, docs_router
from airoi.auth import (
    INVALID_TOKEN,
    Principal,
    authenticate,
    authenticate_kept,
    authorization_of,
    bearer_secret,
)
from airoi.conditional import conditional_get
from airoi.cors import allow_cross_origin
from airoi.db import kept_connections
from airoi.db.engine import make_engine, missing_sqlite_file, no_store_at, sqlite_text_encoding
from airoi.db.migrate import require_current_schema
from airoi.db.secret import require_store_secret
from airoi.errors import ApiError, ErrorBody, ErrorDetail
from airoi.failures import (
    FAILED_MESSAGE,
    database_failure,
    failure_class,
    log_failure,
    redact_library_logs,
)
from airoi.health import healthz, readyz
from airoi.listing import Cursors
from airoi.logs import configure_logging
from airoi.oauth import OAuthRoutes, base_url, challenge, resource_of
from airoi.observability import (
    Metrics,
    RequestContext,
    asked,
    held_context,
    metrics_endpoint,
    observe,
    request_id_of,
)
from airoi.ratelimit import RateLimiter, person_key
from airoi.response_headers import protective_headers
from airoi.settings import Settings
from airoi.store_access import StoreGate, size_worker_threads
from airoi.token_cache import TokenCache
from airoi.tools import mcp_endpoint  # SPEC 4.B: the tool endpoint at /mcp
from airoi.tools.protocol_errors import JsonRpcErrorBodies
from airoi.tools.server import MCP_PATH
from airoi.web import ROUTE_HANDLERS as DASHBOARD_ROUTES  # the dashboard at /

log = logging.getLogger("airoi")
API_PREFIX = "/api/v1"
OPENAPI_PATH = f"{API_PREFIX}/openapi.json"
OPENAPI_STATE_KEY = "openapi_description"
PUBLIC_OPT = "public"
# An ASGI route takes every method; one that serves only some names them under this key.
SERVED_METHODS_OPT = "served_methods"
QUERY_RULES_OPT = "query_rules"
# A page for people (the dashboard, the API reference), not the API: a query it does not read
# (?utm_source=..., a link pasted from a chat) is ignored rather than refused (SEMANTICS R12 is
# about the API's parameters).
IGNORES_QUERY_OPT = "ignores_query"
# A whole number as JSON writes one: digits, no leading zero, an optional minus.
WHOLE_NUMBER = re.compile(r"-?(0|[1-9][0-9]*)")
LEADING_ZERO = re.compile(r"-?0[0-9]+")
# How the framework says a required parameter was not given (the name is the endpoint's own).
_MISSING = re.compile(r"Missing required [a-z]+ parameter '([a-z_]{1,40})'")

ROUTE_HANDLERS: list[HTTPRouteHandler] = [
    roi.get_roi,
    breakdown.get_roi_breakdown,
    initiatives.list_initiatives,
    initiatives.get_initiative,
    cost_entries.list_cost_entries,
    value_entries.list_value_entries,
    metrics.list_metrics,
    observations.list_observations,
    budgets.list_budgets,
    business_cases.list_business_cases,
    decisions.list_decisions,
    integrations.list_integrations,
    deletions.list_deletions,
]


def token_authentication(app: ASGIApp) -> ASGIApp:
    """The route's methods, then its token, before any handler or parameter parsing runs.

    SEMANTICS R30: a method the route does not serve is 405 before the token is looked at.
    The router decides this for the handlers it declares methods for (the API's, with
    `Allow: GET`); an ASGI route, the tool endpoint, is routed whatever the method, so the
    methods it serves are named in its opt and checked here.

    Then, unless the route is public (its opt says so), the bearer token is resolved into the
    request's principal (`scope["user"]`, what the handlers' `request.user` reads), and a good
    token's request is counted against its budget (SPEC 8): after authentication, so a 401 or
    403 is never counted and stays what it is.

    A plain ASGI layer, not the framework's authentication middleware class, which builds a
    connection object around the scope for each request and decides its exclusions again.
    """

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            opt = scope["route_handler"].opt
            served = opt.get(SERVED_METHODS_OPT)
            if served is not None and scope["method"] not in served:
                allowed = ", ".join(served)
                said = " and ".join(served)  # "GET and POST", as one would say it
                verb = "is" if len(served) == 1 else "are"
                raise ApiError(405, f"Only {said} {verb} served here.", headers={"Allow": allowed})
            if not opt.get(PUBLIC_OPT):
                scope["user"] = await _authenticated(scope, scope["litestar_app"].state)
                scope["auth"] = None
        await app(scope, receive, send)

    return middleware


async def _authenticated(scope: Scope, state: State) -> Principal:
    try:
        return await _authenticate(scope, state)
    except ApiError as refusal:
        # /mcp's 401 also says where its protected resource metadata is (RFC 9728), so an
        # OAuth client can find how to get a token (airoi.oauth).
        if refusal.status == 401 and scope["path"] == MCP_PATH:
            settings: Settings = state.settings
            invalid = INVALID_TOKEN in refusal.headers.get("WWW-Authenticate", "")
            refusal.headers["WWW-Authenticate"] = challenge(scope, settings, invalid_token=invalid)
        raise


async def _authenticate(scope: Scope, state: State) -> Principal:
    engine: Engine = state.engine
    # SEMANTICS R29: no token, or no bearer one, is a 401 before the store is asked (with the
    # store away it would otherwise be a 503).
    authorization = authorization_of(scope)
    bearer_secret(authorization)
    context = held_context(scope)  # type: ignore[arg-type]
    # A place at the store's gate until the answer starts, then the lookup in a worker thread
    # (airoi.store_access), unless the token's row is kept. The API's handlers read through the
    # connection the token is looked up on (or, when it was kept, the one their own thread
    # checks out: `Reading.db`); the tool endpoint opens its own in its tool's thread, so it
    # does not keep this one while it works.
    gate: StoreGate = state.store_gate
    context.leave_gate = await gate.enter()
    keep = scope["path"].startswith(f"{API_PREFIX}/")
    # /mcp also takes OAuth access tokens issued for it, bound to its resource identifier as
    # this request reached it (airoi.oauth).
    mcp = scope["path"] == MCP_PATH
    base = base_url(scope, state.settings) if mcp else None
    resource = resource_of(base) if base else None
    # The API's tokens' rows are kept while the store has not changed (airoi.token_cache);
    # /mcp asks the store every time.
    cache: TokenCache | None = state.token_cache if keep and not mcp else None
    if gate.in_place:
        # A file on this machine: the lookup (about 45 µs) never waits on a server, and a hop
        # to a worker thread and back cost several times that (airoi.store_access).
        principal = _look_up(context, engine, authorization, keep, mcp, resource, cache)
    else:
        # On a server, a row the cache can vouch for without a connection is decided here, on
        # the event loop: the request then makes one hop to a worker thread, its handler's,
        # not two (airoi.store_access).
        kept = None if cache is None else authenticate_kept(cache, authorization)
        if kept is None:
            kept = await to_thread.run_sync(
                _look_up, context, engine, authorization, keep, mcp, resource, cache
            )
        principal = kept
    context.account_id = principal.account_id
    limiter: RateLimiter = state.rate_limiter
    # SEMANTICS R39: one budget per person, whatever token carries the request (each of
    # their personal tokens, every assistant grant made through them), API and /mcp alike.
    standing = await limiter.hit(
        person_key(principal.user_id), where=context.route(), request_id=context.request_id
    )
    context.response_headers.update(standing.headers())
    if not standing.allowed:
        wait = standing.seconds_to_reset()
        raise ApiError(
            429,
            f"Too many requests from this user; try again in {wait} seconds.",
            headers={"Retry-After": str(wait)},
        )
    return principal


def _look_up(
    context: RequestContext,
    engine: Engine,
    authorization: str | None,
    keep: bool,
    mcp: bool = False,
    resource: str | None = None,
    cache: TokenCache | None = None,
) -> Principal:
    """In a worker thread: the token's principal, read on the request's connection (or kept
    by `cache`), which is checked out either way and kept for the handler when `keep` (and
    returned otherwise)."""
    try:
        # /mcp also takes an OAuth access token, and reads every token's row afresh.
        return authenticate(
            context.hold(engine),
            authorization,
            cache=None if mcp else cache,
            takes_oauth=mcp,
            oauth_resource=resource,
        )
    finally:
        if not keep:
            context.release()


def error_response(
    status: int,
    message: str,
    headers: dict[str, str] | None = None,
    request_id: str | None = None,
) -> Response[ErrorBody]:
    return Response(
        ErrorBody(error=ErrorDetail(status=status, message=message, request_id=request_id)),
        status_code=status,
        headers=headers,
        media_type="application/json",
    )


def _validation_message(exc: ValidationException) -> str:
    problems = exc.extra if isinstance(exc.extra, list) else []
    for problem in problems:
        if isinstance(problem, dict) and problem.get("key"):
            detail = str(problem.get("message") or "is not valid").rstrip(".")
            return f"The {problem['key']} parameter is not valid: {detail}."
    missing = _MISSING.match(str(exc.detail))
    if missing is not None:
        return f"The {missing.group(1)} parameter is required."
    return "A parameter is not one this endpoint accepts."


_STATUS_MESSAGES = {
    404: "No such route.",
    405: "Only GET is served here.",
}


def handle_error(request: Request[Any, Any, Any], exc: Exception) -> Response[ErrorBody]:
    request_id = request_id_of(request)
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.message, exc.headers, request_id)
    if isinstance(exc, ValidationException):
        return error_response(400, _validation_message(exc), request_id=request_id)
    if isinstance(exc, HTTPException):
        status = exc.status_code
        headers = {k: v for k, v in (exc.headers or {}).items() if k.lower() != "allow"}
        if status == 405:
            headers["Allow"] = "GET"
        message = _STATUS_MESSAGES.get(status) or (exc.detail if status < 500 else "")
        message = message or "The request could not be served."
        return error_response(status, message, headers, request_id)
    # SEMANTICS R15: the route asked, not the path as sent (a token can be pasted into a path);
    # the failure's class, never its text, which can carry bound values (a token hash, a row).
    route, path = asked(request.scope)  # type: ignore[arg-type]
    unavailable = log_failure(exc, path or route, request_id)
    if unavailable is not None:
        return error_response(
            unavailable.status, unavailable.message, unavailable.headers, request_id
        )
    return error_response(500, FAILED_MESSAGE, request_id=request_id)


@dataclass(frozen=True)
class QueryRules:
    """What `strict_parameters` holds a handler's query to, read from its signature once."""

    declared: frozenset[str]  # every query name it declares
    integers: frozenset[str]  # those typed int (or int | None); bool, a subclass of int, is not
    # Those that may be left out and are not text, each with its type without None: the
    # conversion underneath reads "null" as None for them, as if the parameter were not given.
    nullable: dict[str, Any]


def query_rules(handler: HTTPRouteHandler) -> QueryRules:
    path_names = set(handler.paths and {p for path in handler.paths for p in _path_params(path)})
    dependencies = handler.resolve_dependencies()
    declared: set[str] = set()
    integers: set[str] = set()
    nullable: dict[str, Any] = {}
    for name, param in handler.parsed_fn_signature.parameters.items():
        if name in path_names or name in dependencies or name in {"request", "state"}:
            continue
        kwarg = param.kwarg_definition
        query = kwarg.query if isinstance(kwarg, ParameterKwarg) and kwarg.query else name
        declared.add(query)
        types = param.inner_types if param.is_union else (param,)
        if any(t.is_subclass_of(int) and not t.is_subclass_of(bool) for t in types):
            integers.add(query)
        # Text takes "null" as the text it is.
        if param.is_optional and not any(t.is_subclass_of(str) for t in types):
            given = [t.annotation for t in types if t.annotation is not type(None)]
            nullable[query] = given[0] if len(given) == 1 else Union[tuple(given)]  # noqa: UP007
    return QueryRules(frozenset(declared), frozenset(integers), nullable)


def _not_valid(name: str, value: str, kind: Any) -> ApiError:
    """The 400 for `value`, in the validator's words for the type `kind`."""
    try:
        msgspec.convert(value, kind, strict=False)
        detail = "not a value it takes"
    except msgspec.ValidationError as exc:
        detail = str(exc).rstrip(".")
    return ApiError(400, f"The {name} parameter is not valid: {detail}.")


def _path_params(path: str) -> Iterable[str]:
    for part in path.split("/"):
        if part.startswith("{") and part.endswith("}"):
            yield part[1:-1].split(":")[0]


async def strict_parameters(request: Request[Any, Any, Any]) -> None:
    # async, so the framework runs it on the event loop rather than hopping to a thread.
    """SEMANTICS R12: a query name the endpoint does not declare is refused, as is a repeat."""
    handler = request.route_handler
    if handler.opt.get(IGNORES_QUERY_OPT):
        return
    rules: QueryRules | None = handler.opt.get(QUERY_RULES_OPT)
    if rules is None:  # read from the signature once per registered handler
        rules = handler.opt[QUERY_RULES_OPT] = query_rules(handler)
    allowed, integers, nullable = rules.declared, rules.integers, rules.nullable
    seen: set[str] = set()
    for name, value in request.query_params.multi_items():
        if name not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            raise ApiError(
                400, f"Unknown query parameter {name!r}; this endpoint accepts: {known}."
            )
        if name in seen:
            raise ApiError(400, f"The {name} parameter is given more than once.")
        # PostgreSQL text cannot hold NUL, so a filter carrying one failed there (a 500).
        if "\x00" in value:
            raise ApiError(400, f"The {name} parameter must not contain a NUL character.")
        # SEMANTICS R12: an integer is written in digits; 1e3, 5.0 or a full-width 5 is refused
        # rather than read as a number by the lenient conversion underneath.
        if name in integers and not WHOLE_NUMBER.fullmatch(value):
            leading_zero = ", with no leading zero" if LEADING_ZERO.fullmatch(value) else ""
            raise ApiError(
                400, f"The {name} parameter must be a whole number written in digits{leading_zero}."
            )
        # SEMANTICS R12: "null" is no listed value and no date. It is not a way to leave a
        # filter out either: a template filled from an empty variable got every row.
        if name in nullable and value.lower() == "null":
            raise _not_valid(name, value, nullable[name])
        seen.add(name)


@get(
    OPENAPI_PATH,
    operation_id="getOpenApiDescription",
    summary="The OpenAPI 3.1 description of this API",
    description="Generated from the served routes and their response types. Needs no token.",
    opt={PUBLIC_OPT: True},
    response_headers=documented_headers("ETag", "X-Request-Id"),
    responses={304: ERROR_RESPONSES[304]},
    operation_class=ApiOperation,
    tags=["Description"],
    sync_to_thread=False,
)
def openapi_description(request: Request[Any, Any, Any]) -> dict[str, Any]:
    # Made once: the routes do not change while the app runs, and making it took 15 ms.
    state = request.app.state
    description: dict[str, Any] | None = state.get(OPENAPI_STATE_KEY)
    if description is None:
        description = state[OPENAPI_STATE_KEY] = describe(request.app)
    return description


def describe(app: Litestar) -> dict[str, Any]:
    """The OpenAPI description of `app`'s routes, as served and as `airoi openapi` prints it.

    A query parameter that may be left out is typed `X | None` in its handler; the generator
    describes that as X or null. A query gives a parameter or leaves it out, and "null" is
    refused (SEMANTICS R12), so null is taken out of the parameters' schemas."""
    document = app.openapi_schema.to_schema()
    for item in document.get("paths", {}).values():
        operations = [value for value in item.values() if isinstance(value, dict)]
        for parameter in (p for operation in operations for p in operation.get("parameters", ())):
            parameter["schema"] = _without_null(parameter["schema"])
    return described(document)  # bounds, declared errors, tags (airoi.api.described)


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    options = schema.get("oneOf")
    if options is not None:
        kept = [option for option in options if option.get("type") != "null"]
        rest = {key: value for key, value in schema.items() if key != "oneOf"}
        schema = {**kept[0], **rest} if len(kept) == 1 else {**rest, "oneOf": kept}
    kinds = schema.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        kept_kinds = [kind for kind in kinds if kind != "null"]
        schema = {**schema, "type": kept_kinds[0] if len(kept_kinds) == 1 else kept_kinds}
    if None in schema.get("enum", ()):
        schema = {**schema, "enum": [value for value in schema["enum"] if value is not None]}
    return schema


def only_get_and_head(app: Litestar) -> None:
    """SEMANTICS R30: GET and HEAD are served; any other method on a served route is 405.

    The framework answers OPTIONS by itself, so OPTIONS is passed on as a method no route
    declares; HEAD is answered as GET without the body. The layers inside see HEAD as a GET
    in a copy of the scope: the server keeps reading its own scope while it writes the answer,
    and only a HEAD there makes it send the headers of a GET (its Content-Length included)
    with no body. What the inner layers set on their copy (the route the framework matched,
    scope["path_template"]) is copied back, so the outer layers (access log, metrics) see it
    as they would on a GET.
    """
    inner = app.asgi_handler

    async def handler(scope: Any, receive: Any, send: Any) -> None:
        method = scope.get("method")
        if scope["type"] != "http" or method == "GET":
            await inner(scope, receive, send)
            return
        if method == "HEAD":

            async def send_headers_only(message: Any) -> None:
                if message["type"] == "http.response.body":
                    message = {**message, "body": b""}
                await send(message)

            # SEMANTICS R30: rewriting the server's own scope to GET made uvicorn wait for
            # Content-Length bytes of body, log an error and drop the keep-alive connection.
            as_get: Any = {**scope, "method": "GET"}
            try:
                await inner(as_get, receive, send_headers_only)
            finally:
                scope.update((k, v) for k, v in as_get.items() if k != "method")
            return
        if method == "OPTIONS":
            scope["method"] = "TRACE"
        await inner(scope, receive, send)

    app.asgi_handler = handler


def create_app(settings: Settings, engine: Engine | None = None) -> Litestar:
    engine = engine or make_engine(
        settings.database_url, read_only=True, statement_timeout_ms=settings.statement_timeout_ms
    )
    api = Router(
        API_PREFIX,
        route_handlers=ROUTE_HANDLERS,
        security=[{"bearerAuth": []}],
        response_headers=SUCCESS_HEADERS,
    )
    openapi = OpenAPIConfig(
        title="airoi",
        version=__version__,
        description=(
            "Read-only API over an account's AI-initiative figures: ROI rollups, initiatives, "
            "costs, approved value, metrics, budgets against spend, decisions and connections. "
            "Amounts are integer cents with their currency beside them."
        ),
        components=Components(
            security_schemes={
                "bearerAuth": SecurityScheme(
                    type="http",
                    scheme="bearer",
                    description="A personal access token issued by an account Owner or Admin.",
                )
            }
        ),
        create_examples=False,
        # The description is served by our own handler inside /api/v1 (so it is itself
        # described); the framework's routes are the docs page at /api/v1/docs (airoi.apidocs).
        render_plugins=[ApiDocsPage()],
        openapi_router=docs_router(strict_parameters),
    )
    # SPEC 4.B: /mcp behind the same token middleware; its session manager runs in the lifespan.
    mcp = mcp_endpoint(engine, settings)
    oauth = OAuthRoutes(engine, settings)  # OAuth 2.1 for /mcp (airoi.oauth)
    metrics = Metrics.from_env()
    token_cache = TokenCache.of(engine)
    app = Litestar(
        route_handlers=[
            api,
            openapi_description,
            api_index,
            mcp.route_handler,
            *oauth.route_handlers,
            healthz,
            readyz,
            metrics_endpoint,
            *DASHBOARD_ROUTES,
        ],
        lifespan=[mcp.lifespan],
        # The cache's listener (PostgreSQL) connects in a thread of its own: start-up does not
        # wait on it, and the cache is not used until it listens.
        on_startup=[size_worker_threads, token_cache.start],
        # The connections kept aside go back to the pool (airoi.db.kept_connections).
        on_shutdown=[
            oauth.close,
            token_cache.stop,
            functools.partial(kept_connections.clear, engine),
        ],
        middleware=[token_authentication],  # 405, then 401 and 403 (SEMANTICS R30)
        before_request=strict_parameters,
        exception_handlers={Exception: handle_error},
        openapi_config=openapi,
        plugins=[Int64SchemaPlugin()],
        state=State(
            {
                "engine": engine,
                "settings": settings,
                "cursors": Cursors(settings.secret_key),
                "rate_limiter": RateLimiter(settings.rate_limit, settings.redis_url),
                "store_gate": StoreGate.of(engine),
                "token_cache": token_cache,
                "metrics": metrics,
            }
        ),
        debug=False,
        # The process's logging is `airoi serve`'s to set (airoi.logs), not the framework's,
        # whose default replaces the root logger's handlers with its own format.
        logging_config=None,
    )
    redact_library_logs()  # once the engine and the tool server have made their loggers
    # Errors on /mcp read as JSON-RPC errors too, by every MCP client (airoi.tools.protocol_errors);
    # inside HEAD-as-GET, so a HEAD's Content-Length is its GET's.
    app.asgi_handler = cast(Any, JsonRpcErrorBodies(cast(Any, app.asgi_handler), MCP_PATH))
    conditional_get(app, API_PREFIX)  # inside HEAD-as-GET, so HEAD gets GET's ETag
    only_get_and_head(app)
    allow_cross_origin(app, settings.cors_origins)  # an allowed preflight before R30's 405
    protective_headers(app, (API_PREFIX, MCP_PATH))  # nosniff; account data kept private
    observe(app, metrics)  # outermost: sees every answer, including HEAD and 405
    return app


SWITCH_INTERVAL_S = 0.001


def app_from_env() -> Litestar:
    """The app `airoi serve` runs (a factory, so every worker builds its own)."""
    settings = Settings.from_env()
    # Before anything logs; done already in the process `airoi serve` itself runs in.
    configure_logging(settings.log_format, settings.log_level)
    app = create_app(settings)
    serving_schema_check(app.state.engine, settings)
    # What start-up made (modules, routes, compiled statements) lives as long as the process:
    # set it aside so that the full collections a busy worker runs do not walk it every time.
    gc.collect()
    gc.freeze()
    # Worker threads computing a heavy answer hand the interpreter over every millisecond
    # (5 by default), so the event loop and a light page's thread wait less for their turn.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    return app


def serving_schema_check(engine: Engine, settings: Settings) -> None:
    """Refuse to serve a store of another schema revision: SQLite's datetime text changed in
    0002, and an older store would be served misread. Refuse one with no secret to sign
    cursors with, unless AIROI_SECRET_KEY gives one (SEMANTICS R13). A store that cannot be
    reached yet is served 503 until it can (SPEC 7), not refused. Either is logged by its
    class alone (SEMANTICS R15): the refusal's exception carries no statement and no driver
    text. An SQLite file that is not there is refused before it is opened, which would make
    an empty one; a file whose text is not kept in UTF-8 is refused too."""
    missing = missing_sqlite_file(engine)
    if missing is not None:
        raise StoreUnreadable(f"{no_store_at(missing)}, then serve again.")
    try:
        require_current_schema(engine)
        if settings.secret_key is None:
            require_store_secret(engine)
        # A page's rows are read as the bytes SQLite keeps their JSON text in (airoi.listing).
        encoding = sqlite_text_encoding(engine)
        if encoding not in (None, "UTF-8"):
            raise StoreUnreadable(
                f"The store keeps its text as {encoding}; airoi serves a store kept in UTF-8, "
                "as `airoi init` makes one. Copy it into a new file "
                "(sqlite3 OLD.db .dump | sqlite3 NEW.db) and serve that."
            )
    except DBAPIError as exc:
        if database_failure(exc) is None:
            log.error("the store cannot be read at start: %s", failure_class(exc))
            raise StoreUnreadable(
                "The store cannot be read; check AIROI_DATABASE_URL and run `airoi init`."
            ) from None
        log.warning(
            "the store cannot be reached at start (%s); its schema is not checked",
            failure_class(exc),
        )


class StoreUnreadable(Exception):
    """The store answers, but not as an airoi store: the service is not started."""
