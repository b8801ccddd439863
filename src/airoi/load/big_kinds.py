"""Pass 2 for the big kinds (cost and value entries, observations): the bundle streamed a
second time, each record merged with its stored row (SEMANTICS R33), given its account,
vendor and metric key, and upserted in batches."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from airoi.db import tables
from airoi.load.batches import BATCH, chunks
from airoi.load.gathering import GatheredBundle, owner_of
from airoi.load.kinds import BIG, KINDS, Kind
from airoi.load.presence import Presence
from airoi.load.reading import BadSource
from airoi.load.records import Rec, normalize
from airoi.load.upserts import RowUpserter
from airoi.load.vendors import VendorRegistry


class BigKindWriter:
    """The big kinds' records read again and written through `rows`, with the keys of the
    metrics their readings name (`metric_keys`)."""

    def __init__(
        self,
        rows: RowUpserter,
        bundle: GatheredBundle,
        presence: Presence,
        vendors: VendorRegistry,
    ) -> None:
        self.rows = rows
        self.bundle = bundle
        self.presence = presence
        self.vendors = vendors
        self.problems = rows.problems
        self.metric_keys: dict[int, str] = {}

    def write(self) -> None:
        bundle = self.bundle
        if not any(bundle.big_ids[key] for key in BIG):
            return
        self._load_metric_keys()
        batches: dict[str, list[Rec]] = {key: [] for key in BIG}
        problems = self.problems
        try:
            present = tuple(key for key in BIG if bundle.big_ids[key])
            for key, pos, item in bundle.source.big_items(present):
                kind = KINDS.get(key)
                if kind is None or not kind.big or pos < 0:
                    continue
                rec = normalize(kind, item, pos, problems, keep_stamps=self.rows.keep_stamps)
                if rec is None:
                    continue
                if rec.row.get("id") is None:  # matched by its source ref (SEMANTICS R42)
                    keyed_id = bundle.keyed.id_at(key, pos)
                    if keyed_id is None:
                        continue
                    rec.row["id"] = keyed_id
                batch = batches[key]
                batch.append(rec)
                if len(batch) >= BATCH:
                    self.rows.upsert_by_id(kind, batch, self._finish)
                    batch.clear()
        except BadSource as exc:
            problems.add(str(exc))
        if problems:
            raise problems.error()
        for key, batch in batches.items():
            self.rows.upsert_by_id(KINDS[key], batch, self._finish)

    def _finish(self, kind: Kind, rec: Rec, row: dict[str, Any], stored: Any) -> bool:
        """A big record merged with its stored row: its account, vendor and metric key."""
        owner = owner_of(kind, rec, None if stored is None else stored["account_id"])
        account, found = self.presence.entry_account(kind.account, *owner)
        if account is None or found:
            self.problems.add(f"{rec.label}: changed while it was being loaded")
            return False
        row["account_id"] = account
        if kind.key == "cost_entries":
            self._resolve_vendor(rec, row, stored)
        elif kind.key == "observations":
            self._take_metric_key(rec, row)
        return True

    def _resolve_vendor(self, rec: Rec, row: dict[str, Any], stored: Any) -> None:
        """BUNDLE.md: `vendor_id`, when not given, from `vendor_name`; a merged vendor is
        followed to the one it was merged into. Neither given: the stored vendor stays."""
        registry = self.vendors
        if "vendor_id" in rec.given or "vendor_name" in rec.given:
            given_id = row["vendor_id"] if "vendor_id" in rec.given else None
            row["vendor_id"] = registry.resolve(row["account_id"], given_id, row["vendor_name"])
        elif stored is not None and row["vendor_id"] is not None:
            row["vendor_id"] = registry.final(row["account_id"], row["vendor_id"])

    def _take_metric_key(self, rec: Rec, row: dict[str, Any]) -> None:
        """A reading carries its metric's key, so `?metric_key=` of its metric finds it."""
        if row["metric_id"] is None:
            return
        key = self.metric_keys.get(row["metric_id"])
        if "metric_key" not in rec.given or row["metric_key"] is None:
            row["metric_key"] = key
        elif key is not None and row["metric_key"] != key:
            self.problems.add(
                f"{rec.label}.metric_key: {row['metric_key']!r} is not "
                f"the key of metric {row['metric_id']} ({key!r})"
            )

    def _load_metric_keys(self) -> None:
        """The keys of the metrics the readings name, as written by now."""
        metric_ids = {
            group[1] for group in self.bundle.big_groups["observations"] if group[1] is not None
        }
        table = tables.metrics
        conn = self.rows.conn
        for batch in chunks(sorted(metric_ids)):
            query = select(table.c.id, table.c.metric_key).where(table.c.id.in_(batch))
            self.metric_keys.update({row.id: row.metric_key for row in conn.execute(query)})
