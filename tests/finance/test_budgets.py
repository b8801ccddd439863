"""Worked budget rows, each computed by hand (SPEC 2.7; SEMANTICS R16-R25, R46)."""

from __future__ import annotations

import dataclasses
from datetime import date, datetime
from fractions import Fraction

import pytest

from airoi.finance.budgets import (
    BudgetFigures,
    BudgetVersion,
    budget_figures,
    covering_version,
    monthly_rate,
)


def version(
    id: int,
    effective_from: date,
    *,
    ends_on: date | None = None,
    capex: int = 0,
    opex: int = 0,
    cadence: str = "monthly",
    status: str = "approved",
    approved_at: datetime | None = None,
) -> BudgetVersion:
    return BudgetVersion(
        id=id,
        effective_from=effective_from,
        ends_on=ends_on,
        capex_cents=capex,
        opex_cents=opex,
        opex_cadence=cadence,
        status=status,
        approved_at=approved_at,
        source="manual",
        reason=None,
        set_by_id=None,
    )


def m(year: int, month: int) -> date:
    return date(year, month, 1)


# ---------------------------------------------------------------------------
# A plain monthly budget (SEMANTICS R18, R20, R21, R22, R23)

PLAIN = version(1, date(2026, 1, 15), capex=100_000, opex=10_000, approved_at=datetime(2026, 1, 2))
PLAIN_COSTS = {
    (m(2025, 12), "opex"): 5_000,  # before the budget began
    (m(2026, 1), "capex"): 60_000,
    (m(2026, 1), "opex"): 9_000,
    (m(2026, 2), "opex"): 11_000,
    (m(2026, 3), "opex"): 4_000,
}


def test_plain_monthly_budget() -> None:
    figures = budget_figures([PLAIN], PLAIN_COSTS, date(2026, 3, 20), 1)
    assert figures == BudgetFigures(
        budgeted=True,
        # SEMANTICS R18: capex 60000 <= 100000 and opex 24000 <= 30000 -> within.
        status="within",
        over_parts=[],
        # SEMANTICS R20: the current version's capex.
        capex_budget_cents=100_000,
        # SEMANTICS R21: capex from January (the start month) on.
        capex_actual_cents=60_000,
        capex_remaining_cents=40_000,  # 100000 - 60000
        # SEMANTICS R20: January, February, March at 10000 each = 30000.
        opex_budget_to_date_cents=30_000,
        # SEMANTICS R21: 9000 + 11000 + 4000 = 24000 (December's 5000 is before the start).
        opex_actual_cents=24_000,
        budget_monthly_run_rate_cents=10_000,
        # SEMANTICS R22: complete covered months are January and February only (March is
        # cur): (9000 + 11000) / 2 = 10000.
        actual_monthly_run_rate_cents=10_000,
        budget_to_date_cents=130_000,  # 100000 + 30000
        actual_to_date_cents=84_000,  # 60000 + 24000
        variance_cents=46_000,  # 130000 - 84000
        used_ratio=84_000 / 130_000,
        spent_before_budget_cents=5_000,
        # SEMANTICS R23: calendar fiscal year 2026, every month covered: 12 × 10000.
        opex_budget_fiscal_year_cents=120_000,
        opex_budget_fiscal_ytd_cents=30_000,  # January to March
        opex_actual_fiscal_ytd_cents=24_000,  # December 2025 is the previous fiscal year
        # SEMANTICS R18: the first day of the month of 2026-01-15.
        budget_started_on=date(2026, 1, 1),
        revised=False,
        version_count=1,
        revision_pending=False,
        current_version=PLAIN,
        # SEMANTICS R46: April to December (9 months) follow March: 24000 + 10000 × 9 = 114000,
        # 6000 under the year's 120000.
        projected_opex_fiscal_year_cents=114_000,
        projected_fiscal_year_variance_cents=6_000,
        projected_fiscal_year_status="within",
    )


def test_pending_and_rejected_versions_change_nothing() -> None:
    # SEMANTICS R16, R24: only approved versions count; a pending one only raises
    # revision_pending.
    pending = version(2, date(2026, 2, 1), capex=999_999, opex=99_999, status="pending")
    rejected = version(
        3, date(2025, 6, 1), capex=1, opex=1, status="rejected", approved_at=datetime(2026, 3, 1)
    )
    base = budget_figures([PLAIN], PLAIN_COSTS, date(2026, 3, 20), 1)
    with_rejected = budget_figures([PLAIN, rejected], PLAIN_COSTS, date(2026, 3, 20), 1)
    with_both = budget_figures([PLAIN, pending, rejected], PLAIN_COSTS, date(2026, 3, 20), 1)
    assert with_rejected == base
    assert with_both == dataclasses.replace(base, revision_pending=True)


