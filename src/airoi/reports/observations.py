"""The metric readings as served (SPEC 2.6, 4.A.9): the row and its list."""

from datetime import date
from typing import Annotated

import msgspec
from sqlalchemy import bindparam

from airoi.db.tables import observations
from airoi.listing import ResumablePageInfo, ShapedList
from airoi.reports.fields import (
    INITIATIVE_MUST_EXIST,
    CreatedAt,
    DateTimeText,
    Id,
    Int64,
    Source,
    UpdatedAt,
    entry_filters,
    note,
    source_shape,
)
from airoi.rows import Row, Shape, iso_ms


class Observation(Row):
    id: Id
    metric_id: Annotated[Id | None, note("The metric read.")]
    metric_key: Annotated[str | None, note("The metric's canonical key.")]
    initiative_id: Annotated[Id | None, note("The initiative the reading is about.")]
    value: Annotated[
        float | None, note("The reading, in the metric's unit. Key always present; may be null.")
    ]
    role: Annotated[str | None, note("baseline or reading.")]
    baseline_method: Annotated[str | None, note("How a baseline was arrived at, when it is one.")]
    observed_at: Annotated[DateTimeText | None, note("When the reading was taken.")]
    period_start: date | None
    period_end: date | None
    is_estimated: bool
    sample_size: Annotated[Int64 | None, note("How many observations the reading summarises.")]
    quality_score: float | None
    source: Source
    created_at: CreatedAt
    updated_at: UpdatedAt


class ObservationList(msgspec.Struct):
    data: list[Observation]
    page: ResumablePageInfo


_c = observations.c
OBSERVATION = Shape(
    Observation,
    _c.id,
    _c.metric_id,
    _c.metric_key,
    _c.initiative_id,
    _c.value,
    _c.role,
    _c.baseline_method,
    iso_ms(_c.observed_at),
    _c.period_start,
    _c.period_end,
    _c.is_estimated,
    _c.sample_size,
    _c.quality_score,
    source_shape(observations),
    iso_ms(_c.created_at),
    iso_ms(_c.updated_at),
)
OBSERVATIONS = ShapedList(
    "observations",
    OBSERVATION,
    observations,
    {**entry_filters(observations), "metric_key": _c.metric_key == bindparam("metric_key")},
    must_exist=INITIATIVE_MUST_EXIST,
)
