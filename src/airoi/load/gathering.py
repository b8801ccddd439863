"""Pass 1 reads the bundle once, record by record, and keeps what the checks need (BUNDLE.md).

The small kinds (accounts, people, initiatives, ...) are kept whole. The big ones (cost
and value entries, observations) stream past one record at a time, and only what the
cross-record checks need is kept: their ids (duplicates), and the distinct combinations
of the fields that reach other records (initiative, currency, vendor, connection), each
with the ids carrying it, so a reference or FX problem still names the records. Ids
already in the store are looked up in batches.

A big kind's record takes from its stored row only what tells its account, and is merged
with that row when written (SEMANTICS R33).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import Connection, select

from airoi.load.batches import BATCH
from airoi.load.keyed import NO_KEY, SourceKeys, keyed_label
from airoi.load.kinds import (
    BIG,
    BUNDLE_KEYS,
    DELETABLE,
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
    missing_required,
    normalize,
    shown_name,
)
from airoi.load.values import Bad, conv_id, show

IDS_PER_GROUP: Final = 50  # records named per shared problem of the big kinds
NO_OWNER: Final = "required when neither initiative_id nor metric_id is given"  # account_id


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


class GatheredBundle:
    """The bundle as pass 1 reads it: the small kinds' records (`small`), the deletes
    (`deletes`), and of the big kinds their ids (`big_ids`) and the combinations of the
    fields that reach other records (`big_groups`, `big_existing`)."""

    def __init__(
        self, conn: Connection, source: Source, problems: Problems, *, keep_stamps: bool
    ) -> None:
        self.conn = conn
        self.source = source
        self.keep_stamps = keep_stamps
        self.problems = problems
        self.keyed = SourceKeys(conn, problems)  # records matched by source ref (R42)
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

    def read(self) -> bool:
        """Every record taken; False when the source itself is broken (a problem says so)."""
        try:
            for key, pos, item in self.source.items():
                self._take(key, pos, item)
        except BadSource as exc:
            self.problems.add(str(exc))
            return False
        for key in BIG:
            self._take_keyed(KINDS[key])
            self._flush_existing(key)
        return True

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

    def gone(self, key: str, record_id: int, initiative_id: int | None) -> bool:
        """Is this stored row removed by the bundle's deletes before the upsert?"""
        if record_id in self.deletes.get(key, ()):
            return True
        return (
            key in INITIATIVE_CHILDREN
            and initiative_id is not None
            and initiative_id in self.deletes.get("initiatives", ())
        )

    def check_kept_required(self) -> None:
        """A record that kept a required field from a row this bundle deletes makes a new row,
        which needs the field."""
        for key, kept in self.kept_required.items():
            for record_id, (problems, stored_initiative) in kept.items():
                if self.gone(key, record_id, stored_initiative):
                    for problem in problems:
                        self.problems.add(problem)

    def check_duplicates(self) -> None:
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

    def referenced(self) -> dict[str, set[int]]:
        """The ids of every kind that the bundle's records name, by the kind named."""
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
