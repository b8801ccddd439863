"""One initiative's budget against its spend (SPEC 2.7; SEMANTICS R16-R25, R46).

The caller loads the initiative's budget versions (every status) and its cost
entries aggregated by (month, category), converted into the row's currency
(SEMANTICS R4, R5). `budget_figures` finishes the row exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from fractions import Fraction
from functools import lru_cache
from typing import Final

from airoi.finance.money import half_even
from airoi.finance.periods import fiscal_year, month_of, months_between

__all__ = [
    "CADENCE_MONTHS",
    "BudgetFigures",
    "BudgetVersion",
    "budget_figures",
    "covering_version",
    "monthly_rate",
]

# How many months one opex_cents amount pays for (SEMANTICS R17).
CADENCE_MONTHS: Final[dict[str, int]] = {"monthly": 1, "quarterly": 3, "annually": 12}
CATEGORIES: Final = ("capex", "opex")


@dataclass(frozen=True)
class BudgetVersion:
    id: int
    effective_from: date
    ends_on: date | None
    capex_cents: int
    opex_cents: int
    opex_cadence: str  # monthly | quarterly | annually
    status: str  # approved | pending | rejected
    approved_at: datetime | None
    source: str
    reason: str | None
    set_by_id: int | None


@dataclass(frozen=True)
class BudgetFigures:
    """The computed part of a SPEC 2.7 budget row (all but initiative_id, currency, as_of)."""

    budgeted: bool
    status: str  # no_budget | scheduled | within | over
    over_parts: list[str]
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
    current_version: BudgetVersion | None
    projected_opex_fiscal_year_cents: int | None
    projected_fiscal_year_variance_cents: int | None
    projected_fiscal_year_status: str | None  # no_budget | within | over; None: no projection


def monthly_rate(version: BudgetVersion) -> Fraction:
    """The version's opex per month as an exact fraction (SEMANTICS R17)."""
    months = CADENCE_MONTHS.get(version.opex_cadence)
    if months is None:
        raise ValueError(
            f"budget version {version.id}: unknown opex_cadence {version.opex_cadence!r}"
        )
    return Fraction(version.opex_cents, months)


def _approval_order(version: BudgetVersion) -> tuple[bool, datetime, int]:
    # Latest approved_at wins, a missing approved_at sorting lowest, then the highest id.
    return (
        version.approved_at is not None,
        version.approved_at or datetime.min,
        version.id,
    )


def covering_version(versions: Sequence[BudgetVersion], month: date) -> BudgetVersion | None:
    """The approved version covering `month`, or None when it is uncovered (SEMANTICS R16).

    Of the approved versions whose effective_from month is on or before the
    month, the one approved last; it covers unless its ends_on month is earlier.
    So a revision changes the months from its own start on, never earlier ones.
    """
    month = month_of(month)
    started = [
        v for v in versions if v.status == "approved" and month_of(v.effective_from) <= month
    ]
    if not started:
        return None
    latest = max(started, key=_approval_order)
    if latest.ends_on is not None and month_of(latest.ends_on) < month:
        return None
    return latest


class _Plan:
    """The approved versions of one initiative, with each month's cover memoised.

    `cover` is `covering_version` for these versions (a property test holds the two equal):
    the versions are ordered once, the latest approval first, with their months worked out,
    so each month takes the first version begun by then. A page of /budgets asks about 25
    months of each of its hundreds of initiatives, three times over."""

    def __init__(self, approved: list[BudgetVersion]) -> None:
        self._versions = sorted(approved, key=_approval_order, reverse=True)
        self._months = [
            (month_of(v.effective_from), None if v.ends_on is None else month_of(v.ends_on))
            for v in self._versions
        ]
        # Each month asked so far: the index of the version covering it, -1 when none does.
        self._cover: dict[date, int] = {}

    def _index(self, month: date) -> int:
        index = self._cover.get(month)
        if index is None:
            index = -1
            for at, (started, ends) in enumerate(self._months):
                if started <= month:
                    index = -1 if ends is not None and ends < month else at
                    break
            self._cover[month] = index
        return index

    def cover(self, month: date) -> BudgetVersion | None:
        index = self._index(month)
        return None if index < 0 else self._versions[index]

    def opex_budget(self, months: Sequence[date]) -> int:
        # SEMANTICS R17: the exact monthly rates are summed, then rounded once. The months a
        # version covers add its rate once each: they are counted and the rate multiplied,
        # exactly as the sum, without a Fraction addition per month (half of a page's time).
        counts = [0] * (len(self._versions) + 1)  # the last place: the uncovered months
        for index in map(self._index, months):
            counts[index] += 1
        return half_even(
            sum(
                (
                    monthly_rate(v) * n
                    for v, n in zip(self._versions, counts[:-1], strict=True)
                    if n
                ),
                Fraction(0),
            )
        )


