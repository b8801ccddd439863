"""Worked examples for cents, half-even rounding, FX and entry dates (SEMANTICS R2, R5)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction

import pytest

from airoi.finance.money import FxTable, MissingRate, entry_date, half_even

# Account currency USD. EUR is worth 1.10 USD from 2025-01-01 and 1.20 USD from
# 2025-07-01; GBP is worth 1.25 USD from 2025-01-01.
FX = FxTable(
    "USD",
    {
        "EUR": [(date(2025, 7, 1), Decimal("1.20")), (date(2025, 1, 1), Decimal("1.10"))],
        "GBP": [(date(2025, 1, 1), Decimal("1.25"))],
        "JPY": [(date(2025, 1, 1), Decimal("0.5"))],
    },
)


# SEMANTICS R5: rounding is half to even.
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Fraction(1, 2), 0),  # 0.5 lies between 0 and 1: the even one is 0
        (Fraction(3, 2), 2),  # 1.5 lies between 1 and 2: 2
        (Fraction(5, 2), 2),  # 2.5 lies between 2 and 3: 2
        (Fraction(-5, 2), -2),  # -2.5 lies between -3 and -2: -2
        (Fraction(-1, 2), 0),  # -0.5: 0
        (Fraction(2000, 3), 667),  # 666.666...: no tie, nearest
        (Decimal("0.5"), 0),
        (Decimal("1.5"), 2),
        (Decimal("-2.5"), -2),
        (Decimal("2.5000000000000000000000000000001"), 3),  # just above the tie
        (Decimal("880.88"), 881),
        (7, 7),
    ],
)
def test_half_even(value: Decimal | Fraction | int, expected: int) -> None:
    assert half_even(value) == expected


def test_half_even_refuses_infinity() -> None:
    with pytest.raises(ValueError, match="cannot round"):
        half_even(Decimal("Infinity"))


def test_rate_follows_the_effective_dates() -> None:
    # SEMANTICS R5: the rate with the latest effective_from on or before the entry date.
    assert FX.rate("EUR", date(2025, 3, 15)) == Decimal("1.10")
    assert FX.rate("EUR", date(2025, 6, 30)) == Decimal("1.10")
    assert FX.rate("EUR", date(2025, 7, 1)) == Decimal("1.20")  # on its own effective day
    assert FX.rate("EUR", date(2030, 1, 1)) == Decimal("1.20")


def test_conversion_at_two_rates_over_time() -> None:
    # SEMANTICS R5: 1000 EUR cents in March 2025 = 1000 × 1.10 = 1100 USD cents;
    # the same amount in August 2025 = 1000 × 1.20 = 1200.
    assert FX.convert(1000, "EUR", date(2025, 3, 15), "USD") == 1100
    assert FX.convert(1000, "EUR", date(2025, 8, 1), "USD") == 1200


def test_earliest_rate_before_any_rate() -> None:
    # SEMANTICS R5: an entry dated 2024-06-01, before EUR's first rate (2025-01-01),
    # uses the earliest rate 1.10: 1000 × 1.10 = 1100, not the latest 1.20 (1200).
    assert FX.rate("EUR", date(2024, 6, 1)) == Decimal("1.10")
    assert FX.convert(1000, "EUR", date(2024, 6, 1), "USD") == 1100


def test_account_currency_and_null_are_one() -> None:
    # SEMANTICS R5: null is the account currency, whose rate is 1.
    assert FX.rate(None, date(2025, 1, 1)) == 1
    assert FX.rate("USD", date(2025, 1, 1)) == 1
    assert FX.convert(1234, None, date(2025, 1, 1), "USD") == 1234
    # 1100 USD cents into EUR in March 2025 = 1100 × 1 / 1.10 = 1000.
    assert FX.convert(1100, None, date(2025, 3, 1), "EUR") == 1000
    assert FX.convert(1100, "EUR", date(2025, 3, 1), None) == 1210  # 1100 × 1.10


def test_cross_conversion_rounds_once() -> None:
    # SEMANTICS R5: EUR -> GBP in March 2025 = amount × 1.10 / 1.25.
    # 1001 × 1.10 / 1.25 = 1101.1 / 1.25 = 880.88 -> 881.
    assert FX.convert(1001, "EUR", date(2025, 3, 1), "GBP") == 881
    # 3 × 1.10 / 1.25 = 3.3 / 1.25 = 2.64 -> 3. Rounding through USD first would give
    # 3.3 -> 3, then 3 / 1.25 = 2.4 -> 2: the exact path rounds once.
    assert FX.convert(3, "EUR", date(2025, 3, 1), "GBP") == 3


def test_conversion_ties_go_to_even() -> None:
    # SEMANTICS R5: 5 JPY cents × 0.5 = 2.5 -> 2; 7 × 0.5 = 3.5 -> 4; -5 × 0.5 = -2.5 -> -2.
    assert FX.convert(5, "JPY", date(2025, 2, 1), "USD") == 2
    assert FX.convert(7, "JPY", date(2025, 2, 1), "USD") == 4
    assert FX.convert(-5, "JPY", date(2025, 2, 1), "USD") == -2


def test_missing_rate() -> None:
    # SEMANTICS R5: a currency with no rate at all cannot be converted.
    with pytest.raises(MissingRate) as caught:
        FX.convert(100, "CHF", date(2025, 1, 1), "USD")
    assert caught.value.currency == "CHF"
    assert isinstance(caught.value, KeyError)
    assert "CHF" in str(caught.value)
    with pytest.raises(MissingRate):
        FX.convert(100, "USD", date(2025, 1, 1), "CHF")
    # The same currency on both sides needs no rate and leaves the amount as it is.
    assert FX.convert(100, "CHF", date(2025, 1, 1), "CHF") == 100


def test_rates_are_checked() -> None:
    with pytest.raises(ValueError, match="not positive"):
        FxTable("USD", {"EUR": [(date(2025, 1, 1), Decimal(0))]})
    with pytest.raises(ValueError, match="share an effective_from"):
        FxTable("USD", {"EUR": [(date(2025, 1, 1), Decimal(1)), (date(2025, 1, 1), Decimal(2))]})


def test_rates_as_stored_strings() -> None:
    # The store keeps rates as decimal strings; they stay exact.
    table = FxTable("USD", {"EUR": [(date(2025, 1, 1), "1.0825")]})
    # 10000 × 1.0825 = 10825 exactly.
    assert table.convert(10000, "EUR", date(2025, 5, 1), "USD") == 10825


def test_entry_date_prefers_period_start() -> None:
    # SEMANTICS R2: period_start when present, whatever created_at says.
    assert entry_date(date(2025, 12, 1), datetime(2026, 1, 5, 10, 0)) == date(2025, 12, 1)


def test_entry_date_falls_back_to_utc_date_of_created_at() -> None:
    # SEMANTICS R2: null period_start -> the UTC date of created_at.
    assert entry_date(None, datetime(2026, 3, 1, 23, 59)) == date(2026, 3, 1)  # naive is UTC
    # 2026-03-01 21:30 at UTC-05:00 is 2026-03-02 02:30 UTC.
    new_york = timezone(timedelta(hours=-5))
    assert entry_date(None, datetime(2026, 3, 1, 21, 30, tzinfo=new_york)) == date(2026, 3, 2)
    assert entry_date(None, datetime(2026, 3, 1, 0, 0, tzinfo=UTC)) == date(2026, 3, 1)
