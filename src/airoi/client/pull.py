"""`airoi pull`: every list resource of the account into DuckDB, Parquet or CSV, incrementally.

Per resource the store remembers the `resume_cursor` of the last page it wrote and asks
with it next time: the service serves only the rows changed since, none of those it has,
so a run with nothing changed reads no row again (SEMANTICS R36). It also remembers the
largest `updated_at` written, to ask from with `updated_since` when there is no cursor to
use: a store written by an earlier version of `airoi pull` (which remembered only that),
or a cursor the service refuses (see `airoi.client.walk`). Rows are written in batches of
whole pages (`batch_rows`), each in one DuckDB transaction with the position after them, so
an interruption anywhere neither loses nor duplicates a row: the next run asks again for
the pages after the last batch written. The next page is fetched while a page is written
(`read_ahead`).

Then /deletions, with a cursor of its own: each tombstone removes the row of its resource
and id unless the stored row's `updated_at` is later than `deleted_at` (the row was given
again, SEMANTICS R34), in batches written with their position in the same way. Because of
that comparison the order of the two walks does not matter: a row deleted and given again,
or given again and deleted, ends as the service has it whichever walk sees it first.

Budgets have no `updated_since` (SPEC 4.A.10): they are re-read whole into a staging table
that replaces the previous one when the walk ends (so an initiative's tombstone needs no
work there).

For Parquet and CSV the rows are kept in an in-memory DuckDB table per resource and written
to `<dir>/<resource>.<format>` (atomically) every `flush_rows` rows and at the end of a
walk, each file only when its table changed; `<dir>/_airoi_state.json` is written after
the data files, so a crash between the two re-reads rows that the upsert absorbs and
re-applies tombstones that find nothing more to remove.
"""

# ruff: noqa: S608 - SQL names here are fixed resource and column names, always quoted.

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import duckdb

from airoi.client.client import Client
from airoi.client.frames import rows_to_arrow
from airoi.client.walk import Start, Walk, WalkState, later

T = TypeVar("T")

Format = Literal["duckdb", "parquet", "csv"]
DELETIONS = "deletions"  # the walk of /deletions, remembered under this name
STATE_TABLE = "_airoi_state"
STATE_FILE = "_airoi_state.json"
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


# The tables a tombstone can name (SEMANTICS R34): never a name taken from the response.
DELETABLE = frozenset(resource.name for resource in RESOURCES if resource.incremental)


@dataclass
class ResourceReport:
    name: str
    rows: int = 0
    pages: int = 0
    seconds: float = 0.0
    start: Start = "full"  # how the walk began: at the remembered cursor, updated_since, or whole
    since: str | None = None  # the largest updated_at (deleted_at) the store held before
    refused: str | None = None  # why the remembered cursor was given up, when it was
    deleted: int = 0  # rows the tombstones read removed from the store (/deletions only)

    @property
    def resumed(self) -> bool:
        """Whether the walk began at the position the store remembered."""
        return self.start == "cursor"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _saved_state(updated_since: str | None, cursor: str | None, walk_max: str | None) -> WalkState:
    """A state as any version wrote it. Earlier versions kept `cursor` only while a walk
    was under way (the next page of a walk asked with `updated_since`), and that walk's
    largest updated_at in `walk_max`. The cursor is still the position after the last row
    written, and every row after it has an updated_at at or after that walk's
    `updated_since`, so asking with the cursor alone serves the same rows."""
    return WalkState(cursor, later(updated_since, walk_max))