# A page's initiatives share today and the fiscal year, and mostly their budgets' first
# months: their months are made once (each list is read, never changed).
@lru_cache(maxsize=64)
def _fiscal_year(today: date, start_month: int) -> tuple[date, tuple[date, ...]]:
    first, months = fiscal_year(today, start_month)
    return first, tuple(months)


@lru_cache(maxsize=1024)
def _months_between(first: date, last: date) -> tuple[date, ...]:
    return tuple(months_between(first, last))


def _costs_by_month(costs: Mapping[tuple[date, str], int], cur: date) -> dict[str, dict[date, int]]:
    by_category: dict[str, dict[date, int]] = {category: {} for category in CATEGORIES}
    for (day, category), cents in costs.items():
        if category not in by_category:
            raise ValueError(f"unknown cost category {category!r}; expected capex or opex")
        month = day if day.day == 1 and type(day) is date else month_of(day)
        if month > cur:  # dated after today: counts nowhere in a budget row (SEMANTICS R21)
            continue
        sums = by_category[category]
        sums[month] = sums.get(month, 0) + cents
    return by_category


def _total(sums: Mapping[date, int], first: date | None = None, before: date | None = None) -> int:
    """The cents of the months from `first` on and before `before` (either open)."""
    return sum(
        cents
        for month, cents in sums.items()
        if (first is None or month >= first) and (before is None or month < before)
    )


def _nothing_begun(*, budgeted: bool, status: str, revision_pending: bool) -> BudgetFigures:
    """A row on which no budget has begun: every amount 0, nothing current (R25)."""
    return BudgetFigures(
        budgeted=budgeted,
        status=status,
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
        revision_pending=revision_pending,
        current_version=None,
        projected_opex_fiscal_year_cents=None,
        projected_fiscal_year_variance_cents=None,
        # SEMANTICS R46: no_budget when not budgeted; a scheduled row has no run rate.
        projected_fiscal_year_status=None if budgeted else "no_budget",
    )


