"""GET /metrics (SPEC 2.5, 4.A.8)."""

from typing import Annotated, Any

import msgspec
from litestar import get
from sqlalchemy import select

from airoi.api.common import (
    ERROR_RESPONSES,
    ApiOperation,
    ApiRequest,
    CreatedAt,
    Cursor,
    Id,
    Limit,
    UpdatedAt,
    UpdatedSince,
    note,
    reading_of,
    text_datetime,
)
from airoi.db.tables import metrics
from airoi.listing import ListQuery, ResumablePageInfo, changed_since, parse_updated_since
from airoi.rows import Row
from airoi.store import keyset_page


class Metric(Row):
    id: Id
    metric_key: Annotated[str, note("Canonical key as the metric registry spells it.")]
    name: str
    description: str | None
    metric_type: Annotated[str | None, note("For example count, duration, percentage, currency.")]
    unit: str | None
    currency_metric: Annotated[bool, note("Whether readings are money.")]
    active: Annotated[bool, note("Whether the metric is in use.")]
    created_at: CreatedAt
    updated_at: UpdatedAt


class MetricList(msgspec.Struct):
    data: list[Metric]
    page: ResumablePageInfo


def build_metric(row: Any) -> Metric:
    return Metric(
        id=row.id,
        metric_key=row.metric_key,
        name=row.name,
        description=row.description,
        metric_type=row.metric_type,
        unit=row.unit,
        currency_metric=row.currency_metric,
        active=row.active,
        created_at=text_datetime(row.created_at) or "",
        updated_at=text_datetime(row.updated_at) or "",
    )


METRICS = ListQuery(
    "metrics",
    select(metrics),
    metrics,
    {"updated_since": changed_since(metrics)},
)


@get(
    "/metrics",
    operation_id="listMetrics",
    summary="List metric definitions",
    description="The account's metric definitions, keyed by the registry's canonical metric_key.",
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Metrics"],
    # A keyset page: on the event loop on SQLite, in a worker thread otherwise (airoi.store).
)
@keyset_page
def list_metrics(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
) -> MetricList:
    reading = reading_of(request)
    page = METRICS.page(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        build=build_metric,
        updated_since=parse_updated_since(updated_since),
    )
    return MetricList(data=list(page.rows), page=page.info)
