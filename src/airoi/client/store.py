"""Where `airoi pull` keeps a copy: a DuckDB file, or a directory of Parquet or CSV files,
and the position of every walk beside its rows (`Store`). Also which target means which
format (`format_for`), and the target checks made before anything is written.

For Parquet and CSV each list is one file, `<dir>/<resource>.<format>`, one row per key, so
that a reader needs no rule to read it. The batches go to `<dir>/_airoi_pending.duckdb` (rows
per list, tombstones, their positions), and at the end of each walk one pass writes the list's
file (atomically): the old file's rows whose key was not read again, then the rows read; the
tombstones at the end of /deletions remove their rows from the files. `_airoi_state.json` is
written after the files and the staging dropped after it, so a crash anywhere merges the
staged rows again, which replace their own copies. A run never reads a file it does not
change, and the staging file is removed when the run ends with nothing staged.

Nothing is created before the first write: a store opened on a target that does not exist
creates it with its first batch.
"""

# ruff: noqa: S608 - SQL names here are fixed resource and column names, always quoted.

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb

from airoi.client.frames import rows_to_arrow
from airoi.client.walk import WalkState, later

Format = Literal["duckdb", "parquet", "csv"]
DELETIONS = "deletions"  # the walk of /deletions, remembered under this name
STATE_TABLE = "_airoi_state"
STATE_FILE = "_airoi_state.json"
# Parquet and CSV: rows, tombstones and positions read but not yet written to the files, in
# DuckDB beside them; removed once the files hold everything.
PENDING_FILE = "_airoi_pending.duckdb"
TOMBSTONES = "_airoi_tombstones"
REPLACED = "_airoi_replaced"
# CSV only: each file's column types, so that the next run reads the text back as it was
# written rather than as DuckDB's type detection would guess it ("7.10" is not 7.1).
COLUMNS_FILE = "_airoi_columns.json"
# Rows written (with the walk's position) per DuckDB transaction: ten full pages. One
# transaction a page cost about as much as parsing the page.
BATCH_ROWS = 5_000


@dataclass(frozen=True)
class Resource:
    name: str
    key: str = "id"
    incremental: bool = True  # has updated_since; otherwise re-read whole and replaced
    params: dict[str, Any] = field(default_factory=dict)


# Sample (demo) initiatives are included so that every cost or value row has its initiative;
# the is_sample column tells them apart.
RESOURCES: tuple[Resource, ...] = (
    Resource("initiatives", params={"include_sample": True}),
    Resource("cost_entries"),
    Resource("value_entries"),
    Resource("metrics"),
    Resource("observations"),
    Resource("decisions"),
    Resource("integrations"),
    Resource("budgets", key="initiative_id", incremental=False, params={"include_sample": True}),
)


# The copy's account, remembered as a position only that account is served past: an
# initiatives cursor (SEMANTICS R13). Kept for a copy whose lists have none of their own
# (budgets alone, lists with no row), so that a pull with another account's token is refused
# there too (`_same_account`).
ACCOUNT = "_account"
ACCOUNT_LIST = "initiatives"

# The tables a tombstone can name (SEMANTICS R34): never a name taken from the response.
DELETABLE = frozenset(resource.name for resource in RESOURCES if resource.incremental)


def quote_name(name: str) -> str:
    """An SQL name (a table's, a column's) quoted for DuckDB."""
    return '"' + name.replace('"', '""') + '"'


def saved_state(updated_since: str | None, cursor: str | None, walk_max: str | None) -> WalkState:
    """A state as any version wrote it. Earlier versions kept `cursor` only while a walk
    was under way (the next page of a walk asked with `updated_since`), and that walk's
    largest updated_at in `walk_max`. The cursor is still the position after the last row
    written, and every row after it has an updated_at at or after that walk's
    `updated_since`, so asking with the cursor alone serves the same rows."""
    return WalkState(cursor, later(updated_since, walk_max))


