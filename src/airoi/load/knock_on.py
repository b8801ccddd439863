"""Changes a record makes to rows the bundle does not give (SEMANTICS R32): a person's new
name, a user who loses access, new FX rates or an account's new currency, a vendor merge,
a metric's new key. Each is made right after its kind is written and before the rows it
touches are, and re-stamps those rows, so each row is counted once, as what happened to it.
"""

from __future__ import annotations

from sqlalchemy import select, update

from airoi.db import tables
from airoi.finance.money import MissingRate
from airoi.load.batches import BATCH, chunks
from airoi.load.gathering import GatheredBundle
from airoi.load.kinds import KINDS
from airoi.load.presence import Presence
from airoi.load.upserts import RowUpserter
from airoi.load.values import fits_int64, too_large_converted
from airoi.load.vendors import VendorRegistry
from airoi.tokens import ISSUING_ROLES

# Whose served rows show a person's name (SEMANTICS R32): kind, column naming the person.
PERSON_REFERENCES = (
    ("initiatives", "owner_id"),
    ("decisions", "decided_by_id"),
    ("integrations", "connected_by_id"),
)


class KnockOnChanges:
    """The knock-on changes of each small kind, written through `rows` and re-stamped."""

    def __init__(
        self,
        rows: RowUpserter,
        bundle: GatheredBundle,
        presence: Presence,
        vendors: VendorRegistry,
    ) -> None:
        self.rows = rows
        self.conn = rows.conn
        self.bundle = bundle
        self.presence = presence
        self.vendors = vendors

    def after(self, key: str) -> None:
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

    def count(self) -> None:
        """Rows only a knock-on change touched were updated; the bundle's own were counted
        as they were written."""
        for key, touched in self.rows.touched.items():
            if not touched:
                continue
            kind = KINDS[key]
            given = (
                self.bundle.big_ids[key]
                if kind.big
                else {rec.row["id"] for rec in self.bundle.small[key]}
            )
            self.rows.report.updated[key] += len(touched - given)

    def _end_lost_access(self) -> None:
        """SEMANTICS R29: a user this load removes, or leaves neither Owner nor Admin, loses
        every token for good (and with them every assistant grant made through them): the
        tokens are revoked with the load's stamp, so restoring the user or the role later
        opens nothing until a new token is issued. A user already without access has theirs
        revoked too (a store from before the rule kept them). Tokens this bundle gives are
        written after this, and pass 1 took only those of an Owner or Admin."""
        stored = self.presence.stored.get("users", {})
        lost = [
            rec.row["id"]
            for rec in self.bundle.small["users"]
            if rec.row["id"] in stored
            and (rec.row["removed_at"] is not None or rec.row["role"] not in ISSUING_ROLES)
        ]
        given = {rec.row["token_hash"] for rec in self.bundle.small["tokens"]}
        table = tables.tokens
        for batch in chunks(lost):
            live = (table.c.user_id.in_(batch), table.c.revoked_at.is_(None))
            ended = set(self.conn.execute(select(table.c.token_hash).where(*live)).scalars())
            if ended:
                self.conn.execute(update(table).where(*live).values(revoked_at=self.rows.stamp))
            # A token the bundle gives too is counted once, when it is written.
            self.rows.report.updated["tokens"] += len(ended - given)

    def _restamp_people(self) -> None:
        """A person's new name is served on every row referring to them."""
        stored = self.presence.stored["users"]
        renamed = sorted(
            rec.row["id"]
            for rec in self.bundle.small["users"]
            if rec.row["id"] in stored and stored[rec.row["id"]]["name"] != rec.row["name"]
        )
        for key, column in PERSON_REFERENCES if renamed else ():
            table = KINDS[key].table
            for batch in chunks(renamed):
                self.rows.restamp(key, table.c[column].in_(batch))

    def _refresh_amounts(self) -> None:
        """Stored entries of an account whose FX rates or currency changed: converted again,
        and re-stamped where the served `account_amount_cents` moved (SEMANTICS R35)."""
        rows = self.rows
        for account_id in sorted(rows.fx_changed - rows.new_accounts):
            rows.amounts.forget(account_id)
            fx = rows.amounts.fx(account_id)
            for key in ("cost_entries", "value_entries"):
                kind = KINDS[key]
                table = kind.table
                touched = rows.touched[key]
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
                            rows.problems.add(
                                f"accounts[id={account_id}].currency: stored {key} in "
                                f"{exc.currency} would have no FX rate for {exc.currency} in "
                                f"account {account_id}"
                            )
                            break
                        if not fits_int64(converted):
                            label = f"{key}[id={stored.id}]"
                            rows.problems.add(
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
                                    "updated_at": rows.stamp,
                                }
                            )
                    rows.bulk_for(kind, "reporting").run(self.conn, refreshed)

    def _repoint_merged_vendors(self) -> None:
        """SPEC 2.3: entries of a merged vendor move to the one it was merged into."""
        merged_away = [
            rec for rec in self.bundle.small["vendors"] if rec.row["merged_into_id"] is not None
        ]
        if not merged_away:
            return
        table = tables.cost_entries
        for rec in merged_away:
            vendor_id = rec.row["id"]
            final = self.vendors.final(rec.row["account_id"], vendor_id)
            if final != vendor_id:
                self.rows.restamp(
                    "cost_entries", table.c.vendor_id == vendor_id, {"vendor_id": final}
                )

    def _rekey_readings(self) -> None:
        """SPEC 4.A.9: a metric's readings carry its canonical key, so `?metric_key=` finds
        them; a metric given a new key takes its stored readings with it."""
        stored = self.presence.stored["metrics"]
        table = tables.observations
        for rec in self.bundle.small["metrics"]:
            row = rec.row
            old = stored.get(row["id"])
            if old is None or old["metric_key"] == row["metric_key"]:
                continue
            where = (
                (table.c.account_id == row["account_id"])
                & (table.c.metric_key == old["metric_key"])
                & (table.c.metric_id == row["id"])
            )
            self.rows.restamp("observations", where, {"metric_key": row["metric_key"]})