class Store:
    """Tables and walk state in DuckDB: a file (`duckdb`) or in memory mirrored to files."""

    def __init__(self, target: Path, fmt: Format, *, flush_rows: int = 50_000) -> None:
        self.fmt = fmt
        self.target = target
        self.flush_rows = flush_rows
        # Rows (or tombstones) each walk has written since its files were last written.
        self._unflushed: dict[str, int] = {}
        # Files only: tables changed since their file was written, and whether the state was.
        self._dirty: set[str] = set()
        self._state_dirty = False
        # The columns of each table the store has looked at (None: no such table), so that a
        # page does not ask the catalogue again; forgotten whenever a transaction rolls back.
        self._known: dict[str, set[str] | None] = {}
        self._csv_types: dict[str, list[list[str]]] = {}
        if fmt == "duckdb":
            target.parent.mkdir(parents=True, exist_ok=True)
            self.conn = duckdb.connect(str(target))
        else:
            target.mkdir(parents=True, exist_ok=True)
            self.conn = duckdb.connect(":memory:")
        # Datetimes are written (CSV) and shown in UTC, whatever the machine's zone.
        self.conn.execute("SET TimeZone = 'UTC'")
        # walk_since and walk_max are read from stores earlier versions wrote, never written.
        self.conn.execute(
            f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} ("
            " resource VARCHAR PRIMARY KEY, updated_since VARCHAR, walk_since VARCHAR,"
            " cursor VARCHAR, walk_max VARCHAR, pulled_at TIMESTAMPTZ)"
        )
        if fmt != "duckdb":
            self._load_files()
            self._state_dirty = False  # as read from the files

    def close(self) -> None:
        self.conn.close()

    # -- files ---------------------------------------------------------------------

    def _file(self, name: str) -> Path:
        return self.target / f"{name}.{self.fmt}"

    def _load_files(self) -> None:
        state_path = self.target / STATE_FILE
        if state_path.exists():
            for name, saved in json.loads(state_path.read_text()).items():
                state = _saved_state(
                    saved.get("updated_since"), saved.get("cursor"), saved.get("walk_max")
                )
                self._save_state(name, state)
        columns_path = self.target / COLUMNS_FILE
        if self.fmt == "csv" and columns_path.exists():
            self._csv_types = json.loads(columns_path.read_text())
        for resource in RESOURCES:
            path = self._file(resource.name)
            if not path.exists():
                continue
            types = self._csv_types.get(resource.name)
            if self.fmt == "csv" and types is not None:
                self._load_typed_csv(resource.name, path, dict(types))
                continue
            reader = "read_parquet" if self.fmt == "parquet" else "read_csv"
            self.conn.execute(
                f"CREATE TABLE {_quote(resource.name)} AS SELECT * FROM {reader}(?)",
                [str(path)],
            )

    def _load_typed_csv(self, name: str, path: Path, types: dict[str, str]) -> None:
        """Every value read as the text written ('' stays '', not null), then cast to the
        type its column had; a column the record does not know stays text."""
        source = "read_csv(?, header = true, all_varchar = true, allow_quoted_nulls = false)"
        header = [
            row[0]
            for row in self.conn.execute(f"DESCRIBE SELECT * FROM {source}", [str(path)]).fetchall()
        ]
        selected = ", ".join(
            f"CAST({_quote(column)} AS {types.get(column, 'VARCHAR')}) AS {_quote(column)}"
            for column in header
        )
        self.conn.execute(
            f"CREATE TABLE {_quote(name)} AS SELECT {selected} FROM {source}", [str(path)]
        )

    def _write_file(self, name: str) -> None:
        path = self._file(name)
        if not self._exists(name):
            path.unlink(missing_ok=True)
            return
        temporary = path.with_name(path.name + ".partial")
        options = "FORMAT parquet" if self.fmt == "parquet" else "FORMAT csv, HEADER true"
        self.conn.execute(f"COPY {_quote(name)} TO '{temporary}' ({options})")
        os.replace(temporary, path)
        if self.fmt == "csv":
            described = self.conn.execute(f"DESCRIBE {_quote(name)}").fetchall()
            self._csv_types[name] = [[row[0], row[1]] for row in described]
            _replace_json(self.target / COLUMNS_FILE, self._csv_types)

    def _write_state_file(self) -> None:
        rows = self.conn.execute(
            f"SELECT resource, updated_since, cursor, walk_max FROM {STATE_TABLE}"
        ).fetchall()
        saved = {
            name: asdict(_saved_state(since, cursor, walk_max))
            for name, since, cursor, walk_max in rows
        }
        _replace_json(self.target / STATE_FILE, saved)

    def _flush(self, walk: str) -> None:
        """Files only: write the tables changed, then the state that says they hold it."""
        self._unflushed[walk] = 0
        if self.fmt == "duckdb" or not (self._dirty or self._state_dirty):
            return
        for name in sorted(self._dirty):
            self._write_file(name)
        self._write_state_file()
        self._dirty.clear()
        self._state_dirty = False

    def _written(self, walk: str, count: int, *, done: bool) -> None:
        self._unflushed[walk] = self._unflushed.get(walk, 0) + count
        if done or self._unflushed[walk] >= self.flush_rows:
            self._flush(walk)

    # -- state and tables ----------------------------------------------------------

    def state(self, name: str) -> WalkState:
        row = self.conn.execute(
            f"SELECT updated_since, cursor, walk_max FROM {STATE_TABLE} WHERE resource = ?",
            [name],
        ).fetchone()
        return _saved_state(*row) if row else WalkState()

    def _save_state(self, name: str, state: WalkState) -> None:
        self.conn.execute(
            f"INSERT OR REPLACE INTO {STATE_TABLE} VALUES (?, ?, NULL, ?, NULL, now())",
            [name, state.updated_since, state.cursor],
        )
        self._state_dirty = True

    def _exists(self, table: str) -> bool:
        found = self.conn.execute(
            "SELECT count(*) FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_name = ?",
            [table],
        ).fetchone()
        return bool(found and found[0])

    def _columns(self, table: str) -> set[str]:
        return {row[0] for row in self.conn.execute(f"DESCRIBE {_quote(table)}").fetchall()}

    def _table_columns(self, table: str) -> set[str] | None:
        if table not in self._known:
            self._known[table] = self._columns(table) if self._exists(table) else None
        return self._known[table]

    def start_full_walk(self, resource: Resource) -> None:
        staging = resource.name + "__staging"
        self.conn.execute(f"DROP TABLE IF EXISTS {_quote(staging)}")
        self._known[staging] = None

    def apply_page(
        self, resource: Resource, rows: list[dict[str, Any]], state: WalkState, *, done: bool
    ) -> None:
        """Upsert one page's rows by key and record `state`, in one transaction."""
        replacing = done and not resource.incremental
        if not rows and not replacing and state == self.state(resource.name):
            return  # nothing changed since the last run: nothing to write
        table = resource.name if resource.incremental else resource.name + "__staging"
        self.conn.execute("BEGIN TRANSACTION")
        try:
            if rows:
                self._upsert(table, resource.key, rows)
            if replacing:
                self.conn.execute(f"DROP TABLE IF EXISTS {_quote(resource.name)}")
                self._known[resource.name] = None
                if self._table_columns(table) is not None:
                    self.conn.execute(
                        f"ALTER TABLE {_quote(table)} RENAME TO {_quote(resource.name)}"
                    )
                    self._known[resource.name] = self._known.pop(table)
                    self._known[table] = None
            self._save_state(resource.name, state)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            self._known.clear()
            raise
        # A replaced resource's file is written only whole; its walk restarts after a crash.
        if resource.incremental and rows:
            self._dirty.add(resource.name)
        if replacing:
            self._dirty.add(resource.name)
        if resource.incremental or done:
            self._written(resource.name, len(rows), done=done)

    def apply_deletions(
        self, tombstones: list[dict[str, Any]], state: WalkState, *, done: bool
    ) -> int:
        """Remove the rows `tombstones` name and record `state`, in one transaction; the
        number of rows removed.

        A row whose updated_at is later than its tombstone's deleted_at was given again
        after the deletion and stays (SEMANTICS R34).
        """
        if not tombstones and state == self.state(DELETIONS):
            return 0
        removed = 0
        touched: set[str] = set()
        self.conn.execute("BEGIN TRANSACTION")
        try:
            if tombstones:
                self.conn.register("tombstones", rows_to_arrow(tombstones))
                try:
                    for name in sorted({str(t.get("resource")) for t in tombstones}):
                        if name not in DELETABLE or self._table_columns(name) is None:
                            continue  # a list this store does not hold (yet): nothing to remove
                        # The cast reads a stamp whatever type an older store gave the column.
                        found = self.conn.execute(
                            f"DELETE FROM {_quote(name)} AS kept WHERE EXISTS (SELECT 1"
                            " FROM tombstones AS gone WHERE gone.resource = ?"
                            " AND gone.id = kept.id"
                            " AND CAST(kept.updated_at AS TIMESTAMPTZ) <= gone.deleted_at)",
                            [name],
                        ).fetchone()
                        count = int(found[0]) if found else 0
                        if count:
                            removed += count
                            touched.add(name)
                finally:
                    self.conn.unregister("tombstones")
            self._save_state(DELETIONS, state)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            self._known.clear()
            raise
        self._dirty |= touched
        self._written(DELETIONS, len(tombstones), done=done)
        return removed

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
            quoted = _quote(table)
            present = self._table_columns(table)
            if present is None:
                self.conn.execute(f"CREATE TABLE {quoted} AS SELECT * FROM incoming LIMIT 0")
                present = self._known[table] = set(incoming.column_names)
            added = [name for name in incoming.column_names if name not in present]
            if added:  # fields added to the API (SPEC 9)
                types = {
                    row[0]: row[1] for row in self.conn.execute("DESCRIBE incoming").fetchall()
                }
                for name in added:
                    self.conn.execute(
                        f"ALTER TABLE {quoted} ADD COLUMN {_quote(name)} {types[name]}"
                    )
                    present.add(name)
            self.conn.execute(
                f"DELETE FROM {quoted} WHERE {_quote(key)} IN (SELECT {_quote(key)} FROM incoming)"
            )
            self.conn.execute(f"INSERT INTO {quoted} BY NAME SELECT * FROM incoming")
        finally:
            self.conn.unregister("incoming")

    def count(self, name: str) -> int:
        if not self._exists(name):
            return 0
        found = self.conn.execute(f"SELECT count(*) FROM {_quote(name)}").fetchone()
        return int(found[0]) if found else 0


