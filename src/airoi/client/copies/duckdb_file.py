"""A copy in one DuckDB file (`DuckDbStore`): each list a table, the walks' positions in
`_airoi_state` beside them, each batch committed with its position."""

# ruff: noqa: S608 - SQL names here are fixed resource and column names, always quoted.

from __future__ import annotations

from typing import ClassVar

import duckdb

from airoi.client.copies.layout import STATE_TABLE, Format
from airoi.client.copies.lists import ACCOUNT, Resource
from airoi.client.copies.tables import CopyTables
from airoi.client.copies.targets import check_duckdb_target
from airoi.client.walk import WalkState


class DuckDbStore(CopyTables):
    """The lists as tables of a DuckDB file: what is committed is the copy, so nothing is
    staged and nothing written out after a batch."""

    fmt: ClassVar[Format] = "duckdb"

    def _resume(self) -> None:
        if self.target.exists():
            self._open()

    def _lost(self, name: str) -> bool:
        return self._state_row(name) is not None and not self._exists(name)

    def _connect(self) -> duckdb.DuckDBPyConnection:
        check_duckdb_target(self.target)
        self.target.parent.mkdir(parents=True, exist_ok=True)
        return duckdb.connect(str(self.target))

    def _create_staging(self, conn: duckdb.DuckDBPyConnection) -> None:
        """Nothing is staged: the tables are the copy."""

    def recorded(self, name: str) -> WalkState | None:
        return self._state_row(name)

    def remember_account(self, cursor: str) -> None:
        self._save_state(ACCOUNT, WalkState(cursor=cursor))

    def forget_account(self) -> None:
        self.conn.execute(f"DELETE FROM {STATE_TABLE} WHERE resource = ?", [ACCOUNT])

    def finish(self) -> None:
        if self._conn is None:
            self._open()  # creates the file

    def count(self, name: str) -> int:
        return self._count(name)

    def _source(self, name: str, reader: duckdb.DuckDBPyConnection | None = None) -> str | None:
        return None  # the list's rows are its table's alone

    def _file_kept(self, resource: Resource) -> bool:
        return False

    def _file_merged_into(self, table: str) -> str | None:
        return None

    def _mark_started_over(self, name: str) -> None:
        """Dropping the table is all it takes."""

    def _stage_tombstones(self, name: str) -> None:
        """Applied to the tables, they are done with."""

    def _flush(self, resource: Resource, count: int, *, done: bool) -> None:
        """Committed is written."""

    def _flush_left_over(self, resource: Resource) -> None:
        """A run cut off leaves nothing unwritten."""

    def _flush_tombstones(self, count: int, *, done: bool) -> int:
        return 0

    def _flush_left_over_tombstones(self) -> int:
        return 0
