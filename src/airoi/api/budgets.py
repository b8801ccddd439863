"""GET /budgets: one row per initiative comparing its approved budget with spend (SPEC 2.7, 4.A.10).

Costs are summed in SQL by (initiative, month, category) over amounts converted into the
account currency on write; an initiative whose currency differs from the account's has
its entries converted one by one (SEMANTICS R4, R5). The rules R16-R25 are finished in
finance/budgets.py.
"""

from collections import defaultdict
from collections.abc import Sequence
from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal

import msgspec
from litestar import get
from litestar.params import Parameter
from sqlalchemy import Connection, bindparam, func, select

from airoi.api.common import (
    ERROR_RESPONSES,
    INITIATIVE_MUST_EXIST,
    Cursor,
    CursorsDep,
    DbDep,
    IncludeSample,
    InitiativeFilter,
    Limit,
    Person,
    PrincipalDep,
    Today,
    person,
)
from airoi.api.rows import Row
from airoi.auth import Principal
from airoi.db.tables import budget_versions, cost_entries, fx_rates, initiatives, users
from airoi.finance.budgets import BudgetFigures, BudgetVersion, budget_figures
from airoi.finance.money import FxTable
from airoi.listing import ListQuery, PageInfo

BudgetStatus = Literal["no_budget", "scheduled", "within", "over"]


class CurrentVersion(Row):
    id: int
    effective_from: date
    ends_on: date | None
    capex_cents: int
    opex_cents: int
    opex_cadence: Literal["monthly", "quarterly", "annually"]
    source: Literal["approval", "revision", "manual"]
    reason: str | None
    set_by: Person | None


class BudgetRow(Row):
    initiative_id: int
    budgeted: bool
    status: BudgetStatus
    over_parts: list[Literal["capex", "opex"]]
    currency: str | None
    as_of: date
    capex_budget_cents: int
    capex_actual_cents: int
    capex_remaining_cents: int
    opex_budget_to_date_cents: int
    opex_actual_cents: int
    budget_monthly_run_rate_cents: int
    actual_monthly_run_rate_cents: int | None
    budget_to_date_cents: int
    actual_to_date_cents: int
    variance_cents: int
    used_ratio: float | None
    spent_before_budget_cents: int
    opex_budget_fiscal_year_cents: int
    opex_budget_fiscal_ytd_cents: int
    opex_actual_fiscal_ytd_cents: int
    budget_started_on: date | None
    revised: bool
    version_count: int
    revision_pending: bool
    current_version: CurrentVersion | None


class BudgetList(msgspec.Struct):
    data: list[BudgetRow]
    page: PageInfo


def account_fx(db: Connection, principal: Principal) -> FxTable:
    rates: dict[str, list[tuple[date, Decimal]]] = defaultdict(list)
    for currency, effective_from, rate in db.execute(
        select(fx_rates.c.currency, fx_rates.c.effective_from, fx_rates.c.rate).where(
            fx_rates.c.account_id == principal.account_id
        )
    ):
        rates[currency].append((effective_from, Decimal(rate)))
    return FxTable(principal.account_currency, rates)


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


def _costs(
    db: Connection, principal: Principal, currencies: dict[int, str], today: date
) -> dict[int, dict[tuple[date, str], int]]:
    """Spend dated on or before today, by (month, category), in each row's currency (R21)."""
    costs: dict[int, dict[tuple[date, str], int]] = defaultdict(lambda: defaultdict(int))
    same = [i for i, c in currencies.items() if c == principal.account_currency]
    other = [i for i, c in currencies.items() if c != principal.account_currency]
    if same:
        rows = db.execute(
            select(
                cost_entries.c.initiative_id,
                cost_entries.c.entry_month,
                cost_entries.c.cost_category,
                func.sum(cost_entries.c.account_amount_cents),
            )
            .where(cost_entries.c.initiative_id.in_(same), cost_entries.c.entry_date <= today)
            .group_by(
                cost_entries.c.initiative_id,
                cost_entries.c.entry_month,
                cost_entries.c.cost_category,
            )
        )
        for initiative_id, month, category, cents in rows:
            costs[initiative_id][(month, category)] += int(cents or 0)
    if other:
        fx = account_fx(db, principal)
        entries = db.execute(
            select(
                cost_entries.c.initiative_id,
                cost_entries.c.entry_date,
                cost_entries.c.entry_month,
                cost_entries.c.cost_category,
                cost_entries.c.amount_cents,
                cost_entries.c.currency,
            ).where(
                cost_entries.c.initiative_id.in_(other),
                cost_entries.c.entry_date <= today,
                cost_entries.c.amount_cents.is_not(None),
            )
        )
        for initiative_id, day, month, category, amount, currency in entries:
            converted = fx.convert(amount, currency, day, currencies[initiative_id])
            costs[initiative_id][(month, category)] += converted
    return costs


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


