"""A load from end to end (BUNDLE.md): the store's lock, one stamp, pass 1 (every record
checked), pass 2 (everything written), the clock moved on, one commit; then the planner's
statistics for what changed."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DataError, IntegrityError

from airoi import token_cache
from airoi.db import search_index, tables
from airoi.load.bounds import check_amounts_fit
from airoi.load.checks import Validation
from airoi.load.deleting import Tombstone
from airoi.load.kinds import KINDS
from airoi.load.outcome import BundleError, LoadReport
from airoi.load.reading import BadSource, ProgressHook, Source
from airoi.load.stamping import Say, advance_clock, locked, take_stamp
from airoi.load.writing import Writer
from airoi.settings import DEFAULT_LOAD_WAIT_SECONDS
from airoi.timeutil import utc_now

SQLITE_CACHE_KIB: Final = 65536  # page cache while loading (see tuned_for_loading)

# Runs first inside the load's transaction; returns the served rows it removed, which
# leave tombstones unless the bundle gives them again (the demo's reset).
Before = Callable[[Connection], Iterable[Tombstone] | None]
# A bundle made inside the load, once the lock is held, from the store and the load's stamp
# (an import: what it replaces is read under the lock, and its connection is stamped).
Compose = Callable[[Connection, datetime], Mapping[str, Any]]


class _DryRun(Exception):
    """Undoes a load that was only asked what it would change."""

    def __init__(self, report: LoadReport) -> None:
        super().__init__()
        self.report = report


def load_bundle(
    engine: Engine,
    source: Mapping[str, Any] | str | os.PathLike[str] | Compose,
    *,
    progress: ProgressHook | None = None,
    now: datetime | None = None,
    before: Before | None = None,
    keep_stamps: bool | Callable[[], bool] = False,
    wait: float = DEFAULT_LOAD_WAIT_SECONDS,
    say: Say | None = None,
    dry_run: bool = False,
) -> LoadReport:
    """Validate a bundle and upsert it in one transaction (BUNDLE.md).

    `source` is a parsed bundle or the path of a `.json` / `.json.gz` file. The load waits
    up to `wait` seconds for another load of the store (saying so through `say`), then
    raises LoadBusy. It stamps what it inserts or changes with one moment (SEMANTICS R32):
    `now` (naive UTC, default the clock), or just after the store's last stamp. A bundle's
    `updated_at` values are ignored (and counted in the report) unless `keep_stamps` (or,
    given as a function, unless it answers true once `before` has run). `before`, when
    given, runs first in the same transaction (the demo clears its account there). Raises
    BundleError naming every problem found; then nothing is written, `before`'s work
    included. `source` may also be a function of the connection and the stamp that makes
    the bundle once the lock is held. With `dry_run` the report says what the load would
    change, and nothing is kept.
    """
    if now is not None and now.tzinfo is not None:
        now = now.astimezone(UTC).replace(tzinfo=None)
    compose = source if callable(source) else None
    reader: Source | None = None
    if compose is None:
        try:
            reader = Source(source, progress)  # type: ignore[arg-type]
        except BadSource as exc:
            raise BundleError([str(exc)]) from None
    try:
        with locked(engine, wait=wait, say=say) as conn, tuned_for_loading(conn):
            # The clock is read once the lock is held: a load that waited stamps when it
            # starts writing, not when it was asked for.
            stamp = take_stamp(conn, utc_now() if now is None else now)
            if compose is not None:
                reader = Source(compose(conn, stamp), progress)
            assert reader is not None
            removed = list(before(conn) or ()) if before is not None else []
            keep = keep_stamps() if callable(keep_stamps) else keep_stamps
            checked = Validation(conn, reader, keep_stamps=keep)
            checked.run()
            if checked.problems:
                error = checked.problems.error()
                error.keyed = checked.bundle.keyed.ids
                raise error
            writer = Writer(checked, stamp, keep_stamps=keep, removed=removed)
            report = writer.write()
            too_large = check_amounts_fit(conn, checked.presence.accounts)
            if too_large:
                raise BundleError(too_large)
            totals = report.totals()
            changed = (report.inserted, report.updated, report.deleted)
            search_index.rebuild_for_load(
                conn, {key for counts in changed for key, count in counts.items() if count}
            )
            if dry_run:
                raise _DryRun(report)
            if totals["inserted"] or totals["updated"] or totals["deleted"]:
                advance_clock(conn, stamp, writer.rows.latest_given)
    except _DryRun as undone:
        return undone.report
    except (IntegrityError, DataError) as exc:
        # A guard: validation should leave the store nothing to refuse. The driver's message
        # can quote a value, so only its kind is shown (SEMANTICS R15).
        detail = type(exc.orig or exc).__name__
        raise BundleError([f"bundle: the store refused the data ({detail})"]) from exc
    token_cache.changed_here()  # a token, user or account may have changed
    refresh_statistics(engine, report)
    return report


@contextlib.contextmanager
def tuned_for_loading(conn: Connection) -> Iterator[None]:
    """Store settings for one big transaction, undone when it ends.

    PostgreSQL: psycopg prepares repeated statements, and the server would keep
    the generic plan made while a table was empty (a sequential scan) for the
    id lookups of every later batch, though a million rows arrived meanwhile.
    SQLite: entries carry several indexes; with the default 2 MiB page cache a
    million-row load spends most of its time re-reading index pages.
    """
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")
    if conn.dialect.name != "sqlite":
        yield
        return
    previous = conn.exec_driver_sql("PRAGMA cache_size").scalar()
    conn.exec_driver_sql(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
    try:
        yield
    except BaseException:
        # Interrupted (Ctrl-C) or failed: the connection may be unusable, so it is not asked
        # for anything more; it is dropped from the pool instead of going back with this
        # cache, and the transaction goes with it.
        conn.invalidate()
        raise
    conn.exec_driver_sql(f"PRAGMA cache_size = {int(previous or -2000)}")


def refresh_statistics(engine: Engine, report: LoadReport) -> None:
    """Give the planner statistics for the tables a load changed.

    Without them, PostgreSQL plans the first queries after a bulk load for empty tables (a
    bitmap scan and sort of a whole account instead of walking the keyset index), and SQLite
    walks a whole account's rows for a page of one initiative's. PostgreSQL's tables are
    vacuumed too: until the visibility map is set, a sum cannot be read from its covering
    index alone (a page of budgets took 104 ms where it takes 9 after).

    SQLite's tokens table is left without statistics: it also changes outside loads (issue,
    revoke), and stale figures could have a token looked for by scanning the table rather
    than by its unique hash.
    """
    changed = {
        key
        for counts in (report.inserted, report.updated, report.deleted)
        for key, count in counts.items()
        if count
    }
    names = sorted(KINDS[key].table.name for key in changed if key in KINDS)
    if changed & search_index.BUNDLE_KEYS.keys():
        names.append(tables.search_entries.name)
    if report.deleted and any(report.deleted.values()):
        names.append(tables.deletions.name)
    if engine.dialect.name == "sqlite":
        statements = [f"ANALYZE {name}" for name in names if name != tables.tokens.name]
    else:
        statements = ["VACUUM (ANALYZE) " + ", ".join(names)] if names else []
    if statements:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            for statement in statements:
                conn.execute(text(statement))
