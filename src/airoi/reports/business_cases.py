"""Business cases against actuals: one row per initiative, its plan (the `expected_*` fields
over its horizon) beside what it has cost and delivered to date (SEMANTICS R43-R45).

The entries are summed by month in the row's currency (reports/monthly.py); finance/
finishes each row exactly.
"""

from collections import defaultdict
from collections.abc import Sequence
from datetime import date, datetime
from typing import Annotated, Any

import msgspec
from sqlalchemy import Connection, bindparam, func, select, union_all

from airoi.auth import Principal
from airoi.db.tables import cost_entries, initiatives, value_entries
from airoi.finance.business_cases import MonthActuals, Plan, business_case_figures
from airoi.listing import PageInfo, ShapedList
from airoi.reports.budgets import BudgetSubject
from airoi.reports.fields import INITIATIVE_MUST_EXIST, Cents, Id, Int64, note
from airoi.reports.monthly import monthly_sums
from airoi.rows import Row, Shape

_NO_CASE = " Null when has_business_case is false."
_DUE_NULL = (
    " Null when has_business_case is false, or horizon_years is null or not a positive number."
)


class BusinessCaseRow(Row):
    initiative_id: Id
    currency: Annotated[
        str,
        note("ISO 4217 code of every amount: the initiative's currency, else the account's."),
    ]
    as_of: Annotated[date, note("The day the plan is held against the actuals (today).")]
    has_business_case: Annotated[
        bool,
        note(
            "Whether the initiative has a business case: at least one of its expected capex, "
            "opex, cost savings and revenue uplift is filled in."
        ),
    ]
    horizon_years: Annotated[
        Int64 | None,
        note("The initiative's roi_time_horizon_years: the years the plan's totals cover."),
    ]
    planned_capex_cents: Annotated[
        Cents | None, note("The business case's capex over the horizon." + _NO_CASE)
    ]
    planned_opex_cents: Annotated[
        Cents | None, note("The business case's opex over the horizon." + _NO_CASE)
    ]
    planned_cost_cents: Annotated[
        Cents | None, note("planned_capex_cents + planned_opex_cents." + _NO_CASE)
    ]
    planned_value_cents: Annotated[
        Cents | None,
        note("Expected cost savings plus expected revenue uplift over the horizon." + _NO_CASE),
    ]
    planned_net_value_cents: Annotated[
        Cents | None, note("planned_value_cents − planned_cost_cents." + _NO_CASE)
    ]
    planned_roi: Annotated[
        float | None,
        note(
            "Planned net value over planned cost; null when planned cost is 0 or "
            "has_business_case is false."
        ),
    ]
    plan_started_on: Annotated[
        date | None,
        note(
            "First day of the month the initiative went live, where the plan starts; null "
            "until it has gone live, and when has_business_case is false."
        ),
    ]
    months_elapsed: Annotated[
        Int64,
        note(
            "Months of the plan from its start month through the current month, both "
            "included, at most the horizon's; 0 until the initiative has gone live."
        ),
    ]
    planned_value_to_date_cents: Annotated[
        Cents | None,
        note(
            "The value the plan should have delivered by now: planned value × months_elapsed "
            "/ the horizon's months, rounded half to even once; 0 before the plan starts."
            + _DUE_NULL
        ),
    ]
    planned_cost_to_date_cents: Annotated[
        Cents | None,
        note(
            "What the plan should have cost by now: planned capex (at once) plus planned "
            "opex × months_elapsed / the horizon's months, rounded half to even once; 0 "
            "before the plan starts." + _DUE_NULL
        ),
    ]
    approved_value_to_date_cents: Annotated[
        Cents, note("Approved value entries dated on or before as_of.")
    ]
    capex_to_date_cents: Annotated[Cents, note("Capex cost entries dated on or before as_of.")]
    opex_to_date_cents: Annotated[Cents, note("Opex cost entries dated on or before as_of.")]
    cost_to_date_cents: Annotated[Cents, note("capex_to_date_cents + opex_to_date_cents.")]
    net_value_to_date_cents: Annotated[
        Cents, note("approved_value_to_date_cents − cost_to_date_cents.")
    ]
    roi_to_date: Annotated[
        float | None,
        note("Net value to date over cost to date; null when cost to date is 0."),
    ]
    value_realization_ratio: Annotated[
        float | None,
        note(
            "Approved value to date over planned value to date: 1.0 means the value promised by "
            "now has arrived; null when planned value to date is null or 0."
        ),
    ]
    payback_month: Annotated[
        date | None,
        note(
            "First day of the earliest month from which the cumulative net (approved value "
            "minus cost, of the entries dated to the end of each month) stays at or above 0 "
            "through the current month; null when there is no cost to date or the cumulative "
            "net is below 0 now."
        ),
    ]