class Store:
    """Tables and walk state in DuckDB: a file (`duckdb`), or Parquet or CSV files, one a
    list, with what is not in them yet in `_airoi_pending.duckdb` beside them.

    Nothing is created before the first write: a pull refused at its first request (a bad
    token, no server) leaves no file and no directory behind.
    """

    def __init__(
        self,
        target: Path,
        fmt: Format,
        *,
        flush_rows: int | None = None,
        full_refresh: Iterable[str] = (),
    ) -> None:
        self.fmt = fmt
        self.target = target
        self.flush_rows = flush_rows
        self._conn: duckdb.DuckDBPyConnection | None = None
        # Rows (or tombstones) each walk has staged since its files were last written.
        self._unflushed: dict[str, int] = {}
        # The columns of each table the store has looked at (None: no such table), so that a
        # page does not ask the catalogue again; forgotten whenever a transaction rolls back.
        self._known: dict[str, set[str] | None] = {}
        self._csv_types: dict[str, list[list[str]]] = {}
        self._headers: dict[str, list[str]] = {}
        # Files only: the positions `_airoi_state.json` holds (those the files are at).
        self._saved: dict[str, WalkState] = {}
        # Walks to start over: each drops its stored copy and position at its first batch,
        # so a run refused or cut off before that leaves them as they were.
        self._refresh = set(full_refresh)
        if fmt == "duckdb":
            if target.exists():
                self._open()
        elif target.is_dir():
            self._load_saved()
            if (target / PENDING_FILE).exists():
                self._open()  # a run cut off left rows or tombstones to write
        # A list the copy has a finished walk of, whose table or file is gone (removed by
        # hand): read whole again, as --full-refresh would, not only what changed since.
        self._refresh |= self._lost()

    def _lost(self) -> set[str]:
        lost = set()
        for resource in RESOURCES:
            name = resource.name
            if not resource.incremental:
                continue
            if self.fmt == "duckdb":
                if self._state_row(name) is not None and not self._exists(name):
                    lost.add(name)
            elif (
                name in self._saved
                and self._pending(name) is None
                and not self._file(name).exists()
            ):
                lost.add(name)
        return lost

    @property
    def conn(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection, opened (and the target created) on first use."""
        return self._conn if self._conn is not None else self._open()

    def _open(self) -> duckdb.DuckDBPyConnection:
        if self.fmt == "duckdb":
            check_target(self.target, self.fmt)
            self.target.parent.mkdir(parents=True, exist_ok=True)
            conn = duckdb.connect(str(self.target))
        else:
            self.target.mkdir(parents=True, exist_ok=True)
            conn = duckdb.connect(str(self.target / PENDING_FILE))
        # Datetimes are written (CSV) and shown in UTC, whatever the machine's zone.
        conn.execute("SET TimeZone = 'UTC'")
        # walk_since and walk_max are read from stores earlier versions wrote, never written.
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} ("
            " resource VARCHAR PRIMARY KEY, updated_since VARCHAR, walk_since VARCHAR,"
            " cursor VARCHAR, walk_max VARCHAR, pulled_at TIMESTAMPTZ)"
        )
        if self.fmt != "duckdb":
            # Tombstones read and not yet applied to the files, and the lists started over
            # whose file is to be replaced rather than merged into.
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {TOMBSTONES} ("
                " resource VARCHAR, id BIGINT, deleted_at TIMESTAMPTZ)"
            )
            conn.execute(f"CREATE TABLE IF NOT EXISTS {REPLACED} (resource VARCHAR PRIMARY KEY)")
        self._conn = conn
        return conn

    def close(self) -> None:
        if self._conn is None:
            return
        pending = self.fmt != "duckdb" and self._count(STATE_TABLE) > 0
        self._conn.close()
        self._conn = None
        if self.fmt != "duckdb" and not pending:
            # Everything is in the files: the directory holds them and their state alone.
            for name in (PENDING_FILE, PENDING_FILE + ".wal"):
                (self.target / name).unlink(missing_ok=True)

    def finish(self) -> None:
        """At the end of a run: the store exists even when the account had nothing to copy."""
        if self.fmt == "duckdb":
            if self._conn is None:
                self._open()  # creates the file
        elif not (self.target / STATE_FILE).exists():
            self.target.mkdir(parents=True, exist_ok=True)
            self._write_state_file()

    # -- files ---------------------------------------------------------------------

    def _file(self, name: str) -> Path:
        return self.target / f"{name}.{self.fmt}"

    def _load_saved(self) -> None:
        state_path = self.target / STATE_FILE
        if state_path.exists():
            for name, saved in json.loads(state_path.read_text()).items():
                self._saved[name] = saved_state(
                    saved.get("updated_since"), saved.get("cursor"), saved.get("walk_max")
                )
        columns_path = self.target / COLUMNS_FILE
        if self.fmt == "csv" and columns_path.exists():
            self._csv_types = json.loads(columns_path.read_text())

    def _source(self, name: str, reader: duckdb.DuckDBPyConnection | None = None) -> str | None:
        """The SQL that reads a list's file with its columns' types, or None: no file.
        `reader` reads a CSV file's header (the store's own connection when None)."""
        path = self._file(name)
        if not path.exists():
            return None
        if self.fmt == "parquet":
            return f"read_parquet({quote_text(str(path))})"
        types = self._csv_types.get(name)
        if types is None:  # a store of a version that kept no types: as DuckDB detects them
            return f"read_csv({quote_text(str(path))}, header = true)"
        # The header is read once per version of the file (DuckDB samples the file for it);
        # writing the file forgets it.
        header = self._headers.get(name)
        if header is None:
            header = self._headers[name] = csv_header(reader or self.conn, path)
        return typed_csv(path, header, types)

    def _write_file(self, name: str, query: str) -> int:
        """Write the rows of `query` to the list's file, whole or not at all; how many."""
        path = self._file(name)
        temporary = path.with_name(path.name + ".partial")
        options = "FORMAT parquet" if self.fmt == "parquet" else "FORMAT csv, HEADER true"
        described = self.conn.execute(f"DESCRIBE {query}").fetchall()
        found = first_row(
            self.conn.execute(f"COPY ({query}) TO {quote_text(str(temporary))} ({options})")
        )
        os.replace(temporary, path)
        self._headers.pop(name, None)
        if self.fmt == "csv":
            self._csv_types[name] = [[row[0], row[1]] for row in described]
            _replace_json(self.target / COLUMNS_FILE, self._csv_types)
        return int(found[0]) if found else 0

    def _write_state_file(self) -> None:
        saved = {name: asdict(state) for name, state in sorted(self._saved.items())}
        _replace_json(self.target / STATE_FILE, saved)

    def _pending(self, name: str) -> WalkState | None:
        """Files only: the position of rows (or tombstones) staged and not yet in the files."""
        if self.fmt == "duckdb":
            return None
        return self._state_row(name)

    def _settled(self, name: str) -> None:
        """The files hold what was staged for `name`: record its position, drop the staging."""
        pending = self._pending(name)
        if pending is not None:
            self._saved[name] = pending
        self._write_state_file()
        self.conn.execute("BEGIN TRANSACTION")
        try:
            if name == DELETIONS:
                self.conn.execute(f"DELETE FROM {TOMBSTONES}")
            else:
                self.conn.execute(f"DROP TABLE IF EXISTS {quote_name(name)}")
                self.conn.execute(f"DELETE FROM {REPLACED} WHERE resource = ?", [name])
            self.conn.execute(f"DELETE FROM {STATE_TABLE} WHERE resource = ?", [name])
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        finally:
            self._known.clear()
        self._unflushed[name] = 0

    def _merge(self, resource: Resource) -> None:
        """Files only: write the rows staged for `resource` into its file, in one pass over
        the file: its rows whose key is not staged, then the staged rows (or the staged rows
        alone, for a list read whole or started over). Then the position they stand at.

        A crash anywhere in between keeps the staging, and the next run merges it again:
        staged rows replace their own copies, so nothing is doubled.
        """
        name = resource.name
        staged = self._table_columns(name) is not None
        replaced = not resource.incremental or self._replaced(name)
        old = None if replaced else self._source(name)
        key = quote_name(resource.key)
        if staged and old is not None:
            self._write_file(
                name,
                f"SELECT * FROM {old} AS kept WHERE NOT EXISTS (SELECT 1 FROM {quote_name(name)}"
                f" AS new WHERE new.{key} = kept.{key}) UNION ALL BY NAME"
                f" SELECT * FROM {quote_name(name)}",
            )
        elif staged:  # a list with no row is staged too, as an empty table (`_create_empty`)
            self._write_file(name, f"SELECT * FROM {quote_name(name)}")
        self._settled(name)

    def _apply_tombstones(self) -> int:
        """Files only: remove from each file the rows the staged tombstones name (SEMANTICS
        R34: unless given again later), then record the position; the rows removed."""
        removed = 0
        names = [
            row[0]
            for row in self.conn.execute(
                f"SELECT DISTINCT resource FROM {TOMBSTONES} ORDER BY resource"
            ).fetchall()
        ]
        for name in names:
            source = self._source(name) if name in DELETABLE else None
            if source is None:
                continue
            # The cast reads a stamp whatever type an older store gave the column.
            gone = (
                f"EXISTS (SELECT 1 FROM {TOMBSTONES} AS gone WHERE gone.resource ="
                f" {quote_text(name)} AND gone.id = kept.id"
                " AND CAST(kept.updated_at AS TIMESTAMPTZ) <= gone.deleted_at)"
            )
            found = first_row(
                self.conn.execute(f"SELECT count(*) FROM {source} AS kept WHERE {gone}")
            )
            count = int(found[0]) if found else 0
            if count:
                self._write_file(name, f"SELECT * FROM {source} AS kept WHERE NOT {gone}")
                removed += count
        self._settled(DELETIONS)
        return removed

    def _due(self, walk: str, count: int, *, done: bool) -> bool:
        """Files only: whether the rows staged for `walk` are to be written to files now."""
        self._unflushed[walk] = self._unflushed.get(walk, 0) + count
        if self.fmt == "duckdb":
            return False
        return done or (self.flush_rows is not None and self._unflushed[walk] >= self.flush_rows)

    # -- state and tables ----------------------------------------------------------

    def state(self, name: str) -> WalkState:
        """Where the walk of `name` resumes: its recorded position, or the start."""
        if name in self._refresh:
            return WalkState()
        recorded = self.recorded(name)
        return recorded if recorded is not None else WalkState()

    def recorded(self, name: str) -> WalkState | None:
        """The position recorded for `name`, or None when it never was: a list walked is
        recorded even when it had no row, so that a copy tells an empty list from one it was
        not asked to hold (`--resources`)."""
        if self.fmt != "duckdb":
            pending = self._pending(name)
            return pending if pending is not None else self._saved.get(name)
        return self._state_row(name)

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

    def remember_account(self, cursor: str) -> None:
        """Keep `cursor`, a position of the account's initiatives, as the copy's account."""
        state = WalkState(cursor=cursor)
        if self.fmt == "duckdb":
            self._save_state(ACCOUNT, state)
            return
        self.target.mkdir(parents=True, exist_ok=True)
        self._saved[ACCOUNT] = state
        self._write_state_file()

    def forget_account(self) -> None:
        """The copy no longer remembers an account (its whole copy was started over)."""
        if self.fmt == "duckdb":
            self.conn.execute(f"DELETE FROM {STATE_TABLE} WHERE resource = ?", [ACCOUNT])
            return
        self._saved.pop(ACCOUNT, None)
        self._write_state_file()

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
            if done and self._pending(name) is not None:
                self._merge(resource)
            return
        table = name if resource.incremental else name + "__staging"
        self.conn.execute("BEGIN TRANSACTION")
        try:
            if starting_over:  # --full-refresh: the rows stored (or staged) before go
                self.conn.execute(f"DROP TABLE IF EXISTS {quote_name(name)}")
                self._known[name] = None
                if self.fmt != "duckdb":
                    self.conn.execute(f"INSERT OR REPLACE INTO {REPLACED} VALUES (?)", [name])
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
        if (resource.incremental or done) and self._due(name, len(rows), done=done):
            self._merge(resource)

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
            if done and self._pending(DELETIONS) is not None:
                return self._apply_tombstones()
            return 0
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
                        if self.fmt != "duckdb":
                            self.conn.execute(
                                f"INSERT INTO {TOMBSTONES} SELECT resource, id, deleted_at"
                                " FROM tombstones WHERE resource = ?",
                                [name],
                            )
                finally:
                    self.conn.unregister("tombstones")
            self._save_state(DELETIONS, state)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            self._known.clear()
            raise
        self._refresh.discard(DELETIONS)
        if self._due(DELETIONS, len(tombstones), done=done):
            removed += self._apply_tombstones()
        return removed

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
                source = self._source(table) if self._merges_into_file(table) else None
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
        name = resource.name
        if self._table_columns(name) is not None:
            return True
        if self.fmt == "duckdb":
            return False
        replaced = not resource.incremental or self._replaced(name)
        return not replaced and self._file(name).exists()

    def _create_empty(self, name: str) -> None:
        """The list's table with its columns and no row: a list with no row is still there
        to read (`SELECT * FROM decisions` finds it empty, not missing)."""
        self.conn.register("empty_list", rows_to_arrow([], name))
        try:
            self.conn.execute(f"CREATE TABLE {quote_name(name)} AS SELECT * FROM empty_list")
        finally:
            self.conn.unregister("empty_list")
        self._known[name] = self._columns(name)

    def _merges_into_file(self, table: str) -> bool:
        """Whether rows staged in `table` are merged into the list's existing file."""
        return self.fmt != "duckdb" and table in DELETABLE and not self._replaced(table)

    def _replaced(self, name: str) -> bool:
        """Files only: whether the list was started over, its file to be replaced whole."""
        found = first_row(
            self.conn.execute(f"SELECT count(*) FROM {REPLACED} WHERE resource = ?", [name])
        )
        return bool(found and found[0])

    def _count(self, table: str) -> int:
        if not self._exists(table):
            return 0
        found = first_row(self.conn.execute(f"SELECT count(*) FROM {quote_name(table)}"))
        return int(found[0]) if found else 0

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
            if self.fmt != "duckdb":
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

    def count(self, name: str) -> int:
        """The rows the store holds for `name` (for files: in its file)."""
        if self.fmt == "duckdb":
            return self._count(name)
        source = self._source(name)
        if source is None:
            return 0
        found = first_row(self.conn.execute(f"SELECT count(*) FROM {source}"))
        return int(found[0]) if found else 0


