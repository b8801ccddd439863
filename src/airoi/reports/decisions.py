"""The portfolio decisions as served (SPEC 2.8, 4.A.11): the row and its list."""

from datetime import date
from typing import Annotated, Any

import msgspec
from sqlalchemy import bindparam, select

from airoi.db.tables import decisions, users
from airoi.listing import ListQuery, ResumablePageInfo
from airoi.reports.fields import (
    INITIATIVE_MUST_EXIST,
    Cents,
    CreatedAt,
    DateTimeText,
    Id,
    Person,
    UpdatedAt,
    entry_filters,
    note,
    person,
    text_datetime,
)
from airoi.rows import Row
from airoi.vocabulary import Outcome, Stage

# SEMANTICS R14.
OUTCOME_LABELS: dict[str, str] = {
    "continue": "Continue",
    "scale": "Scale",
    "fix": "Fix",
    "pause": "Pause",
    "retire": "Retire",
}


class Decision(Row):
    id: Id
    initiative_id: Annotated[Id | None, note("Null when the initiative no longer exists.")]
    subject_title: Annotated[str, note("The initiative's title at decision time.")]
    outcome: Annotated[Outcome, note("continue, scale, fix, pause or retire.")]
    outcome_label: Annotated[str, note("Display wording of the outcome.")]
    rationale: Annotated[str, note("Always present.")]
    stage_before: Annotated[Stage, note("The initiative's stage before the decision.")]
    stage_after: Annotated[Stage, note("The initiative's stage after the decision.")]
    stage_changed: Annotated[
        bool,
        note(
            "Whether stage_before and stage_after differ; some outcomes leave the stage unchanged."
        ),
    ]
    decided_at: Annotated[
        DateTimeText | None,
        note("The date to report the decision under. Key always present; may be null."),
    ]
    decided_by: Annotated[Person | None, note("Who decided, by name only.")]
    next_review_on: Annotated[
        date | None, note("Suggested from the outcome; may be changed by the decider.")
    ]
    currency: Annotated[str | None, note("ISO 4217 code of the amounts.")]
    approved_value_cents: Annotated[
        Cents | None,
        note("Approved value at the moment of the decision (a snapshot, not a recomputation)."),
    ]
    cost_to_date_cents: Annotated[Cents | None, note("Cost to date at decision time.")]
    net_cents: Annotated[
        Cents | None, note("approved_value_cents minus cost_to_date_cents at decision time.")
    ]
    planned_value_cents: Annotated[Cents | None, note("Total promised by the business case.")]
    planned_value_to_date_cents: Annotated[
        Cents | None, note("The part of the plan due by the decision date.")
    ]
    roi: Annotated[float | None, note("Ratio at decision time; null when there was no cost.")]
    created_at: CreatedAt
    updated_at: UpdatedAt


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