def _replace_json(path: Path, value: Any) -> None:
    """Write `value` as JSON to `path` whole or not at all (a partial file, then a rename)."""
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(json.dumps(value, indent=2, sort_keys=True))
    os.replace(temporary, path)


ProgressHook = Callable[[str, int, bool], None]
NoticeHook = Callable[[str], None]


def read_ahead(pages: Iterator[T]) -> Iterator[T]:
    """The same pages, each next one fetched in a thread while the caller writes this one.

    Pages and errors come in order: a request that fails is raised after the pages before
    it have been written. At most one request is in flight. When the caller stops (an
    error writing a page, Ctrl-C), the request in flight is not waited for: it may be
    sitting out a Retry-After, which closing the client ends.
    """
    fetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="airoi-pull")
    try:
        upcoming = fetcher.submit(next, pages, None)
        while (page := upcoming.result()) is not None:
            upcoming = fetcher.submit(next, pages, None)
            yield page
    except BaseException:
        fetcher.shutdown(wait=False, cancel_futures=True)
        raise
    fetcher.shutdown()


def _began(walk: Walk, report: ResourceReport, notice: NoticeHook | None) -> None:
    """Say in the report how the walk began, once its first page is in; tell `notice` when
    the remembered cursor was refused."""
    report.start = walk.start
    if walk.refused is None:
        return
    report.refused = str(walk.refused)
    if notice is not None:
        again = (
            f"asking from updated_since {walk.state.updated_since} instead"
            if walk.start == "updated_since"
            else "reading it whole again"
        )
        notice(
            f"{report.name}: {again}, as the service refused the position this store "
            f"remembered: {walk.refused}"
        )


