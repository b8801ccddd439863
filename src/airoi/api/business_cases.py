"""GET /business_cases (SEMANTICS R43-R45): the rows are airoi.reports.business_cases's."""

from litestar import get

from airoi.api.common import (
    ERROR_RESPONSES,
    ApiOperation,
    ApiRequest,
    Cursor,
    IncludeSample,
    InitiativeFilter,
    Limit,
    reading_of,
)
from airoi.reports.business_cases import (
    BUSINESS_CASE_INITIATIVES,
    BusinessCaseList,
    compute_business_case_rows,
)


@get(
    "/business_cases",
    operation_id="listBusinessCases",
    summary="List business cases against actuals",
    description=(
        "One row per initiative (including initiatives without a business case), holding its "
        "business case (the expected capex, opex, cost savings and revenue uplift over its "
        "ROI horizon) against its cost and approved value to date: the plan's figures, the "
        "share of them due by today, the actuals, how much of the value due has arrived and "
        "the month it paid back. In the initiative's currency (the account's when it has "
        "none), as of today, ordered oldest change first by the initiative. Sample "
        "initiatives are left out unless include_sample=true or initiative_id names one."
    ),
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Business cases"],
    sync_to_thread=True,  # its database work in a worker thread (airoi.store_access)
)
def list_business_cases(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    initiative_id: InitiativeFilter = None,
    include_sample: IncludeSample = False,
) -> BusinessCaseList:
    reading = reading_of(request)
    page = BUSINESS_CASE_INITIATIVES.rows(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        initiative_id=initiative_id,
        # As on /budgets: sample initiatives are left out unless asked for or named
        # (SPEC 4.A.10, SEMANTICS R31, R7).
        without_samples=None if include_sample or initiative_id is not None else True,
    )
    rows = compute_business_case_rows(reading.db, reading.principal, page.rows, reading.today)
    return BusinessCaseList(data=rows, page=page.budget_info)
