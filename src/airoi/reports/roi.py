"""The ROI summary over a window, for the portfolio or one initiative (SPEC 2.10, 4.A.3).

The sums run in SQL over amounts already converted into the account currency on write
(SEMANTICS R5, R2); the rules of R7-R9 are finished in finance/.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any, Literal

import msgspec
from sqlalchemy import ColumnElement, Connection, Table, and_, func, select

from airoi.auth import Principal
from airoi.db.tables import cost_entries, initiatives, value_entries
from airoi.errors import not_found
from airoi.finance.periods import WINDOW_LABELS, window_range
from airoi.finance.roi import RoiFigures, roi_figures
from airoi.reports.fields import Cents, Id, note


class RoiScope(msgspec.Struct, omit_defaults=True):
    type: Annotated[Literal["portfolio", "initiative"], note("portfolio or initiative.")]
    id: Annotated[Id | None, note("The initiative's id; present when type is initiative.")] = None
    title: Annotated[
        str | None, note("The initiative's title; present when type is initiative.")
    ] = None


class RoiPeriod(msgspec.Struct, omit_defaults=True, rename={"from_": "from"}):
    window: Annotated[str, note("The window covered.")]
    label: Annotated[str, note("Display name of the window.")]
    from_: Annotated[
        date | None, note("First day covered, when the window resolves to explicit dates.")
    ] = None
    through: Annotated[date | None, note("Last day covered, same condition.")] = None


class RoiCost(msgspec.Struct):
    capex_cents: Annotated[Cents, note("One-time part of total cost.")]
    opex_cents: Annotated[Cents, note("Running part of total cost.")]


class RoiSummary(msgspec.Struct):
    scope: RoiScope
    period: RoiPeriod
    currency: Annotated[str, note("ISO 4217 code of every amount.", "USD")]
    approved_value_cents: Annotated[Cents, note("Approved value entries only.")]
    total_cost_cents: Annotated[
        Cents, note("Everything the initiatives in scope have cost.", 299_966_852_112)
    ]
    net_value_cents: Annotated[Cents, note("Approved value minus total cost.")]
    roi: Annotated[
        float | None,
        note("Net value divided by total cost; null when there is no cost (null is not zero)."),
    ]
    cost: RoiCost


@dataclass(frozen=True)
class RoiResult:
    """What both GET /roi and the get_roi_summary tool report."""

    scope: RoiScope
    period: RoiPeriod
    currency: str
    figures: RoiFigures


def _in_scope(
    table: Table, principal: Principal, initiative_id: int | None, span: tuple[date, date] | None
) -> ColumnElement[bool]:
    conditions = [table.c.account_id == principal.account_id]
    if initiative_id is not None:
        conditions.append(table.c.initiative_id == initiative_id)
    else:
        # SEMANTICS R7: the portfolio is every initiative that is not sample data.
        samples = select(initiatives.c.id).where(
            initiatives.c.account_id == principal.account_id, initiatives.c.is_sample.is_(True)
        )
        conditions.append(table.c.initiative_id.not_in(samples))
    if span is not None:
        conditions.append(table.c.entry_date.between(*span))
    return and_(*conditions)


def roi_scope(db: Connection, principal: Principal, initiative_id: int | None) -> RoiScope:
    """The portfolio, or the account's initiative `initiative_id` (404 for any other)."""
    if initiative_id is None:
        return RoiScope(type="portfolio")
    title = db.execute(
        select(initiatives.c.title).where(
            initiatives.c.id == initiative_id,
            initiatives.c.account_id == principal.account_id,
        )
    ).scalar()
    if title is None:
        raise not_found("initiative")
    return RoiScope(type="initiative", id=initiative_id, title=title)


def roi_period(window: str, today: date) -> tuple[RoiPeriod, tuple[date, date] | None]:
    """The window as served, and its (from, through) bounds (None for all), SEMANTICS R8."""
    span = window_range(window, today)
    if span is None:
        return RoiPeriod(window=window, label=WINDOW_LABELS[window]), None
    period = RoiPeriod(window=window, label=WINDOW_LABELS[window], from_=span[0], through=span[1])
    return period, span


