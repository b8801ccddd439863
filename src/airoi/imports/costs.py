"""A cost import from end to end (SEMANTICS R40, R41): the rows grouped into entries, every
problem named before anything is written, then one load that inserts and updates the
entries by their source ref (R42) and deletes the connection's entries in the covered dates
that this import does not produce again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import Connection, Engine, select

from airoi.db import tables
from airoi.imports.grouping import SOURCE_TYPE, Groups, Unmatched, billing_part, source_ref
from airoi.imports.problems import Problems
from airoi.imports.rules import Rules
from airoi.imports.writing import Target, connection_record, covered, read_account, write
from airoi.load.stamping import Say


@dataclass
class CostReport:
    rows_read: int
    rows_matched: int
    rows_outside: int
    entries: dict[str, int]  # inserted, updated, unchanged, deleted
    unmatched: dict[tuple[str, ...], Unmatched]
    dates: tuple[date, date] | None
    connection_id: int | None
    dry_run: bool
    stamp: datetime | None = None
    notes: list[str] = field(default_factory=list)


def check(groups: Groups, rules: Rules, engine: Engine, target: Target, problems: Problems) -> None:
    """What the store must have for these rows: the rules' initiatives in the account, and an
    FX rate for every currency the entries are in (R5). Each a problem naming where."""
    account = read_account(engine, target)
    for rule in rules.map:
        if rule.initiative_id not in account.initiatives:
            problems.add(
                f"{rules.path.name}: map[{rule.number}].initiative_id: initiative "
                f"{rule.initiative_id} is not an initiative of account {target.account_id}"
            )
    named: set[str] = set()
    for key, total in groups.sums.items():
        currency = key.currency
        if total is None or currency == account.currency or currency in account.fx_currencies:
            continue
        if currency in named:
            continue
        named.add(currency)
        column = "currency"
        if groups.kind == "focus":
            column = "BillingCurrency"
        elif groups.kind == "openai":
            column = "amount.currency"
        problems.add(
            f"{groups.where[key]}, column {column}: no FX rate for {currency} in account "
            f"{target.account_id} (its currency is {account.currency}); load one first (R5)"
        )


def run(
    engine: Engine,
    groups: Groups,
    target: Target,
    *,
    given_dates: tuple[date | None, date | None],
    dry_run: bool,
    wait: float,
    say: Say | None = None,
    now: datetime | None = None,
) -> CostReport:
    dates = covered(given_dates, groups.first, groups.last)
    held = {billing_part(account) for account in groups.billing_accounts}
    made: dict[str, Any] = {}

    def compose(conn: Connection, stamp: datetime) -> Mapping[str, Any]:
        connection = connection_record(conn, target, stamp)
        made["connection_id"] = connection["id"]
        entries = groups.entries(target.account_id, connection["id"])
        produced = {entry["source"]["ref"] for entry in entries}
        gone = _replaced(conn, groups.kind, connection["id"], dates, held, produced)
        bundle: dict[str, Any] = {"integrations": [connection], "cost_entries": entries}
        if gone:
            bundle["delete"] = {"cost_entries": gone}
        return bundle

    report = write(engine, compose, dry_run=dry_run, wait=wait, say=say, now=now)
    key = "cost_entries"
    return CostReport(
        rows_read=groups.rows_read,
        rows_matched=groups.rows_matched,
        rows_outside=groups.rows_outside,
        entries={
            "inserted": report.inserted.get(key, 0),
            "updated": report.updated.get(key, 0),
            "unchanged": report.unchanged.get(key, 0),
            "deleted": report.deleted.get(key, 0),
        },
        unmatched=groups.unmatched,
        dates=dates,
        connection_id=made.get("connection_id"),
        dry_run=dry_run,
        stamp=report.stamp,
    )


def _replaced(
    conn: Connection,
    kind: str,
    connection_id: int,
    dates: tuple[date, date] | None,
    held: set[str],
    produced: set[str],
) -> list[int]:
    """R41: the connection's imported entries of this source kind, in the covered dates, of
    a billing account the files hold, that this import does not produce again."""
    if dates is None:
        return []
    table = tables.cost_entries
    query = select(table.c.id, table.c.source_ref).where(
        table.c.source_connection_id == connection_id,
        table.c.source_type == SOURCE_TYPE,
        table.c.period_start >= dates[0],
        table.c.period_start <= dates[1],
    )
    prefix = f"{kind}/"
    gone = []
    for row in conn.execute(query):
        ref = row.source_ref or ""
        if not ref.startswith(prefix) or ref in produced:
            continue
        parts = ref.split("/")
        if len(parts) == 3 and parts[1] in held:
            gone.append(row.id)
    return gone


def unmatched_total(unmatched: Mapping[Any, Unmatched]) -> dict[str, Decimal]:
    totals: dict[str, Decimal] = {}
    for slot in unmatched.values():
        for currency, amount in slot.amounts.items():
            totals[currency] = totals.get(currency, Decimal(0)) + amount
    return totals


__all__ = ["CostReport", "check", "run", "source_ref", "unmatched_total"]
