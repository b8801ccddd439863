"""GET /budgets (SPEC 2.7, 4.A.10): the rows are airoi.reports.budgets's."""

from typing import Annotated

from litestar import get
from litestar.params import Parameter

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
from airoi.reports.budgets import BUDGET_INITIATIVES, BudgetList, compute_budget_rows


@get(
    "/budgets",
    operation_id="listBudgets",
    summary="List budgets against spend",
    description=(
        "One row per initiative (including initiatives without a budget), comparing the "
        "approved budget with spend as of today, ordered oldest change first by the "
        "initiative. With budgeted=true only initiatives with an approved budget are kept, "
        "after the comparison, so a page may hold fewer rows than limit while has_more is true. "
        "Sample initiatives are left out unless include_sample=true or initiative_id names "
        "one."
    ),
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Budgets"],
    sync_to_thread=True,  # its database work in a worker thread (airoi.store_access)
)
def list_budgets(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    initiative_id: InitiativeFilter = None,
    include_sample: IncludeSample = False,
    budgeted: Annotated[
        bool, Parameter(description="Only initiatives with an approved budget. Default false.")
    ] = False,
) -> BudgetList:
    reading = reading_of(request)
    page = BUDGET_INITIATIVES.rows(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        initiative_id=initiative_id,
        # SPEC 4.A.4, 4.A.10: without include_sample=true sample initiatives are left out,
        # but one that initiative_id names is selected, as on /roi (SEMANTICS R31, R7).
        without_samples=None if include_sample or initiative_id is not None else True,
    )
    rows = compute_budget_rows(reading.db, reading.principal, page.rows, reading.today)
    if budgeted:
        rows = [row for row in rows if row.budgeted]
    return BudgetList(data=rows, page=page.budget_info)