def test_status_over_parts_capex_first() -> None:
    # SEMANTICS R18: capex 60000 > 50000 and opex 24000 > 20000 (two months at 10000,
    # today in February with March's 4000 removed) -> over, capex listed first.
    costs = dict(PLAIN_COSTS)
    costs[(m(2026, 2), "opex")] = 15_000
    del costs[(m(2026, 3), "opex")]
    tight = dataclasses.replace(PLAIN, capex_cents=50_000)
    figures = budget_figures([tight], costs, date(2026, 2, 27), 1)
    assert figures.opex_actual_cents == 24_000  # 9000 + 15000
    assert figures.opex_budget_to_date_cents == 20_000
    assert figures.status == "over"
    assert figures.over_parts == ["capex", "opex"]
    assert figures.capex_remaining_cents == -10_000  # 50000 - 60000


def test_status_over_opex_only_and_equal_is_within() -> None:
    # SEMANTICS R18: opex 24000 > 20000 while capex 60000 <= 100000 -> over, opex only.
    costs = dict(PLAIN_COSTS)
    costs[(m(2026, 2), "opex")] = 15_000
    del costs[(m(2026, 3), "opex")]
    over = budget_figures([PLAIN], costs, date(2026, 2, 27), 1)
    assert (over.status, over.over_parts) == ("over", ["opex"])
    # Exactly on budget is not over: capex 60000 = envelope 60000, opex 20000 = 20000.
    costs[(m(2026, 2), "opex")] = 11_000
    exact = dataclasses.replace(PLAIN, capex_cents=60_000)
    figures = budget_figures([exact], costs, date(2026, 2, 27), 1)
    assert figures.opex_actual_cents == 20_000
    assert (figures.status, figures.over_parts) == ("within", [])


# ---------------------------------------------------------------------------
# Revisions, approval order, ends_on and gaps (SEMANTICS R16, R19)


def test_revision_mid_year_does_not_restate_earlier_months() -> None:
    # SEMANTICS R16: v2 takes over from April; January to March stay at v1's rate.
    v1 = version(1, m(2026, 1), capex=50_000, opex=10_000, approved_at=datetime(2025, 12, 20))
    v2 = version(2, date(2026, 4, 10), capex=80_000, opex=20_000, approved_at=datetime(2026, 4, 5))
    assert covering_version([v1, v2], m(2026, 3)) == v1
    assert covering_version([v1, v2], m(2026, 4)) == v2
    figures = budget_figures([v1, v2], {}, date(2026, 6, 15), 1)
    # Jan-Mar 3 × 10000 + Apr-Jun 3 × 20000 = 90000 (restating would give 120000).
    assert figures.opex_budget_to_date_cents == 90_000
    assert figures.capex_budget_cents == 80_000  # SEMANTICS R20: the current version's
    assert figures.budget_monthly_run_rate_cents == 20_000
    assert figures.budget_to_date_cents == 170_000  # 80000 + 90000
    assert figures.current_version == v2  # SEMANTICS R19
    # SEMANTICS R23: 3 × 10000 + 9 × 20000 = 210000 for the year, 90000 through June.
    assert figures.opex_budget_fiscal_year_cents == 210_000
    assert figures.opex_budget_fiscal_ytd_cents == 90_000
    # SEMANTICS R24
    assert (figures.version_count, figures.revised) == (2, True)
    # SEMANTICS R18: the start stays at the earliest approved version's month.
    assert figures.budget_started_on == m(2026, 1)


def test_approved_last_wins_not_started_last() -> None:
    # SEMANTICS R16: v3 starts in February but was approved after v2 (which starts in
    # April), so v3 covers February onwards, April included.
    v1 = version(1, m(2026, 1), opex=10_000, approved_at=datetime(2025, 12, 20))
    v2 = version(2, m(2026, 4), opex=20_000, approved_at=datetime(2026, 1, 5))
    v3 = version(3, m(2026, 2), opex=15_000, approved_at=datetime(2026, 1, 20))
    assert covering_version([v1, v2, v3], m(2026, 1)) == v1
    assert covering_version([v1, v2, v3], m(2026, 4)) == v3
    figures = budget_figures([v1, v2, v3], {}, date(2026, 5, 1), 1)
    # January 10000 + February to May 4 × 15000 = 70000.
    assert figures.opex_budget_to_date_cents == 70_000


