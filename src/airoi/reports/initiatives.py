"""The initiatives as served (SPEC 2.2, 4.A.4, 4.A.5): the row, its list and one by id."""

from typing import Annotated

import msgspec
from sqlalchemy import Connection, bindparam, select

from airoi.db.tables import initiatives, users
from airoi.listing import ResumablePageInfo, ShapedList, changed_since
from airoi.reports.fields import (
    Cents,
    CreatedAt,
    DateTimeText,
    Id,
    Int64,
    Person,
    UpdatedAt,
    note,
    person_shape,
)
from airoi.rows import Row, Shape, iso_ms
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
_c = initiatives.c
INITIATIVE = Shape(
    Initiative,
    _c.id,
    _c.title,
    _c.description,
    _c.hypothesis,
    _c.stage,
    _c.is_sample,
    _c.category,
    _c.priority,
    _c.source,
    _c.business_unit,
    _c.department,
    _c.gl_dimension_value,
    person_shape(_c.owner_id, owner.c.name),
    _c.confidence_score,
    _c.roi_time_horizon_years,
    _c.currency,
    _c.expected_capex_cents,
    _c.expected_opex_cents,
    _c.expected_cost_savings_cents,
    _c.expected_revenue_uplift_cents,
    iso_ms(_c.started_at),
    iso_ms(_c.went_live_at),
    iso_ms(_c.approved_at),
    iso_ms(_c.closed_at),
    iso_ms(_c.submitted_for_review_at),
    iso_ms(_c.created_at),
    iso_ms(_c.updated_at),
)
# The owner's name, where the row names one.
_WITH_OWNER = initiatives.outerjoin(owner, owner.c.id == _c.owner_id)
INITIATIVES = ShapedList(
    "initiatives",
    INITIATIVE,
    initiatives,
    {
        "updated_since": changed_since(initiatives),
        "without_samples": _c.is_sample.is_(False),
    },
    source=_WITH_OWNER,
)

_ONE = (
    select(*INITIATIVE.columns)
    .select_from(_WITH_OWNER)
    .where(_c.id == bindparam("id"), _c.account_id == bindparam("account_id"))
)
# The executed row's values are processed already (SQLite's 0/1 made a boolean).
_build = INITIATIVE.builder()


def initiative_of(db: Connection, account_id: int, initiative_id: int) -> Initiative | None:
    """The account's initiative `initiative_id` as served; None for any other id (a 404)."""
    row = db.execute(_ONE, {"id": initiative_id, "account_id": account_id}).first()
    return None if row is None else _build([row])[0]


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