class NotACopy(ValueError):
    """The target is a file or database airoi pull did not make: it is left as it is."""


def duckdb_file_problem(path: Path) -> str | None:
    """Why the file at `path` is not a DuckDB database (its first bytes), or None."""
    with path.open("rb") as file:
        head = file.read(16)
    if head[8:12] == b"DUCK":
        return None
    if head.startswith(b"SQLite format 3\x00"):
        return "it is an SQLite database"
    return "it does not begin as one does"


def check_target(target: Path, fmt: Format) -> None:
    """Refuse, with NotACopy, an existing target airoi pull did not make: a DuckDB target
    that is not a DuckDB file or holds tables and none of them its state; a directory that
    holds files and not its state. It is only read."""
    if fmt != "duckdb":
        # Its state, or what a first run cut off left to write, says the directory is a copy.
        marked = any((target / name).exists() for name in (STATE_FILE, PENDING_FILE))
        if target.is_dir() and not marked:
            held = sorted(path.name for path in target.iterdir())
            if held:
                shown = ", ".join(held[:3]) + (", ..." if len(held) > 3 else "")
                raise NotACopy(
                    f"{target} is a directory airoi pull did not make (it holds {shown} and "
                    f"no {STATE_FILE}); nothing in it was changed. Give a new or empty "
                    "directory."
                )
        return
    if not target.is_file():
        return
    problem = duckdb_file_problem(target)
    if problem is not None:
        raise NotACopy(
            f"{target} is not a DuckDB file ({problem}); airoi pull writes its copy into a "
            "DuckDB file of its own: give a new .duckdb name."
        )
    with duckdb.connect(str(target), read_only=True) as conn:
        names = [
            str(row[0])
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables ORDER BY table_name"
            ).fetchall()
        ]
    if names and STATE_TABLE not in names:
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        raise NotACopy(
            f"{target} is a DuckDB database airoi pull did not make (it holds {shown} and no "
            f"{STATE_TABLE}); nothing in it was changed. Give a new .duckdb name."
        )