def budget_figures(
    versions: Sequence[BudgetVersion],
    costs: Mapping[tuple[date, str], int],
    today: date,
    fiscal_year_start_month: int,
) -> BudgetFigures:
    """Compare one initiative's budget with its spend as of `today` (SEMANTICS R16-R25), and
    project the fiscal year's opex (R46).

    `versions`: every budget version of the initiative, whatever its status;
    only approved ones change a figure.
    `costs`: (first day of month, 'capex' | 'opex') -> cents, already converted
    (SEMANTICS R5) into the row's currency, holding ONLY entries dated (R2) on or
    before `today`. The caller must drop later entries: one dated later in the
    current month cannot be told apart here. Keys in a later month are ignored.
    """
    cur = month_of(today)
    approved = [v for v in versions if v.status == "approved"]
    revision_pending = any(v.status == "pending" for v in versions)  # SEMANTICS R24
    version_count = len(approved)

    if not approved:  # SEMANTICS R25: nothing to compare against; every amount is 0
        return _nothing_begun(budgeted=False, status="no_budget", revision_pending=revision_pending)

    plan = _Plan(approved)
    spend = _costs_by_month(costs, cur)
    start = min(month_of(v.effective_from) for v in approved)  # SEMANTICS R18

    # SEMANTICS R23: the fiscal year holding today, future months included.
    fy_first, fy_months = _fiscal_year(today, fiscal_year_start_month)
    opex_budget_fiscal_year = plan.opex_budget(fy_months)
    opex_budget_fiscal_ytd = plan.opex_budget([m for m in fy_months if m <= cur])
    opex_actual_fiscal_ytd = _total(spend["opex"], first=fy_first)

    if start > cur:  # SEMANTICS R18, R25: scheduled; nothing has begun
        return replace(
            _nothing_begun(budgeted=True, status="scheduled", revision_pending=revision_pending),
            spent_before_budget_cents=_total(spend["capex"]) + _total(spend["opex"]),
            opex_budget_fiscal_year_cents=opex_budget_fiscal_year,
            opex_budget_fiscal_ytd_cents=opex_budget_fiscal_ytd,
            opex_actual_fiscal_ytd_cents=opex_actual_fiscal_ytd,
            budget_started_on=start,
            revised=version_count > 1,
            version_count=version_count,
            # SEMANTICS R19: current_version stays null when scheduled.
        )

    budget_months = _months_between(start, cur)
    complete_covered = [m for m in budget_months[:-1] if plan.cover(m) is not None]

    # SEMANTICS R19: the version covering cur, else the latest covered month's.
    current = plan.cover(cur)
    if current is None and complete_covered:
        current = plan.cover(complete_covered[-1])

    # SEMANTICS R20
    capex_budget = 0 if current is None else current.capex_cents
    opex_budget_to_date = plan.opex_budget(budget_months)
    budget_run_rate = 0 if current is None else half_even(monthly_rate(current))
    budget_to_date = capex_budget + opex_budget_to_date

    # SEMANTICS R21
    capex_actual = _total(spend["capex"], first=start)
    opex_actual = _total(spend["opex"], first=start)
    actual_to_date = capex_actual + opex_actual
    spent_before = _total(spend["capex"], before=start) + _total(spend["opex"], before=start)
    used_ratio = None if budget_to_date == 0 else actual_to_date / budget_to_date

    # SEMANTICS R22: the last three complete covered months, fewer if fewer exist.
    run_months = complete_covered[-3:]
    actual_run_rate = (
        half_even(Fraction(sum(spend["opex"].get(m, 0) for m in run_months), len(run_months)))
        if run_months
        else None
    )

    # SEMANTICS R46: the fiscal year's spend so far, and the run rate for each of its months
    # after cur.
    months_left = sum(1 for m in fy_months if m > cur)
    projected = (
        None if actual_run_rate is None else opex_actual_fiscal_ytd + actual_run_rate * months_left
    )

    # SEMANTICS R18: capex first.
    over_parts = [
        part
        for part, over in (
            ("capex", capex_actual > capex_budget),
            ("opex", opex_actual > opex_budget_to_date),
        )
        if over
    ]

    return BudgetFigures(
        budgeted=True,
        status="over" if over_parts else "within",
        over_parts=over_parts,
        capex_budget_cents=capex_budget,
        capex_actual_cents=capex_actual,
        capex_remaining_cents=capex_budget - capex_actual,
        opex_budget_to_date_cents=opex_budget_to_date,
        opex_actual_cents=opex_actual,
        budget_monthly_run_rate_cents=budget_run_rate,
        actual_monthly_run_rate_cents=actual_run_rate,
        budget_to_date_cents=budget_to_date,
        actual_to_date_cents=actual_to_date,
        variance_cents=budget_to_date - actual_to_date,
        used_ratio=used_ratio,
        spent_before_budget_cents=spent_before,
        opex_budget_fiscal_year_cents=opex_budget_fiscal_year,
        opex_budget_fiscal_ytd_cents=opex_budget_fiscal_ytd,
        opex_actual_fiscal_ytd_cents=opex_actual_fiscal_ytd,
        budget_started_on=start,
        revised=version_count > 1,
        version_count=version_count,
        revision_pending=revision_pending,
        current_version=current,
        projected_opex_fiscal_year_cents=projected,
        projected_fiscal_year_variance_cents=(
            None if projected is None else opex_budget_fiscal_year - projected
        ),
        projected_fiscal_year_status=(
            None
            if projected is None
            else "over"
            if projected > opex_budget_fiscal_year
            else "within"
        ),
    )
