"""A copy as a directory of files, one a list (`FileStore`): Parquet (`ParquetStore`) or CSV
(`CsvStore`).

Each list is one file, `<dir>/<resource>.<format>`, one row per key, so that a reader needs
no rule to read it. The batches go to `<dir>/_airoi_pending.duckdb` (rows per list,
tombstones, their positions), and at the end of each walk one pass writes the list's file
(atomically): the old file's rows whose key was not read again, then the rows read; the
tombstones at the end of /deletions remove their rows from the files. `_airoi_state.json` is
written after the files and the staging dropped after it, so a crash anywhere merges the
staged rows again, which replace their own copies. A run never reads a file it does not
change, and the staging file is removed when the run ends with nothing staged.
"""

# ruff: noqa: S608 - SQL names here are fixed resource and column names, always quoted.

from __future__ import annotations

import json
import os
from abc import abstractmethod
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar

import duckdb

from airoi.client.copies.layout import (
    COLUMNS_FILE,
    PENDING_FILE,
    REPLACED,
    STATE_FILE,
    STATE_TABLE,
    TOMBSTONES,
    Format,
    saved_state,
)
from airoi.client.copies.lists import ACCOUNT, DELETABLE, DELETIONS, Resource
from airoi.client.copies.sql import csv_header, first_row, quote_name, quote_text, typed_csv
from airoi.client.copies.tables import CopyTables
from airoi.client.walk import WalkState


class FileStore(CopyTables):
    """One file a list, with what is not in them yet in `_airoi_pending.duckdb` beside them,
    written to a list's file at the end of its walk (and every `flush_rows` rows when given).
    """

    # The options of DuckDB's COPY that write a list's file.
    copy_options: ClassVar[str]

    def __init__(
        self,
        target: Path,
        *,
        flush_rows: int | None = None,
        full_refresh: Iterable[str] = (),
    ) -> None:
        self.flush_rows = flush_rows
        # Rows (or tombstones) each walk has staged since its files were last written.
        self._unflushed: dict[str, int] = {}
        # The positions `_airoi_state.json` holds (those the files are at).
        self._saved: dict[str, WalkState] = {}
        super().__init__(target, full_refresh=full_refresh)

    @abstractmethod
    def _read_file(self, name: str, path: Path, reader: duckdb.DuckDBPyConnection | None) -> str:
        """The SQL that reads the list's file at `path` with its columns' types; `reader`
        reads what that takes (the store's own connection when None)."""

    @abstractmethod
    def _file_written(self, name: str, columns: list[tuple[Any, ...]]) -> None:
        """After the list's file is written with `columns` (as DESCRIBE gives them)."""

    # -- the store -------------------------------------------------------------------

    def _resume(self) -> None:
        if self.target.is_dir():
            self._load_saved()
            if (self.target / PENDING_FILE).exists():
                self._open()  # a run cut off left rows or tombstones to write

    def _lost(self, name: str) -> bool:
        return name in self._saved and self._pending(name) is None and not self._file(name).exists()

    def _connect(self) -> duckdb.DuckDBPyConnection:
        self.target.mkdir(parents=True, exist_ok=True)
        return duckdb.connect(str(self.target / PENDING_FILE))

    def _create_staging(self, conn: duckdb.DuckDBPyConnection) -> None:
        # Tombstones read and not yet applied to the files, and the lists started over
        # whose file is to be replaced rather than merged into.
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {TOMBSTONES} ("
            " resource VARCHAR, id BIGINT, deleted_at TIMESTAMPTZ)"
        )
        conn.execute(f"CREATE TABLE IF NOT EXISTS {REPLACED} (resource VARCHAR PRIMARY KEY)")

    def close(self) -> None:
        if self._conn is None:
            return
        pending = self._count(STATE_TABLE) > 0
        super().close()
        if not pending:
            # Everything is in the files: the directory holds them and their state alone.
            for name in (PENDING_FILE, PENDING_FILE + ".wal"):
                (self.target / name).unlink(missing_ok=True)

    def finish(self) -> None:
        if not (self.target / STATE_FILE).exists():
            self.target.mkdir(parents=True, exist_ok=True)
            self._write_state_file()

    def recorded(self, name: str) -> WalkState | None:
        pending = self._pending(name)
        return pending if pending is not None else self._saved.get(name)

    def remember_account(self, cursor: str) -> None:
        self.target.mkdir(parents=True, exist_ok=True)
        self._saved[ACCOUNT] = WalkState(cursor=cursor)
        self._write_state_file()

    def forget_account(self) -> None:
        self._saved.pop(ACCOUNT, None)
        self._write_state_file()

    def count(self, name: str) -> int:
        """The rows the store holds for `name` in its file."""
        source = self._source(name)
        if source is None:
            return 0
        found = first_row(self.conn.execute(f"SELECT count(*) FROM {source}"))
        return int(found[0]) if found else 0

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

    def _source(self, name: str, reader: duckdb.DuckDBPyConnection | None = None) -> str | None:
        path = self._file(name)
        if not path.exists():
            return None
        return self._read_file(name, path, reader)

    def _write_file(self, name: str, query: str) -> int:
        """Write the rows of `query` to the list's file, whole or not at all; how many."""
        path = self._file(name)
        temporary = path.with_name(path.name + ".partial")
        described = self.conn.execute(f"DESCRIBE {query}").fetchall()
        found = first_row(
            self.conn.execute(
                f"COPY ({query}) TO {quote_text(str(temporary))} ({self.copy_options})"
            )
        )
        os.replace(temporary, path)
        self._file_written(name, described)
        return int(found[0]) if found else 0

    def _write_state_file(self) -> None:
        saved = {name: asdict(state) for name, state in sorted(self._saved.items())}
        replace_json(self.target / STATE_FILE, saved)

    def _file_kept(self, resource: Resource) -> bool:
        replaced = not resource.incremental or self._replaced(resource.name)
        return not replaced and self._file(resource.name).exists()

    def _file_merged_into(self, table: str) -> str | None:
        merged = table in DELETABLE and not self._replaced(table)
        return self._source(table) if merged else None

    def _replaced(self, name: str) -> bool:
        """Whether the list was started over, its file to be replaced whole."""
        found = first_row(
            self.conn.execute(f"SELECT count(*) FROM {REPLACED} WHERE resource = ?", [name])
        )
        return bool(found and found[0])

    # -- the staging ---------------------------------------------------------------

    def _pending(self, name: str) -> WalkState | None:
        """The position of rows (or tombstones) staged and not yet in the files."""
        return self._state_row(name)

    def _mark_started_over(self, name: str) -> None:
        self.conn.execute(f"INSERT OR REPLACE INTO {REPLACED} VALUES (?)", [name])

    def _stage_tombstones(self, name: str) -> None:
        self.conn.execute(
            f"INSERT INTO {TOMBSTONES} SELECT resource, id, deleted_at"
            " FROM tombstones WHERE resource = ?",
            [name],
        )

    def _due(self, walk: str, count: int, *, done: bool) -> bool:
        """Whether the rows staged for `walk` are to be written to files now."""
        self._unflushed[walk] = self._unflushed.get(walk, 0) + count
        return done or (self.flush_rows is not None and self._unflushed[walk] >= self.flush_rows)

    def _flush(self, resource: Resource, count: int, *, done: bool) -> None:
        if self._due(resource.name, count, done=done):
            self._merge(resource)

    def _flush_left_over(self, resource: Resource) -> None:
        if self._pending(resource.name) is not None:
            self._merge(resource)

    def _flush_tombstones(self, count: int, *, done: bool) -> int:
        return self._apply_tombstones() if self._due(DELETIONS, count, done=done) else 0

    def _flush_left_over_tombstones(self) -> int:
        return self._apply_tombstones() if self._pending(DELETIONS) is not None else 0

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
        """Write the rows staged for `resource` into its file, in one pass over the file:
        its rows whose key is not staged, then the staged rows (or the staged rows alone,
        for a list read whole or started over). Then the position they stand at.

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
        """Remove from each file the rows the staged tombstones name (SEMANTICS R34: unless
        given again later), then record the position; the rows removed."""
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


class ParquetStore(FileStore):
    """A Parquet file a list: the file keeps its columns' types."""

    fmt: ClassVar[Format] = "parquet"
    copy_options: ClassVar[str] = "FORMAT parquet"

    def _read_file(self, name: str, path: Path, reader: duckdb.DuckDBPyConnection | None) -> str:
        return f"read_parquet({quote_text(str(path))})"

    def _file_written(self, name: str, columns: list[tuple[Any, ...]]) -> None:
        """The file keeps its types: nothing to keep beside it."""


