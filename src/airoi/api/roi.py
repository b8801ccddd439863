"""GET /roi (SPEC 2.10, 4.A.3): the figures are airoi.reports.roi's."""

from typing import Annotated

from litestar import get
from litestar.params import Parameter

from airoi.api.common import ERROR_RESPONSES, ApiOperation, ApiRequest, InitiativeFilter, reading_of
from airoi.reports.roi import RoiCost, RoiSummary, compute_roi
from airoi.vocabulary import Window


@get(
    "/roi",
    operation_id="getRoiSummary",
    summary="ROI summary",
    description=(
        "Approved value, cost (capex and opex), net value and ROI over a trailing window, for "
        "the whole portfolio (sample initiatives excluded) or one initiative. The same "
        "computation as the ROI dashboard. Amounts are in the account currency; roi is null "
        "(not zero) when there is no cost."
    ),
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["ROI"],
    sync_to_thread=True,  # its database work in a worker thread (airoi.store_access)
)
def get_roi(
    request: ApiRequest,
    window: Annotated[
        Window,
        Parameter(description="1yr, 3yr, 5yr or all (default). Anything else is refused."),
    ] = "all",
    initiative_id: InitiativeFilter = None,
) -> RoiSummary:
    reading = reading_of(request)
    result = compute_roi(
        reading.db,
        reading.principal,
        window=window,
        initiative_id=initiative_id,
        today=reading.today,
    )
    f = result.figures
    return RoiSummary(
        scope=result.scope,
        period=result.period,
        currency=result.currency,
        approved_value_cents=f.approved_value_cents,
        total_cost_cents=f.total_cost_cents,
        net_value_cents=f.net_value_cents,
        roi=f.roi,
        cost=RoiCost(capex_cents=f.capex_cents, opex_cents=f.opex_cents),
    )
