"""GET /observations (SPEC 2.6, 4.A.9)."""

from datetime import date
from typing import Annotated, Any

import msgspec
from litestar import get
from litestar.params import Parameter
from sqlalchemy import select

from airoi.api.common import (
    ERROR_RESPONSES,
    Cursor,
    DateTimeText,
    DbDep,
    InitiativeFilter,
    Limit,
    PrincipalDep,
    Source,
    UpdatedSince,
    account_rows,
    source_of,
    text_datetime,
)
from airoi.db.tables import observations
from airoi.listing import PageInfo, fetch_page


class Observation(msgspec.Struct):
    id: int
    metric_id: int | None
    metric_key: str | None
    initiative_id: int | None
    value: float | None
    role: str | None
    baseline_method: str | None
    observed_at: DateTimeText | None
    period_start: date | None
    period_end: date | None
    is_estimated: bool
    sample_size: int | None
    quality_score: float | None
    source: Source
    created_at: DateTimeText
    updated_at: DateTimeText


class ObservationList(msgspec.Struct):
    data: list[Observation]
    page: PageInfo


def build_observation(row: Any) -> Observation:
    return Observation(
        id=row.id,
        metric_id=row.metric_id,
        metric_key=row.metric_key,
        initiative_id=row.initiative_id,
        value=row.value,
        role=row.role,
        baseline_method=row.baseline_method,
        observed_at=text_datetime(row.observed_at),
        period_start=row.period_start,
        period_end=row.period_end,
        is_estimated=row.is_estimated,
        sample_size=row.sample_size,
        quality_score=row.quality_score,
        source=source_of(row),
        created_at=text_datetime(row.created_at) or "",
        updated_at=text_datetime(row.updated_at) or "",
    )


@get(
    "/observations",
    operation_id="listObservations",
    summary="List metric observations",
    description="Readings and baselines of the account's metrics, oldest change first.",
    responses=ERROR_RESPONSES,
    sync_to_thread=False,
)
def list_observations(
    principal: PrincipalDep,
    db: DbDep,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    initiative_id: InitiativeFilter = None,
    metric_key: Annotated[
        str | None,
        Parameter(
            description="Only readings of the metric with this canonical key.", max_length=200
        ),
    ] = None,
) -> ObservationList:
    query = account_rows(
        db,
        principal,
        select(observations),
        observations,
        updated_since=updated_since,
        initiative_id=initiative_id,
    )
    if metric_key is not None:
        query = query.where(observations.c.metric_key == metric_key)
    page = fetch_page(
        db, "observations", query, observations, cursor=cursor, limit=limit, build=build_observation
    )
    return ObservationList(data=list(page.rows), page=page.info)
