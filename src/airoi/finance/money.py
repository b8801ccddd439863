"""Cents, half-even rounding, currency conversion and entry dates (SEMANTICS R2, R5)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from fractions import Fraction

__all__ = ["FxTable", "MissingRate", "entry_date", "half_even"]


def half_even(value: Decimal | Fraction | int) -> int:
    """Round an exact amount to whole cents, a tie going to the even neighbour.

    Works on the exact value: a Decimal is turned into a Fraction without loss,
    so the result does not depend on any decimal context precision.
    """
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"cannot round {value} to cents")
        value = Fraction(value)
    # Fraction.__round__ without ndigits rounds half to even.
    return round(value)


class MissingRate(KeyError):
    """A currency the FX table holds no rate for at all (SEMANTICS R5)."""

    def __init__(self, currency: str) -> None:
        super().__init__(currency)
        self.currency = currency

    def __str__(self) -> str:
        return f"no FX rate for currency {self.currency}"


class FxTable:
    """The account's FX table: rates of each currency into the account currency.

    `rates` maps a currency code to its (effective_from, rate) pairs, in any
    order. A rate is a Decimal (or a decimal string, as the store keeps it) and
    must be positive; two rates of one currency may not share a date.
    """

    def __init__(
        self,
        account_currency: str,
        rates: Mapping[str, Sequence[tuple[date, Decimal | str]]],
    ) -> None:
        self.account_currency = account_currency
        self._dates: dict[str, list[date]] = {}
        self._rates: dict[str, list[Decimal]] = {}
        for currency, pairs in rates.items():
            ordered = sorted(((day, Decimal(rate)) for day, rate in pairs), key=lambda p: p[0])
            days = [day for day, _ in ordered]
            if len(set(days)) != len(days):
                raise ValueError(f"two FX rates for {currency} share an effective_from date")
            for day, rate in ordered:
                if not rate.is_finite() or rate <= 0:
                    raise ValueError(f"FX rate for {currency} on {day} is not positive: {rate}")
            if ordered:
                self._dates[currency] = days
                self._rates[currency] = [rate for _, rate in ordered]

    def _is_account(self, currency: str | None) -> bool:
        return currency is None or currency == self.account_currency

    def rate(self, currency: str | None, on: date) -> Decimal:
        """Units of account currency per unit of `currency` on day `on` (SEMANTICS R5).

        Null and the account currency are 1. Otherwise the rate with the latest
        effective_from on or before `on`; before the first rate, the earliest rate.
        """
        if self._is_account(currency):
            return Decimal(1)
        assert currency is not None  # narrowed by _is_account
        days = self._dates.get(currency)
        if days is None:
            raise MissingRate(currency)
        index = bisect_right(days, on) - 1
        return self._rates[currency][max(index, 0)]

    def convert(
        self, amount_cents: int, currency: str | None, on: date, to_currency: str | None
    ) -> int:
        """`amount_cents` in `currency` expressed in `to_currency`, as of entry date `on`.

        amount × rate(currency) / rate(to_currency), exact, rounded half to even
        once (SEMANTICS R5). Null stands for the account currency on either side;
        the same currency on both sides leaves the amount untouched.
        """
        source = self.account_currency if currency is None else currency
        target = self.account_currency if to_currency is None else to_currency
        if source == target:
            return amount_cents
        exact = amount_cents * Fraction(self.rate(source, on)) / Fraction(self.rate(target, on))
        return half_even(exact)


def entry_date(period_start: date | None, created_at: datetime) -> date:
    """The date an entry is reported under (SEMANTICS R2).

    Its period_start; when that is null, the UTC date of created_at (a naive
    datetime is taken as UTC, which is how the store keeps them).
    """
    if period_start is not None:
        if isinstance(period_start, datetime):
            return period_start.date()
        return period_start
    if created_at.tzinfo is not None:
        created_at = created_at.astimezone(UTC)
    return created_at.date()