def pull_resource(
    client: Client,
    store: Store,
    resource: Resource,
    progress: ProgressHook | None = None,
    *,
    batch_rows: int = BATCH_ROWS,
    notice: NoticeHook | None = None,
) -> ResourceReport:
    """Walk one resource from where the store stands, writing its rows with the position
    after them every `batch_rows` rows (and at the end): a run cut off resumes after the
    last batch written."""
    started = time.perf_counter()
    state = store.state(resource.name)
    report = ResourceReport(resource.name, since=state.updated_since)
    if not resource.incremental and state.cursor is None:
        store.start_full_walk(resource)
    walk = Walk(client, resource.name, resource.params, state)
    batch: list[dict[str, Any]] = []
    # Every request, the first included, is made in read_ahead's thread: this one only
    # writes, and a Ctrl-C here never lands in a wait for a Retry-After.
    for page in read_ahead(iter(walk)):
        if not report.pages:
            _began(walk, report, notice)
            if not resource.incremental and walk.refused is not None:
                store.start_full_walk(resource)  # the pages staged so far are not continued
        state = walk.advance(page)
        done = not page.has_more or not page.next_cursor
        batch += page.data
        if done or len(batch) >= batch_rows:
            store.apply_page(resource, batch, state, done=done)
            batch = []
        report.rows += len(page.data)
        report.pages += 1
        if progress is not None:
            progress(resource.name, len(page.data), done)
    report.seconds = time.perf_counter() - started
    return report


