"""Worked examples for the ROI summary figures (SEMANTICS R9, R10)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from airoi.finance.roi import RoiFigures, roi_figures, roi_percent


def test_roi_figures() -> None:
    # SEMANTICS R9: total = 20000 + 10000 = 30000; net = 50000 - 30000 = 20000;
    # roi = 20000 / 30000 = 0.666..., unrounded.
    figures = roi_figures(approved_value_cents=50_000, capex_cents=20_000, opex_cents=10_000)
    assert figures == RoiFigures(
        approved_value_cents=50_000,
        capex_cents=20_000,
        opex_cents=10_000,
        total_cost_cents=30_000,
        net_value_cents=20_000,
        roi=2 / 3,
    )
    assert figures.roi == 0.6666666666666666
    assert figures.roi_exact == Fraction(2, 3)


def test_roi_is_null_without_cost() -> None:
    # SEMANTICS R9: no cost -> roi null (not zero); net = 500 - 0 = 500.
    figures = roi_figures(approved_value_cents=500, capex_cents=0, opex_cents=0)
    assert figures.total_cost_cents == 0
    assert figures.net_value_cents == 500
    assert figures.roi is None
    assert figures.roi_exact is None
    assert figures.roi_percent is None


def test_roi_negative_and_refunds() -> None:
    # SEMANTICS R9: total = 1000 + (-200) = 800; net = 0 - 800 = -800; roi = -1.
    figures = roi_figures(approved_value_cents=0, capex_cents=1000, opex_cents=-200)
    assert figures.total_cost_cents == 800
    assert figures.net_value_cents == -800
    assert figures.roi == -1.0


@pytest.mark.parametrize(
    ("roi", "expected"),
    [
        (Fraction(1, 3), 33.33),  # SEMANTICS R10: 100/3 = 33.333... -> 33.33
        (1 / 3, 33.33),  # the float roi gives the same
        (Fraction(2, 3), 66.67),  # 66.666... -> 66.67
        (Fraction(-1, 3), -33.33),
        (0.5, 50.0),
        (Fraction(1, 800), 0.12),  # 0.125 %: a tie, half to even -> 0.12
        (1 / 800, 0.12),  # the float 0.00125 keeps the tie
        (Fraction(3, 800), 0.38),  # 0.375 %: a tie -> 0.38
        (Fraction(0), 0.0),
        (None, None),
    ],
)
def test_roi_percent(roi: float | Fraction | None, expected: float | None) -> None:
    assert roi_percent(roi) == expected


def test_roi_percent_of_figures() -> None:
    # SEMANTICS R10: net = 1, total = 3 -> 33.33.
    figures = roi_figures(approved_value_cents=4, capex_cents=3, opex_cents=0)
    assert figures.net_value_cents == 1
    assert figures.roi_percent == 33.33
    assert roi_percent(figures.roi) == 33.33
