"""The initiatives as served (SPEC 2.2, 4.A.4, 4.A.5): the row, its list and one by id."""

from typing import Annotated, Any

import msgspec
from sqlalchemy import Connection, Select, select

from airoi.db.tables import initiatives, users
from airoi.listing import (
    ListQuery,
    ResumablePageInfo,
    changed_since,
)
from airoi.reports.fields import (
    Cents,
    CreatedAt,
    DateTimeText,
    Id,
    Int64,
    Person,
    UpdatedAt,
    note,
    person,
    text_datetime,
)
from airoi.rows import Row
from airoi.vocabulary import RolledUpStatus, Stage


class Initiative(Row):
    id: Id
    title: str
    description: str | None
    hypothesis: str | None
    stage: Annotated[Stage, note("Where the initiative stands (SPEC 3).")]
    is_sample: Annotated[bool, note("Provisioned demo data.")]
    category: str | None
    priority: Annotated[Int64 | None, note("Lower is higher priority.")]
    source: Annotated[str | None, note("How the initiative came to exist.")]
    business_unit: str | None
    department: str | None
    gl_dimension_value: str | None
    owner: Annotated[Person | None, note("The owner, by name only.")]
    confidence_score: float | None
    roi_time_horizon_years: Int64 | None
    currency: Annotated[str | None, note("ISO 4217 code of the expected_* amounts.", "USD")]
    expected_capex_cents: Annotated[Cents | None, note("Business case, in cents, in currency.")]
    expected_opex_cents: Annotated[Cents | None, note("Same as expected_capex_cents.")]
    expected_cost_savings_cents: Annotated[Cents | None, note("Same as expected_capex_cents.")]
    expected_revenue_uplift_cents: Annotated[Cents | None, note("Same as expected_capex_cents.")]
    started_at: Annotated[DateTimeText | None, note("When work on it started.")]
    went_live_at: Annotated[DateTimeText | None, note("When it went live.")]
    approved_at: Annotated[DateTimeText | None, note("When it was approved.")]
    closed_at: Annotated[
        DateTimeText | None, note("When it was closed (completed, rejected or dismissed).")
    ]
    submitted_for_review_at: Annotated[
        DateTimeText | None, note("When it was submitted for review.")
    ]
    created_at: CreatedAt
    updated_at: UpdatedAt


class InitiativeList(msgspec.Struct):
    data: list[Initiative]
    page: ResumablePageInfo


owner = users.alias("owner")

_columns = [c for c in initiatives.c if c.name not in ("account_id",)]


def initiative_query() -> Select[Any]:
    return select(*_columns, owner.c.name.label("owner_name")).outerjoin(
        owner, owner.c.id == initiatives.c.owner_id
    )


def build_initiative(row: Any) -> Initiative:
    return Initiative(
        id=row.id,
        title=row.title,
        description=row.description,
        hypothesis=row.hypothesis,
        stage=row.stage,
        is_sample=row.is_sample,
        category=row.category,
        priority=row.priority,
        source=row.source,
        business_unit=row.business_unit,
        department=row.department,
        gl_dimension_value=row.gl_dimension_value,
        owner=person(row.owner_id, row.owner_name),
        confidence_score=row.confidence_score,
        roi_time_horizon_years=row.roi_time_horizon_years,
        currency=row.currency,
        expected_capex_cents=row.expected_capex_cents,
        expected_opex_cents=row.expected_opex_cents,
        expected_cost_savings_cents=row.expected_cost_savings_cents,
        expected_revenue_uplift_cents=row.expected_revenue_uplift_cents,
        started_at=text_datetime(row.started_at),
        went_live_at=text_datetime(row.went_live_at),
        approved_at=text_datetime(row.approved_at),
        closed_at=text_datetime(row.closed_at),
        submitted_for_review_at=text_datetime(row.submitted_for_review_at),
        created_at=text_datetime(row.created_at) or "",
        updated_at=text_datetime(row.updated_at) or "",
    )


INITIATIVES = ListQuery(
    "initiatives",
    initiative_query(),
    initiatives,
    {
        "updated_since": changed_since(initiatives),
        "without_samples": initiatives.c.is_sample.is_(False),
    },
)


def initiative_of(db: Connection, account_id: int, initiative_id: int) -> Initiative | None:
    """The account's initiative `initiative_id` as served; None for any other id (a 404)."""
    row = db.execute(
        initiative_query().where(
            initiatives.c.id == initiative_id, initiatives.c.account_id == account_id
        )
    ).first()
    return None if row is None else build_initiative(row)


# SEMANTICS R26: the stages each rolled-up status stands for.
STATUS_STAGES: dict[str, tuple[str, ...]] = {
    "not_started": ("identified", "reviewing"),
    "active": ("implementing", "live"),
    "completed": ("completed",),
    "inactive": ("paused", "rejected", "dismissed"),
}
STAGE_STATUS: dict[str, RolledUpStatus] = {
    stage: status  # type: ignore[misc]
    for status, stages in STATUS_STAGES.items()
    for stage in stages
}


def rolled_up(stage: str) -> RolledUpStatus:
    """SEMANTICS R26: the status a stage rolls up to."""
    return STAGE_STATUS[stage]