def test_approval_ties_and_missing_approved_at() -> None:
    # SEMANTICS R16: the same approved_at -> the highest id; a missing approved_at
    # sorts lowest, so it loses to any dated approval.
    same = datetime(2026, 1, 1)
    a = version(7, m(2026, 1), opex=100, approved_at=same)
    b = version(9, m(2026, 1), opex=200, approved_at=same)
    undated = version(20, m(2026, 1), opex=300, approved_at=None)
    assert covering_version([b, a], m(2026, 1)) == b
    assert covering_version([a, b, undated], m(2026, 3)) == b
    assert covering_version([undated], m(2026, 3)) == undated
    # Two undated: the highest id.
    assert covering_version([undated, dataclasses.replace(a, approved_at=None)], m(2026, 3)) == (
        undated
    )


def test_ends_on_leaves_later_months_uncovered() -> None:
    # SEMANTICS R16: ends_on 2026-03-05 is the last month covered, March whole.
    v = version(1, m(2026, 1), ends_on=date(2026, 3, 5), capex=40_000, opex=10_000)
    assert covering_version([v], m(2026, 3)) == v
    assert covering_version([v], m(2026, 4)) is None
    costs = {
        (m(2026, 1), "opex"): 9_000,
        (m(2026, 2), "opex"): 10_000,
        (m(2026, 3), "opex"): 11_000,
        (m(2026, 4), "opex"): 5_000,
    }
    figures = budget_figures([v], costs, date(2026, 6, 15), 1)
    # Jan-Mar 3 × 10000; April to June are uncovered (rate 0).
    assert figures.opex_budget_to_date_cents == 30_000
    # SEMANTICS R19: June is uncovered, so the version of March (the latest covered
    # month before June) is current, and its capex is the envelope.
    assert figures.current_version == v
    assert figures.capex_budget_cents == 40_000
    # SEMANTICS R22: complete covered months are Jan-Mar: (9000 + 10000 + 11000) / 3.
    assert figures.actual_monthly_run_rate_cents == 10_000
    # SEMANTICS R21, R18: April's 5000 still counts: 35000 > 30000 -> over on opex.
    assert figures.opex_actual_cents == 35_000
    assert figures.over_parts == ["opex"]
    # SEMANTICS R23: only January to March carry a rate.
    assert figures.opex_budget_fiscal_year_cents == 30_000


def test_latest_approved_ended_version_does_not_hand_back() -> None:
    # SEMANTICS R16 read literally: v2 (approved last) ends in February; from March the
    # month is uncovered even though older v1 has no end.
    v1 = version(1, m(2026, 1), opex=10_000, approved_at=datetime(2025, 12, 1))
    v2 = version(2, m(2026, 1), ends_on=m(2026, 2), opex=5_000, approved_at=datetime(2026, 1, 1))
    assert covering_version([v1, v2], m(2026, 3)) is None
    figures = budget_figures([v1, v2], {}, date(2026, 4, 1), 1)
    assert figures.opex_budget_to_date_cents == 10_000  # Jan, Feb at 5000; Mar, Apr 0


def test_gap_between_versions() -> None:
    # SEMANTICS R16: v1 covers Jan-Feb, nothing covers Mar-Apr, v2 covers May on.
    v1 = version(1, m(2026, 1), ends_on=date(2026, 2, 28), opex=10_000, capex=1_000)
    v1 = dataclasses.replace(v1, approved_at=datetime(2025, 12, 1))
    v2 = version(2, m(2026, 5), opex=20_000, capex=2_000, approved_at=datetime(2026, 1, 10))
    costs = {
        (m(2026, 1), "opex"): 1_000,
        (m(2026, 2), "opex"): 2_000,
        (m(2026, 3), "opex"): 4_000,
        (m(2026, 4), "opex"): 8_000,
        (m(2026, 5), "opex"): 3_000,
        (m(2026, 6), "opex"): 7_000,
    }
    figures = budget_figures([v1, v2], costs, date(2026, 7, 10), 1)
    # Jan, Feb 2 × 10000 + Mar, Apr 0 + May-Jul 3 × 20000 = 80000.
    assert figures.opex_budget_to_date_cents == 80_000
    # SEMANTICS R22: complete covered months Jan, Feb, May, Jun; the last three are
    # Feb, May, Jun: (2000 + 3000 + 7000) / 3 = 4000. Mar and Apr are not covered.
    assert figures.actual_monthly_run_rate_cents == 4_000
    # SEMANTICS R21: every month from the start counts: 1+2+4+8+3+7 thousand.
    assert figures.opex_actual_cents == 25_000
    assert figures.current_version == v2


