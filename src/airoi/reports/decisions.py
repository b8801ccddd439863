"""The portfolio decisions as served (SPEC 2.8, 4.A.11): the row and its list."""

from datetime import date
from typing import Annotated

import msgspec
from sqlalchemy import bindparam, case

from airoi.db.tables import decisions, users
from airoi.listing import ResumablePageInfo, ShapedList
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
    person_shape,
)
from airoi.rows import Row, Shape, iso_ms
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
_c = decisions.c
DECISION = Shape(
    Decision,
    _c.id,
    _c.initiative_id,
    _c.subject_title,
    _c.outcome,
    # SEMANTICS R14: the outcome's wording.
    case(OUTCOME_LABELS, value=_c.outcome),
    _c.rationale,
    _c.stage_before,
    _c.stage_after,
    _c.stage_before != _c.stage_after,
    iso_ms(_c.decided_at),
    person_shape(_c.decided_by_id, decider.c.name),
    _c.next_review_on,
    _c.currency,
    _c.approved_value_cents,
    _c.cost_to_date_cents,
    _c.net_cents,
    _c.planned_value_cents,
    _c.planned_value_to_date_cents,
    _c.roi,
    iso_ms(_c.created_at),
    iso_ms(_c.updated_at),
)
DECISIONS = ShapedList(
    "decisions",
    DECISION,
    decisions,
    {**entry_filters(decisions), "outcome": _c.outcome == bindparam("outcome")},
    must_exist=INITIATIVE_MUST_EXIST,
    source=decisions.outerjoin(decider, decider.c.id == _c.decided_by_id),
)
