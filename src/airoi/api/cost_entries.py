"""GET /cost_entries (SPEC 2.3, 4.A.6)."""

from datetime import date
from typing import Annotated

import msgspec
from litestar import get

from airoi.api.common import (
    ACCOUNT_AMOUNT,
    ERROR_RESPONSES,
    INITIATIVE_MUST_EXIST,
    REPORTED_ON,
    ApiOperation,
    ApiRequest,
    Cents,
    CreatedAt,
    Cursor,
    EntryAmount,
    EntryCurrency,
    Id,
    InitiativeFilter,
    Limit,
    PeriodFrom,
    PeriodTo,
    Source,
    UpdatedAt,
    UpdatedSince,
    entry_filters,
    note,
    periods,
    reading_of,
    source_shape,
)
from airoi.db.tables import cost_entries
from airoi.listing import ResumablePageInfo, ShapedList, parse_updated_since, served_rows
from airoi.rows import Row, Shape, iso_ms
from airoi.store import keyset_page
from airoi.vocabulary import CostCategory


class CostEntry(Row):
    id: Id
    initiative_id: Annotated[Id, note("The initiative the cost belongs to.")]
    amount_cents: EntryAmount
    currency: EntryCurrency
    account_amount_cents: Annotated[Cents | None, ACCOUNT_AMOUNT]
    cost_type: Annotated[
        str | None, note("Free kinds such as software, tokens, implementation, infrastructure.")
    ]
    cost_category: Annotated[
        CostCategory,
        note(
            "capex (one-time) or opex (running). Follows from the type unless changed by a person."
        ),
    ]
    period_start: date | None
    period_end: date | None
    reported_on: Annotated[date, REPORTED_ON]
    vendor_id: Annotated[
        Id | None,
        note(
            "The field to group spend by. Resolved from vendor_name when the entry is written; "
            "when two vendors are merged, vendor_id on existing entries is repointed and names are"
            " left alone, so one vendor's rows may carry several names. Null when no name was "
            "given; such spend is reported apart from any vendor."
        ),
    ]
    vendor_name: Annotated[str | None, note("Free text as recorded.")]
    description: str | None
    notes: str | None
    is_estimated: Annotated[bool, note("An estimate rather than an invoiced figure.")]
    locked: Annotated[bool, note("True when in a closed accounting period, so no sync changes it.")]
    source: Source
    created_at: CreatedAt
    updated_at: UpdatedAt


class CostEntryList(msgspec.Struct):
    data: list[CostEntry]
    page: ResumablePageInfo


_c = cost_entries.c
COST_ENTRY = Shape(
    CostEntry,
    _c.id,
    _c.initiative_id,
    _c.amount_cents,
    _c.currency,
    _c.account_amount_cents,
    _c.cost_type,
    _c.cost_category,
    _c.period_start,
    _c.period_end,
    _c.entry_date,
    _c.vendor_id,
    _c.vendor_name,
    _c.description,
    _c.notes,
    _c.is_estimated,
    _c.locked,
    source_shape(cost_entries),
    iso_ms(_c.created_at),
    iso_ms(_c.updated_at),
)
COST_ENTRIES = ShapedList(
    "cost_entries",
    COST_ENTRY,
    cost_entries,
    entry_filters(cost_entries, periods=True),
    must_exist=INITIATIVE_MUST_EXIST,
)


@get(
    "/cost_entries",
    operation_id="listCostEntries",
    summary="List cost entries",
    description=(
        "Everything the account's initiatives have cost, oldest change first. Group spend by "
        "vendor_id (names may differ after vendors are merged). With period_from/period_to an "
        "entry belongs to the period its reported_on falls in, as GET /roi counts it; "
        "account_amount_cents summed by cost_category over those entries gives /roi's cost."
    ),
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Cost entries"],
    # A keyset page: on the event loop on SQLite, in a worker thread otherwise (airoi.store).
)
@keyset_page
def list_cost_entries(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    initiative_id: InitiativeFilter = None,
    period_from: PeriodFrom = None,
    period_to: PeriodTo = None,
) -> CostEntryList:
    reading = reading_of(request)
    page = COST_ENTRIES.served(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        updated_since=parse_updated_since(updated_since),
        initiative_id=initiative_id,
        **periods(period_from, period_to),
    )
    return CostEntryList(data=served_rows(page), page=page.info)
