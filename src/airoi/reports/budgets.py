"""Budgets against spend: one row per initiative, its approved budget beside its spend
(SPEC 2.7, 4.A.10).

Costs are summed in SQL by (initiative, month, category) over amounts converted into the
account currency on write; an initiative whose currency differs from the account's has
its entries converted one by one (SEMANTICS R4, R5). The rules R16-R25 are finished in
finance/budgets.py.
"""

import dataclasses
from collections import defaultdict
from collections.abc import Sequence
from datetime import date
from typing import Annotated, Any, Literal

import msgspec
from sqlalchemy import Connection, bindparam, select

from airoi.auth import Principal
from airoi.db.tables import budget_versions, cost_entries, initiatives, users
from airoi.finance.budgets import BudgetFigures, BudgetVersion, budget_figures
from airoi.listing import PageInfo, ShapedList
from airoi.reports.fields import INITIATIVE_MUST_EXIST, Cents, Id, Int64, Person, note, person
from airoi.reports.monthly import monthly_sums
from airoi.rows import Row, Shape
from airoi.vocabulary import BudgetSource, CostCategory, OpexCadence

BudgetStatus = Literal["no_budget", "scheduled", "within", "over"]
ProjectedStatus = Literal["no_budget", "within", "over"]


class CurrentVersion(Row):
    id: Id
    effective_from: Annotated[
        date, note("Applies from the whole month containing this date; no day proration.")
    ]
    ends_on: Annotated[date | None, note("Last month covered, whole-month.")]
    capex_cents: Annotated[Cents, note("One-off total, not accrued.")]
    opex_cents: Annotated[Cents, note("A rate per opex_cadence.")]
    opex_cadence: OpexCadence
    source: BudgetSource
    reason: Annotated[str | None, note("Words of whoever set it.")]
    set_by: Annotated[Person | None, note("Who set it, by name only.")]


class BudgetRow(Row):
    initiative_id: Id
    budgeted: Annotated[
        bool,
        note(
            "Whether an approved budget exists. When false, the figures compare spend against "
            "nothing and the row belongs out of any variance total."
        ),
    ]
    status: Annotated[
        BudgetStatus,
        note(
            "no_budget, scheduled (a budget exists but has not started), within or over. over when"
            " either the capex half or the opex half is over."
        ),
    ]
    over_parts: Annotated[list[CostCategory], note("Which half is over when status is over.")]
    currency: Annotated[str | None, note("ISO 4217 code of the amounts.")]
    as_of: Annotated[date, note("The day the comparison was made (today).")]
    capex_budget_cents: Annotated[Cents, note("The current version's envelope.")]
    capex_actual_cents: Annotated[
        Cents, note("Capex spent since the budget began; zero when budgeted is false.")
    ]
    capex_remaining_cents: Annotated[Cents, note("Negative when the envelope is exceeded.")]
    opex_budget_to_date_cents: Annotated[
        Cents,
        note(
            "Each month's rate summed from the month the budget began through the current month, "
            "at whichever version covered each month; a revision changes later months and never "
            "restates earlier ones."
        ),
    ]
    opex_actual_cents: Annotated[
        Cents, note("Opex spent since the budget began; zero when budgeted is false.")
    ]
    budget_monthly_run_rate_cents: Annotated[
        Cents, note("The current version's rate as a monthly figure.")
    ]
    actual_monthly_run_rate_cents: Annotated[
        Cents | None,
        note(
            "Average over the last 3 complete months the budget covered; null until one complete "
            "month has passed."
        ),
    ]
    budget_to_date_cents: Annotated[Cents, note("Capex envelope plus opex to date.")]
    actual_to_date_cents: Annotated[
        Cents,
        note(
            "Zero when budgeted is false. Total spend of an unbudgeted initiative is read from the"
            " cost entries list."
        ),
    ]
    variance_cents: Annotated[
        Cents, note("budget_to_date_cents minus actual_to_date_cents; positive means under budget.")
    ]
    used_ratio: Annotated[
        float | None,
        note("Actual over budget to date; null when there is no budget to date to divide by."),
    ]
    spent_before_budget_cents: Annotated[
        Cents,
        note(
            "Spend dated before the month the budget began; reported apart and in neither figure "
            "above."
        ),
    ]
    opex_budget_fiscal_year_cents: Annotated[Cents, note("The whole fiscal year's opex budget.")]
    opex_budget_fiscal_ytd_cents: Annotated[Cents, note("The part of it through as_of.")]
    opex_actual_fiscal_ytd_cents: Annotated[
        Cents, note("Opex spent in the fiscal year through as_of.")
    ]
    budget_started_on: Annotated[
        date | None, note("The month the first approved version took effect.")
    ]
    revised: Annotated[bool, note("Changed since first approved.")]
    version_count: Annotated[Int64, note("How many versions the budget has had.")]
    revision_pending: Annotated[
        bool,
        note(
            "A revision awaits the account Owner because it would put the budget above the "
            "account's approval threshold; the figures shown remain the approved ones."
        ),
    ]
    current_version: Annotated[
        CurrentVersion | None,
        note(
            "The approved version in effect; null when there is no budget yet or every version "
            "starts in a later month."
        ),
    ]
    # SEMANTICS R46: added after the fields of version 1.
    projected_opex_fiscal_year_cents: Annotated[
        Cents | None,
        note(
            "Opex spent in the fiscal year through as_of plus actual_monthly_run_rate_cents for "
            "each month of the fiscal year after the current month; null when the run rate is "
            "null."
        ),
    ]
    projected_fiscal_year_variance_cents: Annotated[
        Cents | None,
        note(
            "opex_budget_fiscal_year_cents minus projected_opex_fiscal_year_cents; negative means "
            "the projection is over the fiscal year's opex budget; null with the projection."
        ),
    ]
    projected_fiscal_year_status: Annotated[
        ProjectedStatus | None,
        note(
            "no_budget when budgeted is false; null when the projection is null; over when the "
            "projection is above opex_budget_fiscal_year_cents; else within."
        ),
    ]


