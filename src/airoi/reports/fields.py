"""The fields and filters the served rows share, for the HTTP API and the tools alike."""

from datetime import date
from typing import Annotated, Any

from litestar.openapi.spec import (
    Example,
    OpenAPIFormat,
)
from litestar.params import KwargDefinition
from sqlalchemy import (
    ColumnElement,
    Connection,
    String,
    Table,
    bindparam,
    exists,
    func,
    literal,
    select,
)

from airoi.db.tables import initiatives
from airoi.errors import bad_parameter, not_found
from airoi.listing import changed_since
from airoi.rows import Row, Shape


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


def person(person_id: int | None, name: str | None) -> Person | None:
    """A person a figure names (a budget version's setter), by name only."""
    return None if person_id is None else Person(id=person_id, name=name or "")


def person_shape(
    person_id: ColumnElement[int | None], name: ColumnElement[str | None]
) -> Shape[Person]:
    """The person a row names by `person_id`, served by `name` (from an outer join on the
    users): null where the row names nobody, and named '' where the account holds no such
    user, as `person` serves them."""
    return Shape(Person, person_id, func.coalesce(name, literal("", String())), optional=True)


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
    """The filters of SPEC 4.A.1 on a table of entries, for a `ShapedList`."""
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
