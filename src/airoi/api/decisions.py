"""GET /decisions (SPEC 2.8, 4.A.11)."""

from datetime import date
from typing import Annotated, Any, Literal

import msgspec
from litestar import get
from litestar.params import Parameter
from sqlalchemy import bindparam, select

from airoi.api.common import (
    ERROR_RESPONSES,
    INITIATIVE_MUST_EXIST,
    Cursor,
    CursorsDep,
    DateTimeText,
    DbDep,
    InitiativeFilter,
    Limit,
    Person,
    PrincipalDep,
    UpdatedSince,
    entry_filters,
    person,
    text_datetime,
)
from airoi.api.initiatives import Stage
from airoi.api.rows import Row
from airoi.db.tables import decisions, users
from airoi.listing import ListQuery, ResumablePageInfo, parse_updated_since

Outcome = Literal["continue", "scale", "fix", "pause", "retire"]

# SEMANTICS R14.
OUTCOME_LABELS: dict[str, str] = {
    "continue": "Continue",
    "scale": "Scale",
    "fix": "Fix",
    "pause": "Pause",
    "retire": "Retire",
}


class Decision(Row):
    id: int
    initiative_id: int | None
    subject_title: str
    outcome: Outcome
    outcome_label: str
    rationale: str
    stage_before: Stage
    stage_after: Stage
    stage_changed: bool
    decided_at: DateTimeText | None
    decided_by: Person | None
    next_review_on: date | None
    currency: str | None
    approved_value_cents: int | None
    cost_to_date_cents: int | None
    net_cents: int | None
    planned_value_cents: int | None
    planned_value_to_date_cents: int | None
    roi: float | None
    created_at: DateTimeText
    updated_at: DateTimeText


class DecisionList(msgspec.Struct):
    data: list[Decision]
    page: ResumablePageInfo


decider = users.alias("decider")


def build_decision(row: Any) -> Decision:
    return Decision(
        id=row.id,
        initiative_id=row.initiative_id,
        subject_title=row.subject_title,
        outcome=row.outcome,
        outcome_label=OUTCOME_LABELS[row.outcome],
        rationale=row.rationale,
        stage_before=row.stage_before,
        stage_after=row.stage_after,
        stage_changed=row.stage_before != row.stage_after,
        decided_at=text_datetime(row.decided_at),
        decided_by=person(row.decided_by_id, row.decided_by_name),
        next_review_on=row.next_review_on,
        currency=row.currency,
        approved_value_cents=row.approved_value_cents,
        cost_to_date_cents=row.cost_to_date_cents,
        net_cents=row.net_cents,
        planned_value_cents=row.planned_value_cents,
        planned_value_to_date_cents=row.planned_value_to_date_cents,
        roi=row.roi,
        created_at=text_datetime(row.created_at) or "",
        updated_at=text_datetime(row.updated_at) or "",
    )


DECISIONS = ListQuery(
    "decisions",
    select(decisions, decider.c.name.label("decided_by_name")).outerjoin(
        decider, decider.c.id == decisions.c.decided_by_id
    ),
    decisions,
    {**entry_filters(decisions), "outcome": decisions.c.outcome == bindparam("outcome")},
    must_exist=INITIATIVE_MUST_EXIST,
)


@get(
    "/decisions",
    operation_id="listDecisions",
    summary="List portfolio decisions",
    description=(
        "Portfolio decisions on initiatives, each immutable once written, with the figures as "
        "they stood at decision time (a snapshot, not a recomputation)."
    ),
    responses=ERROR_RESPONSES,
    sync_to_thread=True,  # its database work in a worker thread (airoi.store)
)
def list_decisions(
    principal: PrincipalDep,
    db: DbDep,
    cursors: CursorsDep,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    initiative_id: InitiativeFilter = None,
    outcome: Annotated[
        Outcome | None, Parameter(description="Only decisions with this outcome.")
    ] = None,
) -> DecisionList:
    page = DECISIONS.page(
        db,
        principal.account_id,
        cursors=cursors,
        cursor=cursor,
        limit=limit,
        build=build_decision,
        updated_since=parse_updated_since(updated_since),
        initiative_id=initiative_id,
        outcome=outcome,
    )
    return DecisionList(data=list(page.rows), page=page.info)