def budget_row(
    initiative_id: int, currency: str, figures: BudgetFigures, today: date, names: dict[int, str]
) -> BudgetRow:
    f = figures
    return BudgetRow(
        initiative_id=initiative_id,
        budgeted=f.budgeted,
        status=f.status,  # type: ignore[arg-type]
        over_parts=list(f.over_parts),  # type: ignore[arg-type]
        currency=currency,
        as_of=today,
        capex_budget_cents=f.capex_budget_cents,
        capex_actual_cents=f.capex_actual_cents,
        capex_remaining_cents=f.capex_remaining_cents,
        opex_budget_to_date_cents=f.opex_budget_to_date_cents,
        opex_actual_cents=f.opex_actual_cents,
        budget_monthly_run_rate_cents=f.budget_monthly_run_rate_cents,
        actual_monthly_run_rate_cents=f.actual_monthly_run_rate_cents,
        budget_to_date_cents=f.budget_to_date_cents,
        actual_to_date_cents=f.actual_to_date_cents,
        variance_cents=f.variance_cents,
        used_ratio=f.used_ratio,
        spent_before_budget_cents=f.spent_before_budget_cents,
        opex_budget_fiscal_year_cents=f.opex_budget_fiscal_year_cents,
        opex_budget_fiscal_ytd_cents=f.opex_budget_fiscal_ytd_cents,
        opex_actual_fiscal_ytd_cents=f.opex_actual_fiscal_ytd_cents,
        budget_started_on=f.budget_started_on,
        revised=f.revised,
        version_count=f.version_count,
        revision_pending=f.revision_pending,
        current_version=_current_version(f.current_version, names),
    )


def compute_budget_rows(
    db: Connection, principal: Principal, initiative_rows: Sequence[Any], today: date
) -> list[BudgetRow]:
    """The budget rows of the given initiatives (each with .id and .currency), in their order."""
    if not initiative_rows:
        return []
    currencies = {row.id: row.currency or principal.account_currency for row in initiative_rows}
    versions, names = _versions(db, list(currencies))
    costs = _costs(db, principal, currencies, today)
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


# The page walks initiatives; each row is then finished by compute_budget_rows.
BUDGET_INITIATIVES = ListQuery(
    "budgets",
    select(initiatives.c.id, initiatives.c.currency, initiatives.c.updated_at),
    initiatives,
    {
        "initiative_id": initiatives.c.id == bindparam("initiative_id"),
        "without_samples": initiatives.c.is_sample.is_(False),
    },
    must_exist=INITIATIVE_MUST_EXIST,
)


@get(
    "/budgets",
    operation_id="listBudgets",
    summary="List budgets against spend",
    description=(
        "One row per initiative (including initiatives without a budget), comparing the "
        "approved budget with spend as of today, ordered oldest change first by the "
        "initiative. With budgeted=true only initiatives with an approved budget are kept, "
        "after the comparison, so a page may hold fewer rows than limit while has_more is true. "
        "Sample initiatives are left out unless include_sample=true or initiative_id names "
        "one."
    ),
    responses=ERROR_RESPONSES,
    sync_to_thread=True,  # its database work in a worker thread (airoi.store)
)
def list_budgets(
    principal: PrincipalDep,
    db: DbDep,
    cursors: CursorsDep,
    today: Today,
    limit: Limit = 100,
    cursor: Cursor = None,
    initiative_id: InitiativeFilter = None,
    include_sample: IncludeSample = False,
    budgeted: Annotated[
        bool, Parameter(description="Only initiatives with an approved budget. Default false.")
    ] = False,
) -> BudgetList:
    page = BUDGET_INITIATIVES.page(
        db,
        principal.account_id,
        cursors=cursors,
        cursor=cursor,
        limit=limit,
        build=lambda r: r,
        initiative_id=initiative_id,
        # SPEC 4.A.4, 4.A.10: without include_sample=true sample initiatives are left out,
        # but one that initiative_id names is selected, as on /roi (SEMANTICS R31, R7).
        without_samples=None if include_sample or initiative_id is not None else True,
    )
    rows = compute_budget_rows(db, principal, page.rows, today)
    if budgeted:
        rows = [row for row in rows if row.budgeted]
    return BudgetList(data=rows, page=page.budget_info)
