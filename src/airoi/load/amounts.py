"""What an entry serves beyond its own fields, derived when it is written: its entry date
(SEMANTICS R2, served as `reported_on`), that date's month (the budget sums' key) and its
amount in the account currency (R5, served as `account_amount_cents`, R35)."""

from __future__ import annotations

from datetime import date
from typing import Any

from sqlalchemy import Connection, select

from airoi.db import tables
from airoi.finance.money import FxTable, MissingRate, entry_date
from airoi.load.records import Problems
from airoi.load.values import fits_int64, too_large_converted


class AccountAmounts:
    """Each account's FX table, read once a load (and again after its rates change)."""

    def __init__(self, conn: Connection, problems: Problems) -> None:
        self.conn = conn
        self.problems = problems
        self.tables: dict[int, FxTable] = {}

    def forget(self, account_id: int) -> None:
        self.tables.pop(account_id, None)

    def fx(self, account_id: int) -> FxTable:
        table = self.tables.get(account_id)
        if table is None:
            rates: dict[str, list[tuple[date, str]]] = {}
            fx = tables.fx_rates
            query = select(fx.c.currency, fx.c.effective_from, fx.c.rate).where(
                fx.c.account_id == account_id
            )
            for currency, effective_from, rate in self.conn.execute(query):
                rates.setdefault(currency, []).append((effective_from, rate))
            currency = self.conn.execute(
                select(tables.accounts.c.currency).where(tables.accounts.c.id == account_id)
            ).scalar_one()
            table = self.tables[account_id] = FxTable(currency, rates)
        return table

    def derive(self, key: str, row: dict[str, Any]) -> None:
        """Entry date (SEMANTICS R2), its month, the amount in account currency (R5)."""
        day = entry_date(row["period_start"], row["created_at"])
        row["entry_date"] = day
        row["entry_month"] = day.replace(day=1)
        row["account_amount_cents"] = self.converted(
            f"{key}[id={row['id']}]", row["account_id"], row["amount_cents"], row["currency"], day
        )

    def converted(
        self, label: str, account_id: int, amount: int | None, currency: str | None, day: date
    ) -> int | None:
        """`amount` in the account currency; None (and a problem) when it cannot be."""
        if amount is None:
            return None
        fx = self.fx(account_id)
        try:
            converted = fx.convert(amount, currency, day, None)
        except MissingRate as exc:  # pass 1 refuses these; kept as a guard
            self.problems.add(
                f"{label}.currency: no FX rate for {exc.currency} in account {account_id}"
            )
            return None
        if not fits_int64(converted):
            self.problems.add(too_large_converted(label, amount, currency, fx.account_currency))
            return None
        return converted

    def check_initiative_currencies(self, account_id: int) -> None:
        """SEMANTICS R4, R5: an initiative's budget row is in its own currency, so every
        currency an initiative of the account is kept in needs a rate; a new account currency
        can leave one without (the account's own currency needed none before)."""
        fx = self.fx(account_id)
        initiatives = tables.initiatives
        query = (
            select(initiatives.c.currency)
            .distinct()
            .where(initiatives.c.account_id == account_id, initiatives.c.currency.is_not(None))
        )
        for currency in sorted(self.conn.execute(query).scalars()):
            try:
                fx.rate(currency, date.min)
            except MissingRate:
                self.problems.add(
                    f"accounts[id={account_id}].currency: stored initiatives in {currency} would "
                    f"have no FX rate for {currency} in account {account_id}"
                )
