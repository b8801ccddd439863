"""One initiative's business case against its actuals (SEMANTICS R43-R45).

The caller loads the initiative's plan (its `expected_*` fields, horizon and go-live) and
its entries dated on or before today, summed by month and converted into the row's currency
(R5, R2). `business_case_figures` finishes the row exactly: every amount is a whole number
of cents, a share of the plan is computed as an exact fraction and rounded half to even once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from fractions import Fraction

from airoi.finance.money import half_even
from airoi.finance.periods import month_index, month_of, months_between

__all__ = ["BusinessCaseFigures", "MonthActuals", "Plan", "business_case_figures"]


@dataclass(frozen=True)
class Plan:
    """The initiative's business case as stored: totals over the horizon, each may be null."""

    expected_capex_cents: int | None
    expected_opex_cents: int | None
    expected_cost_savings_cents: int | None
    expected_revenue_uplift_cents: int | None
    roi_time_horizon_years: int | None
    went_live_on: date | None


@dataclass(frozen=True)
class MonthActuals:
    """One month's entries dated on or before today, in the row's currency."""

    capex_cents: int = 0
    opex_cents: int = 0
    approved_value_cents: int = 0


@dataclass(frozen=True)
class BusinessCaseFigures:
    """The computed part of a business-case row (all but initiative_id, currency, as_of)."""

    has_business_case: bool
    horizon_years: int | None
    planned_capex_cents: int | None
    planned_opex_cents: int | None
    planned_cost_cents: int | None
    planned_value_cents: int | None
    planned_net_value_cents: int | None
    planned_roi: float | None
    plan_started_on: date | None
    months_elapsed: int
    planned_value_to_date_cents: int | None
    planned_cost_to_date_cents: int | None
    approved_value_to_date_cents: int
    capex_to_date_cents: int
    opex_to_date_cents: int
    cost_to_date_cents: int
    net_value_to_date_cents: int
    roi_to_date: float | None
    value_realization_ratio: float | None
    payback_month: date | None


def _ratio(numerator: int, denominator: int | None) -> float | None:
    # int / int is correctly rounded to the nearest float, as /roi's roi is (R9).
    return None if not denominator else numerator / denominator


def months_elapsed(plan: Plan, cur: date) -> int:
    """R44: the months from the go-live month through `cur`, both included, at most H; 0 when
    the plan has not started. A horizon of 0 or less covers no month."""
    if plan.went_live_on is None or month_of(plan.went_live_on) > cur:
        return 0
    elapsed = month_index(cur) - month_index(plan.went_live_on) + 1
    if plan.roi_time_horizon_years is not None:
        elapsed = min(elapsed, max(12 * plan.roi_time_horizon_years, 0))
    return elapsed


def payback_month(
    months: Mapping[date, MonthActuals], first: date | None, cur: date
) -> date | None:
    """R45: the first month from which the cumulative net (approved value minus cost to date)
    stays at or above 0 through `cur`; None when it ends below 0. `first` is the month of the
    initiative's earliest entry dated to date (None when it has none)."""
    if first is None:
        return None
    cumulative = 0
    payback: date | None = None
    for month in months_between(first, cur):
        actual = months.get(month)
        if actual is not None:
            cumulative += actual.approved_value_cents - actual.capex_cents - actual.opex_cents
        if cumulative < 0:
            payback = None
        elif payback is None:
            payback = month
    return payback


def business_case_figures(
    plan: Plan, months: Mapping[date, MonthActuals], first_entry_month: date | None, today: date
) -> BusinessCaseFigures:
    """Hold one initiative's plan against its actuals as of `today` (SEMANTICS R43-R45).

    `months`: first day of month -> the entries of that month dated on or before `today`, in
    the row's currency; later months are ignored. `first_entry_month`: the month of the
    initiative's earliest entry (cost or value, any status) dated on or before `today`.
    """
    cur = month_of(today)
    to_date = [actual for month, actual in months.items() if month <= cur]
    approved = sum(a.approved_value_cents for a in to_date)
    capex = sum(a.capex_cents for a in to_date)
    opex = sum(a.opex_cents for a in to_date)
    cost = capex + opex
    net = approved - cost
    elapsed = months_elapsed(plan, cur)
    payback = None if cost == 0 else payback_month(months, first_entry_month, cur)
    has_case = any(
        amount is not None
        for amount in (
            plan.expected_capex_cents,
            plan.expected_opex_cents,
            plan.expected_cost_savings_cents,
            plan.expected_revenue_uplift_cents,
        )
    )
    actuals = {
        "approved_value_to_date_cents": approved,
        "capex_to_date_cents": capex,
        "opex_to_date_cents": opex,
        "cost_to_date_cents": cost,
        "net_value_to_date_cents": net,
        "roi_to_date": _ratio(net, cost),
        "payback_month": payback,
    }
    if not has_case:  # R43: no plan to hold the actuals against
        return BusinessCaseFigures(
            has_business_case=False,
            horizon_years=plan.roi_time_horizon_years,
            planned_capex_cents=None,
            planned_opex_cents=None,
            planned_cost_cents=None,
            planned_value_cents=None,
            planned_net_value_cents=None,
            planned_roi=None,
            plan_started_on=None,
            months_elapsed=elapsed,
            planned_value_to_date_cents=None,
            planned_cost_to_date_cents=None,
            value_realization_ratio=None,
            **actuals,  # type: ignore[arg-type]
        )
    planned_capex = plan.expected_capex_cents or 0
    planned_opex = plan.expected_opex_cents or 0
    planned_cost = planned_capex + planned_opex
    planned_value = (plan.expected_cost_savings_cents or 0) + (
        plan.expected_revenue_uplift_cents or 0
    )
    value_due, cost_due = _plan_to_date(plan, planned_value, planned_capex, planned_opex, elapsed)
    return BusinessCaseFigures(
        has_business_case=True,
        horizon_years=plan.roi_time_horizon_years,
        planned_capex_cents=planned_capex,
        planned_opex_cents=planned_opex,
        planned_cost_cents=planned_cost,
        planned_value_cents=planned_value,
        planned_net_value_cents=planned_value - planned_cost,
        planned_roi=_ratio(planned_value - planned_cost, planned_cost),
        plan_started_on=None if plan.went_live_on is None else month_of(plan.went_live_on),
        months_elapsed=elapsed,
        planned_value_to_date_cents=value_due,
        planned_cost_to_date_cents=cost_due,
        value_realization_ratio=_ratio(approved, value_due),
        **actuals,  # type: ignore[arg-type]
    )


def _plan_to_date(
    plan: Plan, value: int, capex: int, opex: int, elapsed: int
) -> tuple[int | None, int | None]:
    """R44: the value and cost the plan has promised by now; None without a usable horizon
    (null, or 0 or less: no month to spread the plan over), 0 before the plan starts."""
    years = plan.roi_time_horizon_years
    if years is None or years <= 0:
        return None, None
    if elapsed == 0:
        return 0, 0
    share = Fraction(elapsed, 12 * years)
    return half_even(value * share), half_even(capex + opex * share)
