"""GET /value_entries (SPEC 2.4, 4.A.7)."""

from typing import Annotated

from litestar import get
from litestar.params import Parameter

from airoi.api.common import (
    ERROR_RESPONSES,
    ApiOperation,
    ApiRequest,
    Cursor,
    InitiativeFilter,
    Limit,
    PeriodFrom,
    PeriodTo,
    UpdatedSince,
    reading_of,
)
from airoi.listing import parse_updated_since, served_rows
from airoi.reports.fields import periods
from airoi.reports.value_entries import VALUE_ENTRIES, ValueEntryList
from airoi.store_access import keyset_page
from airoi.vocabulary import ValueStatus


@get(
    "/value_entries",
    operation_id="listValueEntries",
    summary="List value entries",
    description=(
        "Value the account's initiatives have produced or claim, oldest change first. Only "
        "entries with status approved (counts_toward_roi true) count toward reported ROI; "
        "summing every row disagrees with GET /roi. account_amount_cents of the approved "
        "entries, over the window's reported_on dates, sums to /roi's approved value."
    ),
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Value entries"],
    # A keyset page: on the event loop on SQLite, in a worker thread otherwise (airoi.store_access).
)
@keyset_page
def list_value_entries(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    initiative_id: InitiativeFilter = None,
    period_from: PeriodFrom = None,
    period_to: PeriodTo = None,
    status: Annotated[
        ValueStatus | None, Parameter(description="Only entries with this status.")
    ] = None,
) -> ValueEntryList:
    reading = reading_of(request)
    page = VALUE_ENTRIES.served(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        updated_since=parse_updated_since(updated_since),
        initiative_id=initiative_id,
        status=status,
        **periods(period_from, period_to),
    )
    return ValueEntryList(data=served_rows(page), page=page.info)