def test_current_version_when_cur_falls_in_a_gap() -> None:
    # SEMANTICS R19: today in April, uncovered; February is the latest covered month
    # before it, so v1 is current although v2 (starting in May) is approved.
    v1 = version(1, m(2026, 1), ends_on=m(2026, 2), opex=10_000, capex=1_000)
    v1 = dataclasses.replace(v1, approved_at=datetime(2025, 12, 1))
    v2 = version(2, m(2026, 5), opex=20_000, capex=2_000, approved_at=datetime(2026, 1, 10))
    figures = budget_figures([v1, v2], {}, date(2026, 4, 10), 1)
    assert figures.current_version == v1
    assert figures.capex_budget_cents == 1_000
    assert figures.budget_monthly_run_rate_cents == 10_000
    assert figures.opex_budget_to_date_cents == 20_000  # Jan, Feb
    # SEMANTICS R23: the future May-Dec count for the year: 2 × 10000 + 8 × 20000.
    assert figures.opex_budget_fiscal_year_cents == 180_000
    assert figures.opex_budget_fiscal_ytd_cents == 20_000  # Jan-Apr


def test_no_current_version_when_nothing_was_ever_covered() -> None:
    # SEMANTICS R19: a version whose ends_on month precedes its start covers nothing,
    # so there is no current version; its envelope is 0 (SEMANTICS R20).
    v = version(1, m(2026, 3), ends_on=m(2026, 1), capex=5_000, opex=1_000)
    figures = budget_figures([v], {(m(2026, 4), "capex"): 100}, date(2026, 4, 2), 1)
    assert figures.current_version is None
    assert figures.capex_budget_cents == 0
    assert figures.budget_monthly_run_rate_cents == 0
    assert figures.opex_budget_to_date_cents == 0
    assert figures.actual_monthly_run_rate_cents is None
    # SEMANTICS R21: a budget to date of 0 leaves used_ratio null.
    assert figures.used_ratio is None
    assert figures.status == "over"  # capex 100 > 0


# ---------------------------------------------------------------------------
# Cadences (SEMANTICS R17, R20)


def test_monthly_rate_is_exact() -> None:
    # SEMANTICS R17: monthly × 1, quarterly ÷ 3, annually ÷ 12.
    assert monthly_rate(version(1, m(2026, 1), opex=1000)) == 1000
    assert monthly_rate(version(1, m(2026, 1), opex=1000, cadence="quarterly")) == Fraction(1000, 3)
    assert monthly_rate(version(1, m(2026, 1), opex=1000, cadence="annually")) == Fraction(250, 3)
    with pytest.raises(ValueError, match="opex_cadence"):
        monthly_rate(version(1, m(2026, 1), opex=1000, cadence="weekly"))


def test_quarterly_summed_exactly_and_rounded_once() -> None:
    # SEMANTICS R17: 1000 quarterly over Jan and Feb = 2 × 1000/3 = 666.67 -> 667,
    # not 333 + 333 = 666.
    v = version(1, m(2026, 1), opex=1000, cadence="quarterly")
    figures = budget_figures([v], {}, date(2026, 2, 10), 1)
    assert figures.opex_budget_to_date_cents == 667
    # SEMANTICS R20: the run rate 333.33 -> 333.
    assert figures.budget_monthly_run_rate_cents == 333
    # SEMANTICS R23: 12 × 1000/3 = 4000; through February 667.
    assert figures.opex_budget_fiscal_year_cents == 4000
    assert figures.opex_budget_fiscal_ytd_cents == 667


def test_annual_summed_exactly_and_rounded_once() -> None:
    # SEMANTICS R17: 1000 annually over Jan-May = 5 × 1000/12 = 416.67 -> 417
    # (rounding each month would give 5 × 83 = 415).
    v = version(1, m(2026, 1), opex=1000, cadence="annually")
    figures = budget_figures([v], {}, date(2026, 5, 31), 1)
    assert figures.opex_budget_to_date_cents == 417
    assert figures.budget_monthly_run_rate_cents == 83  # 83.33
    assert figures.opex_budget_fiscal_year_cents == 1000


