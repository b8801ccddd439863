"""The FX rates a bundle's records need: a currency with no rate at all in its account
cannot be loaded (SEMANTICS R5)."""

from __future__ import annotations

from sqlalchemy import Connection, select

from airoi.db import tables
from airoi.load.batches import chunks
from airoi.load.gathering import IDS_PER_GROUP
from airoi.load.presence import Presence
from airoi.load.records import Problems, Rec


class NeededRates:
    """The (account, currency) pairs records are in, each with the records that need it
    (capped), checked once against the bundle's rates and the store's."""

    def __init__(self, conn: Connection, presence: Presence, problems: Problems) -> None:
        self.conn = conn
        self.presence = presence
        self.problems = problems
        self.fx_pairs: set[tuple[int, str]] = set()
        self.fx_needed: dict[tuple[int, str], list[tuple[str, str]]] = {}

    def need(self, account: int, currency: str, label: str, field_name: str) -> None:
        # SEMANTICS R5: a currency with no rate at all cannot be loaded.
        info = self.presence.accounts.get(account)
        if info is None or currency == info.currency:
            return
        needed = self.fx_needed.setdefault((account, currency), [])
        if len(needed) < IDS_PER_GROUP:
            needed.append((label, field_name))

    def check(self, fx_rates: list[Rec]) -> None:
        """Every pair needed has a rate, in the bundle's `fx_rates` or in the store."""
        if not self.fx_needed:
            return
        for rec in fx_rates:
            row = rec.row
            if row["account_id"] is not None and row["currency"] is not None:
                self.fx_pairs.add((row["account_id"], row["currency"]))
        table = tables.fx_rates
        accounts = sorted({account for account, _ in self.fx_needed})
        for batch in chunks(accounts):
            query = (
                select(table.c.account_id, table.c.currency)
                .distinct()
                .where(table.c.account_id.in_(batch))
            )
            self.fx_pairs.update((a, c) for a, c in self.conn.execute(query))
        for (account, currency), labels in self.fx_needed.items():
            if (account, currency) not in self.fx_pairs:
                for label, field_name in labels:
                    self.problems.add(
                        f"{label}.{field_name}: no FX rate for {currency} in account {account}"
                    )