class BudgetList(msgspec.Struct):
    data: list[BudgetRow]
    page: PageInfo


def _versions(
    db: Connection, ids: Sequence[int]
) -> tuple[dict[int, list[BudgetVersion]], dict[int, str]]:
    by_initiative: dict[int, list[BudgetVersion]] = defaultdict(list)
    names: dict[int, str] = {}
    setter = users.alias("setter")
    rows = db.execute(
        select(budget_versions, setter.c.name.label("set_by_name"))
        .outerjoin(setter, setter.c.id == budget_versions.c.set_by_id)
        .where(budget_versions.c.initiative_id.in_(ids))
    )
    for row in rows:
        by_initiative[row.initiative_id].append(
            BudgetVersion(
                id=row.id,
                effective_from=row.effective_from,
                ends_on=row.ends_on,
                capex_cents=row.capex_cents,
                opex_cents=row.opex_cents,
                opex_cadence=row.opex_cadence,
                status=row.status,
                approved_at=row.approved_at,
                source=row.source,
                reason=row.reason,
                set_by_id=row.set_by_id,
            )
        )
        if row.set_by_id is not None:
            names[row.set_by_id] = row.set_by_name
    return by_initiative, names


def _current_version(version: BudgetVersion | None, names: dict[int, str]) -> CurrentVersion | None:
    if version is None:
        return None
    return CurrentVersion(
        id=version.id,
        effective_from=version.effective_from,
        ends_on=version.ends_on,
        capex_cents=version.capex_cents,
        opex_cents=version.opex_cents,
        opex_cadence=version.opex_cadence,  # type: ignore[arg-type]
        source=version.source,  # type: ignore[arg-type]
        reason=version.reason,
        set_by=person(version.set_by_id, names.get(version.set_by_id or 0)),
    )


# The row's fields finance/budgets.py computes: all but the three the row is given here.
FIGURES: tuple[str, ...] = tuple(field.name for field in dataclasses.fields(BudgetFigures))


def budget_row(
    initiative_id: int, currency: str, figures: BudgetFigures, today: date, names: dict[int, str]
) -> BudgetRow:
    computed = {name: getattr(figures, name) for name in FIGURES}
    computed["over_parts"] = list(figures.over_parts)
    computed["current_version"] = _current_version(figures.current_version, names)
    return BudgetRow(initiative_id=initiative_id, currency=currency, as_of=today, **computed)


def compute_budget_rows(
    db: Connection, principal: Principal, initiative_rows: Sequence[Any], today: date
) -> list[BudgetRow]:
    """The budget rows of the given initiatives (each with .id and .currency), in their order."""
    if not initiative_rows:
        return []
    currencies = {row.id: row.currency or principal.account_currency for row in initiative_rows}
    versions, names = _versions(db, list(currencies))
    costs = monthly_sums(
        db, principal, cost_entries, currencies, today, by=cost_entries.c.cost_category
    )
    return [
        budget_row(
            row.id,
            currencies[row.id],
            budget_figures(
                versions.get(row.id, []),
                costs.get(row.id, {}),
                today,
                principal.fiscal_year_start_month,
            ),
            today,
            names,
        )
        for row in initiative_rows
    ]


class BudgetSubject(Row):
    """What a budget row is computed for: an initiative and the currency of its figures
    (the account's where it has none)."""

    id: int
    currency: str | None


# The page walks initiatives; each row is then finished by compute_budget_rows.
BUDGET_INITIATIVES = ShapedList(
    "budgets",
    Shape(BudgetSubject, initiatives.c.id, initiatives.c.currency),
    initiatives,
    {
        "initiative_id": initiatives.c.id == bindparam("initiative_id"),
        "without_samples": initiatives.c.is_sample.is_(False),
    },
    must_exist=INITIATIVE_MUST_EXIST,
)
