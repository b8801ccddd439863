"""`airoi pull`: every list resource of the account into DuckDB, Parquet or CSV, incrementally.

Per resource the store remembers the largest `updated_at` of the last finished walk and
asks with `updated_since` next time (inclusive, so the last rows come again and the upsert
by id absorbs them: SPEC 4.A.1). While a walk is under way it also remembers the cursor of
the next page, so an interrupted run resumes where it stopped. Rows are written in
batches of whole pages (`batch_rows`), each in one DuckDB transaction with the state that
says they were written, so an interruption anywhere neither loses nor duplicates a row: the
next run asks again for the pages after the last batch written. The next page is fetched
while a page is written (`read_ahead`).

Budgets have no `updated_since` (SPEC 4.A.10): they are re-read whole into a staging table
that replaces the previous one when the walk ends.

For Parquet and CSV the rows are kept in an in-memory DuckDB table per resource and written
to `<dir>/<resource>.<format>` (atomically) every `flush_rows` rows and at the end of a
walk; `<dir>/_airoi_state.json` is written after the data file, so a crash between the two
re-reads rows that the upsert absorbs.
"""

# ruff: noqa: S608 - SQL names here are fixed resource and column names, always quoted.

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import duckdb

from airoi.client.client import Client, Page
from airoi.client.frames import rows_to_arrow

Format = Literal["duckdb", "parquet", "csv"]
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


@dataclass(frozen=True)
class WalkState:
    """What the store remembers of one resource (all strings as the API wrote them)."""

    updated_since: str | None = None  # largest updated_at of the last finished walk
    walk_since: str | None = None  # the updated_since the walk under way was asked with
    cursor: str | None = None  # the next page of the walk under way; None when none is
    walk_max: str | None = None  # largest updated_at seen so far in the walk under way


@dataclass
class ResourceReport:
    name: str
    rows: int = 0
    pages: int = 0
    seconds: float = 0.0
    resumed: bool = False
    since: str | None = None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _later(current: str | None, candidate: str | None) -> str | None:
    if candidate is None:
        return current
    if current is None:
        return candidate
    parse = datetime.fromisoformat
    return candidate if parse(candidate) > parse(current) else current


class Store:
    """Tables and walk state in DuckDB: a file (`duckdb`) or in memory mirrored to files."""

    def __init__(self, target: Path, fmt: Format, *, flush_rows: int = 50_000) -> None:
        self.fmt = fmt
        self.target = target
        self.flush_rows = flush_rows
        self._unflushed: dict[str, int] = {}
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
        self.conn.execute(
            f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} ("
            " resource VARCHAR PRIMARY KEY, updated_since VARCHAR, walk_since VARCHAR,"
            " cursor VARCHAR, walk_max VARCHAR, pulled_at TIMESTAMPTZ)"
        )
        if fmt != "duckdb":
            self._load_files()

    def close(self) -> None:
        self.conn.close()

    # -- files ---------------------------------------------------------------------

    def _file(self, name: str) -> Path:
        return self.target / f"{name}.{self.fmt}"

    def _load_files(self) -> None:
        state_path = self.target / STATE_FILE
        if state_path.exists():
            for name, saved in json.loads(state_path.read_text()).items():
                self._save_state(name, WalkState(**saved))
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
            f"SELECT resource, updated_since, walk_since, cursor, walk_max FROM {STATE_TABLE}"
        ).fetchall()
        saved = {
            name: asdict(WalkState(since, walk_since, cursor, walk_max))
            for name, since, walk_since, cursor, walk_max in rows
        }
        _replace_json(self.target / STATE_FILE, saved)

    def _flush(self, resource: Resource, *, done: bool) -> None:
        """Files only: write the table, then the state that says it holds these rows."""
        if self.fmt == "duckdb":
            return
        # A replaced resource is only written whole; its walk restarts after a crash.
        if not resource.incremental and not done:
            return
        self._write_file(resource.name)
        self._write_state_file()
        self._unflushed[resource.name] = 0

    # -- state and tables ----------------------------------------------------------

    def state(self, name: str) -> WalkState:
        row = self.conn.execute(
            f"SELECT updated_since, walk_since, cursor, walk_max FROM {STATE_TABLE}"
            " WHERE resource = ?",
            [name],
        ).fetchone()
        return WalkState(*row) if row else WalkState()

    def _save_state(self, name: str, state: WalkState) -> None:
        self.conn.execute(
            f"INSERT OR REPLACE INTO {STATE_TABLE} VALUES (?, ?, ?, ?, ?, now())",
            [name, state.updated_since, state.walk_since, state.cursor, state.walk_max],
        )

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
        table = resource.name if resource.incremental else resource.name + "__staging"
        self.conn.execute("BEGIN TRANSACTION")
        try:
            if rows:
                self._upsert(table, resource.key, rows)
            if done and not resource.incremental:
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
        self._unflushed[resource.name] = self._unflushed.get(resource.name, 0) + len(rows)
        if done or self._unflushed[resource.name] >= self.flush_rows:
            self._flush(resource, done=done)

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