def _csv_text(path: Path) -> str:
    # Every value read as the text written ('' stays '', not null).
    return (
        f"read_csv({quote_text(str(path))}, header = true, all_varchar = true,"
        " allow_quoted_nulls = false)"
    )


def csv_header(conn: duckdb.DuckDBPyConnection, path: Path) -> list[str]:
    """The column names of a CSV file of a store."""
    described = conn.execute(f"DESCRIBE SELECT * FROM {_csv_text(path)}").fetchall()
    return [row[0] for row in described]


def typed_csv(path: Path, header: Iterable[str], types: Iterable[list[str]]) -> str:
    """The SQL reading a CSV file of a store, each column cast from the text written to the
    type `_airoi_columns.json` gives it; a column it does not know stays text."""
    known = dict(types)
    selected = ", ".join(
        f"CAST({quote_name(column)} AS {known.get(column, 'VARCHAR')}) AS {quote_name(column)}"
        for column in header
    )
    return f"(SELECT {selected} FROM {_csv_text(path)})"


def first_row(result: duckdb.DuckDBPyConnection) -> tuple[Any, ...] | None:
    """The first row of a statement's result, read to its end: DuckDB refuses other work on
    the connection (registering a table, a statement) while a result is unfinished."""
    rows = result.fetchall()
    return rows[0] if rows else None


