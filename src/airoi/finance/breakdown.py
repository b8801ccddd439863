"""Splitting an ROI summary along one dimension (SEMANTICS R37).

The SQL sums come grouped by a column (an initiative, a month, a cost type, a vendor, a
value entry's status); here they are folded into the rows served, each finished by the same
rule as the whole (R9), so that the rows add up to the summary exactly: every row is a sum
of whole cents, never a share of one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Generic, TypeVar

from airoi.finance.periods import month_at, month_index
from airoi.finance.roi import RoiFigures, roi_figures

__all__ = [
    "Part",
    "StatusPart",
    "fiscal_quarter_label",
    "fold",
    "month_label",
    "parts",
    "quarter_of",
    "quarters_from",
    "status_parts",
]

K = TypeVar("K", bound=Hashable)
J = TypeVar("J", bound=Hashable)


@dataclass(frozen=True)
class Part(Generic[K]):
    """One row of a split: its key and figures. `value_known` is false when the split is
    of cost alone (cost type, vendor): value, net value and ROI are then not figures."""

    key: K
    figures: RoiFigures
    value_known: bool


def fold(
    cost: Mapping[K, Mapping[str, int]], approved: Mapping[K, int] | None, into: Callable[[K], J]
) -> tuple[dict[J, dict[str, int]], dict[J, int] | None]:
    """Sums regrouped under coarser keys (months into quarters), cent for cent."""
    folded_cost: dict[J, dict[str, int]] = {}
    for key, by_category in cost.items():
        target = folded_cost.setdefault(into(key), {})
        for category, cents in by_category.items():
            target[category] = target.get(category, 0) + cents
    if approved is None:
        return folded_cost, None
    folded_value: dict[J, int] = {}
    for key, cents in approved.items():
        folded_value[into(key)] = folded_value.get(into(key), 0) + cents
    return folded_cost, folded_value


def parts(
    keys: Iterable[K], cost: Mapping[K, Mapping[str, int]], approved: Mapping[K, int] | None
) -> list[Part[K]]:
    """A row for each key, in the order given, finished by R9 (value 0 where none)."""
    rows = []
    for key in keys:
        by_category = cost.get(key, {})
        value = 0 if approved is None else approved.get(key, 0)
        figures = roi_figures(value, by_category.get("capex", 0), by_category.get("opex", 0))
        rows.append(Part(key=key, figures=figures, value_known=approved is not None))
    return rows


@dataclass(frozen=True)
class StatusPart:
    """One row of the split of value by status (by=value_status): the status's value, and
    the part of it that is approved value (all of it on the approved row, none elsewhere)."""

    status: str
    value_cents: int
    approved_value_cents: int


def status_parts(statuses: Iterable[str], value: Mapping[str, int]) -> list[StatusPart]:
    """A row for each status, in the order given, 0 where no entry has it (SEMANTICS R37):
    only the approved row's value is approved value (R9), so the rows' approved value adds
    up to the summary's."""
    return [
        StatusPart(
            status=status,
            value_cents=value.get(status, 0),
            approved_value_cents=value.get(status, 0) if status == "approved" else 0,
        )
        for status in statuses
    ]


# January of year 1, the first month a date can hold.
_FIRST_MONTH = month_index(date.min)


def quarter_of(month: date, fiscal_year_start_month: int) -> date:
    """The first day of the fiscal quarter holding `month` (quarters of the fiscal year,
    SEMANTICS R23: the first starts on the fiscal year's first day). A quarter that began
    before year 1 (January of year 1 in a fiscal year not starting in January) has no such
    day: it is keyed by the first day there is, 0001-01-01."""
    return month_at(max(_quarter_index(month, fiscal_year_start_month), _FIRST_MONTH))


def quarters_from(first: date, last: date, fiscal_year_start_month: int) -> list[date]:
    """Every fiscal quarter from the one holding `first` through the one holding `last`, each
    keyed as `quarter_of` keys it."""
    start = _quarter_index(first, fiscal_year_start_month)
    end = month_index(last)
    return [month_at(max(index, _FIRST_MONTH)) for index in range(start, end + 1, 3)]


def _quarter_index(month: date, fiscal_year_start_month: int) -> int:
    """The month its fiscal quarter began, as `month_index` counts: before year 1 for
    January of year 1 in a fiscal year not starting in January."""
    return month_index(month) - (month.month - fiscal_year_start_month) % 12 % 3


def month_label(month: date) -> str:
    """2026-03."""
    return f"{month.year:04d}-{month.month:02d}"


def fiscal_quarter_label(quarter: date, fiscal_year_start_month: int) -> str:
    """Q1 2026 when the fiscal year is the calendar year; otherwise FY2026/27 Q1, the fiscal
    year named by the calendar years it spans (the first holding its first day)."""
    since_start = (quarter.month - fiscal_year_start_month) % 12
    number = since_start // 3 + 1
    first_year = quarter.year if quarter.month >= fiscal_year_start_month else quarter.year - 1
    if fiscal_year_start_month == 1:
        return f"Q{number} {first_year}"
    return f"FY{first_year}/{(first_year + 1) % 100:02d} Q{number}"
