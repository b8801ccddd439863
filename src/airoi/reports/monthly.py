"""Entries summed by initiative and month in each row's currency: what budget rows and
business cases are finished from (SEMANTICS R4, R5, R21, R44).

Amounts are stored converted into the account currency on write, so an initiative kept in
the account currency is summed in SQL; one kept in another currency has its entries
converted one by one at their own dates (R5), as a sum of converted amounts is not the
conversion of a sum.
"""

from collections import defaultdict
from collections.abc import Mapping
from datetime import date
from decimal import Decimal
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, Connection, Table, cast, func, select

from airoi.auth import Principal
from airoi.db.tables import fx_rates
from airoi.finance.money import FxTable

# (first day of the month, the grouping column's value, None when not grouped) -> cents
MonthSums = dict[tuple[date, Any], int]


def account_fx(db: Connection, principal: Principal) -> FxTable:
    """The account's FX table (R5)."""
    rates: dict[str, list[tuple[date, Decimal]]] = defaultdict(list)
    for currency, effective_from, rate in db.execute(
        select(fx_rates.c.currency, fx_rates.c.effective_from, fx_rates.c.rate).where(
            fx_rates.c.account_id == principal.account_id
        )
    ):
        rates[currency].append((effective_from, Decimal(rate)))
    return FxTable(principal.account_currency, rates)


def monthly_sums(
    db: Connection,
    principal: Principal,
    table: Table,
    currencies: Mapping[int, str],
    today: date,
    *,
    by: ColumnElement[Any] | None = None,
    where: ColumnElement[bool] | None = None,
) -> dict[int, MonthSums]:
    """Each initiative's entries of `table` dated on or before today (and matching `where`),
    summed by (month, `by`) in its row's currency, `currencies` (initiative id -> code)."""
    sums: dict[int, MonthSums] = defaultdict(lambda: defaultdict(int))
    same = [i for i, c in currencies.items() if c == principal.account_currency]
    other = [i for i, c in currencies.items() if c != principal.account_currency]
    group = [] if by is None else [by]
    conditions = [table.c.entry_date <= today] + ([] if where is None else [where])
    if same:
        # One row a (initiative, month, category): about 35 an initiative on a large account,
        # 14,000 for a page of 400. The sum is read as the whole number it is (PostgreSQL's
        # sum of bigints is a numeric, made a Decimal a row), and the rows fetched at once.
        rows = db.execute(
            select(
                table.c.initiative_id,
                table.c.entry_month,
                *group,
                cast(func.sum(table.c.account_amount_cents), BigInteger),
            )
            .where(table.c.initiative_id.in_(same), *conditions)
            .group_by(table.c.initiative_id, table.c.entry_month, *group)
        ).all()
        for initiative_id, month, *key, cents in rows:
            sums[initiative_id][(month, key[0] if key else None)] += cents or 0
    if other:
        fx = account_fx(db, principal)
        entries = db.execute(
            select(
                table.c.initiative_id,
                table.c.entry_date,
                table.c.entry_month,
                *group,
                table.c.amount_cents,
                table.c.currency,
            ).where(
                table.c.initiative_id.in_(other),
                table.c.amount_cents.is_not(None),
                *conditions,
            )
        )
        for initiative_id, day, month, *key, amount, currency in entries:
            converted = fx.convert(amount, currency, day, currencies[initiative_id])
            sums[initiative_id][(month, key[0] if key else None)] += converted
    return sums
