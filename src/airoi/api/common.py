"""What every endpoint module shares: parameters, responses, headers, the request's reading."""

import asyncio
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Annotated, Any, cast

from litestar import Request
from litestar.datastructures import ResponseHeader, State
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import (
    OpenAPIFormat,
    OpenAPIHeader,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Schema,
)
from litestar.params import Parameter
from litestar.plugins import OpenAPISchemaPlugin
from litestar.typing import FieldDefinition
from sqlalchemy import Connection, Engine

from airoi.auth import Principal
from airoi.errors import ErrorBody
from airoi.listing import DEFAULT_LIMIT, MAX_ID, MAX_LIMIT, Cursors
from airoi.observability import RequestContext, held_context
from airoi.reports.fields import (
    INT64,
    Id,
)
from airoi.settings import Settings

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator


class Int64SchemaPlugin(OpenAPISchemaPlugin):
    """`format: int64` on every integer annotated `Int64` (`Id`, `Cents`), nullable or not.

    The marker rides in the type, not in a `KwargDefinition`: the framework keeps one of those
    per field, and the field's own (its description) must not displace the format."""

    def is_plugin_supported_field(self, field_definition: FieldDefinition) -> bool:
        return field_definition.annotation is int and INT64 in field_definition.metadata

    def to_openapi_schema(
        self, field_definition: FieldDefinition, schema_creator: "SchemaCreator"
    ) -> Schema:
        # OpenAPIFormat lists no int64; the description takes the text as it is.
        return Schema(type=OpenAPIType.INTEGER, format=cast(OpenAPIFormat, "int64"))


# Query parameters shared by the list endpoints (SPEC 4.A.1).
Limit = Annotated[
    int,
    Parameter(
        ge=1,
        le=MAX_LIMIT,
        description=f"Rows per page, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT}).",
    ),
]
Cursor = Annotated[
    str | None,
    Parameter(
        description=(
            "The next_cursor of the previous page, or the resume_cursor kept from an earlier "
            "walk (every list but /budgets), passed back unchanged. Opaque."
        ),
        max_length=200,
    ),
]
UpdatedSince = Annotated[
    str | None,
    Parameter(
        description=(
            "Only rows changed at or after this moment (inclusive): an ISO 8601 date-time "
            "with Z, an offset, or none (then UTC)."
        ),
        schema_extra={"format": "date-time"},
    ),
]
InitiativeFilter = Annotated[
    Id | None,
    Parameter(ge=1, le=MAX_ID, description="Only rows of this initiative of the account."),
]
PeriodFrom = Annotated[
    date | None,
    Parameter(
        description=(
            "Only entries reported on or after this date (reported_on: period_start, or the "
            "date of created_at when period_start is null)."
        )
    ),
]
PeriodTo = Annotated[
    date | None,
    Parameter(description="Only entries reported on or before this date (see period_from)."),
]
IncludeSample = Annotated[
    bool,
    Parameter(description="Include sample (demo) initiatives. Default false."),
]


def _error(description: str) -> ResponseSpec:
    return ResponseSpec(ErrorBody, description=description, generate_examples=False)


ERROR_RESPONSES = {
    # Not an error, but declared with them: every GET under /api/v1 answers one to a
    # matching If-None-Match (airoi.conditional), with no body.
    304: ResponseSpec(
        None,
        description=(
            "Not Modified: the If-None-Match given names this answer's ETag. No body; the "
            "headers are those the 200 would carry."
        ),
        generate_examples=False,
    ),
    400: _error("A parameter is not one the endpoint accepts."),
    401: _error(
        "The token is missing, unknown or expired, or its holder can no longer open the account."
    ),
    403: _error("The token is good but the account's plan does not include API access."),
    404: _error("No such record in this account."),
    # airoi.serving refuses a request line longer than it reads, before any route runs.
    414: _error("The request's target (path and query) passes 8,192 bytes."),
    429: _error("Too many requests: wait Retry-After seconds."),
    503: _error("The service cannot answer now (its database or settings): try again later."),
}

# The headers each answer carries, declared once (airoi.conditional, airoi.ratelimit,
# airoi.observability); none is marked required, so a client reads them when present.
_HEADER_TEXT = {
    "ETag": "Strong tag of the body; send it back as If-None-Match to be answered 304.",
    "X-Request-Id": "The request's id, also in the error body and the log line.",
    "RateLimit-Limit": "Requests allowed per window for this token.",
    "RateLimit-Remaining": "Requests left in the current window.",
    "RateLimit-Reset": "Seconds until the window resets.",
    "X-RateLimit-Limit": "Same as RateLimit-Limit (older name).",
    "X-RateLimit-Remaining": "Same as RateLimit-Remaining (older name).",
    "X-RateLimit-Reset": "When the window resets, in seconds since 1970 (UTC).",
    "Retry-After": "Seconds to wait before asking again.",
}
_INTEGER_HEADERS = {name for name in _HEADER_TEXT if name not in ("ETag", "X-Request-Id")}
RATE_LIMIT_HEADERS = (
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
)


