"""Rows written by a load: each record merged with its stored row (SEMANTICS R33), written
only where something changed, stamped with the load's one stamp (R32), and counted.

Everything else pass 2 writes goes through here, so the counts of the report, the rows a
knock-on change touched and the accounts whose amounts must be converted again are kept
in one place.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, bindparam, insert, select, update

from airoi.load.amounts import AccountAmounts
from airoi.load.batches import Bulk
from airoi.load.kinds import KINDS, Kind
from airoi.load.outcome import LoadReport
from airoi.load.records import Problems, Rec, merged

# Completes a big record's merged row before it is written (False: it cannot be, and a
# problem says why): the kind, the record, the merged row and the stored row or None.
Finish = Callable[[Kind, Rec, dict[str, Any], Any], bool]


class RowUpserter:
    """The load's writes, stamps and counts (`report`), the rows knock-on changes re-stamped
    (`touched`) and the accounts whose FX rates or currency changed (`fx_changed`)."""

    def __init__(
        self,
        conn: Connection,
        stamp: datetime,
        problems: Problems,
        *,
        keep_stamps: bool,
        ignored_stamps: int,
    ) -> None:
        self.conn = conn
        self.stamp = stamp
        self.keep_stamps = keep_stamps
        self.problems = problems
        self.report = LoadReport(
            inserted=dict.fromkeys(KINDS, 0),
            updated=dict.fromkeys(KINDS, 0),
            unchanged=dict.fromkeys(KINDS, 0),
            deleted=dict.fromkeys(KINDS, 0),
            stamp=stamp,
            ignored_stamps=ignored_stamps,
        )
        self.amounts = AccountAmounts(conn, problems)
        self.bulk: dict[tuple[str, str], Bulk] = {}
        self.fx_changed: set[int] = set()  # accounts whose FX rates or currency changed
        self.new_accounts: set[int] = set()
        # Rows a knock-on change re-stamped, by kind (counted as updated once).
        self.touched: dict[str, set[int]] = {key: set() for key in KINDS}
        # With --keep-stamps: the latest updated_at written as given (the store's clock).
        self.latest_given: datetime | None = None

    def given_stamp(self, rec: Rec, row: dict[str, Any]) -> datetime | None:
        """With --keep-stamps, the updated_at the record gave (SEMANTICS R32)."""
        if not self.keep_stamps or "updated_at" not in rec.given:
            return None
        given: datetime | None = row["updated_at"]
        if given is not None and (self.latest_given is None or given > self.latest_given):
            self.latest_given = given
        return given

    def restamp(
        self, key: str, where: ColumnElement[bool], values: dict[str, Any] | None = None
    ) -> None:
        """A knock-on change: the rows `where` selects take `values` and the load's stamp."""
        table = KINDS[key].table
        self.touched[key].update(self.conn.execute(select(table.c.id).where(where)).scalars())
        self.conn.execute(
            update(table).where(where).values({**(values or {}), "updated_at": self.stamp})
        )

    def upsert_keyed(self, kind: Kind, recs: list[Rec], key_columns: tuple[str, ...]) -> None:
        """Upsert a kind without an id (tokens by hash, FX rates by account, currency, date);
        a stored row takes only the fields the record gives (SEMANTICS R33)."""
        table = kind.table
        inserts: list[dict[str, Any]] = []
        for rec in recs:
            row = rec.row
            condition = [table.c[c] == row[c] for c in key_columns]
            stored = self.conn.execute(select(table).where(*condition)).mappings().first()
            if stored is None:
                for stamp in kind.stamps:
                    row.setdefault(stamp, self.stamp)
                inserts.append({c.name: row.get(c.name) for c in table.columns})
                continue
            changes = {
                column: row[column]
                for column in rec.given
                if column in table.c and column not in key_columns
            }
            if kind.key == "tokens" and stored["revoked_at"] is not None:
                # Revoked for good (SEMANTICS R29), by `airoi token revoke` or an earlier
                # bundle: loading the token again, as given before, does not bring it back.
                given = changes.get("revoked_at")
                changes["revoked_at"] = min(stored["revoked_at"], given or stored["revoked_at"])
            if all(stored[column] == value for column, value in changes.items()):
                self.report.unchanged[kind.key] += 1
                continue
            self.conn.execute(update(table).where(*condition).values(changes))
            self.report.updated[kind.key] += 1
            if kind.key == "fx_rates":
                self.fx_changed.add(row["account_id"])
        if inserts:
            self.conn.execute(insert(table), inserts)
            self.report.inserted[kind.key] += len(inserts)
            if kind.key == "fx_rates":
                self.fx_changed.update(row["account_id"] for row in inserts)

    def upsert_by_id(self, kind: Kind, recs: list[Rec], finish: Finish | None = None) -> None:
        """Upsert one batch (SEMANTICS R32, R33): each record merged with its stored row;
        `finish` completes a merged row (False: it cannot be written, a problem says why)."""
        if not recs:
            return
        table = kind.table
        stored_rows = {
            stored["id"]: stored
            for stored in self.conn.execute(
                select(table).where(table.c.id.in_([rec.row["id"] for rec in recs]))
            ).mappings()
        }
        inserts: list[dict[str, Any]] = []
        updates: list[dict[str, Any]] = []
        quiet: list[dict[str, Any]] = []  # changed only where nothing is served
        touched = self.touched[kind.key]
        for rec in recs:
            stored = stored_rows.get(rec.row["id"])
            row = merged(kind, rec.row, stored)
            if finish is not None and not finish(kind, rec, row, stored):
                continue
            if kind.derive is not None:
                kind.derive(row, rec.given, stored)
            given_stamp = self.given_stamp(rec, row)
            if stored is None:
                row.setdefault("created_at", self.stamp)
                row["updated_at"] = given_stamp or self.stamp
                if kind.reporting:
                    self.amounts.derive(kind.key, row)
                inserts.append(row)
                continue
            if "account_id" in row and stored["account_id"] != row["account_id"]:
                self.problems.add(
                    f"{kind.key}[id={row['id']}].account_id: id {row['id']} "
                    "belongs to another account"
                )
                continue
            if kind.key == "accounts" and stored["currency"] != row["currency"]:
                self.fx_changed.add(row["id"])
            if kind.reporting:
                self.amounts.derive(kind.key, row)
            changed = any(stored[column] != row[column] for column in kind.served) or (
                "created_at" in kind.stamps and stored["created_at"] != row["created_at"]
            )
            if changed or (given_stamp is not None and given_stamp != stored["updated_at"]):
                if "updated_at" in kind.stamps:
                    row["updated_at"] = given_stamp or self.stamp
                row["b_id"] = row.pop("id")
                updates.append(row)
            elif any(stored[column] != row[column] for column in kind.unserved):
                row["b_id"] = row.pop("id")
                quiet.append(row)
            elif row["id"] in touched:
                self.report.updated[kind.key] += 1  # changed by a knock-on change
            else:
                self.report.unchanged[kind.key] += 1
        if inserts:
            self.bulk_for(kind, "insert").run(self.conn, inserts)
            self.report.inserted[kind.key] += len(inserts)
            if kind.key == "accounts":
                self.new_accounts.update(row["id"] for row in inserts)
        for rows in (updates, quiet):
            if rows:
                self.bulk_for(kind, "update").run(self.conn, rows)
                self.report.updated[kind.key] += len(rows)

    def bulk_for(self, kind: Kind, what: str) -> Bulk:
        """The insert (every column), the update by id (every column but id) or the update
        of the amounts (`reporting`) of a kind."""
        bulk = self.bulk.get((kind.key, what))
        if bulk is None:
            table = kind.table
            if what == "insert":
                bulk = Bulk(
                    self.conn, insert(table), [c.name for c in table.columns], copy_into=table
                )
            else:
                statement = update(table).where(table.c.id == bindparam("b_id"))
                columns = (
                    [*kind.reporting, "updated_at"]
                    if what == "reporting"
                    else [c.name for c in table.columns if c.name != "id"]
                )
                bulk = Bulk(self.conn, statement, columns)
            self.bulk[(kind.key, what)] = bulk
        return bulk
