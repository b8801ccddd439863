"""Pass 2 of a load: what pass 1 accepted, written in one transaction and stamped.

Deletes first (leaving tombstones, SEMANTICS R34), then the small kinds, then the big
ones streamed a second time and upserted in batches, then decisions and assessments.
Each record is merged with its stored row (SEMANTICS R33); a row whose served content
is unchanged keeps its `updated_at`, and every row inserted or changed takes the load's
one stamp (R32), whether the bundle changed it or a change elsewhere did: a person's new
name, a vendor merge, a metric's new key, an unlinking, or new FX rates that move an
entry's `account_amount_cents`. Those knock-on changes are made before the rows they
touch are written, so each row is counted once, as what happened to it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, bindparam, delete, insert, select, update

from airoi.db import tables
from airoi.finance.money import MissingRate
from airoi.load.amounts import AccountAmounts
from airoi.load.batches import BATCH, Bulk, chunks
from airoi.load.checks import Validation
from airoi.load.gathering import owner_of
from airoi.load.kinds import (
    BIG,
    DELETABLE,
    INITIATIVE_CHILDREN,
    KEYED,
    KINDS,
    LATE_WRITE_ORDER,
    SERVED_LISTS,
    SMALL_WRITE_ORDER,
    UNLINKED_ON_DELETE,
    Kind,
)
from airoi.load.outcome import LoadReport
from airoi.load.reading import BadSource
from airoi.load.records import Rec, merged, normalize
from airoi.load.values import fits_int64, too_large_converted
from airoi.load.vendors import VendorRegistry
from airoi.tokens import ISSUING_ROLES

# Whose served rows show a person's name (SEMANTICS R32): kind, column naming the person.
PERSON_REFERENCES = (
    ("initiatives", "owner_id"),
    ("decisions", "decided_by_id"),
    ("integrations", "connected_by_id"),
)

# A removed served row: (list, account, id).
Tombstone = tuple[str, int, int]


class Writer:
    def __init__(
        self,
        checked: Validation,
        stamp: datetime,
        *,
        keep_stamps: bool,
        removed: Iterable[Tombstone] = (),
    ) -> None:
        self.conn = checked.conn
        self.checked = checked
        self.stamp = stamp
        self.keep_stamps = keep_stamps
        self.problems = checked.problems
        self.report = LoadReport(
            inserted=dict.fromkeys(KINDS, 0),
            updated=dict.fromkeys(KINDS, 0),
            unchanged=dict.fromkeys(KINDS, 0),
            deleted=dict.fromkeys(KINDS, 0),
            stamp=stamp,
            ignored_stamps=checked.bundle.ignored_stamps,
        )
        self.amounts = AccountAmounts(self.conn, self.problems)
        self.bulk: dict[tuple[str, str], Bulk] = {}
        self.fx_changed: set[int] = set()  # accounts whose FX rates or currency changed
        self.new_accounts: set[int] = set()
        self.tombstones: list[Tombstone] = list(removed)
        # Rows a knock-on change re-stamped, by kind (counted as updated once).
        self.touched: dict[str, set[int]] = {key: set() for key in KINDS}
        self.vendor_registry: VendorRegistry | None = None
        self.metric_keys: dict[int, str] = {}
        # With --keep-stamps: the latest updated_at written as given (the store's clock).
        self.latest_given: datetime | None = None

    def write(self) -> LoadReport:
        self._apply_deletes()
        for key in SMALL_WRITE_ORDER:
            self._write_small(key)
            self._after_small(key)
        self._write_big()
        for key in LATE_WRITE_ORDER:
            self._write_small(key)
        for account_id in sorted(self.fx_changed - self.new_accounts):
            self.amounts.check_initiative_currencies(account_id)
        self._write_tombstones()
        self._count_knock_on()
        if self.problems:
            raise self.problems.error()
        self.checked.bundle.source.progress.complete()
        return self.report

    def _after_small(self, key: str) -> None:
        """The knock-on changes of a kind just written, made before the rows they touch."""
        if key == "users":
            self._restamp_people()
            self._end_lost_access()
        elif key == "fx_rates":  # the accounts' currencies are written by now too
            self._refresh_amounts()
        elif key == "vendors":
            self._repoint_merged_vendors()
        elif key == "metrics":
            self._rekey_readings()

    # ---- stamps

    def _given_stamp(self, rec: Rec, row: dict[str, Any]) -> datetime | None:
        """With --keep-stamps, the updated_at the record gave (SEMANTICS R32)."""
        if not self.keep_stamps or "updated_at" not in rec.given:
            return None
        given: datetime | None = row["updated_at"]
        if given is not None and (self.latest_given is None or given > self.latest_given):
            self.latest_given = given
        return given

    def _restamp(
        self, key: str, where: ColumnElement[bool], values: dict[str, Any] | None = None
    ) -> None:
        """A knock-on change: the rows `where` selects take `values` and the load's stamp."""
        table = KINDS[key].table
        self.touched[key].update(self.conn.execute(select(table.c.id).where(where)).scalars())
        self.conn.execute(
            update(table).where(where).values({**(values or {}), "updated_at": self.stamp})
        )

    def _count_knock_on(self) -> None:
        """Rows only a knock-on change touched were updated; the bundle's own were counted
        as they were written."""
        for key, touched in self.touched.items():
            if not touched:
                continue
            kind = KINDS[key]
            given = (
                self.checked.bundle.big_ids[key]
                if kind.big
                else {rec.row["id"] for rec in self.checked.bundle.small[key]}
            )
            self.report.updated[key] += len(touched - given)

    # ---- deletes

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

    def _apply_deletes(self) -> None:
        deletes = self.checked.bundle.deletes
        deleted = self.report.deleted
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
            given = {rec.row["id"] for rec in self.checked.bundle.small[key]}
            unlinked = sorted(deletes.get(key, set()) - given)
            for child, column in columns if unlinked else ():
                table = KINDS[child].table
                for batch in chunks(unlinked):
                    self._restamp(child, table.c[column].in_(batch), {column: None})

    def _write_tombstones(self) -> None:
        """SEMANTICS R34: a tombstone for every served row removed and not given again."""
        checked = self.checked
        given: dict[str, set[int]] = {key: set(ids) for key, ids in checked.bundle.big_ids.items()}
        for key in SERVED_LISTS:
            if key not in given:
                given[key] = {rec.row["id"] for rec in checked.bundle.small[key]}
        rows = [
            {
                "account_id": account_id,
                "resource": key,
                "record_id": row_id,
                "deleted_at": self.stamp,
            }
            for key, account_id, row_id in self.tombstones
            if row_id not in given[key]
        ]
        for batch in chunks(rows):
            self.conn.execute(insert(tables.deletions), batch)

    # ---- small kinds

    def _write_small(self, key: str) -> None:
        kind = KINDS[key]
        recs = self.checked.bundle.small[key]
        for rec in recs:
            if kind.account in ("initiative", "observation"):
                rec.row["account_id"] = rec.account
        if key in KEYED:
            self._upsert_keyed(kind, recs, KEYED[key])
        elif key == "decisions":
            self._write_decisions(recs)
        else:
            for batch in chunks(recs):
                self._upsert_by_id(kind, batch)

    def _write_decisions(self, recs: list[Rec]) -> None:
        """SPEC 3: a stored decision is never written again (pass 1 found it the same)."""
        stored = self.checked.presence.stored["decisions"]
        touched = self.touched["decisions"]
        fresh = []
        for rec in recs:
            row = rec.row
            if row["id"] in stored:
                outcome = "updated" if row["id"] in touched else "unchanged"
                getattr(self.report, outcome)["decisions"] += 1
                continue
            row["updated_at"] = self._given_stamp(rec, row) or self.stamp
            row.setdefault("created_at", self.stamp)
            fresh.append(row)
        for batch in chunks(fresh):
            self.conn.execute(insert(tables.decisions), batch)
        self.report.inserted["decisions"] += len(fresh)

    def _upsert_keyed(self, kind: Kind, recs: list[Rec], key_columns: tuple[str, ...]) -> None:
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

    def _upsert_by_id(
        self,
        kind: Kind,
        recs: list[Rec],
        finish: Callable[[Kind, Rec, dict[str, Any], Any], bool] | None = None,
    ) -> None:
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
            given_stamp = self._given_stamp(rec, row)
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
            self._bulk(kind, "insert").run(self.conn, inserts)
            self.report.inserted[kind.key] += len(inserts)
            if kind.key == "accounts":
                self.new_accounts.update(row["id"] for row in inserts)
        for rows in (updates, quiet):
            if rows:
                self._bulk(kind, "update").run(self.conn, rows)
                self.report.updated[kind.key] += len(rows)

    def _bulk(self, kind: Kind, what: str) -> Bulk:
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

    # ---- knock-on changes (SEMANTICS R32)

    def _end_lost_access(self) -> None:
        """SEMANTICS R29: a user this load removes, or leaves neither Owner nor Admin, loses
        every token for good (and with them every assistant grant made through them): the
        tokens are revoked with the load's stamp, so restoring the user or the role later
        opens nothing until a new token is issued. A user already without access has theirs
        revoked too (a store from before the rule kept them). Tokens this bundle gives are
        written after this, and pass 1 took only those of an Owner or Admin."""
        stored = self.checked.presence.stored.get("users", {})
        lost = [
            rec.row["id"]
            for rec in self.checked.bundle.small["users"]
            if rec.row["id"] in stored
            and (rec.row["removed_at"] is not None or rec.row["role"] not in ISSUING_ROLES)
        ]
        given = {rec.row["token_hash"] for rec in self.checked.bundle.small["tokens"]}
        table = tables.tokens
        for batch in chunks(lost):
            live = (table.c.user_id.in_(batch), table.c.revoked_at.is_(None))
            ended = set(self.conn.execute(select(table.c.token_hash).where(*live)).scalars())
            if ended:
                self.conn.execute(update(table).where(*live).values(revoked_at=self.stamp))
            # A token the bundle gives too is counted once, when it is written.
            self.report.updated["tokens"] += len(ended - given)

    def _restamp_people(self) -> None:
        """A person's new name is served on every row referring to them."""
        stored = self.checked.presence.stored["users"]
        renamed = sorted(
            rec.row["id"]
            for rec in self.checked.bundle.small["users"]
            if rec.row["id"] in stored and stored[rec.row["id"]]["name"] != rec.row["name"]
        )
        for key, column in PERSON_REFERENCES if renamed else ():
            table = KINDS[key].table
            for batch in chunks(renamed):
                self._restamp(key, table.c[column].in_(batch))

    def _refresh_amounts(self) -> None:
        """Stored entries of an account whose FX rates or currency changed: converted again,
        and re-stamped where the served `account_amount_cents` moved (SEMANTICS R35)."""
        for account_id in sorted(self.fx_changed - self.new_accounts):
            self.amounts.forget(account_id)
            fx = self.amounts.fx(account_id)
            for key in ("cost_entries", "value_entries"):
                kind = KINDS[key]
                table = kind.table
                touched = self.touched[key]
                last = 0
                while True:
                    query = (
                        select(
                            table.c.id,
                            table.c.amount_cents,
                            table.c.currency,
                            table.c.entry_date,
                            table.c.account_amount_cents,
                        )
                        .where(table.c.account_id == account_id, table.c.id > last)
                        .order_by(table.c.id)
                        .limit(BATCH)
                    )
                    batch = self.conn.execute(query).all()
                    if not batch:
                        break
                    last = batch[-1].id
                    refreshed = []
                    for stored in batch:
                        if stored.amount_cents is None:
                            continue
                        try:
                            converted = fx.convert(
                                stored.amount_cents, stored.currency, stored.entry_date, None
                            )
                        except MissingRate as exc:  # the account changed its currency
                            self.problems.add(
                                f"accounts[id={account_id}].currency: stored {key} in "
                                f"{exc.currency} would have no FX rate for {exc.currency} in "
                                f"account {account_id}"
                            )
                            break
                        if not fits_int64(converted):
                            label = f"{key}[id={stored.id}]"
                            self.problems.add(
                                too_large_converted(
                                    label, stored.amount_cents, stored.currency, fx.account_currency
                                )
                            )
                            continue
                        if converted != stored.account_amount_cents:
                            touched.add(stored.id)
                            refreshed.append(
                                {
                                    "b_id": stored.id,
                                    "entry_date": stored.entry_date,
                                    "entry_month": stored.entry_date.replace(day=1),
                                    "account_amount_cents": converted,
                                    "updated_at": self.stamp,
                                }
                            )
                    self._bulk(kind, "reporting").run(self.conn, refreshed)

    def _repoint_merged_vendors(self) -> None:
        """SPEC 2.3: entries of a merged vendor move to the one it was merged into."""
        merged_away = [
            rec
            for rec in self.checked.bundle.small["vendors"]
            if rec.row["merged_into_id"] is not None
        ]
        if not merged_away:
            return
        registry = self._vendors()
        table = tables.cost_entries
        for rec in merged_away:
            vendor_id = rec.row["id"]
            final = registry.final(rec.row["account_id"], vendor_id)
            if final != vendor_id:
                self._restamp("cost_entries", table.c.vendor_id == vendor_id, {"vendor_id": final})

    def _rekey_readings(self) -> None:
        """SPEC 4.A.9: a metric's readings carry its canonical key, so `?metric_key=` finds
        them; a metric given a new key takes its stored readings with it."""
        stored = self.checked.presence.stored["metrics"]
        table = tables.observations
        for rec in self.checked.bundle.small["metrics"]:
            row = rec.row
            old = stored.get(row["id"])
            if old is None or old["metric_key"] == row["metric_key"]:
                continue
            where = (
                (table.c.account_id == row["account_id"])
                & (table.c.metric_key == old["metric_key"])
                & (table.c.metric_id == row["id"])
            )
            self._restamp("observations", where, {"metric_key": row["metric_key"]})

    # ---- big kinds, streamed a second time

    def _write_big(self) -> None:
        checked = self.checked
        if not any(checked.bundle.big_ids[key] for key in BIG):
            return
        self._load_metric_keys()
        batches: dict[str, list[Rec]] = {key: [] for key in BIG}
        problems = self.problems
        try:
            present = tuple(key for key in BIG if checked.bundle.big_ids[key])
            for key, pos, item in checked.bundle.source.big_items(present):
                kind = KINDS.get(key)
                if kind is None or not kind.big or pos < 0:
                    continue
                rec = normalize(kind, item, pos, problems, keep_stamps=self.keep_stamps)
                if rec is None:
                    continue
                if rec.row.get("id") is None:  # matched by its source ref (SEMANTICS R42)
                    keyed_id = checked.bundle.keyed.id_at(key, pos)
                    if keyed_id is None:
                        continue
                    rec.row["id"] = keyed_id
                batch = batches[key]
                batch.append(rec)
                if len(batch) >= BATCH:
                    self._upsert_by_id(kind, batch, self._finish_big)
                    batch.clear()
        except BadSource as exc:
            problems.add(str(exc))
        if problems:
            raise problems.error()
        for key, batch in batches.items():
            self._upsert_by_id(KINDS[key], batch, self._finish_big)

    def _finish_big(self, kind: Kind, rec: Rec, row: dict[str, Any], stored: Any) -> bool:
        """A big record merged with its stored row: its account, vendor and metric key."""
        owner = owner_of(kind, rec, None if stored is None else stored["account_id"])
        account, found = self.checked.presence.entry_account(kind.account, *owner)
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
        registry = self._vendors()
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

    def _vendors(self) -> VendorRegistry:
        if self.vendor_registry is None:
            self.vendor_registry = VendorRegistry(self.conn, self.stamp, self.report)
        return self.vendor_registry

    def _load_metric_keys(self) -> None:
        """The keys of the metrics the readings name, as written by now."""
        metric_ids = {
            group[1]
            for group in self.checked.bundle.big_groups["observations"]
            if group[1] is not None
        }
        table = tables.metrics
        for batch in chunks(sorted(metric_ids)):
            query = select(table.c.id, table.c.metric_key).where(table.c.id.in_(batch))
            self.metric_keys.update({row.id: row.metric_key for row in self.conn.execute(query)})
