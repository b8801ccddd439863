"""Property tests for the money rules (SEMANTICS R5, R9, R16-R18, R20, R21, R24)."""

from __future__ import annotations

import dataclasses
import random
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from airoi.finance.budgets import BudgetVersion, _Plan, budget_figures, covering_version
from airoi.finance.money import FxTable, half_even
from airoi.finance.periods import months_between, window_range
from airoi.finance.roi import roi_figures

cents = st.integers(min_value=-(10**12), max_value=10**12)
days = st.dates(min_value=date(2023, 1, 1), max_value=date(2027, 12, 31))
todays = st.dates(min_value=date(2024, 1, 1), max_value=date(2027, 12, 31))


# ---------------------------------------------------------------------------
# Money


@given(st.fractions(max_denominator=10**6))
def test_half_even_agrees_with_round_on_fractions(value: Fraction) -> None:
    # SEMANTICS R5: Python rounds a Fraction half to even.
    assert half_even(value) == round(value)


@given(st.decimals(allow_nan=False, allow_infinity=False, places=4))
def test_half_even_agrees_with_decimal_rounding(value: Decimal) -> None:
    # to_integral_value is exact whatever the context precision, as half_even must be.
    assert half_even(value) == int(value.to_integral_value(rounding=ROUND_HALF_EVEN))


@given(cents, days, days)
def test_rate_one_is_the_identity(amount: int, effective: date, on: date) -> None:
    # SEMANTICS R5: amount × 1 / 1, in both directions.
    table = FxTable("USD", {"EUR": [(effective, Decimal(1))]})
    assert table.convert(amount, "EUR", on, "USD") == amount
    assert table.convert(amount, "USD", on, "EUR") == amount
    assert table.convert(amount, None, on, "EUR") == amount


@given(
    cents,
    st.decimals(min_value=Decimal("0.0001"), max_value=Decimal(1000), places=4),
    st.decimals(min_value=Decimal("0.0001"), max_value=Decimal(1000), places=4),
    days,
)
def test_conversion_is_the_exact_quotient_rounded_once(
    amount: int, x: Decimal, y: Decimal, on: date
) -> None:
    # SEMANTICS R5: amount × rate(X) / rate(Y), half to even, once.
    table = FxTable("USD", {"AAA": [(date(2023, 1, 1), x)], "BBB": [(date(2023, 1, 1), y)]})
    assert table.convert(amount, "AAA", on, "BBB") == round(
        Fraction(amount) * Fraction(x) / Fraction(y)
    )


# ---------------------------------------------------------------------------
# ROI


@given(cents, cents, cents)
def test_roi_figures_add_up(value: int, capex: int, opex: int) -> None:
    # SEMANTICS R9: total = capex + opex, net = value - total, roi = net / total.
    figures = roi_figures(value, capex, opex)
    assert figures.capex_cents + figures.opex_cents == figures.total_cost_cents
    assert figures.net_value_cents == figures.approved_value_cents - figures.total_cost_cents
    if figures.total_cost_cents == 0:
        assert figures.roi is None
    else:
        assert figures.roi == figures.net_value_cents / figures.total_cost_cents


# ---------------------------------------------------------------------------
# Windows


@given(todays, st.sampled_from([("1yr", 1), ("3yr", 3), ("5yr", 5)]))
def test_windows_span_whole_years(today: date, window: tuple[str, int]) -> None:
    # SEMANTICS R8: [from, through] holds N years of days, through = today.
    name, years = window
    bounds = window_range(name, today)
    assert bounds is not None
    first, through = bounds
    assert through == today
    # N calendar years hold 365 × N days plus their leap days.
    assert 365 * years <= (through - first).days + 1 <= 366 * years
    day_before = first - timedelta(days=1)
    assert (day_before.year, day_before.month) == (today.year - years, today.month)


# ---------------------------------------------------------------------------
# Budgets

CADENCE = {"monthly": 1, "quarterly": 3, "annually": 12}


@st.composite
def budget_versions(draw: st.DrawFn) -> BudgetVersion:
    effective = draw(days)
    ends_on = draw(st.none() | days)
    approved_at = draw(
        st.none() | st.datetimes(min_value=datetime(2023, 1, 1), max_value=datetime(2027, 12, 31))
    )
    return BudgetVersion(
        id=draw(st.integers(min_value=1, max_value=50)),
        effective_from=effective,
        ends_on=ends_on,
        capex_cents=draw(st.integers(min_value=0, max_value=10**9)),
        opex_cents=draw(st.integers(min_value=0, max_value=10**8)),
        opex_cadence=draw(st.sampled_from(sorted(CADENCE))),
        status=draw(st.sampled_from(["approved", "approved", "pending", "rejected"])),
        approved_at=approved_at,
        source="manual",
        reason=None,
        set_by_id=None,
    )


@st.composite
def cost_maps(draw: st.DrawFn, today: date) -> dict[tuple[date, str], int]:
    months = months_between(date(2023, 1, 1), today)
    return draw(
        st.dictionaries(
            st.tuples(st.sampled_from(months), st.sampled_from(["capex", "opex"])),
            st.integers(min_value=-(10**6), max_value=10**8),
            max_size=30,
        )
    )


@st.composite
def budget_cases(
    draw: st.DrawFn,
) -> tuple[list[BudgetVersion], dict[tuple[date, str], int], date, int]:
    today = draw(todays)
    versions = draw(st.lists(budget_versions(), max_size=5, unique_by=lambda v: v.id))
    return versions, draw(cost_maps(today)), today, draw(st.integers(min_value=1, max_value=12))


