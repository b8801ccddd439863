"""Worked examples for months, windows and fiscal years (SEMANTICS R8, R23)."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from airoi.finance.periods import (
    WINDOW_LABELS,
    WINDOWS,
    add_months,
    fiscal_year,
    month_of,
    months_between,
    window_range,
)


def test_month_helpers() -> None:
    assert month_of(date(2026, 2, 28)) == date(2026, 2, 1)
    assert month_of(datetime(2026, 2, 28, 23, 0)) == date(2026, 2, 1)
    assert type(month_of(datetime(2026, 2, 28, 23, 0))) is date
    assert add_months(date(2025, 11, 1), 3) == date(2026, 2, 1)
    assert add_months(date(2026, 1, 1), -1) == date(2025, 12, 1)
    assert add_months(date(2026, 1, 31), 1) == date(2026, 2, 1)
    assert months_between(date(2025, 11, 15), date(2026, 2, 3)) == [
        date(2025, 11, 1),
        date(2025, 12, 1),
        date(2026, 1, 1),
        date(2026, 2, 1),
    ]
    assert months_between(date(2026, 2, 1), date(2026, 2, 28)) == [date(2026, 2, 1)]
    assert months_between(date(2026, 3, 1), date(2026, 2, 1)) == []


def test_window_names_and_labels() -> None:
    # SEMANTICS R8
    assert WINDOWS == ("1yr", "3yr", "5yr", "all")
    assert WINDOW_LABELS == {
        "all": "All time",
        "1yr": "Last 12 months",
        "3yr": "Last 3 years",
        "5yr": "Last 5 years",
    }


def test_all_has_no_bounds() -> None:
    # SEMANTICS R8: `all` serves no from/through.
    assert window_range("all", date(2026, 6, 15)) is None


def test_one_year_ordinary_day() -> None:
    # SEMANTICS R8: 2026-06-15 minus 1 year = 2025-06-15, plus one day = 2025-06-16.
    assert window_range("1yr", date(2026, 6, 15)) == (date(2025, 6, 16), date(2026, 6, 15))


def test_one_year_from_29_february() -> None:
    # SEMANTICS R8: 2028-02-29 minus 1 year = 2027-02-29, which does not exist, so
    # 2027-02-28; plus one day = 2027-03-01.
    assert window_range("1yr", date(2028, 2, 29)) == (date(2027, 3, 1), date(2028, 2, 29))


def test_three_and_five_years_from_29_february() -> None:
    # SEMANTICS R8: 2024-02-29 minus 3 years -> 2021-02-28 (+1 day) = 2021-03-01;
    # minus 5 years -> 2019-02-28 (+1 day) = 2019-03-01.
    assert window_range("3yr", date(2024, 2, 29)) == (date(2021, 3, 1), date(2024, 2, 29))
    assert window_range("5yr", date(2024, 2, 29)) == (date(2019, 3, 1), date(2024, 2, 29))


def test_window_into_a_leap_day() -> None:
    # SEMANTICS R8: 2025-02-28 minus 1 year = 2024-02-28, plus one day = 2024-02-29.
    assert window_range("1yr", date(2025, 2, 28)) == (date(2024, 2, 29), date(2025, 2, 28))


@pytest.mark.parametrize("window", ["2yr", "ALL", "", "1y"])
def test_unknown_window(window: str) -> None:
    with pytest.raises(ValueError, match="unknown window"):
        window_range(window, date(2026, 1, 1))


def test_fiscal_year_starting_in_april_with_today_in_february() -> None:
    # SEMANTICS R23: on 2026-02-10 the April fiscal year began 2025-04-01 and runs
    # through March 2026.
    first, months = fiscal_year(date(2026, 2, 10), 4)
    assert first == date(2025, 4, 1)
    assert months == [date(2025, m, 1) for m in range(4, 13)] + [
        date(2026, m, 1) for m in range(1, 4)
    ]


def test_fiscal_year_on_its_first_month_and_calendar_year() -> None:
    # SEMANTICS R23: April 2026 starts a new April fiscal year; start month 1 is the
    # calendar year.
    assert fiscal_year(date(2026, 4, 1), 4)[0] == date(2026, 4, 1)
    first, months = fiscal_year(date(2026, 12, 31), 1)
    assert first == date(2026, 1, 1)
    assert months[-1] == date(2026, 12, 1)
    assert len(months) == 12


@pytest.mark.parametrize("start_month", [0, 13])
def test_fiscal_year_start_month_is_checked(start_month: int) -> None:
    with pytest.raises(ValueError, match=r"1\.\.12"):
        fiscal_year(date(2026, 1, 1), start_month)
