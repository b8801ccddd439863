"""Every amount the service serves fits a signed 64-bit integer (SEMANTICS R38).

Checked once a load has written, inside its transaction, for the accounts the bundle names;
a refusal rolls everything back. The checks are bounds that hold for every window, scope,
breakdown and day the service can be asked about, so a figure can never be computed past
them later:

- every `/roi` figure of an account (approved value, capex, opex, total, net) over any window
  or scope is a sum or difference of some of its entries' `account_amount_cents`, so none
  passes the sum of their magnitudes;
- a budget row is in its initiative's currency. Its spend figures are bounded by the
  magnitudes of the initiative's cost entries converted into that currency at the largest
  rate any day could apply, and its budget figures by the largest capex plus the largest
  monthly opex rate times every month from its first version to the last month a store
  holds (9999-12); variance, remaining and run rates are made of those. The fiscal-year
  projection of a budgeted row (R46) is the fiscal year's opex so far plus the run rate (an
  average of some months' opex) for at most 11 months: at most 12 times the spend bound,
  and its variance that plus the budget bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import date
from decimal import Decimal
from fractions import Fraction
from typing import Any, Final

from sqlalchemy import Column, Connection, Numeric, Table, cast, func, select
from sqlalchemy.exc import OperationalError

from airoi.db import tables
from airoi.load.batches import chunks

MAX_CENTS: Final = 2**63 - 1
LAST_MONTH: Final = date(9999, 12, 1)
_CADENCE_MONTHS: Final = {"monthly": 1, "quarterly": 3, "annually": 12}


class SumOverflow(Exception):
    """The store cannot total an account's amounts (SQLite: past 64 bits)."""


def _magnitude(conn: Connection, column: Column[Any]) -> Any:
    """Σ|column| as the store can add it exactly: PostgreSQL in numeric; SQLite in 64 bits,
    where passing them raises (then the sum is too large anyway)."""
    if conn.dialect.name == "postgresql":
        return func.sum(func.abs(cast(column, Numeric)))
    return func.sum(func.abs(column))


def _sums(conn: Connection, query: Any) -> list[Any]:
    try:
        return list(conn.execute(query))
    except OperationalError as exc:  # SQLite's "integer overflow"
        if "overflow" not in str(exc.orig):
            raise
        raise SumOverflow from None


def check_amounts_fit(conn: Connection, accounts: Iterable[int]) -> list[str]:
    """Problem lines for the accounts whose served figures could pass 2**63 - 1."""
    problems: list[str] = []
    for batch in chunks(sorted(accounts)):
        too_large = _accounts_too_large(conn, batch)
        problems += [
            _too_large(
                f"accounts[id={account_id}]",
                "the sum of its cost and value entries in the account currency (what /roi adds)",
            )
            for account_id in too_large
        ]
        problems += _budget_rows(conn, [a for a in batch if a not in too_large])
    return problems


def _too_large(where: str, what: str) -> str:
    return (
        f"{where}: {what} could pass {MAX_CENTS:,} cents, more than a 64-bit integer holds "
        "(SEMANTICS R38)"
    )


def _accounts_too_large(conn: Connection, accounts: list[int]) -> list[int]:
    """The accounts whose entries' Σ|account_amount_cents| passes 2**63 - 1."""
    totals: dict[int, int] = dict.fromkeys(accounts, 0)
    over: set[int] = set()
    for table in (tables.cost_entries, tables.value_entries):
        magnitude = _magnitude(conn, table.c.account_amount_cents)
        grouped = select(table.c.account_id, magnitude).group_by(table.c.account_id)
        try:
            found = _sums(conn, grouped.where(table.c.account_id.in_(accounts)))
        except SumOverflow:  # which one: each alone
            found = []
            for account_id in accounts:
                try:
                    found += _sums(conn, grouped.where(table.c.account_id == account_id))
                except SumOverflow:
                    over.add(account_id)
        for account_id, total in found:
            totals[account_id] += int(total or 0)
    return [a for a in accounts if a in over or totals[a] > MAX_CENTS]


