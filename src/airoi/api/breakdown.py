"""GET /roi/breakdown (SEMANTICS R37): the split is airoi.reports.breakdown's."""

from typing import Annotated

from litestar import get
from litestar.params import Parameter

from airoi.api.common import (
    ERROR_RESPONSES,
    ApiOperation,
    ApiRequest,
    InitiativeFilter,
    Limit,
    reading_of,
)
from airoi.listing import DEFAULT_LIMIT
from airoi.reports.breakdown import MAX_CURSOR, RoiBreakdown, breakdown_page
from airoi.vocabulary import BreakdownBy as By
from airoi.vocabulary import Window


@get(
    "/roi/breakdown",
    operation_id="getRoiBreakdown",
    summary="ROI breakdown",
    description=(
        "The ROI summary of a window and scope split by initiative, month, fiscal quarter, "
        "cost type, vendor or value entry status: one row per key, computed as GET /roi is, so "
        "that across all "
        "pages the rows add up to it exactly and a by=initiative row equals "
        "/roi?initiative_id=. by=initiative has a row for every initiative in scope, spent or "
        "not; month and quarter a row for every period across the window (for all, from the "
        "first to the last period with an entry); cost_type and vendor split cost only, their "
        "value, net value and roi null. value_status splits value only: a row for each status "
        "(draft, calculated, reviewed, approved, disputed, archived, in that order, each even "
        "when 0), value_cents the status's value entries, approved_value_cents that on the "
        "approved row and 0 on the others, cost fields, net value and roi null. Paged by limit "
        "and cursor, ordered by key (the statuses in their order)."
    ),
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["ROI"],
    sync_to_thread=True,  # its database work in a worker thread (airoi.store_access)
)
def get_roi_breakdown(
    request: ApiRequest,
    by: Annotated[
        By,
        Parameter(
            description=(
                "initiative, month, quarter (of the fiscal year), cost_type, vendor or "
                "value_status."
            )
        ),
    ],
    window: Annotated[
        Window,
        Parameter(description="1yr, 3yr, 5yr or all (default). Anything else is refused."),
    ] = "all",
    initiative_id: InitiativeFilter = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Annotated[
        str | None,
        Parameter(
            description="The next_cursor of the previous page, passed back unchanged. Opaque.",
            max_length=MAX_CURSOR,
        ),
    ] = None,
) -> RoiBreakdown:
    reading = reading_of(request)
    return breakdown_page(
        reading.db,
        reading.principal,
        reading.cursors.codec(reading.db),
        by=by,
        window=window,
        initiative_id=initiative_id,
        today=reading.today,
        limit=limit,
        cursor=cursor,
    )