# Keys of grouped sums: one value per grouping column (the empty tuple when not grouped).
Key = tuple[Any, ...]


@dataclass(frozen=True)
class RoiSums:
    """The SQL half of R9 for one scope and window, grouped by zero or more columns:
    cost by key and category, and approved value by key (None when value was not asked)."""

    cost: dict[Key, dict[str, int]]
    approved: dict[Key, int] | None

    def figures(self, key: Key = ()) -> RoiFigures:
        """R9 finished for one key (finance/)."""
        cost = self.cost.get(key, {})
        approved = 0 if self.approved is None else self.approved.get(key, 0)
        return roi_figures(approved, cost.get("capex", 0), cost.get("opex", 0))


def roi_sums(
    db: Connection,
    principal: Principal,
    *,
    initiative_id: int | None,
    span: tuple[date, date] | None,
    cost_by: Sequence[str] = (),
    value_by: Sequence[str] | None = (),
    vendor_id: int | None = None,
) -> RoiSums:
    """Converted amounts summed in SQL (R5, R2, R7), grouped by the named columns of each
    table; `value_by=None` leaves approved value out (a split of cost alone). `vendor_id`
    narrows cost to that vendor's entries (the tools' spend of one vendor): value is then
    left out, as value entries name no vendor."""
    cost_keys = [cost_entries.c[name] for name in cost_by]
    cost_scope = _in_scope(cost_entries, principal, initiative_id, span)
    if vendor_id is not None:
        cost_scope = and_(cost_scope, cost_entries.c.vendor_id == vendor_id)
        value_by = None
    cost: dict[Key, dict[str, int]] = {}
    for *key, category, cents in db.execute(
        select(
            *cost_keys,
            cost_entries.c.cost_category,
            func.coalesce(func.sum(cost_entries.c.account_amount_cents), 0),
        )
        .where(cost_scope)
        # The category first: on SQLite the scan then stays on the covering ROI index
        # rather than an initiative index that would save a sort and cost a lookup a row.
        .group_by(cost_entries.c.cost_category, *cost_keys)
    ):
        cost.setdefault(tuple(key), {})[category] = int(cents)
    if value_by is None:
        return RoiSums(cost=cost, approved=None)
    value_keys = [value_entries.c[name] for name in value_by]
    approved = {
        tuple(key): int(cents)
        for *key, cents in db.execute(
            select(*value_keys, func.coalesce(func.sum(value_entries.c.account_amount_cents), 0))
            .where(
                _in_scope(value_entries, principal, initiative_id, span),
                value_entries.c.status == "approved",
            )
            .group_by(*value_keys)
        )
    }
    return RoiSums(cost=cost, approved=approved)


def value_by_status(
    db: Connection,
    principal: Principal,
    *,
    initiative_id: int | None,
    span: tuple[date, date] | None,
) -> dict[str, int]:
    """Converted value entries summed in SQL by status (R5, R2, R7), whatever the status: what
    by=value_status splits (R37). A status with no entry in scope is absent."""
    return {
        status: int(cents)
        for status, cents in db.execute(
            select(
                value_entries.c.status,
                func.coalesce(func.sum(value_entries.c.account_amount_cents), 0),
            )
            .where(_in_scope(value_entries, principal, initiative_id, span))
            .group_by(value_entries.c.status)
        )
    }


def compute_roi(
    db: Connection, principal: Principal, *, window: str, initiative_id: int | None, today: date
) -> RoiResult:
    """SEMANTICS R7-R9, for the endpoint and the tool alike."""
    scope = roi_scope(db, principal, initiative_id)
    period, span = roi_period(window, today)
    sums = roi_sums(db, principal, initiative_id=initiative_id, span=span)
    return RoiResult(
        scope=scope, period=period, currency=principal.account_currency, figures=sums.figures()
    )
