"""GET /metrics (SPEC 2.5, 4.A.8)."""

from litestar import get

from airoi.api.common import (
    ERROR_RESPONSES,
    ApiOperation,
    ApiRequest,
    Cursor,
    Limit,
    UpdatedSince,
    reading_of,
)
from airoi.listing import parse_updated_since, served_rows
from airoi.reports.metrics import METRICS, MetricList
from airoi.store_access import keyset_page


@get(
    "/metrics",
    operation_id="listMetrics",
    summary="List metric definitions",
    description="The account's metric definitions, keyed by the registry's canonical metric_key.",
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Metrics"],
    # A keyset page: on the event loop on SQLite, in a worker thread otherwise (airoi.store_access).
)
@keyset_page
def list_metrics(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
) -> MetricList:
    reading = reading_of(request)
    page = METRICS.served(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        updated_since=parse_updated_since(updated_since),
    )
    return MetricList(data=served_rows(page), page=page.info)