def _budget_rows(conn: Connection, accounts: list[int]) -> list[str]:
    if not accounts:
        return []
    initiatives, accounts_t = tables.initiatives, tables.accounts
    rows = conn.execute(
        select(initiatives.c.id, initiatives.c.currency, accounts_t.c.currency)
        .join(accounts_t, accounts_t.c.id == initiatives.c.account_id)
        .where(initiatives.c.account_id.in_(accounts))
    ).all()
    # Each budget row's currency, and whether it is the account's own.
    currency = {row[0]: row[1] or row[2] for row in rows}
    foreign = {row[0] for row in rows if (row[1] or row[2]) != row[2]}
    spend = _spend_in_account_currency(conn, accounts)
    spend.update(_spend_converted(conn, accounts, foreign, currency))
    budget = _budget_bounds(conn, accounts)
    problems = [
        _too_large(
            f"initiatives[id={initiative_id}]",
            f"a figure of its budget row in {currency[initiative_id]} (its cost entries in "
            f"{currency[initiative_id]}, with its budget versions' capex and monthly opex "
            "through 9999-12)",
        )
        for initiative_id in sorted(currency)
        if _row_bound(spend.get(initiative_id, 0), budget.get(initiative_id)) > MAX_CENTS
    ]
    # A business-case row (R43-R45): its plan's figures are sums and differences of its four
    # expected_* amounts; its actuals of its cost and value entries in its currency.
    listed = {problem.split(":", 1)[0] for problem in problems}
    value = _spend_in_account_currency(conn, accounts, tables.value_entries)
    value.update(_spend_converted(conn, accounts, foreign, currency, tables.value_entries))
    plans = _plan_bounds(conn, accounts)
    problems += [
        _too_large(
            f"initiatives[id={initiative_id}]",
            f"a figure of its business case in {currency[initiative_id]} (its expected_* "
            "amounts together, or its cost and value entries together)",
        )
        for initiative_id in sorted(currency)
        if f"initiatives[id={initiative_id}]" not in listed
        and max(
            plans.get(initiative_id, 0),
            spend.get(initiative_id, 0) + value.get(initiative_id, 0),
        )
        > MAX_CENTS
    ]
    return problems


def _plan_bounds(conn: Connection, accounts: list[int]) -> dict[int, int]:
    """Per initiative, Σ|expected_*|: no planned figure (R43, R44) passes it."""
    initiatives = tables.initiatives
    amounts = (
        initiatives.c.expected_capex_cents,
        initiatives.c.expected_opex_cents,
        initiatives.c.expected_cost_savings_cents,
        initiatives.c.expected_revenue_uplift_cents,
    )
    return {
        initiative_id: sum(abs(amount or 0) for amount in row)
        for initiative_id, *row in conn.execute(
            select(initiatives.c.id, *amounts).where(initiatives.c.account_id.in_(accounts))
        )
    }


# The fiscal-year projection (R46): the year's opex so far and at most 11 months at the run
# rate, each no more than the spend.
_PROJECTED_SPENDS: Final = 12


def _row_bound(spend: int, budget: int | None) -> int:
    """A bound on every figure of a budget row: spend and budget, and for a row with budget
    versions (the only rows with a projection, R46) the projection's variance."""
    if budget is None:
        return spend
    return _PROJECTED_SPENDS * spend + budget


def _spend_in_account_currency(
    conn: Connection, accounts: list[int], entries: Table = tables.cost_entries
) -> dict[int, int]:
    """Per initiative, Σ|account_amount_cents| of its cost entries (or of `entries`): what a
    budget row in the account currency adds. No more than its account's, which fits."""
    initiatives = tables.initiatives
    # By initiative id, so the budget sums' covering index serves it in order.
    theirs = select(initiatives.c.id).where(initiatives.c.account_id.in_(accounts))
    query = (
        select(entries.c.initiative_id, _magnitude(conn, entries.c.account_amount_cents))
        .where(entries.c.initiative_id.in_(theirs))
        .group_by(entries.c.initiative_id)
    )
    return {initiative_id: int(total or 0) for initiative_id, total in _sums(conn, query)}