def test_budget_sums_round_half_to_even() -> None:
    # SEMANTICS R17: 6 annually = 0.5 a month. One month: 0.5 -> 0; three: 1.5 -> 2.
    v = version(1, m(2026, 1), opex=6, cadence="annually")
    assert budget_figures([v], {}, date(2026, 1, 9), 1).opex_budget_to_date_cents == 0
    assert budget_figures([v], {}, date(2026, 3, 9), 1).opex_budget_to_date_cents == 2
    # SEMANTICS R20: 30 annually = 2.5 a month -> run rate 2; 42 -> 3.5 -> 4.
    assert budget_figures([v], {}, date(2026, 3, 9), 1).budget_monthly_run_rate_cents == 0
    v30 = dataclasses.replace(v, opex_cents=30)
    v42 = dataclasses.replace(v, opex_cents=42)
    assert budget_figures([v30], {}, date(2026, 3, 9), 1).budget_monthly_run_rate_cents == 2
    assert budget_figures([v42], {}, date(2026, 3, 9), 1).budget_monthly_run_rate_cents == 4


# ---------------------------------------------------------------------------
# Scheduled and unbudgeted rows (SEMANTICS R18, R19, R23, R25)


def test_budget_starting_next_month_is_scheduled() -> None:
    v = version(1, date(2026, 5, 1), capex=50_000, opex=10_000)
    costs = {(m(2026, 3), "capex"): 7_000, (m(2026, 4), "opex"): 3_000}
    figures = budget_figures([v], costs, date(2026, 4, 20), 4)
    assert figures == BudgetFigures(
        budgeted=True,
        status="scheduled",  # SEMANTICS R18: May is after cur (April)
        over_parts=[],
        # SEMANTICS R25: budget and actual figures are 0.
        capex_budget_cents=0,
        capex_actual_cents=0,
        capex_remaining_cents=0,
        opex_budget_to_date_cents=0,
        opex_actual_cents=0,
        budget_monthly_run_rate_cents=0,
        actual_monthly_run_rate_cents=None,
        budget_to_date_cents=0,
        actual_to_date_cents=0,
        variance_cents=0,
        used_ratio=None,
        spent_before_budget_cents=10_000,  # 7000 + 3000, the spend so far
        # SEMANTICS R23: April fiscal year Apr 2026 - Mar 2027; May-Mar (11 months) covered.
        opex_budget_fiscal_year_cents=110_000,
        opex_budget_fiscal_ytd_cents=0,  # April only, uncovered
        opex_actual_fiscal_ytd_cents=3_000,  # April's opex, before the budget began
        budget_started_on=date(2026, 5, 1),
        revised=False,
        version_count=1,
        revision_pending=False,
        current_version=None,  # SEMANTICS R19: null when scheduled
        # SEMANTICS R46: no run rate (R25), so no projection and no projected status.
        projected_opex_fiscal_year_cents=None,
        projected_fiscal_year_variance_cents=None,
        projected_fiscal_year_status=None,
    )


def test_scheduled_is_never_over() -> None:
    # SEMANTICS R18: scheduled comes before over, however much was spent.
    v = version(1, date(2026, 5, 1), capex=1, opex=1)
    figures = budget_figures([v], {(m(2026, 4), "capex"): 10**9}, date(2026, 4, 30), 1)
    assert (figures.status, figures.over_parts) == ("scheduled", [])


def test_no_budget() -> None:
    # SEMANTICS R25: only a pending and a rejected version: not budgeted, every amount 0.
    versions = [
        version(1, m(2026, 1), opex=10_000, status="pending"),
        version(2, m(2025, 1), opex=10_000, status="rejected"),
    ]
    costs = {(m(2026, 1), "opex"): 12_000, (m(2025, 6), "capex"): 3_000}
    figures = budget_figures(versions, costs, date(2026, 3, 1), 1)
    assert figures == BudgetFigures(
        budgeted=False,
        status="no_budget",
        over_parts=[],
        capex_budget_cents=0,
        capex_actual_cents=0,
        capex_remaining_cents=0,
        opex_budget_to_date_cents=0,
        opex_actual_cents=0,
        budget_monthly_run_rate_cents=0,
        actual_monthly_run_rate_cents=None,
        budget_to_date_cents=0,
        actual_to_date_cents=0,
        variance_cents=0,
        used_ratio=None,
        spent_before_budget_cents=0,
        opex_budget_fiscal_year_cents=0,
        opex_budget_fiscal_ytd_cents=0,
        opex_actual_fiscal_ytd_cents=0,
        budget_started_on=None,
        revised=False,
        version_count=0,
        revision_pending=True,  # SEMANTICS R24: a pending version exists
        current_version=None,
        # SEMANTICS R46: not budgeted: no projection, status no_budget.
        projected_opex_fiscal_year_cents=None,
        projected_fiscal_year_variance_cents=None,
        projected_fiscal_year_status="no_budget",
    )
    assert budget_figures([], costs, date(2026, 3, 1), 1).revision_pending is False