def _header_schema(name: str) -> Schema:
    return Schema(type=OpenAPIType.INTEGER if name in _INTEGER_HEADERS else OpenAPIType.STRING)


def documented_headers(*names: str) -> list[ResponseHeader]:
    """Headers the 200 of a handler (or a router's handlers) carries, for the description only."""
    return [
        ResponseHeader(name=name, documentation_only=True, description=_HEADER_TEXT[name])
        for name in names
    ]


# The 200 of every token-guarded operation; the description's own adds no rate-limit headers.
SUCCESS_HEADERS = documented_headers("ETag", "X-Request-Id", *RATE_LIMIT_HEADERS)
# The other answers' headers: ResponseSpec declares no headers, so the operation adds them.
_OTHER_HEADERS: dict[str, tuple[str, ...]] = {
    "304": ("ETag", "X-Request-Id", *RATE_LIMIT_HEADERS),
    "400": ("X-Request-Id", *RATE_LIMIT_HEADERS),
    "401": ("X-Request-Id",),
    "403": ("X-Request-Id",),
    "404": ("X-Request-Id", *RATE_LIMIT_HEADERS),
    "429": ("Retry-After", "X-Request-Id", *RATE_LIMIT_HEADERS),
    "503": ("Retry-After", "X-Request-Id", *RATE_LIMIT_HEADERS),
}


@dataclass
class ApiOperation(Operation):
    """An /api/v1 operation: the headers of its non-200 answers declared beside their bodies
    (ResponseSpec takes none), and every header typed and in one order. One that needs no
    token is not counted against a budget, so has no rate-limit headers."""

    def __post_init__(self) -> None:
        for status, response in (self.responses or {}).items():
            if not isinstance(response, OpenAPIResponse):
                continue
            names = {*(response.headers or {}), *_OTHER_HEADERS.get(status, ())}
            if not self.security:
                names -= set(RATE_LIMIT_HEADERS)
            response.headers = {
                name: OpenAPIHeader(schema=_header_schema(name), description=text)
                for name, text in _HEADER_TEXT.items()
                if name in names
            } or None


class Reading:
    """What an /api/v1 handler reads with: each makes its own from its request, first thing
    (`reading_of`).

    One object, not one each for the principal, the connection, the cursors and today; and
    not a dependency the framework resolves: resolving that one (its provider's signature
    parsed, the request's dependency tree walked) cost the limit-100 page 12 to 19 µs in
    process, about 3% of its time served (bench/README.md). Nor would several be: independent
    dependencies are resolved side by side in a task group, where a request would wait on the
    loop holding its connection (tests/test_request_connection.py). A slotted class, not a
    dataclass: made once a request."""

    __slots__ = ("_context", "_db", "_engine", "_settings", "cursors", "principal")

    def __init__(
        self,
        principal: Principal,
        context: RequestContext,
        engine: Engine,
        cursors: Cursors,
        settings: Settings,
    ) -> None:
        self.principal = principal  # the account the token may read, and its user
        self._context = context
        self._engine = engine
        self._db = context.connection  # the one the token was looked up on, if it was
        self.cursors = cursors  # the store's cursors (SEMANTICS R13), made once with the app
        self._settings = settings

    @property
    def db(self) -> Connection:
        """The request's connection: the one its token was looked up on, or else (a row the
        token cache kept, on a database server) one checked out here, in the handler's worker
        thread, on first use (`airoi.store_access`). The outermost layer gives it back."""
        db = self._db
        if db is None:
            if _on_event_loop():  # a checkout can wait on a server: never on the event loop
                raise RuntimeError("a request's connection is checked out in a worker thread")
            db = self._db = self._context.hold(self._engine)
        return db

    @property
    def today(self) -> date:
        """SEMANTICS R1: the UTC date, unless AIROI_TODAY fixes it; read when asked (a list
        page never asks), so each request reads its own. A handler asks once."""
        return self._settings.current_date()


def _on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


# An /api/v1 handler's request: its user is the token's principal (airoi.app's middleware).
ApiRequest = Request[Principal, Any, State]


def reading_of(request: ApiRequest) -> Reading:
    """The request's `Reading`, made where its handler runs (on the event loop, or in its
    worker thread: nothing here waits).

    The connection is the one the token was looked up on (on the event loop on SQLite, in a
    worker thread on a database server: `airoi.store_access`) or, where the token cache kept the
    token's row, the one the handler's thread checks out: one pool checkout per request
    either way; the outermost layer returns it (`airoi.observability.RequestContext`)."""
    state = request.app.state
    return Reading(
        request.user,
        held_context(request.scope),  # type: ignore[arg-type]
        state.engine,
        state.cursors,
        state.settings,
    )