def _spend_converted(
    conn: Connection,
    accounts: list[int],
    foreign: set[int],
    currency: dict[int, str],
    entries: Table = tables.cost_entries,
) -> dict[int, int]:
    """Per initiative kept in another currency than its account's, a bound on Σ|cost entry
    (or entry of `entries`) converted into it|: each currency's magnitude at the largest
    rate(entry's currency) / rate(row's) any day could apply (R5), and half a cent of
    rounding an entry."""
    if not foreign:
        return {}
    rates = _rate_ranges(conn, accounts)
    account_currency = dict(
        conn.execute(
            select(tables.accounts.c.id, tables.accounts.c.currency).where(
                tables.accounts.c.id.in_(accounts)
            )
        ).all()
    )
    found: dict[int, int] = {}
    for initiative_id in sorted(foreign):
        query = (
            select(
                entries.c.account_id,
                entries.c.currency,
                _magnitude(conn, entries.c.amount_cents),
                func.count(entries.c.amount_cents),
            )
            .where(entries.c.initiative_id == initiative_id)
            .group_by(entries.c.account_id, entries.c.currency)
        )
        try:
            grouped = _sums(conn, query)
        except SumOverflow:  # its entries pass 64 bits in their own currencies
            found[initiative_id] = MAX_CENTS + 1
            continue
        target = currency[initiative_id]
        bound = 0
        for account_id, given, magnitude, count in grouped:
            own = account_currency[account_id]
            source = given or own
            factor = Fraction(1)
            if source != target:
                # The account currency's own rate is 1 (R5), whatever its table holds.
                one = (Fraction(1), Fraction(1))
                high = one if source == own else rates.get((account_id, source), one)
                low = one if target == own else rates.get((account_id, target), one)
                factor = high[1] / low[0]
            bound += math.ceil(Fraction(int(magnitude or 0)) * factor) + int(count)
        found[initiative_id] = bound
    return found


def _rate_ranges(
    conn: Connection, accounts: list[int]
) -> dict[tuple[int, str], tuple[Fraction, Fraction]]:
    """Each account's lowest and highest rate of each currency (the account's own is 1)."""
    fx = tables.fx_rates
    ranges: dict[tuple[int, str], tuple[Fraction, Fraction]] = {}
    for account_id, code, rate in conn.execute(
        select(fx.c.account_id, fx.c.currency, fx.c.rate).where(fx.c.account_id.in_(accounts))
    ):
        value = Fraction(Decimal(rate))
        low, high = ranges.get((account_id, code), (value, value))
        ranges[(account_id, code)] = (min(low, value), max(high, value))
    return ranges


def _budget_bounds(conn: Connection, accounts: list[int]) -> dict[int, int]:
    """Per initiative, its largest capex plus its largest monthly opex rate times the months
    from its first version to the last month a store holds (R16-R23: every budget figure)."""
    versions = tables.budget_versions
    bounds: dict[int, tuple[int, Fraction, date]] = {}
    for initiative_id, capex, opex, cadence, effective_from in conn.execute(
        select(
            versions.c.initiative_id,
            versions.c.capex_cents,
            versions.c.opex_cents,
            versions.c.opex_cadence,
            versions.c.effective_from,
        ).where(versions.c.account_id.in_(accounts))
    ):
        rate = Fraction(abs(opex), _CADENCE_MONTHS.get(cadence, 1))
        largest, highest, first = bounds.get(initiative_id, (0, Fraction(0), effective_from))
        bounds[initiative_id] = (
            max(largest, abs(capex)),
            max(highest, rate),
            min(first, effective_from),
        )
    return {
        initiative_id: capex + math.ceil(rate * _months_through_last(first))
        for initiative_id, (capex, rate, first) in bounds.items()
    }


def _months_through_last(first: date) -> int:
    """Months from the one holding `first` through 9999-12, and a fiscal year more."""
    return (LAST_MONTH.year - first.year) * 12 + (LAST_MONTH.month - first.month) + 1 + 12
