"""Months, reporting windows and fiscal years (SEMANTICS R8, R23).

A month is represented by the `datetime.date` of its first day.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Final

__all__ = [
    "WINDOWS",
    "WINDOW_LABELS",
    "add_months",
    "fiscal_year",
    "month_at",
    "month_index",
    "month_of",
    "months_between",
    "window_range",
]

WINDOWS: Final = ("1yr", "3yr", "5yr", "all")
WINDOW_LABELS: Final[dict[str, str]] = {
    "all": "All time",
    "1yr": "Last 12 months",
    "3yr": "Last 3 years",
    "5yr": "Last 5 years",
}
_WINDOW_YEARS: Final[dict[str, int]] = {"1yr": 1, "3yr": 3, "5yr": 5}


def month_of(day: date) -> date:
    """The first day of the month containing `day` (a datetime gives a plain date)."""
    return date(day.year, day.month, 1)


def month_index(day: date) -> int:
    """The month containing `day` as a count of months since January of year 0."""
    return day.year * 12 + day.month - 1


def month_at(index: int) -> date:
    """The first day of the month `month_index` counts as `index` (years 1 to 9999 only)."""
    return date(index // 12, index % 12 + 1, 1)


def add_months(month: date, n: int) -> date:
    """The first day of the month `n` months after the month containing `month`."""
    return month_at(month_index(month) + n)


def months_between(first: date, last: date) -> list[date]:
    """Every month from the month of `first` through the month of `last`, inclusive.

    Empty when `last` falls in an earlier month than `first`.
    """
    start, end = month_of(first), month_of(last)
    count = (end.year - start.year) * 12 + (end.month - start.month) + 1
    return [add_months(start, i) for i in range(max(count, 0))]


def _years_before(day: date, years: int) -> date:
    """The same calendar day `years` earlier; 29 February becomes 28 February."""
    try:
        return day.replace(year=day.year - years)
    except ValueError:  # 29 February in a year that has none
        return day.replace(year=day.year - years, day=28)


def window_range(window: str, today: date) -> tuple[date, date] | None:
    """(from, through) of a reporting window, both inclusive (SEMANTICS R8).

    None for `all`, which has no bounds. For N years: through = today and
    from = (today minus N calendar years) plus one day. Unknown windows raise
    ValueError.
    """
    if window == "all":
        return None
    years = _WINDOW_YEARS.get(window)
    if years is None:
        raise ValueError(f"unknown window {window!r}; expected one of {', '.join(WINDOWS)}")
    return _years_before(today, years) + timedelta(days=1), today


def fiscal_year(today: date, start_month: int) -> tuple[date, list[date]]:
    """First day of the fiscal year containing `today`, and its 12 months (SEMANTICS R23)."""
    if not 1 <= start_month <= 12:
        raise ValueError(f"fiscal_year_start_month must be 1..12, not {start_month}")
    year = today.year if today.month >= start_month else today.year - 1
    first = date(year, start_month, 1)
    return first, [add_months(first, i) for i in range(12)]
