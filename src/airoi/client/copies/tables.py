"""The lists' tables and the walks' positions every store keeps in DuckDB (`CopyTables`):
for a DuckDB copy the copy itself, for Parquet and CSV files what is staged beside them.

A page's rows are upserted by key with the walk's position after them in one transaction,
and a batch of tombstones removes its rows with its position the same way, so an
interruption anywhere neither loses nor duplicates a row. What a store does beyond its
tables (a file of its own, written from the staging) is its format's: `duckdb_file`,
`files`.
"""

# ruff: noqa: S608 - SQL names here are fixed resource and column names, always quoted.

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import duckdb

from airoi.client.copies.layout import STATE_TABLE, Format, saved_state
from airoi.client.copies.lists import ACCOUNT, DELETABLE, DELETIONS, RESOURCES, Resource
from airoi.client.copies.sql import first_row, quote_name
from airoi.client.frames import rows_to_arrow
from airoi.client.walk import WalkState


class CopyTables(ABC):
    """Tables and walk state in DuckDB, opened (and the target created) on first use.

    Nothing is created before the first write: a pull refused at its first request (a bad
    token, no server) leaves no file and no directory behind.
    """

    fmt: ClassVar[Format]

    def __init__(self, target: Path, *, full_refresh: Iterable[str] = ()) -> None:
        self.target = target
        self._conn: duckdb.DuckDBPyConnection | None = None
        # The columns of each table the store has looked at (None: no such table), so that a
        # page does not ask the catalogue again; forgotten whenever a transaction rolls back.
        self._known: dict[str, set[str] | None] = {}
        # Walks to start over: each drops its stored copy and position at its first batch,
        # so a run refused or cut off before that leaves them as they were.
        self._refresh = set(full_refresh)
        self._resume()
        # A list the copy has a finished walk of, whose table or file is gone (removed by
        # hand): read whole again, as --full-refresh would, not only what changed since.
        self._refresh |= {
            resource.name
            for resource in RESOURCES
            if resource.incremental and self._lost(resource.name)
        }

    # -- what each format does ---------------------------------------------------------

    @abstractmethod
    def _resume(self) -> None:
        """Take up what an existing target holds (its positions, what a run left staged)."""

    @abstractmethod
    def _lost(self, name: str) -> bool:
        """Whether the copy has a finished walk of list `name` and no longer its rows."""

    @abstractmethod
    def _connect(self) -> duckdb.DuckDBPyConnection:
        """The store's DuckDB database, created with the directory it is in."""

    @abstractmethod
    def _create_staging(self, conn: duckdb.DuckDBPyConnection) -> None:
        """The tables of what is read and not yet written out, beside the state table."""

    @abstractmethod
    def recorded(self, name: str) -> WalkState | None:
        """The position recorded for `name`, or None when it never was: a list walked is
        recorded even when it had no row, so that a copy tells an empty list from one it
        was not asked to hold (`--resources`)."""

    @abstractmethod
    def remember_account(self, cursor: str) -> None:
        """Keep `cursor`, a position of the account's initiatives, as the copy's account."""

    @abstractmethod
    def forget_account(self) -> None:
        """The copy no longer remembers an account (its whole copy was started over)."""

    @abstractmethod
    def finish(self) -> None:
        """At the end of a run: the store exists even when the account had nothing to copy."""

    @abstractmethod
    def count(self, name: str) -> int:
        """The rows the copy holds for `name`."""

    @abstractmethod
    def _source(self, name: str, reader: duckdb.DuckDBPyConnection | None = None) -> str | None:
        """The SQL that reads the list's file, or None: no file. `reader` is the connection
        it is read with (the store's own when None)."""

    @abstractmethod
    def _file_kept(self, resource: Resource) -> bool:
        """Whether the list has a file that stays (one not to be replaced whole)."""

    @abstractmethod
    def _file_merged_into(self, table: str) -> str | None:
        """The SQL reading the file that rows staged in `table` are merged into, or None."""

    @abstractmethod
    def _mark_started_over(self, name: str) -> None:
        """In the transaction that drops the list's rows for --full-refresh."""

    @abstractmethod
    def _stage_tombstones(self, name: str) -> None:
        """In the transaction that applies them: keep the registered `tombstones` of list
        `name` for what is written out later."""

    @abstractmethod
    def _flush(self, resource: Resource, count: int, *, done: bool) -> None:
        """After a batch of `count` rows is committed: write it out, when due."""

    @abstractmethod
    def _flush_left_over(self, resource: Resource) -> None:
        """At the end of a walk that read nothing new: write out what an earlier run staged."""

    @abstractmethod
    def _flush_tombstones(self, count: int, *, done: bool) -> int:
        """After a batch of `count` tombstones is committed: apply them to what is written
        out, when due; the rows removed there."""

    @abstractmethod
    def _flush_left_over_tombstones(self) -> int:
        """At the end of a walk of /deletions that read nothing new: apply what an earlier
        run staged; the rows removed."""

    # -- the connection --------------------------------------------------------------

    @property
    def conn(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection, opened (and the target created) on first use."""
        return self._conn if self._conn is not None else self._open()

    def _open(self) -> duckdb.DuckDBPyConnection:
        conn = self._connect()
        # Datetimes are written (CSV) and shown in UTC, whatever the machine's zone.
        conn.execute("SET TimeZone = 'UTC'")
        # walk_since and walk_max are read from stores earlier versions wrote, never written.
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} ("
            " resource VARCHAR PRIMARY KEY, updated_since VARCHAR, walk_since VARCHAR,"
            " cursor VARCHAR, walk_max VARCHAR, pulled_at TIMESTAMPTZ)"
        )
        self._create_staging(conn)
        self._conn = conn
        return conn

    def close(self) -> None:
        if self._conn is None:
            return
        self._conn.close()
        self._conn = None

    # -- state and tables ----------------------------------------------------------

    def state(self, name: str) -> WalkState:
        """Where the walk of `name` resumes: its recorded position, or the start."""
        if name in self._refresh:
            return WalkState()
        recorded = self.recorded(name)
        return recorded if recorded is not None else WalkState()

    def _state_row(self, name: str) -> WalkState | None:
        """The position `_airoi_state` holds for `name` (none when nothing is open)."""
        if self._conn is None:
            return None
        row = first_row(
            self._conn.execute(
                f"SELECT updated_since, cursor, walk_max FROM {STATE_TABLE} WHERE resource = ?",
                [name],
            )
        )
        return saved_state(*row) if row else None

    def positions(self) -> dict[str, str]:
        """The cursor of every walk the copy remembers one for (and of its account)."""
        names = [*(r.name for r in RESOURCES if r.incremental), DELETIONS, ACCOUNT]
        recorded = {name: self.recorded(name) for name in names}
        return {name: state.cursor for name, state in recorded.items() if state and state.cursor}

    def _save_state(self, name: str, state: WalkState) -> None:
        self.conn.execute(
            f"INSERT OR REPLACE INTO {STATE_TABLE} VALUES (?, ?, NULL, ?, NULL, now())",
            [name, state.updated_since, state.cursor],
        )

    def _exists(self, table: str) -> bool:
        if self._conn is None:
            return False
        found = first_row(
            self._conn.execute(
                "SELECT count(*) FROM information_schema.tables"
                " WHERE table_schema = current_schema() AND table_name = ?",
                [table],
            )
        )
        return bool(found and found[0])

    def _columns(self, table: str) -> set[str]:
        return {row[0] for row in self.conn.execute(f"DESCRIBE {quote_name(table)}").fetchall()}

    def _table_columns(self, table: str) -> set[str] | None:
        if table not in self._known:
            self._known[table] = self._columns(table) if self._exists(table) else None
        return self._known[table]

    def _count(self, table: str) -> int:
        if not self._exists(table):
            return 0
        found = first_row(self.conn.execute(f"SELECT count(*) FROM {quote_name(table)}"))
        return int(found[0]) if found else 0

    # -- pages and tombstones ------------------------------------------------------

    def start_full_walk(self, resource: Resource) -> None:
        if self._conn is None:
            return  # nothing staged: nothing to drop
        staging = resource.name + "__staging"
        self._conn.execute(f"DROP TABLE IF EXISTS {quote_name(staging)}")
        self._known[staging] = None

    def apply_page(
        self, resource: Resource, rows: list[dict[str, Any]], state: WalkState, *, done: bool
    ) -> None:
        """Upsert one page's rows by key and record `state`, in one transaction; for files,
        into the staging, written to the list's file at the end of its walk."""
        name = resource.name
        replacing = done and not resource.incremental
        starting_over = name in self._refresh and resource.incremental
        unchanged = not rows and not replacing and not starting_over
        if unchanged and state == self.recorded(name) and not (done and not self._holds(resource)):
            # Nothing changed since the last run: nothing to write, but what an earlier run
            # cut off staged.
            if done:
                self._flush_left_over(resource)
            return
        table = name if resource.incremental else name + "__staging"
        self.conn.execute("BEGIN TRANSACTION")
        try:
            if starting_over:  # --full-refresh: the rows stored (or staged) before go
                self.conn.execute(f"DROP TABLE IF EXISTS {quote_name(name)}")
                self._known[name] = None
                self._mark_started_over(name)
            if rows:
                self._upsert(table, resource.key, rows)
            if replacing:
                self.conn.execute(f"DROP TABLE IF EXISTS {quote_name(name)}")
                self._known[name] = None
                if self._table_columns(table) is not None:
                    self.conn.execute(
                        f"ALTER TABLE {quote_name(table)} RENAME TO {quote_name(name)}"
                    )
                    self._known[name] = self._known.pop(table)
                    self._known[table] = None
            if done and not self._holds(resource):
                self._create_empty(name)
            self._save_state(name, state)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            self._known.clear()
            raise
        self._refresh.discard(name)
        # A list read whole is written to its file only whole; its walk restarts after a crash.
        if resource.incremental or done:
            self._flush(resource, len(rows), done=done)

    def apply_deletions(
        self, tombstones: list[dict[str, Any]], state: WalkState, *, done: bool
    ) -> int:
        """Remove the rows `tombstones` name and record `state`, in one transaction; the
        number of rows removed. For files, the rows staged go at once and the tombstones are
        staged for the files, applied at the end of the walk.

        A row whose updated_at is later than its tombstone's deleted_at was given again
        after the deletion and stays (SEMANTICS R34).
        """
        if not tombstones and DELETIONS not in self._refresh and state == self.recorded(DELETIONS):
            return self._flush_left_over_tombstones() if done else 0
        removed = 0
        self.conn.execute("BEGIN TRANSACTION")
        try:
            if tombstones:
                self.conn.register("tombstones", rows_to_arrow(tombstones))
                try:
                    for name in sorted({str(t.get("resource")) for t in tombstones}):
                        if name not in DELETABLE:
                            continue  # never a table name taken from the response alone
                        removed += self._delete_tombstoned(name)
                        self._stage_tombstones(name)
                finally:
                    self.conn.unregister("tombstones")
            self._save_state(DELETIONS, state)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            self._known.clear()
            raise
        self._refresh.discard(DELETIONS)
        return removed + self._flush_tombstones(len(tombstones), done=done)

    def _delete_tombstoned(self, name: str) -> int:
        """Delete from table `name` (the copy, or the rows staged for its file) the rows the
        registered tombstones name; how many."""
        if self._table_columns(name) is None:
            return 0  # a list this store does not hold (yet): nothing to remove
        # The cast reads a stamp whatever type an older store gave the column.
        found = first_row(
            self.conn.execute(
                f"DELETE FROM {quote_name(name)} AS kept WHERE EXISTS (SELECT 1"
                " FROM tombstones AS gone WHERE gone.resource = ?"
                " AND gone.id = kept.id"
                " AND CAST(kept.updated_at AS TIMESTAMPTZ) <= gone.deleted_at)",
                [name],
            )
        )
        return int(found[0]) if found else 0

    def _upsert(self, table: str, key: str, rows: list[dict[str, Any]]) -> None:
        # A row changed while the walk ran is served again further on, with a later
        # updated_at: within one batch only its last (latest) copy is kept, or both would be
        # inserted after the delete below.
        latest = {row[key]: row for row in rows}
        if len(latest) < len(rows):
            rows = list(latest.values())
        incoming = rows_to_arrow(rows)
        self.conn.register("incoming", incoming)
        try:
            quoted = quote_name(table)
            present = self._table_columns(table)
            if present is None:
                # Staged rows for a file take the file's column types, as they will be
                # written into it; otherwise the types of the rows.
                source = self._file_merged_into(table)
                like = source if source is not None else "incoming"
                self.conn.execute(f"CREATE TABLE {quoted} AS SELECT * FROM {like} LIMIT 0")
                present = self._known[table] = self._columns(table)
            added = [name for name in incoming.column_names if name not in present]
            if added:  # fields added to the API (SPEC 9)
                types = {
                    row[0]: row[1] for row in self.conn.execute("DESCRIBE incoming").fetchall()
                }
                for name in added:
                    self.conn.execute(
                        f"ALTER TABLE {quoted} ADD COLUMN {quote_name(name)} {types[name]}"
                    )
                    present.add(name)
            keyed = quote_name(key)
            self.conn.execute(
                f"DELETE FROM {quoted} WHERE {keyed} IN (SELECT {keyed} FROM incoming)"
            )
            self.conn.execute(f"INSERT INTO {quoted} BY NAME SELECT * FROM incoming")
        finally:
            self.conn.unregister("incoming")

    def _holds(self, resource: Resource) -> bool:
        """Whether the list has a table, or (files) rows staged or a file that stays."""
        return self._table_columns(resource.name) is not None or self._file_kept(resource)

    def _create_empty(self, name: str) -> None:
        """The list's table with its columns and no row: a list with no row is still there
        to read (`SELECT * FROM decisions` finds it empty, not missing)."""
        self.conn.register("empty_list", rows_to_arrow([], name))
        try:
            self.conn.execute(f"CREATE TABLE {quote_name(name)} AS SELECT * FROM empty_list")
        finally:
            self.conn.unregister("empty_list")
        self._known[name] = self._columns(name)

    # -- reading ---------------------------------------------------------------------

    def held(
        self,
        name: str,
        columns: Sequence[str],
        limit: int,
        order: str | None = "updated_at DESC NULLS LAST",
        ids: Sequence[int] | None = None,
    ) -> list[tuple[Any, ...]]:
        """Up to `limit` rows the copy holds for `name` (in its table or file, or staged for
        it) in `order` (any order when None), of those whose `id` is one of `ids` when given:
        the SQL `columns` of each. None when the list is not held, or has no column they name.
        Nothing is created to read them."""
        own = self._conn is None
        reader = duckdb.connect() if own else self.conn
        try:
            sources = [] if own or not self._exists(name) else [quote_name(name)]
            file = self._source(name, reader)
            sources += [] if file is None else [file]
            rows: list[tuple[Any, ...]] = []
            for source in sources:
                ordered = "" if order is None else f" ORDER BY {order}"
                among = (
                    "" if ids is None else f" WHERE id IN ({', '.join(map(str, map(int, ids)))})"
                )
                query = (
                    f"SELECT {', '.join(columns)} FROM {source}{among}{ordered} LIMIT {int(limit)}"
                )
                with contextlib.suppress(duckdb.BinderException):  # a column it lacks
                    rows += reader.execute(query).fetchall()
            return rows[:limit]
        finally:
            if own:
                reader.close()
