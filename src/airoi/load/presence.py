"""Which rows there are once a bundle is loaded, and in which account (BUNDLE.md load rules).

A record gives only some fields of a row that may exist (SEMANTICS R33): a small kind's
record is merged with its stored row here. Then every row the bundle's records name is
found (in the bundle or the store, minus the bundle's deletes) with its account, and each
record's own account is settled: references must resolve inside it, and an upsert never
moves a row to another account.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection, select

from airoi.db import tables
from airoi.load.batches import chunks, ids_to_accounts
from airoi.load.gathering import NO_OWNER, GatheredBundle
from airoi.load.kinds import KEYED, KINDS, Kind
from airoi.load.records import Problems, Rec, merged, missing_required

MISSING: Final[Any] = object()


@dataclass(frozen=True)
class Account:
    currency: str
    internal: bool


def moved(record_id: int, given: str | None, account: int, stored_account: int) -> str:
    """Why an upsert is refused: the row would move to another account (BUNDLE load rules)."""
    if given is None:
        return f"id {record_id} belongs to another account"
    return (
        f"{given} is in account {account}, but id {record_id} belongs to account "
        f"{stored_account}: a row never moves to another account"
    )


def account_field(
    kind: Kind, initiative_id: int | None, metric_id: int | None = None
) -> tuple[str, str | None]:
    """The field that gave a record its account, and what it names (None: the account)."""
    if kind.account in ("initiative", "observation") and initiative_id is not None:
        return "initiative_id", f"initiative {initiative_id}"
    if kind.account == "observation" and metric_id is not None:
        return "metric_id", f"metric {metric_id}"
    return "account_id", None


class Presence:
    """The stored row of each id the small kinds give (`stored`), the rows present after the
    bundle by kind with their accounts (`present`), and the accounts (`accounts`)."""

    def __init__(self, conn: Connection, bundle: GatheredBundle, problems: Problems) -> None:
        self.conn = conn
        self.bundle = bundle
        self.problems = problems
        # Filled at the end of pass 1.
        self.present: dict[str, dict[int, int | None]] = {}
        # Small kinds: the stored row of each id the bundle gives.
        self.stored: dict[str, dict[int, Mapping[Any, Any]]] = {}
        self.accounts: dict[int, Account] = {}

    def merge_stored(self) -> None:
        """The stored row of every id the bundle's small kinds give, and each record merged
        with it (SEMANTICS R33): what the record leaves out, the stored row keeps, unless the
        bundle deletes that row first. Then the required fields."""
        for key, recs in self.bundle.small.items():
            kind = KINDS[key]
            if key in KEYED:  # keyed by what they give, not by an id
                self._merge_keyed(kind, recs, KEYED[key])
                continue
            table = kind.table
            ids = {rec.row["id"] for rec in recs if rec.row.get("id") is not None}
            stored: dict[int, Mapping[Any, Any]] = {}
            for batch in chunks(sorted(ids)):
                for row in self.conn.execute(select(table).where(table.c.id.in_(batch))):
                    stored[row.id] = row._mapping
            self.stored[key] = stored
            has_initiative = "initiative_id" in table.c and key != "decisions"
            for rec in recs:
                found = stored.get(rec.row.get("id"))  # type: ignore[arg-type]
                if found is not None and self.bundle.gone(
                    key, found["id"], found["initiative_id"] if has_initiative else None
                ):
                    found = None
                rec.row = merged(kind, rec.row, found)
                for line in missing_required(kind, rec):
                    self.problems.add(line)

    def _merge_keyed(self, kind: Kind, recs: list[Rec], key_columns: tuple[str, ...]) -> None:
        """Tokens (by hash) and FX rates (by account, currency and date): each record merged
        with the stored row of its key, then the required fields (SEMANTICS R33)."""
        table = kind.table
        for rec in recs:
            found = None
            if all(rec.row.get(column) is not None for column in key_columns):
                condition = [table.c[column] == rec.row[column] for column in key_columns]
                found = self.conn.execute(select(table).where(*condition)).mappings().first()
            rec.row = merged(kind, rec.row, found)
            for line in missing_required(kind, rec):
                self.problems.add(line)

    def load_present(self) -> None:
        """Which rows exist after this bundle (bundle or store, minus its deletes), by account.

        A row of the bundle whose own account is refused (no such account, or not the
        account the store holds it under) is present with account None: its problem is
        named once, on its own account_id, and records that refer to it are not checked
        against an account it cannot have.
        """
        small = self.bundle.small
        wanted = self.bundle.referenced()
        for target in ("users", "vendors", "integrations", "metrics", "initiatives"):
            present: dict[int, int | None] = {}
            for rec in small[target]:
                if rec.row["id"] is not None:
                    present[rec.row["id"]] = rec.row["account_id"]
            deleted = self.bundle.deletes.get(target, set())
            for record_id, stored_row in self.stored[target].items():
                stored_account = stored_row["account_id"]
                moved = present.get(record_id) not in (None, stored_account)
                if moved and record_id not in deleted:
                    present[record_id] = None
            missing = wanted[target] - present.keys() - deleted
            present.update(ids_to_accounts(self.conn, KINDS[target].table, missing))
            self.present[target] = present
        # Accounts: those of the bundle, then those the store holds.
        for rec in small["accounts"]:
            row = rec.row
            if row["id"] is not None:
                self.accounts[row["id"]] = Account(row["currency"] or "USD", bool(row["internal"]))
        for present in self.present.values():
            wanted["accounts"].update(a for a in present.values() if a is not None)
        missing_accounts = wanted["accounts"] - self.accounts.keys()
        table = tables.accounts
        for batch in chunks(sorted(missing_accounts)):
            query = select(table.c.id, table.c.currency, table.c.internal).where(
                table.c.id.in_(batch)
            )
            for account_id, currency, internal in self.conn.execute(query):
                self.accounts[account_id] = Account(currency, bool(internal))
        self.present["accounts"] = {account_id: account_id for account_id in self.accounts}
        for target in ("users", "vendors", "integrations", "metrics", "initiatives"):
            present = self.present[target]
            for record_id, account_id in present.items():
                if account_id is not None and account_id not in self.accounts:
                    present[record_id] = None

    def initiative_account(self, initiative_id: int) -> Any:
        return self.present["initiatives"].get(initiative_id, MISSING)

    def entry_account(
        self,
        mode: str,
        initiative_id: int | None,
        metric_id: int | None,
        given_account: int | None,
    ) -> tuple[int | None, list[tuple[str, str]]]:
        """The account of a record that hangs off an initiative (or a metric)."""
        found: list[tuple[str, str]] = []
        by_initiative = by_metric = None
        # An initiative or metric present with account None is itself refused, and named
        # there: the record's account is unknown, and nothing is said about it here.
        if initiative_id is not None:
            account = self.initiative_account(initiative_id)
            if account is None:
                return None, found
            if account is MISSING:
                found.append(("initiative_id", f"no initiative {initiative_id}"))
            by_initiative = None if account is MISSING else account
        if mode == "observation" and metric_id is not None:
            account = self.present["metrics"].get(metric_id, MISSING)
            if account is None:
                return None, found
            if account is MISSING:
                found.append(("metric_id", f"no metric {metric_id}"))
            by_metric = None if account is MISSING else account
            if by_initiative is not None and by_metric is not None and by_initiative != by_metric:
                found.append(("metric_id", f"no metric {metric_id} in account {by_initiative}"))
        if mode == "initiative" and initiative_id is None:
            # No initiative named (a record that keeps its stored one): its account's own.
            if given_account is not None and given_account not in self.accounts:
                found.append(("account_id", f"no account {given_account}"))
                return None, found
            return given_account, found
        if mode == "initiative":
            if (
                by_initiative is not None
                and given_account is not None
                and given_account != by_initiative
            ):
                found.append(
                    (
                        "account_id",
                        f"initiative {initiative_id} is in account "
                        f"{by_initiative}, not {given_account}",
                    )
                )
            return by_initiative, found
        if by_initiative is not None or by_metric is not None:
            account = by_initiative if by_initiative is not None else by_metric
            if given_account is not None and given_account != account:
                found.append(
                    (
                        "account_id",
                        f"{given_account} does not match account "
                        f"{account} of the record's initiative or metric",
                    )
                )
            return account, found
        if initiative_id is None and metric_id is None:
            if given_account is None:
                found.append(("account_id", NO_OWNER))
            elif given_account not in self.accounts:
                found.append(("account_id", f"no account {given_account}"))
            else:
                return given_account, found
        return None, found

    def resolve_small_accounts(self) -> None:
        for key, recs in self.bundle.small.items():
            kind = KINDS[key]
            for rec in recs:
                row = rec.row
                if kind.account == "self":
                    rec.account = row["id"]
                elif kind.account == "field":
                    account_id = row["account_id"]
                    if account_id is not None and account_id not in self.accounts:
                        self.problems.add(f"{rec.label}.account_id: no account {account_id}")
                    elif account_id is not None:
                        rec.account = account_id
                elif kind.account == "user":
                    user_id = row["user_id"]
                    if user_id is not None:
                        account = self.present["users"].get(user_id, MISSING)
                        if account is MISSING:
                            self.problems.add(f"{rec.label}.user_id: no user {user_id}")
                        else:
                            rec.account = account
                elif kind.account == "initiative" and row["initiative_id"] is not None:
                    account, found = self.entry_account(
                        "initiative", row["initiative_id"], None, rec.given_account
                    )
                    for field_name, message in found:
                        self.problems.add(f"{rec.label}.{field_name}: {message}")
                    rec.account = account
                    row["account_id"] = account

    def check_stored_ids(self) -> None:
        """An upsert never moves a row to another account (BUNDLE load rules)."""
        for key, stored in self.stored.items():
            kind = KINDS[key]
            if kind.account == "self":
                continue  # an account is its own
            by_id = {
                rec.row["id"]: rec for rec in self.bundle.small[key] if rec.row["id"] is not None
            }
            for record_id, stored_row in stored.items():
                stored_account = stored_row["account_id"]
                stored_initiative = stored_row.get("initiative_id")
                rec = by_id[record_id]
                # Decisions are not deleted with their initiative.
                parent = None if key == "decisions" else stored_initiative
                if self.bundle.gone(key, record_id, parent):
                    continue
                if rec.account is not None and stored_account != rec.account:
                    field_name, given = account_field(kind, rec.row.get("initiative_id"))
                    self.problems.add(
                        f"{rec.label}.{field_name}: "
                        + moved(record_id, given, rec.account, stored_account)
                    )
                    rec.account = None  # its references are not checked in an account it lacks
