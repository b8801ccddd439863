"""Records keyed by their source instead of an id (SEMANTICS R42).

A cost entry, value entry or observation may leave out `id` and give `source.ref`: it is
then matched by (account, kind, source `connection_id`, `source_ref`). A stored row with that
key gives the record its id (the record then changes only the fields it gives, R33); a new
row is given an id by the store, from 10^15 up and never given to another row.

The ids the store gives are drawn at random in [10^15, 2^53) and checked against the rows
and the tombstones of the kind, so a given id is never given again, even after its row is
deleted, and an account can tell nothing of another's activity from the ids it receives.
An id is resolved once, in pass 1, and kept by the record's position for pass 2.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Set
from typing import Any, Final

from sqlalchemy import Connection, Table, and_, select

from airoi.db import tables
from airoi.load.batches import chunks, ids_to_accounts
from airoi.load.kinds import Kind
from airoi.load.records import Problems, Rec, shown_name

MADE_IDS_FROM: Final = 10**15
MADE_IDS_BELOW: Final = 2**53  # every JSON reader (a browser's among them) reads them exactly
NO_KEY: Final = "required (or a source ref to match the row by, SEMANTICS R42)"
NO_ACCOUNT: Final = (
    "required for a record matched by its source ref without a source connection: "
    "give account_id, or an initiative already in the store"
)

# (connection id or None, account id or None, ref)
Key = tuple[int | None, int | None, str]


class SourceKeys:
    """Pass 1's ids for the records of one load that give a source ref instead of an id:
    `ids[kind][position]`."""

    def __init__(self, conn: Connection, problems: Problems) -> None:
        self.conn = conn
        self.problems = problems
        self.ids: dict[str, dict[int, int]] = {}
        self.waiting: dict[str, list[tuple[int, Rec]]] = {}
        self.seen: dict[str, dict[Key, str]] = {}  # key -> label of the record that gave it
        self.made: set[int] = set()

    @staticmethod
    def wants(rec: Rec) -> bool:
        row = rec.row
        return row.get("id") is None and "id" not in rec.failed and bool(row.get("source_ref"))

    def add(self, kind: Kind, pos: int, rec: Rec) -> None:
        self.waiting.setdefault(kind.key, []).append((pos, rec))

    def pending(self, key: str) -> int:
        return len(self.waiting.get(key, ()))

    def resolve(self, kind: Kind) -> list[Rec]:
        """The waiting records of a kind, each given its id (those that cannot be keyed are
        named in a problem and left out)."""
        waiting = self.waiting.pop(kind.key, [])
        if not waiting:
            return []
        keys = self._keys(waiting)
        found = self._stored(kind, {key for key in keys.values() if key is not None})
        seen = self.seen.setdefault(kind.key, {})
        ids = self.ids.setdefault(kind.key, {})
        new = {key for key in keys.values() if key is not None and key not in found}
        fresh = iter(self._fresh(kind, len(new)))
        ready: list[Rec] = []
        for pos, rec in waiting:
            key = keys[pos]
            if key is None:
                continue
            earlier = seen.get(key)
            if earlier is not None:
                self.problems.add(
                    f"{rec.label}.source.ref: the same source ref as {earlier} in this bundle"
                )
                continue
            seen[key] = rec.label
            record_id = found.get(key)
            if record_id is None:
                record_id = next(fresh)
            ids[pos] = record_id
            rec.row["id"] = record_id
            ready.append(rec)
        return ready

    def id_at(self, key: str, pos: int) -> int | None:
        return self.ids.get(key, {}).get(pos)

    def _keys(self, waiting: list[tuple[int, Rec]]) -> dict[int, Key | None]:
        """Each record's key; the account is needed only where no connection is given."""
        initiatives = {
            rec.row["initiative_id"]
            for _, rec in waiting
            if rec.row.get("source_connection_id") is None
            and rec.given_account is None
            and rec.row.get("initiative_id") is not None
        }
        accounts = ids_to_accounts(self.conn, tables.initiatives, initiatives)
        keys: dict[int, Key | None] = {}
        for pos, rec in waiting:
            row = rec.row
            connection = row.get("source_connection_id")
            if connection is not None:
                keys[pos] = (connection, None, row["source_ref"])
                continue
            account = rec.given_account or accounts.get(row.get("initiative_id"))  # type: ignore[arg-type]
            if account is None:
                self.problems.add(f"{rec.label}.account_id: {NO_ACCOUNT}")
                keys[pos] = None
            else:
                keys[pos] = (None, account, row["source_ref"])
        return keys

    def _stored(self, kind: Kind, keys: set[Key]) -> dict[Key, int]:
        """The stored rows of these keys: by connection, else by account, refs in batches."""
        table = kind.table
        owners: dict[tuple[int | None, int | None], list[str]] = {}
        for connection, account, ref in keys:
            owners.setdefault((connection, account), []).append(ref)
        found: dict[Key, int] = {}
        for (connection, account), refs in owners.items():
            if connection is not None:
                owner = table.c.source_connection_id == connection
            else:
                owner = and_(table.c.account_id == account, table.c.source_connection_id.is_(None))
            for batch in chunks(sorted(refs)):
                query = select(table.c.id, table.c.source_ref).where(
                    owner, table.c.source_ref.in_(batch)
                )
                for row in self.conn.execute(query):
                    found[(connection, account, row.source_ref)] = row.id
        return found

    def _fresh(self, kind: Kind, count: int) -> list[int]:
        made = fresh_ids(self.conn, kind.table, count, avoid=self.made)
        self.made.update(made)
        return made


def fresh_ids(
    conn: Connection, table: Table, count: int, avoid: Set[int] = frozenset()
) -> list[int]:
    """`count` ids from 10^15 up that no row or tombstone of `table` has had, nor `avoid`."""
    made: list[int] = []
    while len(made) < count:
        candidates = {
            MADE_IDS_FROM + secrets.randbelow(MADE_IDS_BELOW - MADE_IDS_FROM)
            for _ in range(count - len(made))
        }
        candidates -= avoid
        candidates -= set(made)
        made.extend(sorted(candidates - _taken(conn, table, candidates)))
    return made[:count]


def _taken(conn: Connection, table: Table, candidates: Iterable[int]) -> set[int]:
    gone = tables.deletions
    taken: set[int] = set()
    for batch in chunks(sorted(candidates)):
        taken.update(conn.execute(select(table.c.id).where(table.c.id.in_(batch))).scalars())
        taken.update(
            conn.execute(
                select(gone.c.record_id).where(
                    gone.c.resource == table.name, gone.c.record_id.in_(batch)
                )
            ).scalars()
        )
    return taken


def keyed_label(kind: Kind, pos: int, raw: Any) -> str:
    """A problem line's label for a record matched by its source ref."""
    ref = raw.get("source_ref") if isinstance(raw, dict) else None
    source = raw.get("source") if isinstance(raw, dict) else None
    if ref is None and isinstance(source, dict):
        ref = source.get("ref")
    if isinstance(ref, str):
        return f"{kind.key}[#{pos},source_ref={shown_name(ref)}]"
    return f"{kind.key}[#{pos}]"
