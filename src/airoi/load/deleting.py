"""A bundle's deletes, applied before anything is upserted (BUNDLE.md), and the tombstones of
the served rows they remove (SEMANTICS R34)."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, insert, select

from airoi.db import tables
from airoi.load.batches import chunks
from airoi.load.gathering import GatheredBundle
from airoi.load.kinds import (
    DELETABLE,
    INITIATIVE_CHILDREN,
    KINDS,
    SERVED_LISTS,
    UNLINKED_ON_DELETE,
)
from airoi.load.upserts import RowUpserter

# A removed served row: (list, account, id).
Tombstone = tuple[str, int, int]


class BundleDeletes:
    """The rows the bundle deletes, removed and counted; the rows naming them unlinked; and
    the served rows removed (`tombstones`), the load's `before` included."""

    def __init__(
        self, rows: RowUpserter, bundle: GatheredBundle, removed: Iterable[Tombstone] = ()
    ) -> None:
        self.rows = rows
        self.conn = rows.conn
        self.bundle = bundle
        self.tombstones: list[Tombstone] = list(removed)

    def _delete_where(self, key: str, column: str, ids: Iterable[int]) -> int:
        table = KINDS[key].table
        served = key in SERVED_LISTS
        count = 0
        for batch in chunks(sorted(ids)):
            where = table.c[column].in_(batch)
            if served:
                gone = self.conn.execute(select(table.c.account_id, table.c.id).where(where))
                self.tombstones.extend((key, account_id, row_id) for account_id, row_id in gone)
            result = self.conn.execute(delete(table).where(where))
            count += max(result.rowcount, 0)
        return count

    def apply(self) -> None:
        deletes = self.bundle.deletes
        deleted = self.rows.report.deleted
        for key in DELETABLE:
            ids = deletes.get(key)
            if not ids:
                continue
            if key == "initiatives":  # its children go with it; its decisions stay, below
                for child in INITIATIVE_CHILDREN:
                    count = self._delete_where(child, "initiative_id", ids)
                    if count:
                        deleted[child] = deleted.get(child, 0) + count
            deleted[key] = deleted.get(key, 0) + self._delete_where(key, "id", ids)
        # After the deletes, so the rows that went with their initiative are not touched.
        # A row naming a deleted record is unlinked: its column set to null (BUNDLE.md). One
        # the bundle gives again is there after the load, so what names it stays linked.
        for key, columns in UNLINKED_ON_DELETE.items():
            given = {rec.row["id"] for rec in self.bundle.small[key]}
            unlinked = sorted(deletes.get(key, set()) - given)
            for child, column in columns if unlinked else ():
                table = KINDS[child].table
                for batch in chunks(unlinked):
                    self.rows.restamp(child, table.c[column].in_(batch), {column: None})

    def write_tombstones(self) -> None:
        """SEMANTICS R34: a tombstone for every served row removed and not given again."""
        bundle = self.bundle
        given: dict[str, set[int]] = {key: set(ids) for key, ids in bundle.big_ids.items()}
        for key in SERVED_LISTS:
            if key not in given:
                given[key] = {rec.row["id"] for rec in bundle.small[key]}
        rows = [
            {
                "account_id": account_id,
                "resource": key,
                "record_id": row_id,
                "deleted_at": self.rows.stamp,
            }
            for key, account_id, row_id in self.tombstones
            if row_id not in given[key]
        ]
        for batch in chunks(rows):
            self.conn.execute(insert(tables.deletions), batch)