class BusinessCaseList(msgspec.Struct):
    data: list[BusinessCaseRow]
    page: PageInfo


def _plans(db: Connection, ids: Sequence[int]) -> dict[int, Plan]:
    rows = db.execute(
        select(
            initiatives.c.id,
            initiatives.c.expected_capex_cents,
            initiatives.c.expected_opex_cents,
            initiatives.c.expected_cost_savings_cents,
            initiatives.c.expected_revenue_uplift_cents,
            initiatives.c.roi_time_horizon_years,
            initiatives.c.went_live_at,
        ).where(initiatives.c.id.in_(ids))
    )
    plans: dict[int, Plan] = {}
    for initiative_id, capex, opex, savings, uplift, years, went_live_at in rows:
        live: datetime | None = went_live_at
        plans[initiative_id] = Plan(
            expected_capex_cents=capex,
            expected_opex_cents=opex,
            expected_cost_savings_cents=savings,
            expected_revenue_uplift_cents=uplift,
            roi_time_horizon_years=years,
            went_live_on=None if live is None else live.date(),
        )
    return plans


def _first_months(db: Connection, ids: Sequence[int], today: date) -> dict[int, date]:
    """Each initiative's earliest month with an entry (cost or value, any status) dated on or
    before today: where R45's months begin."""
    parts = [
        select(table.c.initiative_id, func.min(table.c.entry_month).label("month"))
        .where(table.c.initiative_id.in_(ids), table.c.entry_date <= today)
        .group_by(table.c.initiative_id)
        for table in (cost_entries, value_entries)
    ]
    first: dict[int, date] = {}
    for initiative_id, month in db.execute(union_all(*parts)):
        if month is not None and (initiative_id not in first or month < first[initiative_id]):
            first[initiative_id] = month
    return first


def compute_business_case_rows(
    db: Connection, principal: Principal, initiative_rows: Sequence[Any], today: date
) -> list[BusinessCaseRow]:
    """The rows of the given initiatives (each with .id and .currency), in their order."""
    if not initiative_rows:
        return []
    currencies = {row.id: row.currency or principal.account_currency for row in initiative_rows}
    ids = list(currencies)
    plans = _plans(db, ids)
    cost = monthly_sums(
        db, principal, cost_entries, currencies, today, by=cost_entries.c.cost_category
    )
    value = monthly_sums(
        db, principal, value_entries, currencies, today, where=value_entries.c.status == "approved"
    )
    first = _first_months(db, ids, today)
    rows = []
    for initiative_id, currency in currencies.items():
        parts: dict[date, dict[str, int]] = defaultdict(dict)
        for (month, category), cents in cost.get(initiative_id, {}).items():
            parts[month][f"{category}_cents"] = cents
        for (month, _), cents in value.get(initiative_id, {}).items():
            parts[month]["approved_value_cents"] = cents
        months = {month: MonthActuals(**sums) for month, sums in parts.items()}
        figures = business_case_figures(
            plans[initiative_id], months, first.get(initiative_id), today
        )
        rows.append(
            BusinessCaseRow(
                initiative_id=initiative_id,
                currency=currency,
                as_of=today,
                **{name: getattr(figures, name) for name in FIGURES},
            )
        )
    return rows


# The row's fields finance/business_cases.py computes: all but the three given here.
FIGURES: tuple[str, ...] = tuple(
    name
    for name in BusinessCaseRow.__struct_fields__
    if name not in {"initiative_id", "currency", "as_of"}
)

# The page walks initiatives, ordered as on /budgets; each row is then finished above.
BUSINESS_CASE_INITIATIVES = ShapedList(
    "business_cases",
    Shape(BudgetSubject, initiatives.c.id, initiatives.c.currency),
    initiatives,
    {
        "initiative_id": initiatives.c.id == bindparam("initiative_id"),
        "without_samples": initiatives.c.is_sample.is_(False),
    },
    must_exist=INITIATIVE_MUST_EXIST,
)
