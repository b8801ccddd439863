"""Pass 2 of a load: what pass 1 accepted, written in one transaction and stamped.

Deletes first (leaving tombstones, SEMANTICS R34), then the small kinds, then the big
ones streamed a second time and upserted in batches, then decisions and assessments.
Each record is merged with its stored row (SEMANTICS R33); a row whose served content
is unchanged keeps its `updated_at`, and every row inserted or changed takes the load's
one stamp (R32), whether the bundle changed it or a change elsewhere did: a person's new
name, a vendor merge, a metric's new key, an unlinking, or new FX rates that move an
entry's `account_amount_cents`. Those knock-on changes are made before the rows they
touch are written, so each row is counted once, as what happened to it.

    upserts     each row merged, written where it changed, stamped and counted
    deleting    the bundle's deletes and their tombstones
    knock_on    what a small kind's new rows change in rows the bundle does not give
    big_kinds   the big kinds, streamed again
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import insert

from airoi.db import tables
from airoi.load.batches import chunks
from airoi.load.big_kinds import BigKindWriter
from airoi.load.checks import Validation
from airoi.load.deleting import BundleDeletes, Tombstone
from airoi.load.kinds import KEYED, KINDS, LATE_WRITE_ORDER, SMALL_WRITE_ORDER
from airoi.load.knock_on import KnockOnChanges
from airoi.load.outcome import LoadReport
from airoi.load.records import Rec
from airoi.load.upserts import RowUpserter
from airoi.load.vendors import VendorRegistry


class Writer:
    """Pass 2 in its order; `rows` keeps the report and, with --keep-stamps, the latest
    updated_at written as given (`rows.latest_given`)."""

    def __init__(
        self,
        checked: Validation,
        stamp: datetime,
        *,
        keep_stamps: bool,
        removed: Iterable[Tombstone] = (),
    ) -> None:
        self.checked = checked
        bundle, presence = checked.bundle, checked.presence
        self.problems = checked.problems
        self.rows = RowUpserter(
            checked.conn,
            stamp,
            checked.problems,
            keep_stamps=keep_stamps,
            ignored_stamps=bundle.ignored_stamps,
        )
        self.report = self.rows.report
        # One registry for the merges of the small kinds and the entries of the big ones.
        vendors = VendorRegistry(checked.conn, stamp, self.report)
        self.deletes = BundleDeletes(self.rows, bundle, removed)
        self.knock_on = KnockOnChanges(self.rows, bundle, presence, vendors)
        self.big = BigKindWriter(self.rows, bundle, presence, vendors)

    def write(self) -> LoadReport:
        rows = self.rows
        self.deletes.apply()
        for key in SMALL_WRITE_ORDER:
            self._write_small(key)
            self.knock_on.after(key)
        self.big.write()
        for key in LATE_WRITE_ORDER:
            self._write_small(key)
        for account_id in sorted(rows.fx_changed - rows.new_accounts):
            rows.amounts.check_initiative_currencies(account_id)
        self.deletes.write_tombstones()
        self.knock_on.count()
        if self.problems:
            raise self.problems.error()
        self.checked.bundle.source.progress.complete()
        return self.report

    def _write_small(self, key: str) -> None:
        kind = KINDS[key]
        recs = self.checked.bundle.small[key]
        for rec in recs:
            if kind.account in ("initiative", "observation"):
                rec.row["account_id"] = rec.account
        if key in KEYED:
            self.rows.upsert_keyed(kind, recs, KEYED[key])
        elif key == "decisions":
            self._write_decisions(recs)
        else:
            for batch in chunks(recs):
                self.rows.upsert_by_id(kind, batch)

    def _write_decisions(self, recs: list[Rec]) -> None:
        """SPEC 3: a stored decision is never written again (pass 1 found it the same)."""
        rows = self.rows
        stored = self.checked.presence.stored["decisions"]
        touched = rows.touched["decisions"]
        fresh = []
        for rec in recs:
            row = rec.row
            if row["id"] in stored:
                outcome = "updated" if row["id"] in touched else "unchanged"
                getattr(self.report, outcome)["decisions"] += 1
                continue
            row["updated_at"] = rows.given_stamp(rec, row) or rows.stamp
            row.setdefault("created_at", rows.stamp)
            fresh.append(row)
        for batch in chunks(fresh):
            rows.conn.execute(insert(tables.decisions), batch)
        self.report.inserted["decisions"] += len(fresh)