def quote_text(text: str) -> str:
    """An SQL string literal of `text` (a path) for DuckDB."""
    return "'" + text.replace("'", "''") + "'"


def _replace_json(path: Path, value: Any) -> None:
    """Write `value` as JSON to `path` whole or not at all (a partial file, then a rename)."""
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(json.dumps(value, indent=2, sort_keys=True))
    os.replace(temporary, path)


DUCKDB_SUFFIXES = (".duckdb", ".db")
FILE_FORMATS = ("parquet", "csv")


def held_formats(directory: Path) -> list[str]:
    """The file formats (of FILE_FORMATS, in its order) whose files `directory` holds; none
    when it is not a directory."""
    if not directory.is_dir():
        return []
    return [name for name in FILE_FORMATS if any(directory.glob(f"*.{name}"))]


def format_for(target: Path, fmt: str | None) -> Format:
    """The format of the store at `target`: the one `--format` names, or the one the target
    implies. A .duckdb (or .db) name is a DuckDB file; a name without extension, or an
    existing directory, holds Parquet (or, when it already holds them, CSV) files. Any other
    name is refused with ValueError, as is a format its name contradicts: nothing is created
    for a target `airoi pull` would not write as asked."""
    if fmt is not None and fmt not in ("duckdb", *FILE_FORMATS):
        raise ValueError(f"Unknown format {fmt!r}: use duckdb, parquet or csv.")
    suffix = target.suffix.lower()
    if target.is_dir():
        if fmt == "duckdb":
            raise ValueError(f"{target} is a directory: a DuckDB store is a file (airoi.duckdb).")
        held = held_formats(target)
        if fmt is not None and held and fmt not in held:
            # Written beside the other files, the new ones would hold only what changed since
            # the positions the store shares, and the old ones never get those changes.
            raise ValueError(
                f"{target} holds {held[0].upper()} files: --format {fmt} would write a second, "
                f"partial copy beside them. Leave out --format (or give {held[0]}), or give "
                "another directory."
            )
        if fmt is not None:
            return fmt  # type: ignore[return-value]
        return "csv" if held == ["csv"] else "parquet"
    if fmt == "duckdb" or (fmt is None and suffix in DUCKDB_SUFFIXES):
        return "duckdb"
    if target.exists():
        raise ValueError(
            f"{target} is a file, not a directory: Parquet and CSV stores are directories "
            "(one file per list). Give a directory, or a .duckdb file."
        )
    if suffix in DUCKDB_SUFFIXES:
        raise ValueError(
            f"{target} names a DuckDB file, but --format {fmt} writes a directory of files: "
            "give a directory name without an extension, or leave out --format."
        )
    if suffix:
        kind = suffix.lstrip(".")
        why = (
            f"a {kind.upper()} store is a directory of files, one per list"
            if kind in FILE_FORMATS
            else f"{suffix} is no format airoi pull writes"
        )
        raise ValueError(
            f"--to {target}: {why}. Give a .duckdb file, or a directory name without an "
            "extension (with --format parquet or csv)."
        )
    return fmt or "parquet"  # type: ignore[return-value]