# ---------------------------------------------------------------------------
# Actuals: refunds, run rates, fiscal years (SEMANTICS R21, R22, R23)


def test_refunds_are_summed_as_they_are() -> None:
    # SEMANTICS R21 (and R6): a capex refund of -30000 brings 100000 down to 70000,
    # within an 80000 envelope; an opex credit of -500 lowers February.
    v = version(1, m(2026, 1), capex=80_000, opex=1_000)
    costs = {
        (m(2026, 1), "capex"): 100_000,
        (m(2026, 2), "capex"): -30_000,
        (m(2026, 1), "opex"): 1_500,
        (m(2026, 2), "opex"): -500,
    }
    figures = budget_figures([v], costs, date(2026, 3, 3), 1)
    assert figures.capex_actual_cents == 70_000
    assert figures.opex_actual_cents == 1_000  # 1500 - 500
    assert figures.actual_to_date_cents == 71_000
    assert figures.status == "within"
    # SEMANTICS R22: (1500 + -500) / 2 = 500.
    assert figures.actual_monthly_run_rate_cents == 500


def test_run_rate_takes_only_the_last_three_complete_months() -> None:
    # SEMANTICS R22: today in May; complete covered months Jan-Apr; the last three are
    # Feb-Apr: (2000 + 3000 + 4001) / 3 = 3000.33 -> 3000. May (cur) is left out.
    v = version(1, m(2026, 1), opex=5_000)
    costs = {(m(2026, n), "opex"): cents for n, cents in [(1, 1000), (2, 2000), (3, 3000)]}
    costs[(m(2026, 4), "opex")] = 4001
    costs[(m(2026, 5), "opex")] = 90_000
    assert budget_figures([v], costs, date(2026, 5, 20), 1).actual_monthly_run_rate_cents == 3000


def test_run_rate_with_one_month_and_with_none() -> None:
    v = version(1, m(2026, 1), opex=5_000)
    costs = {(m(2026, 1), "opex"): 1_001, (m(2026, 2), "opex"): 7_000}
    # SEMANTICS R22: one complete month (January): 1001 / 1 = 1001.
    assert budget_figures([v], costs, date(2026, 2, 2), 1).actual_monthly_run_rate_cents == 1001
    # SEMANTICS R22: the budget began this month: no complete month yet -> null.
    assert budget_figures([v], costs, date(2026, 1, 31), 1).actual_monthly_run_rate_cents is None
    # Half to even: (1001 + 1002) / 2 = 1001.5 -> 1002; (1000 + 1001) / 2 = 1000.5 -> 1000.
    costs = {(m(2026, 1), "opex"): 1_001, (m(2026, 2), "opex"): 1_002}
    assert budget_figures([v], costs, date(2026, 3, 2), 1).actual_monthly_run_rate_cents == 1002
    costs = {(m(2026, 1), "opex"): 1_000, (m(2026, 2), "opex"): 1_001}
    assert budget_figures([v], costs, date(2026, 3, 2), 1).actual_monthly_run_rate_cents == 1000