def read_ahead(pages: Iterator[Page]) -> Iterator[Page]:
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


def pull_resource(
    client: Client,
    store: Store,
    resource: Resource,
    progress: ProgressHook | None = None,
    *,
    batch_rows: int = BATCH_ROWS,
) -> ResourceReport:
    """Walk one resource, writing its rows with the walk's position every `batch_rows` rows
    (and at the end): a run cut off resumes after the last batch written."""
    started = time.perf_counter()
    state = store.state(resource.name)
    report = ResourceReport(resource.name, resumed=state.cursor is not None)
    if state.cursor is not None:  # resume the walk an earlier run left unfinished
        since, walk_max = state.walk_since, state.walk_max
    else:
        since = state.updated_since if resource.incremental else None
        walk_max = None
        if not resource.incremental:
            store.start_full_walk(resource)
    report.since = since
    params = dict(resource.params)
    if resource.incremental and since is not None:
        params["updated_since"] = since
    batch: list[dict[str, Any]] = []
    for page in read_ahead(client.rows(resource.name, **params).pages(cursor=state.cursor)):
        for row in page.data:
            walk_max = _later(walk_max, row.get("updated_at"))
        done = not page.has_more or not page.next_cursor
        if done:
            new_state = WalkState(updated_since=_later(state.updated_since, walk_max))
        else:
            new_state = replace(state, walk_since=since, cursor=page.next_cursor, walk_max=walk_max)
        batch += page.data
        if done or len(batch) >= batch_rows:
            store.apply_page(resource, batch, new_state, done=done)
            batch = []
        report.rows += len(page.data)
        report.pages += 1
        if progress is not None:
            progress(resource.name, len(page.data), done)
    report.seconds = time.perf_counter() - started
    return report


def pull(
    client: Client,
    target: Path,
    fmt: Format = "duckdb",
    *,
    resources: Iterable[Resource] = RESOURCES,
    progress: ProgressHook | None = None,
    flush_rows: int = 50_000,
    batch_rows: int = BATCH_ROWS,
) -> list[ResourceReport]:
    """Pull every resource into `target` (a .duckdb file, or a directory for parquet/csv).

    Rows are written with the walk's position every `batch_rows` rows; files are rewritten
    every `flush_rows` rows (parquet and csv).
    """
    store = Store(target, fmt, flush_rows=flush_rows)
    try:
        return [
            pull_resource(client, store, resource, progress, batch_rows=batch_rows)
            for resource in resources
        ]
    finally:
        store.close()


def format_for(target: Path, fmt: str | None) -> Format:
    """The format `--format` names, or the one the target's name implies."""
    if fmt is None:
        return "duckdb" if target.suffix in {".duckdb", ".db"} else "parquet"
    if fmt not in ("duckdb", "parquet", "csv"):
        raise ValueError(f"Unknown format {fmt!r}: use duckdb, parquet or csv.")
    return fmt  # type: ignore[return-value]
