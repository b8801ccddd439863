"""What every endpoint module shares: shared Structs, parameter types, responses, filters."""

import asyncio
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Annotated, Any, cast

from litestar import Request
from litestar.datastructures import ResponseHeader, State
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import (
    Example,
    OpenAPIFormat,
    OpenAPIHeader,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Schema,
)
from litestar.params import KwargDefinition, Parameter
from litestar.plugins import OpenAPISchemaPlugin
from litestar.typing import FieldDefinition
from sqlalchemy import ColumnElement, Connection, Engine, Table, bindparam, exists, select

from airoi.auth import Principal
from airoi.db.tables import initiatives
from airoi.errors import ErrorBody, bad_parameter, not_found
from airoi.listing import DEFAULT_LIMIT, MAX_ID, MAX_LIMIT, Cursors, changed_since
from airoi.observability import RequestContext, held_context
from airoi.rows import Row, Shape
from airoi.settings import Settings
from airoi.timeutil import format_datetime

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator


class _Int64:
    """Marks an integer the description calls int64 (see `Int64SchemaPlugin`)."""

    def __repr__(self) -> str:
        return "INT64"


INT64 = _Int64()
# Every integer a row serves is described as int64: ids are BIGINT (SEMANTICS R13), amounts in
# cents fit 64 bits (R38) and a large account's pass 2**31, and a count may too. A client
# generated from a plain `integer` types them as 32-bit. msgspec ignores the marker: only the
# description sees it. Bounded integers stay plain: `limit` (at most 500), an HTTP status.
Int64 = Annotated[int, INT64]
Id = Int64
Cents = Int64


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


def note(description: str, *examples: Any) -> KwargDefinition:
    """A field's description (SPEC 2's note on it), with examples when given."""
    return KwargDefinition(
        description=description,
        examples=[Example(value=value) for value in examples] or None,
    )


_UTC_MS = "UTC, millisecond precision."


def timestamp(description: str) -> KwargDefinition:
    """A served datetime (SEMANTICS R3) with what it records; for a non-null field, whose one
    KwargDefinition must carry both the format and the description."""
    return KwargDefinition(format=OpenAPIFormat.DATE_TIME, description=f"{description} {_UTC_MS}")


DateTimeText = Annotated[
    str, KwargDefinition(format=OpenAPIFormat.DATE_TIME, description=_UTC_MS.rstrip("."))
]
CreatedAt = Annotated[str, timestamp("When the row was first written.")]
UpdatedAt = Annotated[
    str, timestamp("When the row last changed; the order of every list but /budgets.")
]


class Person(Row):
    """A person, by name only (never an e-mail address)."""

    id: Id
    name: str


class Source(Row):
    """Where a record came from: typed in, imported or brought in by a connection."""

    type: Annotated[str | None, note("How the record came in: typed in, imported or synced.")]
    ref: Annotated[str | None, note("The id the originating system knows the record by.")]
    connection_id: Annotated[Id | None, note("The integration (connection) that brought it in.")]


def text_datetime(value: datetime | None) -> str | None:
    return None if value is None else format_datetime(value)


def person(person_id: int | None, name: str | None) -> Person | None:
    return None if person_id is None else Person(id=person_id, name=name or "")


def source_shape(table: Table) -> Shape[Source]:
    return Shape(Source, table.c.source_type, table.c.source_ref, table.c.source_connection_id)


# SEMANTICS R35: the two fields that let a copy add up to GET /roi.
REPORTED_ON = KwargDefinition(
    description=(
        "The date the entry is reported under: period_start, or the UTC date of created_at "
        "when period_start is null. GET /roi and the period filters use it."
    )
)
# An entry's amount as given, in its own currency (cost and value entries alike).
EntryAmount = Annotated[Cents | None, note("Cents, in currency. Key always present; may be null.")]
EntryCurrency = Annotated[str | None, note("ISO 4217 code of amount_cents.")]
ACCOUNT_AMOUNT = KwargDefinition(
    description=(
        "amount_cents converted into the account currency at the rate in effect on "
        "reported_on, rounded half to even once; null when amount_cents is null. GET /roi "
        "sums these."
    )
)


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
        thread, on first use (`airoi.store`). The outermost layer gives it back."""
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
    worker thread on a database server: `airoi.store`) or, where the token cache kept the
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


def require_initiative(db: Connection, account_id: int, initiative_id: int) -> None:
    """SEMANTICS R31: a filter naming an initiative the account cannot see answers 404."""
    visible = db.execute(_INITIATIVE_VISIBLE, {"id": initiative_id, "account_id": account_id})
    if not visible.scalar():
        raise not_found("initiative")


_INITIATIVE_VISIBLE = select(
    exists().where(
        initiatives.c.id == bindparam("id"), initiatives.c.account_id == bindparam("account_id")
    )
)


def entry_filters(table: Table, *, periods: bool = False) -> dict[str, ColumnElement[bool]]:
    """The filters of SPEC 4.A.1 on a table of entries, for a `ListQuery`."""
    filters = {
        "updated_since": changed_since(table),
        "initiative_id": table.c.initiative_id == bindparam("initiative_id"),
    }
    if periods:
        # SEMANTICS R11: a row is matched on its entry date (R2), the date /roi counts it
        # under: period_start, or the date of created_at when that is null.
        filters["period_from"] = table.c.entry_date >= bindparam("period_from")
        filters["period_to"] = table.c.entry_date <= bindparam("period_to")
    return filters


INITIATIVE_MUST_EXIST = {"initiative_id": require_initiative}


def periods(period_from: date | None, period_to: date | None) -> dict[str, date | None]:
    """The period_from/period_to filters' values; 400 when the period runs backwards."""
    if period_from is not None and period_to is not None and period_from > period_to:
        raise bad_parameter("period_from must be on or before period_to.")
    return {"period_from": period_from, "period_to": period_to}
