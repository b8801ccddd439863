"""Pass 1 of a load: every record checked, alone and against the rest of the bundle and
the store, before anything is written (BUNDLE.md).

The small kinds (accounts, people, initiatives, ...) are kept whole. The big ones (cost
and value entries, observations) stream past one record at a time, and only what the
cross-record checks need is kept: their ids (duplicates), and the distinct combinations
of the fields that reach other records (initiative, currency, vendor, connection), each
with the ids carrying it, so a reference or FX problem still names the records. Ids
already in the store are looked up in batches.

A record gives only some fields of a row that may exist (SEMANTICS R33): a small kind's
record is merged with its stored row here; a big kind's takes from its stored row only
what tells its account, and is merged when written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection, select

from airoi.db import tables
from airoi.load.batches import BATCH, chunks, ids_to_accounts
from airoi.load.keyed import NO_KEY, SourceKeys, keyed_label
from airoi.load.kinds import (
    BIG,
    BUNDLE_KEYS,
    DELETABLE,
    GIVEN_LENGTH,
    INITIATIVE_CHILDREN,
    KINDS,
    SINGULAR,
    Kind,
)
from airoi.load.reading import DELETE_TOO_LARGE, MAX_DELETE_IDS, BadSource, Repeated, Source
from airoi.load.records import (
    Problems,
    Rec,
    label_of,
    merged,
    missing_required,
    normalize,
    shown_name,
)
from airoi.load.values import Bad, conv_id, show
from airoi.tokens import ISSUING_ROLES, SECRET_MIN_LENGTH, TOKEN_PREFIX

IDS_PER_GROUP: Final = 50  # records named per shared problem of the big kinds
# The kinds keyed by what they give rather than by an id, and the columns of that key.
KEYED: Final = {
    "tokens": ("token_hash",),
    "fx_rates": ("account_id", "currency", "effective_from"),
}
MISSING: Final[Any] = object()
NO_OWNER: Final = "required when neither initiative_id nor metric_id is given"  # account_id


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


def owner_of(
    kind: Kind, rec: Rec, stored_account: int | None
) -> tuple[int | None, int | None, int | None]:
    """What a big record names of its owner: its initiative, its metric (a reading's) and its
    account. SEMANTICS R33: what the record leaves out, its stored row keeps; a row never
    moves to another account, so a record of a stored row naming no owner is in the row's."""
    row = rec.row
    initiative_id = row.get("initiative_id")
    metric_id = row.get("metric_id") if kind.account == "observation" else None
    account = rec.given_account
    if stored_account is not None and account is None and initiative_id is metric_id is None:
        account = stored_account
    return initiative_id, metric_id, account


# Fields holding JSON of their own (an integration's): a name inside one is not said, as
# its value is not (SEMANTICS R15): it is a credential's or a setting's.
_OPAQUE: Final = ("credentials", "settings")


def _given_twice(where: str, path: str) -> str:
    field, dot, _ = path.partition(".")
    if dot and field in _OPAQUE:
        return f"{where}.{field}: a name inside it is given more than once"
    return f"{where}.{shown_name(path)}: given more than once"


class Validation:
    """The bundle as pass 1 reads it, and what the writer needs of that (`small`, `deletes`,
    `big_ids`, `present`, `accounts`, `stored`)."""

    def __init__(self, conn: Connection, source: Source, *, keep_stamps: bool) -> None:
        self.conn = conn
        self.source = source
        self.keep_stamps = keep_stamps
        self.problems = Problems()
        self.keyed = SourceKeys(conn, self.problems)  # records matched by source ref (R42)
        self.ignored_stamps = 0  # updated_at values given and dropped (SEMANTICS R32)
        self.small: dict[str, list[Rec]] = {key: [] for key in KINDS if not KINDS[key].big}
        self.deletes: dict[str, set[int]] = {}
        self.seen_keys: set[str] = set()
        # Big kinds: ids seen, and per combination of the fields that reach
        # other records, the ids carrying it (capped) for naming problems.
        self.big_ids: dict[str, set[int]] = {key: set() for key in BIG}
        self.big_groups: dict[str, dict[tuple[Any, ...], list[int]]] = {key: {} for key in BIG}
        self.big_existing: dict[str, dict[tuple[Any, ...], list[int]]] = {key: {} for key in BIG}
        self.pending: dict[str, dict[int, Rec]] = {key: {} for key in BIG}
        # Big records that left out a required field their stored row holds: fine unless
        # the bundle deletes that row (then the record makes a new one), by kind and id:
        # the problems that would be, and the stored row's initiative.
        self.kept_required: dict[str, dict[int, tuple[list[str], int | None]]] = {
            key: {} for key in BIG
        }
        # Filled at the end of pass 1.
        self.present: dict[str, dict[int, int | None]] = {}
        # Small kinds: the stored row of each id the bundle gives.
        self.stored: dict[str, dict[int, Mapping[Any, Any]]] = {}
        self.accounts: dict[int, Account] = {}
        self.fx_pairs: set[tuple[int, str]] = set()
        self.fx_needed: dict[tuple[int, str], list[tuple[str, str]]] = {}

    def run(self) -> None:
        try:
            for key, pos, item in self.source.items():
                self._take(key, pos, item)
        except BadSource as exc:
            self.problems.add(str(exc))
            return
        for key in BIG:
            self._take_keyed(KINDS[key])
            self._flush_existing(key)
        self._check()

    def _take(self, key: str, pos: int, item: Any) -> None:
        if pos == -2:
            if key in self.seen_keys:
                # JSON leaves a repeated name's meaning open: refuse it rather than guess.
                self.problems.add(f"bundle: the key {shown_name(key)!r} is given more than once")
            elif key not in BUNDLE_KEYS:
                self.problems.add(f"bundle: unknown key {shown_name(key)!r}")
            self.seen_keys.add(key)
            return
        if type(item) is Repeated:
            # Only where the value is read: a record, or the delete object. Anything
            # else (an unknown key, an array for a record) is refused for what it is.
            where = None
            if key in KINDS and pos >= 0 and type(item.value) is dict:
                where = label_of(KINDS[key], item.value, pos)
            elif key == "delete" and pos == -1:
                where = key
            if where is not None:
                for name in item.names:
                    self.problems.add(_given_twice(where, name))
            item = item.value
        if key not in KINDS:
            if key == "delete":
                if pos == -1:
                    self._take_delete(item)
                elif pos == 0:
                    self.problems.add("bundle: 'delete' must be an object")
            return
        kind = KINDS[key]
        if pos == -1:
            if item is not None:
                self.problems.add(f"bundle: {key!r} must be an array")
            return
        rec = normalize(kind, item, pos, self.problems, keep_stamps=self.keep_stamps)
        if rec is None:
            return
        self.ignored_stamps += rec.stamp_ignored
        if kind.big:
            if SourceKeys.wants(rec):
                rec.label = keyed_label(kind, pos, item)
                self.keyed.add(kind, pos, rec)
                if self.keyed.pending(key) >= BATCH:
                    self._take_keyed(kind)
            else:
                self._take_big(kind, rec)
        else:
            self.small[key].append(rec)

    def _take_delete(self, value: Any) -> None:
        if value is None:
            return
        if not isinstance(value, Mapping):
            self.problems.add("bundle: 'delete' must be an object")
            return
        lists = [ids for ids in value.values() if isinstance(ids, list | tuple)]
        if sum(map(len, lists)) > MAX_DELETE_IDS:
            self.problems.add(DELETE_TOO_LARGE)
            return
        for kind_key, ids in value.items():
            if kind_key == "decisions":
                self.problems.add("delete.decisions: a decision is never deleted (SPEC 3)")
                continue
            if kind_key == "fx_rates":
                continue  # no id to delete by
            if kind_key not in DELETABLE:
                self.problems.add(f"delete.{shown_name(kind_key)}: not a kind that can be deleted")
                continue
            if not isinstance(ids, list | tuple):
                self.problems.add(f"delete.{kind_key}: {show(ids)} is not an array of ids")
                continue
            chosen = self.deletes.setdefault(kind_key, set())
            for pos, record_id in enumerate(ids):
                try:
                    chosen.add(conv_id(record_id))
                except Bad as exc:
                    self.problems.add(f"delete.{kind_key}[#{pos}]: {exc}")

    def _take_keyed(self, kind: Kind) -> None:
        """Records matched by their source ref (SEMANTICS R42), once given their ids."""
        for rec in self.keyed.resolve(kind):
            self._take_big(kind, rec)

    def _take_big(self, kind: Kind, rec: Rec) -> None:
        record_id = rec.row.get("id")
        if record_id is None:
            if "id" not in rec.failed:
                self.problems.add(f"{rec.label}.id: {NO_KEY}")
            return
        ids = self.big_ids[kind.key]
        if record_id in ids:
            self.problems.add(f"{rec.label}.id: duplicate id {record_id} in this bundle")
            return
        ids.add(record_id)
        pending = self.pending[kind.key]
        pending[record_id] = rec
        if len(pending) >= BATCH:
            self._flush_existing(kind.key)

    def _flush_existing(self, key: str) -> None:
        """A batch of big records against the store: whose account are the stored rows, and
        what does a record that leaves out its initiative (or metric) keep of its row?"""
        pending = self.pending[key]
        if not pending:
            return
        kind = KINDS[key]
        table = kind.table
        observation = kind.account == "observation"
        columns = [table.c.id, table.c.account_id, table.c.initiative_id]
        if observation:
            columns.append(table.c.metric_id)
        stored = {
            row[0]: row
            for row in self.conn.execute(select(*columns).where(table.c.id.in_(pending)))
        }
        existing = self.big_existing[key]
        owners = {"initiative_id", "metric_id"}
        for record_id, rec in pending.items():
            row = rec.row
            found = stored.get(record_id)
            initiative_id, metric_id, given_account = owner_of(
                kind, rec, None if found is None else found.account_id
            )
            if found is None:
                absent = missing_required(kind, rec)
            else:
                # A reading naming no owner at all keeps its row's; made again, it needs one.
                if observation and rec.given_account is None and not owners & row.keys():
                    self._keep(key, record_id, f"{rec.label}.account_id: {NO_OWNER}", found)
                for required in kind.required:
                    if required.column not in row and required.column not in rec.failed:
                        self._keep(key, record_id, f"{rec.label}.{required.name}: required", found)
                group = existing.setdefault(
                    (
                        initiative_id,
                        metric_id,
                        given_account,
                        found.account_id,
                        found.initiative_id,
                    ),
                    [],
                )
                if len(group) < IDS_PER_GROUP:
                    group.append(record_id)
                absent = [
                    f"{rec.label}.{required.name}: required"
                    for required in kind.required
                    if required.column in row and row[required.column] is None
                ]
            for line in absent:
                self.problems.add(line)
            group_key = (
                initiative_id,
                metric_id,
                given_account,
                row.get("currency"),
                row.get("vendor_id"),
                row.get("source_connection_id"),
            )
            ids = self.big_groups[key].get(group_key)
            if ids is None:
                self.big_groups[key][group_key] = [record_id]
            elif len(ids) < IDS_PER_GROUP:
                ids.append(record_id)
        pending.clear()

    def _keep(self, key: str, record_id: int, problem: str, found: Any) -> None:
        """A big record leaves out what its stored row holds: `problem` if the bundle deletes
        that row (then the record makes a new row, which must give it)."""
        problems, _ = self.kept_required[key].setdefault(record_id, ([], found.initiative_id))
        problems.append(problem)

    def _check_kept_required(self) -> None:
        """A record that kept a required field from a row this bundle deletes makes a new row,
        which needs the field."""
        for key, kept in self.kept_required.items():
            for record_id, (problems, stored_initiative) in kept.items():
                if self._gone(key, record_id, stored_initiative):
                    for problem in problems:
                        self.problems.add(problem)

    # ----------------------------------------------------------------- cross checks

    def _check(self) -> None:
        self._load_stored()
        self._check_duplicates()
        self._check_kept_required()
        self._load_present()
        self._resolve_small_accounts()
        self._check_stored_ids()
        for key, recs in self.small.items():
            kind = KINDS[key]
            for rec in recs:
                self._check_refs(kind, rec)
        self._check_tokens()
        self._check_vendors()
        self._check_integrations()
        self._check_decisions()
        for key in BIG:
            self._check_big(key)
        self._check_fx()

    def _check_duplicates(self) -> None:
        for key, recs in self.small.items():
            seen: set[Any] = set()
            for rec in recs:
                row = rec.row
                if key == "tokens":
                    ident: Any = row["token_hash"]
                    what = "token"
                    field_name = "token"
                elif key == "fx_rates":
                    ident = (row["account_id"], row["currency"], row["effective_from"])
                    what = "rate for this account, currency and date"
                    field_name = "effective_from"
                else:
                    ident = row["id"]
                    what = f"id {ident}"
                    field_name = "id"
                if ident is None or (isinstance(ident, tuple) and None in ident):
                    continue
                if ident in seen:
                    self.problems.add(f"{rec.label}.{field_name}: duplicate {what} in this bundle")
                seen.add(ident)

    def _referenced(self) -> dict[str, set[int]]:
        wanted: dict[str, set[int]] = {target: set() for target in SINGULAR}
        for key, recs in self.small.items():
            kind = KINDS[key]
            for rec in recs:
                row = rec.row
                for column, target in kind.refs.items():
                    if row[column] is not None:
                        wanted[target].add(row[column])
                if kind.account == "field" and row["account_id"] is not None:
                    wanted["accounts"].add(row["account_id"])
                if kind.account == "initiative" and row["initiative_id"] is not None:
                    wanted["initiatives"].add(row["initiative_id"])
                if rec.given_account is not None:
                    wanted["accounts"].add(rec.given_account)
                if key == "decisions" and row["initiative_id"] is not None:
                    wanted["initiatives"].add(row["initiative_id"])
                if key == "vendors" and row["merged_into_id"] is not None:
                    wanted["vendors"].add(row["merged_into_id"])
        for key in BIG:
            groups = list(self.big_groups[key]) + [g[:3] for g in self.big_existing[key]]
            for group in groups:
                initiative_id, metric_id, given_account = group[:3]
                if initiative_id is not None:
                    wanted["initiatives"].add(initiative_id)
                if metric_id is not None:
                    wanted["metrics"].add(metric_id)
                if given_account is not None:
                    wanted["accounts"].add(given_account)
                if len(group) == 6:
                    if group[4] is not None:
                        wanted["vendors"].add(group[4])
                    if group[5] is not None:
                        wanted["integrations"].add(group[5])
        return wanted

    def _load_stored(self) -> None:
        """The stored row of every id the bundle's small kinds give, and each record merged
        with it (SEMANTICS R33): what the record leaves out, the stored row keeps, unless the
        bundle deletes that row first. Then the required fields."""
        for key, recs in self.small.items():
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
                if found is not None and self._gone(
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

    def _load_present(self) -> None:
        """Which rows exist after this bundle (bundle or store, minus its deletes), by account.

        A row of the bundle whose own account is refused (no such account, or not the
        account the store holds it under) is present with account None: its problem is
        named once, on its own account_id, and records that refer to it are not checked
        against an account it cannot have.
        """
        wanted = self._referenced()
        for target in ("users", "vendors", "integrations", "metrics", "initiatives"):
            present: dict[int, int | None] = {}
            for rec in self.small[target]:
                if rec.row["id"] is not None:
                    present[rec.row["id"]] = rec.row["account_id"]
            deleted = self.deletes.get(target, set())
            for record_id, stored_row in self.stored[target].items():
                stored_account = stored_row["account_id"]
                moved = present.get(record_id) not in (None, stored_account)
                if moved and record_id not in deleted:
                    present[record_id] = None
            missing = wanted[target] - present.keys() - deleted
            present.update(ids_to_accounts(self.conn, KINDS[target].table, missing))
            self.present[target] = present
        # Accounts: those of the bundle, then those the store holds.
        for rec in self.small["accounts"]:
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

    def _initiative_account(self, initiative_id: int) -> Any:
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
            account = self._initiative_account(initiative_id)
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

    def _resolve_small_accounts(self) -> None:
        for key, recs in self.small.items():
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

    def _check_refs(self, kind: Kind, rec: Rec) -> None:
        account = rec.account
        if account is None:
            return
        row = rec.row
        for column, target in kind.refs.items():
            value = row[column]
            if value is None or (kind.key == "tokens" and column == "user_id"):
                continue
            found = self.present[target].get(value, MISSING)
            if found is None:
                continue  # the target itself is broken and reported
            if found is MISSING or found != account:
                name = "source.connection_id" if column == "source_connection_id" else column
                self.problems.add(
                    f"{rec.label}.{name}: no {SINGULAR[target]} {value} in account {account}"
                )
        currency = row.get("currency")
        if kind.key not in ("accounts", "fx_rates") and currency is not None:
            self._need_fx(account, currency, rec.label, "currency")

    def _need_fx(self, account: int, currency: str, label: str, field_name: str) -> None:
        # SEMANTICS R5: a currency with no rate at all cannot be loaded.
        info = self.accounts.get(account)
        if info is None or currency == info.currency:
            return
        needed = self.fx_needed.setdefault((account, currency), [])
        if len(needed) < IDS_PER_GROUP:
            needed.append((label, field_name))

    def _gone(self, key: str, record_id: int, initiative_id: int | None) -> bool:
        """Is this stored row removed by the bundle's deletes before the upsert?"""
        if record_id in self.deletes.get(key, ()):
            return True
        return (
            key in INITIATIVE_CHILDREN
            and initiative_id is not None
            and initiative_id in self.deletes.get("initiatives", ())
        )

    def _check_stored_ids(self) -> None:
        """An upsert never moves a row to another account (BUNDLE load rules)."""
        for key, stored in self.stored.items():
            kind = KINDS[key]
            if kind.account == "self":
                continue  # an account is its own
            by_id = {rec.row["id"]: rec for rec in self.small[key] if rec.row["id"] is not None}
            for record_id, stored_row in stored.items():
                stored_account = stored_row["account_id"]
                stored_initiative = stored_row.get("initiative_id")
                rec = by_id[record_id]
                # Decisions are not deleted with their initiative.
                parent = None if key == "decisions" else stored_initiative
                if self._gone(key, record_id, parent):
                    continue
                if rec.account is not None and stored_account != rec.account:
                    field_name, given = self._account_field(kind, rec.row.get("initiative_id"))
                    self.problems.add(
                        f"{rec.label}.{field_name}: "
                        + moved(record_id, given, rec.account, stored_account)
                    )
                    rec.account = None  # its references are not checked in an account it lacks

    @staticmethod
    def _account_field(
        kind: Kind, initiative_id: int | None, metric_id: int | None = None
    ) -> tuple[str, str | None]:
        """The field that gave a record its account, and what it names (None: the account)."""
        if kind.account in ("initiative", "observation") and initiative_id is not None:
            return "initiative_id", f"initiative {initiative_id}"
        if kind.account == "observation" and metric_id is not None:
            return "metric_id", f"metric {metric_id}"
        return "account_id", None

    def _check_tokens(self) -> None:
        self._check_token_issuers()
        recs = [rec for rec in self.small["tokens"] if rec.row["token_hash"] is not None]
        by_hash = {rec.row["token_hash"]: rec for rec in recs}
        table = tables.tokens
        for batch in chunks(sorted(by_hash)):
            query = select(table.c.token_hash, table.c.user_id).where(table.c.token_hash.in_(batch))
            for token_hash, user_id in self.conn.execute(query):
                rec = by_hash[token_hash]
                if rec.row["user_id"] is not None and user_id != rec.row["user_id"]:
                    self.problems.add(
                        f"{rec.label}.token: this token is already issued to another user"
                    )

    def _check_token_issuers(self) -> None:
        """A token that can authenticate: 32 bytes of secret (R29), an Owner's or Admin's (SPEC 5).

        A revoked token opens nothing, so it is taken as given: a bundle can revoke
        any stored token, whatever its secret or its user's role now.
        """
        live = []
        for rec in self.small["tokens"]:
            length = rec.row.pop(GIVEN_LENGTH)
            if rec.row["revoked_at"] is not None:
                continue
            live.append(rec)
            if length is not None and length < SECRET_MIN_LENGTH:
                self.problems.add(
                    f"{rec.label}.token: too short to hold 32 bytes of entropy (SEMANTICS R29): "
                    f"the secret after the {TOKEN_PREFIX!r} prefix (or the whole token, without "
                    f"one) needs at least {SECRET_MIN_LENGTH} characters, as 32 random bytes "
                    f"take in URL-safe base64; it has {length}"
                )
        roles = {rec.row["id"]: rec.row["role"] for rec in self.small["users"]}
        wanted = {
            rec.row["user_id"]
            for rec in live
            if rec.account is not None and rec.row["user_id"] not in roles
        }
        table = tables.users
        for batch in chunks(sorted(wanted)):
            query = select(table.c.id, table.c.role).where(table.c.id.in_(batch))
            for user_id, role in self.conn.execute(query):
                roles[user_id] = role
        for rec in live:
            user_id = rec.row["user_id"]
            role = roles.get(user_id) if rec.account is not None else None
            if role is not None and role not in ISSUING_ROLES:
                self.problems.add(
                    f"{rec.label}.user_id: user {user_id} is a {role}; tokens are issued "
                    "only to an Owner or Admin (SPEC 5)"
                )

    def _check_vendors(self) -> None:
        recs = self.small["vendors"]
        if not any(rec.row["merged_into_id"] is not None for rec in recs):
            return
        merged: dict[int, int | None] = {}
        for rec in recs:
            if rec.row["id"] is not None:
                merged[rec.row["id"]] = rec.row["merged_into_id"]
        # Follow chains through the store too, to find cycles.
        table = tables.vendors
        frontier = {target for target in merged.values() if target is not None} - merged.keys()
        while frontier:
            found: dict[int, int | None] = {}
            for batch in chunks(sorted(frontier)):
                query = select(table.c.id, table.c.merged_into_id).where(table.c.id.in_(batch))
                found.update({row.id: row.merged_into_id for row in self.conn.execute(query)})
            for row_id in frontier:
                merged[row_id] = found.get(row_id)
            frontier = {t for t in found.values() if t is not None} - merged.keys()
        for rec in recs:
            start = rec.row["id"]
            target = rec.row["merged_into_id"]
            if start is None or target is None or rec.account is None:
                continue
            if target == start:
                self.problems.add(
                    f"{rec.label}.merged_into_id: a vendor cannot be merged into itself"
                )
                continue
            seen = {start}
            step: int | None = target
            while step is not None:
                if step in seen:
                    self.problems.add(
                        f"{rec.label}.merged_into_id: merging into vendor {target} makes a cycle"
                    )
                    break
                seen.add(step)
                step = merged.get(step)
            found_account = self.present["vendors"].get(target, MISSING)
            if found_account is MISSING or (
                found_account is not None and found_account != rec.account
            ):
                self.problems.add(
                    f"{rec.label}.merged_into_id: no vendor {target} in account {rec.account}"
                )

    def _check_integrations(self) -> None:
        for rec in self.small["integrations"]:
            if rec.row["simulated"] and rec.account is not None:
                info = self.accounts.get(rec.account)
                if info is not None and not info.internal:
                    self.problems.add(
                        f"{rec.label}.simulated: only an internal account can "
                        "hold a simulated connection"
                    )
        # The same rule from the account's side: one loaded again as not internal must not
        # keep a stored simulated connection the bundle neither deletes nor gives again.
        given = {rec.row["id"] for rec in self.small["integrations"]}
        going = self.deletes.get("integrations", set())
        external = {
            rec.row["id"]: rec
            for rec in self.small["accounts"]
            if rec.row["id"] is not None and not rec.row["internal"]
        }
        table = tables.integrations
        for batch in chunks(sorted(external)):
            query = (
                select(table.c.account_id, table.c.id)
                .where(table.c.account_id.in_(batch), table.c.simulated.is_(True))
                .order_by(table.c.id)
            )
            for account_id, integration_id in self.conn.execute(query):
                if integration_id not in given and integration_id not in going:
                    self.problems.add(
                        f"{external[account_id].label}.internal: false, but its connection "
                        f"{integration_id} is simulated, which only an internal account can "
                        "hold (SPEC 2.9)"
                    )

    def _check_decisions(self) -> None:
        """SPEC 3: a decision never changes once written; its initiative must resolve.

        Its `updated_at` is the store's (SEMANTICS R32: a new name of its decider moves it),
        so a given one is not compared.
        """
        recs = [rec for rec in self.small["decisions"] if rec.row["id"] is not None]
        kind = KINDS["decisions"]
        stored_decisions = self.stored["decisions"]
        for rec in recs:
            row = rec.row
            stored_row = stored_decisions.get(row["id"])
            initiative_id = row["initiative_id"]
            if stored_row is not None and stored_row["account_id"] == rec.account:
                unlinked = stored_row["initiative_id"] is None
                for column in (*kind.served, "created_at"):
                    if column == "initiative_id" and (
                        unlinked or stored_row[column] == initiative_id
                    ):
                        continue  # unlinked when its initiative was deleted: still the same
                    if stored_row[column] != row[column]:
                        self.problems.add(
                            f"{rec.label}.{column}: a decision never changes once written"
                        )
                if stored_row["initiative_id"] in (None, initiative_id):
                    continue
            if initiative_id is not None and rec.account is not None:
                account = self._initiative_account(initiative_id)
                if account is MISSING or (account is not None and account != rec.account):
                    self.problems.add(
                        f"{rec.label}.initiative_id: no initiative "
                        f"{initiative_id} in account {rec.account}"
                    )

    def _check_big(self, key: str) -> None:
        kind = KINDS[key]
        for group_key, ids in self.big_groups[key].items():
            initiative_id, metric_id, given_account, currency, vendor_id, connection_id = group_key
            account, found = self.entry_account(
                kind.account, initiative_id, metric_id, given_account
            )
            if account is not None:
                for column, value in (
                    ("vendor_id", vendor_id),
                    ("source_connection_id", connection_id),
                ):
                    if value is None:
                        continue
                    target = kind.refs[column]
                    found_account = self.present[target].get(value, MISSING)
                    if found_account is MISSING or (
                        found_account is not None and found_account != account
                    ):
                        name = (
                            "source.connection_id" if column == "source_connection_id" else column
                        )
                        found.append((name, f"no {SINGULAR[target]} {value} in account {account}"))
                if currency is not None:
                    for record_id in ids:
                        self._need_fx(account, currency, f"{key}[id={record_id}]", "currency")
            for field_name, message in found:
                for record_id in ids:
                    self.problems.add(f"{key}[id={record_id}].{field_name}: {message}")
        deleted = self.deletes.get(key, set())
        deleted_initiatives = self.deletes.get("initiatives", set())
        for group_key, ids in self.big_existing[key].items():
            initiative_id, metric_id, given_account, stored_account, stored_initiative = group_key
            if stored_initiative is not None and stored_initiative in deleted_initiatives:
                continue
            account, _ = self.entry_account(kind.account, initiative_id, metric_id, given_account)
            if account is None or account == stored_account:
                continue
            field_name, given = self._account_field(kind, initiative_id, metric_id)
            for record_id in ids:
                if record_id not in deleted:
                    self.problems.add(
                        f"{key}[id={record_id}].{field_name}: "
                        + moved(record_id, given, account, stored_account)
                    )

    def _check_fx(self) -> None:
        if not self.fx_needed:
            return
        for rec in self.small["fx_rates"]:
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
