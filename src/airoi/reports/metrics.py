"""The metric definitions as served (SPEC 2.5, 4.A.8): the row and its list."""

from typing import Annotated

import msgspec

from airoi.db.tables import metrics
from airoi.listing import ResumablePageInfo, ShapedList, changed_since
from airoi.reports.fields import CreatedAt, Id, UpdatedAt, note
from airoi.rows import Row, Shape, iso_ms


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


_c = metrics.c
METRIC = Shape(
    Metric,
    _c.id,
    _c.metric_key,
    _c.name,
    _c.description,
    _c.metric_type,
    _c.unit,
    _c.currency_metric,
    _c.active,
    iso_ms(_c.created_at),
    iso_ms(_c.updated_at),
)
METRICS = ShapedList("metrics", METRIC, metrics, {"updated_since": changed_since(metrics)})
