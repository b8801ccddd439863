"""A business case held against actuals, worked by hand (SEMANTICS R43-R45).

today = 2026-06-15 unless a test says otherwise, so the current month `cur` is June 2026.
"""

from __future__ import annotations

from datetime import date

import pytest

from airoi.finance.business_cases import (
    MonthActuals,
    Plan,
    business_case_figures,
    months_elapsed,
    payback_month,
)

TODAY = date(2026, 6, 15)
JUNE = date(2026, 6, 1)


def plan(**fields: object) -> Plan:
    given: dict[str, object] = {
        "expected_capex_cents": None,
        "expected_opex_cents": None,
        "expected_cost_savings_cents": None,
        "expected_revenue_uplift_cents": None,
        "roi_time_horizon_years": None,
        "went_live_on": None,
    }
    given.update(fields)
    return Plan(**given)  # type: ignore[arg-type]


def m(month: int, year: int = 2026) -> date:
    return date(year, month, 1)


def test_the_plan_and_its_share_due_by_now() -> None:
    # SEMANTICS R43, R44: 3 years (H = 36 months), live since 20 January: Jan-Jun is 6 months.
    case = plan(
        expected_capex_cents=120_000,
        expected_opex_cents=360_000,
        expected_cost_savings_cents=600_000,
        expected_revenue_uplift_cents=300_000,
        roi_time_horizon_years=3,
        went_live_on=date(2026, 1, 20),
    )
    months = {
        m(1): MonthActuals(capex_cents=100_000, opex_cents=10_000),
        m(3): MonthActuals(opex_cents=10_000, approved_value_cents=200_000),
    }
    f = business_case_figures(case, months, m(1), TODAY)
    assert f.has_business_case is True
    assert f.horizon_years == 3
    assert (f.planned_capex_cents, f.planned_opex_cents) == (120_000, 360_000)
    assert f.planned_cost_cents == 480_000
    assert f.planned_value_cents == 900_000  # savings + uplift
    assert f.planned_net_value_cents == 420_000
    assert f.planned_roi == 420_000 / 480_000  # 0.875
    assert f.plan_started_on == date(2026, 1, 1)
    assert f.months_elapsed == 6
    assert f.planned_value_to_date_cents == 150_000  # 900,000 x 6 / 36
    assert f.planned_cost_to_date_cents == 180_000  # 120,000 + 360,000 x 6 / 36
    assert (f.capex_to_date_cents, f.opex_to_date_cents) == (100_000, 20_000)
    assert f.cost_to_date_cents == 120_000
    assert f.approved_value_to_date_cents == 200_000
    assert f.net_value_to_date_cents == 80_000
    assert f.roi_to_date == 80_000 / 120_000
    assert f.value_realization_ratio == 200_000 / 150_000
    # R45: Jan -110,000, Feb -110,000, Mar +80,000, and so on through June: March.
    assert f.payback_month == date(2026, 3, 1)


def test_without_a_business_case_only_the_actuals_are_served() -> None:
    # SEMANTICS R43: no expected_* at all; the horizon and go-live alone make no plan.
    case = plan(roi_time_horizon_years=2, went_live_on=date(2026, 5, 3))
    f = business_case_figures(case, {JUNE: MonthActuals(opex_cents=5_000)}, JUNE, TODAY)
    assert f.has_business_case is False
    assert f.horizon_years == 2
    assert [
        f.planned_capex_cents,
        f.planned_opex_cents,
        f.planned_cost_cents,
        f.planned_value_cents,
        f.planned_net_value_cents,
        f.planned_roi,
        f.plan_started_on,
        f.planned_value_to_date_cents,
        f.planned_cost_to_date_cents,
        f.value_realization_ratio,
    ] == [None] * 10
    # R44 counts the months from go-live whether or not there is a case: May and June.
    assert f.months_elapsed == 2
    assert (f.cost_to_date_cents, f.net_value_to_date_cents, f.roi_to_date) == (5_000, -5_000, -1)
    assert f.payback_month is None  # R45: the cumulative net is below 0 now


def test_one_expected_figure_is_a_business_case_and_the_nulls_count_zero() -> None:
    # SEMANTICS R43: savings alone; capex and opex null count 0, so planned cost is 0.
    case = plan(expected_cost_savings_cents=50_000, roi_time_horizon_years=1)
    f = business_case_figures(case, {}, None, TODAY)
    assert f.has_business_case is True
    assert (f.planned_capex_cents, f.planned_opex_cents, f.planned_cost_cents) == (0, 0, 0)
    assert f.planned_value_cents == 50_000
    assert f.planned_net_value_cents == 50_000
    assert f.planned_roi is None  # planned cost 0
    # R44: never live, so nothing is due yet; 0 due means no ratio.
    assert (f.plan_started_on, f.months_elapsed) == (None, 0)
    assert (f.planned_value_to_date_cents, f.planned_cost_to_date_cents) == (0, 0)
    assert f.value_realization_ratio is None
    assert (f.cost_to_date_cents, f.roi_to_date, f.payback_month) == (0, None, None)


