"""GET /cost_entries (SPEC 2.3, 4.A.6)."""

from litestar import get

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
from airoi.reports.cost_entries import COST_ENTRIES, CostEntryList
from airoi.reports.fields import periods
from airoi.store_access import keyset_page


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
    # A keyset page: on the event loop on SQLite, in a worker thread otherwise (airoi.store_access).
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