def test_fiscal_year_starting_in_april_with_today_in_february() -> None:
    # SEMANTICS R23: on 2026-02-10 the fiscal year runs Apr 2025 - Mar 2026.
    v = version(1, m(2025, 10), opex=3_000)
    costs = {
        (m(2025, 3), "opex"): 1_000,  # previous fiscal year, before the budget
        (m(2025, 6), "opex"): 2_000,  # this fiscal year, before the budget
        (m(2025, 11), "opex"): 3_000,
        (m(2025, 11), "capex"): 9_999,  # capex is not in the opex figure
        (m(2026, 2), "opex"): 4_000,
    }
    figures = budget_figures([v], costs, date(2026, 2, 10), 4)
    # Oct 2025 - Mar 2026 covered: 6 × 3000 = 18000; Oct - Feb: 5 × 3000 = 15000.
    assert figures.opex_budget_fiscal_year_cents == 18_000
    assert figures.opex_budget_fiscal_ytd_cents == 15_000
    # Opex from 2025-04-01 through today, before the budget began or not:
    # 2000 + 3000 + 4000 = 9000.
    assert figures.opex_actual_fiscal_ytd_cents == 9_000
    # SEMANTICS R21: before October 2025: 1000 + 2000 = 3000; since: 3000 + 4000 opex.
    assert figures.spent_before_budget_cents == 3_000
    assert figures.opex_actual_cents == 7_000
    assert figures.capex_actual_cents == 9_999


def test_spent_before_budget_counts_both_categories() -> None:
    # SEMANTICS R21: capex 700 + opex 300 dated before the start month = 1000, and in
    # neither actual figure.
    v = version(1, date(2026, 3, 31), capex=5_000, opex=100)
    costs = {(m(2026, 1), "capex"): 700, (m(2026, 2), "opex"): 300, (m(2026, 3), "opex"): 50}
    figures = budget_figures([v], costs, date(2026, 3, 1), 1)
    assert figures.spent_before_budget_cents == 1_000
    assert figures.actual_to_date_cents == 50
    assert figures.variance_cents == 5_050  # (5000 + 100) - 50


def test_costs_after_today_count_nowhere() -> None:
    # SEMANTICS R21: a key in a month after cur is ignored; a key dated mid-month is
    # read as its month.
    v = version(1, m(2026, 1), opex=1_000)
    costs = {(m(2026, 4), "opex"): 50_000, (date(2026, 2, 17), "opex"): 400}
    figures = budget_figures([v], costs, date(2026, 3, 1), 1)
    assert figures.opex_actual_cents == 400
    assert figures.opex_actual_fiscal_ytd_cents == 400


def test_unknown_cost_category() -> None:
    with pytest.raises(ValueError, match="cost category"):
        budget_figures([PLAIN], {(m(2026, 1), "other"): 1}, date(2026, 3, 1), 1)


# ---------------------------------------------------------------------------
# The fiscal-year projection (SEMANTICS R46)


def projection(figures: BudgetFigures) -> tuple[int | None, int | None, str | None]:
    return (
        figures.projected_opex_fiscal_year_cents,
        figures.projected_fiscal_year_variance_cents,
        figures.projected_fiscal_year_status,
    )


def test_projection_over_in_a_fiscal_year_starting_in_july() -> None:
    # SEMANTICS R46, R23: on 2026-03-10 with the fiscal year starting in July, the year runs
    # Jul 2025 - Jun 2026; cur is March, and April, May, June (3 months) follow it.
    v = version(1, m(2025, 9), opex=10_000)
    costs = {
        (m(2025, 6), "opex"): 50_000,  # the previous fiscal year: in no fiscal figure
        (m(2025, 8), "opex"): 5_000,  # this fiscal year, before the budget began
        (m(2025, 9), "opex"): 10_000,
        (m(2025, 10), "opex"): 10_000,
        (m(2025, 11), "opex"): 10_000,
        (m(2025, 12), "opex"): 12_000,
        (m(2026, 1), "opex"): 15_000,
        (m(2026, 1), "capex"): 70_000,  # capex is in no opex figure
        (m(2026, 2), "opex"): 18_000,
        (m(2026, 3), "opex"): 6_000,  # cur, so far
    }
    figures = budget_figures([v], costs, date(2026, 3, 10), 7)
    # R23: Sep 2025 - Jun 2026 covered, 10 × 10000 = 100000.
    assert figures.opex_budget_fiscal_year_cents == 100_000
    # R23: Aug 5000 + Sep-Nov 30000 + Dec 12000 + Jan 15000 + Feb 18000 + Mar 6000 = 86000.
    assert figures.opex_actual_fiscal_ytd_cents == 86_000
    # R22: Dec, Jan, Feb: (12000 + 15000 + 18000) / 3 = 15000.
    assert figures.actual_monthly_run_rate_cents == 15_000
    # 86000 + 15000 × 3 = 131000; 100000 - 131000 = -31000; above the budget: over.
    assert projection(figures) == (131_000, -31_000, "over")