def test_the_share_due_is_rounded_half_to_even_once() -> None:
    # SEMANTICS R44: 1 year (H = 12), live since April 2026: Apr-Jun, 3 months.
    # Value 10 x 3/12 = 2.5 -> 2 (even); cost 1 + 14 x 3/12 = 1 + 3.5 = 4.5 -> 4 (even),
    # the capex added before the one rounding (rounding the opex share first gives 1 + 4 = 5).
    case = plan(
        expected_capex_cents=1,
        expected_opex_cents=14,
        expected_cost_savings_cents=10,
        roi_time_horizon_years=1,
        went_live_on=date(2026, 4, 30),
    )
    f = business_case_figures(case, {}, None, TODAY)
    assert f.months_elapsed == 3
    assert f.planned_value_to_date_cents == 2
    assert f.planned_cost_to_date_cents == 4
    # 6 x 3/12 = 1.5 -> 2 (even)
    six = plan(expected_cost_savings_cents=6, roi_time_horizon_years=1, went_live_on=m(4))
    assert business_case_figures(six, {}, None, TODAY).planned_value_to_date_cents == 2


def test_months_elapsed_stops_at_the_horizon() -> None:
    # SEMANTICS R44: live since January 2025, 1 year: Jan 2025-Jun 2026 is 18 months, at most 12.
    case = plan(
        expected_opex_cents=1_200,
        expected_revenue_uplift_cents=3_600,
        roi_time_horizon_years=1,
        went_live_on=date(2025, 1, 31),
    )
    f = business_case_figures(case, {}, None, TODAY)
    assert f.months_elapsed == 12
    assert f.planned_value_to_date_cents == 3_600  # the whole plan is due
    assert f.planned_cost_to_date_cents == 1_200


def test_without_a_horizon_nothing_is_due_and_the_months_run_on() -> None:
    # SEMANTICS R44: H unknown: the to-date plan is null; the months are not capped.
    case = plan(expected_cost_savings_cents=1_000, went_live_on=date(2025, 1, 1))
    f = business_case_figures(case, {}, None, TODAY)
    assert f.months_elapsed == 18
    assert (f.planned_value_to_date_cents, f.planned_cost_to_date_cents) == (None, None)
    assert f.value_realization_ratio is None
    # A horizon of 0 years spreads the plan over no month: null too, and no month elapses.
    zero = plan(expected_cost_savings_cents=1_000, roi_time_horizon_years=0, went_live_on=m(1))
    figures = business_case_figures(zero, {}, None, TODAY)
    assert (figures.months_elapsed, figures.planned_value_to_date_cents) == (0, None)


def test_a_plan_that_starts_after_this_month_has_nothing_due() -> None:
    # SEMANTICS R44: live in July: started on July's first day, 0 months, 0 due.
    case = plan(expected_cost_savings_cents=1_000, roi_time_horizon_years=1, went_live_on=m(7))
    f = business_case_figures(case, {}, None, TODAY)
    assert f.plan_started_on == date(2026, 7, 1)
    assert f.months_elapsed == 0
    assert (f.planned_value_to_date_cents, f.planned_cost_to_date_cents) == (0, 0)
    assert months_elapsed(case, date(2026, 7, 1)) == 1


def test_entries_after_this_month_count_nowhere() -> None:
    # The caller passes entries dated to date; a later month's key is ignored all the same.
    case = plan(expected_capex_cents=10)
    months = {JUNE: MonthActuals(opex_cents=100), m(7): MonthActuals(approved_value_cents=999)}
    f = business_case_figures(case, months, JUNE, TODAY)
    assert (f.cost_to_date_cents, f.approved_value_to_date_cents) == (100, 0)


@pytest.mark.parametrize(
    ("months", "first", "expected"),
    [
        # Jan -100, Feb +50, Mar -30, Apr +10, May +10, Jun +10: from April on.
        (
            {
                m(1): MonthActuals(opex_cents=100),
                m(2): MonthActuals(approved_value_cents=150),
                m(3): MonthActuals(capex_cents=80),
                m(4): MonthActuals(approved_value_cents=40),
            },
            m(1),
            m(4),
        ),
        # Exactly 0 at the end of May and June counts as paid back: May.
        (
            {m(4): MonthActuals(opex_cents=70), m(5): MonthActuals(approved_value_cents=70)},
            m(4),
            m(5),
        ),
        # A (draft) value entry in January begins the months; nothing is summed then, so the
        # net is 0 in January, and 0 again at the end of February: January.
        ({m(2): MonthActuals(opex_cents=100, approved_value_cents=100)}, m(1), m(1)),
        # Value before cost: positive from the first month on.
        (
            {m(1): MonthActuals(approved_value_cents=500), m(6): MonthActuals(opex_cents=400)},
            m(1),
            m(1),
        ),
        # Paid back in February, below 0 again in June: not paid back.
        (
            {
                m(1): MonthActuals(opex_cents=10, approved_value_cents=5),
                m(2): MonthActuals(approved_value_cents=10),
                m(6): MonthActuals(capex_cents=6),
            },
            m(1),
            None,
        ),
    ],
)
def test_payback_is_the_month_from_which_the_net_stays_at_or_above_zero(
    months: dict[date, MonthActuals], first: date, expected: date | None
) -> None:
    # SEMANTICS R45
    case = plan(expected_capex_cents=1)
    assert business_case_figures(case, months, first, TODAY).payback_month == expected


def test_no_payback_without_cost() -> None:
    # SEMANTICS R45: value and no cost to date: null, however positive the net.
    months = {m(2): MonthActuals(approved_value_cents=500)}
    f = business_case_figures(plan(), months, m(2), TODAY)
    assert (f.cost_to_date_cents, f.payback_month) == (0, None)
    assert payback_month(months, m(2), JUNE) == m(2)  # the walk alone would say February
