"""What the search tool matches against: one folded row per searchable record.

`search_entries` holds, for each initiative, metric, connection, vendor (not merged away),
person (not removed) and active assessment, its title and its secondary text (`body`:
a description, a metric key, a platform, the other names a vendor goes by) folded by
`fold`, the one rule the query is folded by too, on either store. The store indexes the
folded texts by trigrams: an FTS5 table with the trigram tokenizer, kept in step with
`search_entries` by triggers, on SQLite; GIN `gin_trgm_ops` indexes on PostgreSQL. Migration
0007 makes them and fills the table; each load rebuilds the kinds it changed (`rebuild`).

A vendor's other names are the names of the vendors merged into it (followed through
chains of merges) and the names its cost entries carry (SPEC 2.3: entries keep the name
they were given when their vendor is merged).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

from sqlalchemy import Connection, delete, insert, select

from airoi.db import tables

# The kinds of the search tool held in the table; a load's bundle keys that change each.
KINDS: Final = ("initiative", "metric", "connection", "vendor", "person", "assessment")
BUNDLE_KEYS: Final = {
    "initiatives": ("initiative",),
    "metrics": ("metric",),
    "integrations": ("connection",),
    "vendors": ("vendor",),
    "cost_entries": ("vendor",),  # the names entries carry are a vendor's other names
    "users": ("person",),
    "assessments": ("assessment",),
}
BATCH: Final = 2000

FTS_TABLE: Final = "search_fts"
SQLITE_DDL: Final = (
    "CREATE VIRTUAL TABLE search_fts USING fts5(title, body, kind, "
    "content='search_entries', content_rowid='id', tokenize='trigram')",
    "CREATE TRIGGER search_entries_ai AFTER INSERT ON search_entries BEGIN "
    "INSERT INTO search_fts(rowid, title, body, kind) "
    "VALUES (new.id, new.title, new.body, new.kind); END",
    "CREATE TRIGGER search_entries_ad AFTER DELETE ON search_entries BEGIN "
    "INSERT INTO search_fts(search_fts, rowid, title, body, kind) "
    "VALUES ('delete', old.id, old.title, old.body, old.kind); END",
    "CREATE TRIGGER search_entries_au AFTER UPDATE ON search_entries BEGIN "
    "INSERT INTO search_fts(search_fts, rowid, title, body, kind) "
    "VALUES ('delete', old.id, old.title, old.body, old.kind); "
    "INSERT INTO search_fts(rowid, title, body, kind) "
    "VALUES (new.id, new.title, new.body, new.kind); END",
)
SQLITE_DROP: Final = (
    "DROP TRIGGER IF EXISTS search_entries_au",
    "DROP TRIGGER IF EXISTS search_entries_ad",
    "DROP TRIGGER IF EXISTS search_entries_ai",
    "DROP TABLE IF EXISTS search_fts",
)
PG_INDEXES: Final = ("ix_search_entries_title_trgm", "ix_search_entries_body_trgm")
PG_DDL: Final = (
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    f"CREATE INDEX {PG_INDEXES[0]} ON search_entries USING gin (title gin_trgm_ops)",
    f"CREATE INDEX {PG_INDEXES[1]} ON search_entries USING gin (body gin_trgm_ops)",
)

_TOKEN = re.compile(r"\w+")


def fold(text: str | None) -> str:
    """Accents removed, case folded, runs of whitespace as one space, trimmed.

    "Tomás" and "TOMAS" both fold to "tomas"; compatibility forms too ("ﬁ" to "fi").
    """
    if not text:
        return ""
    if text.isascii():  # most texts: nothing to decompose, and casefold is lower
        return " ".join(text.lower().split())
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(unicodedata.normalize("NFC", bare.casefold()).split())


def tokens(folded: str) -> list[str]:
    """The words of a folded text, for the edit distance of a name."""
    return _TOKEN.findall(folded)


def rebuild_for_load(conn: Connection, changed_keys: Iterable[str]) -> None:
    """After a load: rebuild the kinds whose bundle keys it inserted, updated or deleted."""
    kinds = sorted({kind for key in changed_keys for kind in BUNDLE_KEYS.get(key, ())})
    if kinds:
        rebuild(conn, kinds)


def rebuild(conn: Connection, kinds: Sequence[str] = KINDS) -> None:
    """Bring the entries of `kinds`, of every account, in line with what is stored now.

    Only the entries that differ are written: the folded texts of every record are worked
    out and compared with the stored ones, so that a load changing one initiative of 50,000
    rewrites one entry (and its index rows), not 50,000.
    """
    entries = tables.search_entries
    for kind in kinds:
        stored: dict[int, tuple[int, tuple[int, str, str]]] = {
            ref_id: (entry_id, (account_id, title, body))
            for entry_id, ref_id, account_id, title, body in conn.execute(
                select(
                    entries.c.id,
                    entries.c.ref_id,
                    entries.c.account_id,
                    entries.c.title,
                    entries.c.body,
                ).where(entries.c.kind == kind)
            )
        }
        stale: list[int] = []
        fresh: list[dict[str, Any]] = []
        for account_id, ref_id, title, body in _ROWS[kind](conn):
            held = stored.pop(ref_id, None)
            if held is not None and held[1] == (account_id, title, body):
                continue
            if held is not None:
                stale.append(held[0])
            fresh.append(
                {
                    "account_id": account_id,
                    "kind": kind,
                    "ref_id": ref_id,
                    "title": title,
                    "body": body,
                }
            )
        stale += [entry_id for entry_id, _ in stored.values()]  # records gone, or left out
        for start in range(0, len(stale), BATCH):
            conn.execute(delete(entries).where(entries.c.id.in_(stale[start : start + BATCH])))
        for start in range(0, len(fresh), BATCH):
            conn.execute(insert(entries), fresh[start : start + BATCH])


def _body(*parts: str | None) -> str:
    """Secondary texts one to a line, so that no word of the query spans two of them."""
    return "\n".join(folded for part in parts if (folded := fold(part)))


def _initiatives(conn: Connection) -> Iterator[tuple[int, int, str, str]]:
    t = tables.initiatives
    query = select(t.c.account_id, t.c.id, t.c.title, t.c.description)
    for account_id, ref_id, title, description in conn.execute(query):
        yield account_id, ref_id, fold(title), _body(description)


def _metrics(conn: Connection) -> Iterator[tuple[int, int, str, str]]:
    t = tables.metrics
    query = select(t.c.account_id, t.c.id, t.c.name, t.c.metric_key, t.c.description)
    for account_id, ref_id, name, key, description in conn.execute(query):
        yield account_id, ref_id, fold(name), _body(key, description)


def _connections(conn: Connection) -> Iterator[tuple[int, int, str, str]]:
    t = tables.integrations
    query = select(t.c.account_id, t.c.id, t.c.name, t.c.platform)
    for account_id, ref_id, name, platform in conn.execute(query):
        yield account_id, ref_id, fold(name or platform), _body(platform)


def _people(conn: Connection) -> Iterator[tuple[int, int, str, str]]:
    # By name only: never the e-mail address (SEMANTICS R15).
    t = tables.users
    query = select(t.c.account_id, t.c.id, t.c.name).where(t.c.removed_at.is_(None))
    for account_id, ref_id, name in conn.execute(query):
        yield account_id, ref_id, fold(name), ""


def _assessments(conn: Connection) -> Iterator[tuple[int, int, str, str]]:
    t = tables.assessments
    query = select(t.c.account_id, t.c.id, t.c.title).where(t.c.status == "active")
    for account_id, ref_id, title in conn.execute(query):
        yield account_id, ref_id, fold(title), ""


def _vendors(conn: Connection) -> Iterator[tuple[int, int, str, str]]:
    """Vendors not merged away; their other names (merged vendors', entries') in `body`."""
    t = tables.vendors
    merged_into: dict[int, int | None] = {}
    names: dict[int, tuple[int, str]] = {}
    for vendor_id, account_id, name, target in conn.execute(
        select(t.c.id, t.c.account_id, t.c.name, t.c.merged_into_id)
    ):
        merged_into[vendor_id] = target
        names[vendor_id] = (account_id, name)

    def final(vendor_id: int) -> int:
        seen = {vendor_id}
        while (target := merged_into.get(vendor_id)) is not None and target not in seen:
            seen.add(target)
            vendor_id = target
        return vendor_id

    others: dict[int, dict[str, None]] = {}
    for vendor_id, target in merged_into.items():
        if target is not None:
            others.setdefault(final(vendor_id), {})[fold(names[vendor_id][1])] = None
    e = tables.cost_entries
    given = (
        select(e.c.vendor_id, e.c.vendor_name)
        .where(e.c.vendor_id.is_not(None), e.c.vendor_name.is_not(None))
        .distinct()
    )
    for vendor_id, vendor_name in conn.execute(given):
        if vendor_id in merged_into:
            others.setdefault(final(vendor_id), {})[fold(vendor_name)] = None
    for vendor_id, target in merged_into.items():
        if target is not None:
            continue
        account_id, name = names[vendor_id]
        title = fold(name)
        aliases = [alias for alias in others.get(vendor_id, {}) if alias and alias != title]
        yield account_id, vendor_id, title, "\n".join(sorted(aliases))


_ROWS: Final = {
    "initiative": _initiatives,
    "metric": _metrics,
    "connection": _connections,
    "vendor": _vendors,
    "person": _people,
    "assessment": _assessments,
}
