"""The metric definitions as served (SPEC 2.5, 4.A.8): the row and its list."""

from typing import Annotated, Any

import msgspec
from sqlalchemy import select

from airoi.db.tables import metrics
from airoi.listing import ListQuery, ResumablePageInfo, changed_since
from airoi.reports.fields import CreatedAt, Id, UpdatedAt, note, text_datetime
from airoi.rows import Row


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