class CsvStore(FileStore):
    """A CSV file a list, its columns' types kept in `_airoi_columns.json` beside them, so
    that the text is read back as it was written."""

    fmt: ClassVar[Format] = "csv"
    copy_options: ClassVar[str] = "FORMAT csv, HEADER true"

    def __init__(
        self,
        target: Path,
        *,
        flush_rows: int | None = None,
        full_refresh: Iterable[str] = (),
    ) -> None:
        self._csv_types: dict[str, list[list[str]]] = {}
        self._headers: dict[str, list[str]] = {}
        super().__init__(target, flush_rows=flush_rows, full_refresh=full_refresh)

    def _load_saved(self) -> None:
        super()._load_saved()
        columns_path = self.target / COLUMNS_FILE
        if columns_path.exists():
            self._csv_types = json.loads(columns_path.read_text())

    def _read_file(self, name: str, path: Path, reader: duckdb.DuckDBPyConnection | None) -> str:
        types = self._csv_types.get(name)
        if types is None:  # a store of a version that kept no types: as DuckDB detects them
            return f"read_csv({quote_text(str(path))}, header = true)"
        # The header is read once per version of the file (DuckDB samples the file for it);
        # writing the file forgets it.
        header = self._headers.get(name)
        if header is None:
            header = self._headers[name] = csv_header(reader or self.conn, path)
        return typed_csv(path, header, types)

    def _file_written(self, name: str, columns: list[tuple[Any, ...]]) -> None:
        self._headers.pop(name, None)
        self._csv_types[name] = [[row[0], row[1]] for row in columns]
        replace_json(self.target / COLUMNS_FILE, self._csv_types)


def replace_json(path: Path, value: Any) -> None:
    """Write `value` as JSON to `path` whole or not at all (a partial file, then a rename)."""
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(json.dumps(value, indent=2, sort_keys=True))
    os.replace(temporary, path)
