"""Vendors while loading: an entry's `vendor_id` resolved from its `vendor_name` when not
given, and merged vendors followed to the one they were merged into (BUNDLE.md, SPEC 2.3)."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from sqlalchemy import Connection, insert, select

from airoi.db import tables
from airoi.load.keyed import fresh_ids
from airoi.load.outcome import LoadReport

# Where the ids of vendors made from a name begin: far above the ids a system gives its own
# records, below 2**53, so that every JSON reader (a browser's among them) reads them exactly.
INVENTED_IDS_FROM: Final = 10**15


class VendorRegistry:
    """An account's vendors by id and by case-folded name, merged ones followed (BUNDLE.md)."""

    def __init__(self, conn: Connection, now: datetime, report: LoadReport) -> None:
        self.conn = conn
        self.now = now
        self.report = report
        self.loaded: set[int] = set()
        self.merged_into: dict[int, int | None] = {}
        self.by_name: dict[tuple[int, str], int] = {}
        self.made: set[int] = set()

    def _load(self, account_id: int) -> None:
        if account_id in self.loaded:
            return
        self.loaded.add(account_id)
        table = tables.vendors
        query = (
            select(table.c.id, table.c.name, table.c.merged_into_id)
            .where(table.c.account_id == account_id)
            .order_by(table.c.id)
        )
        named: dict[str, list[tuple[int, bool]]] = {}
        for vendor_id, name, merged_into in self.conn.execute(query):
            self.merged_into[vendor_id] = merged_into
            named.setdefault(name.strip().casefold(), []).append((vendor_id, merged_into is None))
        for folded, candidates in named.items():
            # Prefer a vendor that was not merged away (lowest id), else follow the first.
            unmerged = [vendor_id for vendor_id, live in candidates if live]
            chosen = unmerged[0] if unmerged else candidates[0][0]
            self.by_name[(account_id, folded)] = chosen

    def _free_id(self) -> int:
        """An id for a vendor made from a name: from INVENTED_IDS_FROM up, where a bundle's own
        ids (its system's) do not reach, so that a later bundle's vendor record never lands on
        it; drawn at random among those no vendor or tombstone has had (airoi.load.keyed), so
        an account's new vendor ids tell nothing of another account's."""
        (made,) = fresh_ids(self.conn, tables.vendors, 1, avoid=self.made)
        self.made.add(made)
        return made

    def final(self, account_id: int, vendor_id: int) -> int:
        self._load(account_id)
        seen = set()
        current = vendor_id
        while current not in seen:
            seen.add(current)
            target = self.merged_into.get(current)
            if target is None:
                return current
            current = target
        return current  # pragma: no cover - cycles are refused in pass 1

    def resolve(
        self, account_id: int, vendor_id: int | None, vendor_name: str | None
    ) -> int | None:
        if vendor_id is not None:
            return self.final(account_id, vendor_id)
        if vendor_name is None or not vendor_name.strip():
            return None
        self._load(account_id)
        folded = vendor_name.strip().casefold()
        found = self.by_name.get((account_id, folded))
        if found is not None:
            return self.final(account_id, found)
        new_id = self._free_id()
        self.conn.execute(
            insert(tables.vendors).values(
                id=new_id,
                account_id=account_id,
                name=vendor_name.strip(),
                merged_into_id=None,
                created_at=self.now,
                updated_at=self.now,
            )
        )
        self.report.inserted["vendors"] += 1
        self.merged_into[new_id] = None
        self.by_name[(account_id, folded)] = new_id
        return new_id