def test_projection_within_from_the_first_month_of_an_october_fiscal_year() -> None:
    # SEMANTICS R46, R23: on 2026-10-05 with the fiscal year starting in October, the year
    # runs Oct 2026 - Sep 2027; cur is its first month and 11 months follow it.
    v = version(1, m(2026, 1), opex=30_000, cadence="quarterly")  # 10000 a month (R17)
    costs = {
        (m(2026, 7), "opex"): 9_000,
        (m(2026, 8), "opex"): 10_000,
        (m(2026, 9), "opex"): 9_500,  # the previous fiscal year's last month
        (m(2026, 10), "opex"): 2_000,
    }
    figures = budget_figures([v], costs, date(2026, 10, 5), 10)
    # R23: every month covered, 12 × 10000 = 120000; the year so far is October's 2000.
    assert figures.opex_budget_fiscal_year_cents == 120_000
    assert figures.opex_actual_fiscal_ytd_cents == 2_000
    # R22: Jul, Aug, Sep: (9000 + 10000 + 9500) / 3 = 9500, though Sep is last fiscal year.
    assert figures.actual_monthly_run_rate_cents == 9_500
    # 2000 + 9500 × 11 = 106500; 120000 - 106500 = 13500: within.
    assert projection(figures) == (106_500, 13_500, "within")


def test_projection_equal_to_the_budget_in_the_last_month_is_within() -> None:
    # SEMANTICS R46: on 2026-03-15 with an April fiscal year (Apr 2025 - Mar 2026) cur is
    # the year's last month: no month follows, so the projection is the year so far.
    v = version(1, m(2025, 4), opex=1_000)
    costs = {(m(2025, n), "opex"): 1_000 for n in range(4, 13)}
    costs.update({(m(2026, n), "opex"): 1_000 for n in (1, 2, 3)})
    figures = budget_figures([v], costs, date(2026, 3, 15), 4)
    # R23: 12 months at 1000 = 12000 of budget; 12 months at 1000 = 12000 spent.
    assert figures.opex_budget_fiscal_year_cents == 12_000
    assert figures.opex_actual_fiscal_ytd_cents == 12_000
    # 12000 + 1000 × 0 = 12000; 12000 - 12000 = 0; not above the budget: within.
    assert projection(figures) == (12_000, 0, "within")


def test_projection_rests_on_a_rounded_run_rate() -> None:
    # SEMANTICS R46, R22: the run rate is rounded before it is multiplied. Calendar year,
    # today 2026-04-02: Jan-Mar complete, (1000 + 1000 + 1001) / 3 = 1000.33 -> 1000; May to
    # December (8 months) follow April.
    v = version(1, m(2026, 1), opex=1_000)
    costs = {(m(2026, 1), "opex"): 1_000, (m(2026, 2), "opex"): 1_000}
    costs[(m(2026, 3), "opex")] = 1_001
    figures = budget_figures([v], costs, date(2026, 4, 2), 1)
    # 3001 + 1000 × 8 = 11001 (not 3001 + 8002.67); 12000 - 11001 = 999: within.
    assert projection(figures) == (11_001, 999, "within")


def test_no_projection_before_a_complete_month() -> None:
    # SEMANTICS R46: budgeted, begun this month, no run rate yet (R22): every projected
    # field null, the status included (it is no_budget only when not budgeted).
    v = version(1, m(2026, 3), opex=1_000)
    figures = budget_figures([v], {(m(2026, 3), "opex"): 5_000}, date(2026, 3, 31), 1)
    assert (figures.status, figures.actual_monthly_run_rate_cents) == ("over", None)
    assert projection(figures) == (None, None, None)


def test_scheduled_and_unbudgeted_rows_project_nothing() -> None:
    # SEMANTICS R46, R25: a scheduled row has fiscal figures but no run rate; an unbudgeted
    # row is no_budget whatever it spent.
    scheduled = version(1, m(2026, 6), opex=1_000)
    costs = {(m(2026, 1), "opex"): 4_000, (m(2026, 2), "opex"): 4_000}
    figures = budget_figures([scheduled], costs, date(2026, 3, 1), 1)
    assert figures.status == "scheduled"
    assert figures.opex_budget_fiscal_year_cents == 7_000  # June - December, 7 × 1000
    assert projection(figures) == (None, None, None)
    assert projection(budget_figures([], costs, date(2026, 3, 1), 1)) == (
        None,
        None,
        "no_budget",
    )