def pull_deletions(
    client: Client,
    store: Store,
    progress: ProgressHook | None = None,
    *,
    batch_rows: int = BATCH_ROWS,
    notice: NoticeHook | None = None,
) -> ResourceReport:
    """Walk /deletions from where the store stands and remove the rows it names, writing
    the position after each batch with the removal (SEMANTICS R34)."""
    started = time.perf_counter()
    state = store.state(DELETIONS)
    report = ResourceReport(DELETIONS, since=state.updated_since)
    walk = Walk(client, DELETIONS, {}, state, stamp="deleted_at")
    batch: list[dict[str, Any]] = []
    for page in read_ahead(iter(walk)):
        if not report.pages:
            _began(walk, report, notice)
        state = walk.advance(page)
        done = not page.has_more or not page.next_cursor
        batch += page.data
        if done or len(batch) >= batch_rows:
            report.deleted += store.apply_deletions(batch, state, done=done)
            batch = []
        report.rows += len(page.data)
        report.pages += 1
        if progress is not None:
            progress(DELETIONS, len(page.data), done)
    report.seconds = time.perf_counter() - started
    return report


def walks(resources: Iterable[Resource] = RESOURCES) -> list[str]:
    """The names of the walks `pull` makes, in order: the incremental lists, /deletions
    after them, then the lists replaced whole."""
    chosen = list(resources)
    return [
        *(r.name for r in chosen if r.incremental),
        DELETIONS,
        *(r.name for r in chosen if not r.incremental),
    ]


def pull(
    client: Client,
    target: Path,
    fmt: Format = "duckdb",
    *,
    resources: Iterable[Resource] = RESOURCES,
    progress: ProgressHook | None = None,
    notice: NoticeHook | None = None,
    flush_rows: int = 50_000,
    batch_rows: int = BATCH_ROWS,
) -> list[ResourceReport]:
    """Pull every resource into `target` (a .duckdb file, or a directory for parquet/csv),
    then apply /deletions, then replace the resources read whole (budgets).

    Rows are written with the walk's position every `batch_rows` rows; files are rewritten
    every `flush_rows` rows (parquet and csv). `notice` is told, in a sentence, of a
    remembered position the service refused.
    """
    by_name = {resource.name: resource for resource in resources}
    store = Store(target, fmt, flush_rows=flush_rows)
    reports: list[ResourceReport] = []
    try:
        for name in walks(by_name.values()):
            if name == DELETIONS:
                report = pull_deletions(
                    client, store, progress, batch_rows=batch_rows, notice=notice
                )
            else:
                report = pull_resource(
                    client, store, by_name[name], progress, batch_rows=batch_rows, notice=notice
                )
            reports.append(report)
        return reports
    finally:
        store.close()


def format_for(target: Path, fmt: str | None) -> Format:
    """The format `--format` names, or the one the target's name implies."""
    if fmt is None:
        return "duckdb" if target.suffix in {".duckdb", ".db"} else "parquet"
    if fmt not in ("duckdb", "parquet", "csv"):
        raise ValueError(f"Unknown format {fmt!r}: use duckdb, parquet or csv.")
    return fmt  # type: ignore[return-value]