def _month_index(day: date) -> int:
    return day.year * 12 + day.month - 1


def _expected_rate(versions: list[BudgetVersion], month_index: int) -> Fraction:
    """SEMANTICS R16, R17 written out independently: the latest approval among the
    approved versions begun by the month, unless it has ended."""
    begun = [
        v
        for v in versions
        if v.status == "approved" and _month_index(v.effective_from) <= month_index
    ]
    if not begun:
        return Fraction(0)
    begun.sort(key=lambda v: (v.approved_at or datetime(1, 1, 1), v.id))
    undated_first = [v for v in begun if v.approved_at is None] + [
        v for v in begun if v.approved_at is not None
    ]
    chosen = undated_first[-1]
    if chosen.ends_on is not None and _month_index(chosen.ends_on) < month_index:
        return Fraction(0)
    return Fraction(chosen.opex_cents) / CADENCE[chosen.opex_cadence]


@given(st.lists(budget_versions(), max_size=5, unique_by=lambda v: v.id), st.randoms())
def test_a_plan_covers_each_month_with_the_version_the_rule_picks(
    versions: list[BudgetVersion], rnd: random.Random
) -> None:
    # SEMANTICS R16: a budget row's plan orders its versions once and remembers each month's
    # cover; asked in any order, each month gets what the rule, applied afresh, picks.
    approved = [v for v in versions if v.status == "approved"]
    plan = _Plan(approved)
    months = months_between(date(2022, 11, 1), date(2028, 2, 1))
    rnd.shuffle(months)
    for month in months + months:  # the second time from what it remembered
        covered = plan.cover(month)
        assert covered is covering_version(versions, month)
        rate = Fraction(0) if covered is None else Fraction(covered.opex_cents)
        if covered is not None:
            rate /= CADENCE[covered.opex_cadence]
        assert rate == _expected_rate(versions, _month_index(month))


@given(budget_cases())
def test_opex_budget_to_date_is_the_rounded_exact_sum(
    case: tuple[list[BudgetVersion], dict[tuple[date, str], int], date, int],
) -> None:
    # SEMANTICS R17, R20: the covered months' exact rates from start through cur,
    # summed, then rounded half to even once.
    versions, costs, today, fy_start = case
    figures = budget_figures(versions, costs, today, fy_start)
    approved = [v for v in versions if v.status == "approved"]
    if not approved or figures.status == "scheduled":
        assert figures.opex_budget_to_date_cents == 0
        return
    start = min(_month_index(v.effective_from) for v in approved)
    exact = sum(
        (_expected_rate(versions, i) for i in range(start, _month_index(today) + 1)),
        Fraction(0),
    )
    assert figures.opex_budget_to_date_cents == round(exact)


@given(budget_cases())
def test_budget_row_identities(
    case: tuple[list[BudgetVersion], dict[tuple[date, str], int], date, int],
) -> None:
    versions, costs, today, fy_start = case
    f = budget_figures(versions, costs, today, fy_start)
    # SEMANTICS R20, R21
    assert f.budget_to_date_cents == f.capex_budget_cents + f.opex_budget_to_date_cents
    assert f.actual_to_date_cents == f.capex_actual_cents + f.opex_actual_cents
    assert f.variance_cents == f.budget_to_date_cents - f.actual_to_date_cents
    assert f.capex_remaining_cents == f.capex_budget_cents - f.capex_actual_cents
    # SEMANTICS R18: over_parts consistent with status, capex first.
    assert (f.status == "over") == bool(f.over_parts)
    assert f.over_parts in ([], ["capex"], ["opex"], ["capex", "opex"])
    if f.status in ("over", "within"):
        assert ("capex" in f.over_parts) == (f.capex_actual_cents > f.capex_budget_cents)
        assert ("opex" in f.over_parts) == (f.opex_actual_cents > f.opex_budget_to_date_cents)
        # SEMANTICS R21: every cost through today is either before the budget or in it.
        assert f.spent_before_budget_cents + f.actual_to_date_cents == sum(costs.values())
    # SEMANTICS R24
    assert f.version_count == sum(v.status == "approved" for v in versions)
    assert f.revised == (f.version_count > 1)
    assert f.revision_pending == any(v.status == "pending" for v in versions)
    # SEMANTICS R18, R19, R25
    assert f.budgeted == (f.version_count > 0)
    if f.status in ("no_budget", "scheduled"):
        assert f.current_version is None
        assert f.actual_to_date_cents == f.budget_to_date_cents == 0
    if f.current_version is not None:
        assert f.current_version.status == "approved"
    # SEMANTICS R23: the year-to-date part never exceeds the year (rates are >= 0).
    assert 0 <= f.opex_budget_fiscal_ytd_cents <= f.opex_budget_fiscal_year_cents


@given(budget_cases(), st.lists(budget_versions(), max_size=3))
def test_unapproved_versions_change_no_figure(
    case: tuple[list[BudgetVersion], dict[tuple[date, str], int], date, int],
    extra: list[BudgetVersion],
) -> None:
    # SEMANTICS R16: pending and rejected versions never change a figure (R24 aside).
    versions, costs, today, fy_start = case
    unapproved = [
        dataclasses.replace(v, id=100 + i, status="rejected") for i, v in enumerate(extra)
    ]
    before = budget_figures(versions, costs, today, fy_start)
    after = budget_figures(versions + unapproved, costs, today, fy_start)
    assert after == before
