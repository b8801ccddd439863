"""What `airoi pull` asks of a copy, whatever its format (`CopyStore`), and the store of each
format (`open_store`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from airoi.client.copies.duckdb_file import DuckDbStore
from airoi.client.copies.files import CsvStore, ParquetStore
from airoi.client.copies.layout import Format
from airoi.client.copies.lists import Resource
from airoi.client.walk import WalkState


class CopyStore(Protocol):
    """A copy's rows and the position of every walk beside them. Each page (or batch of
    tombstones) is kept with its position, so a run cut off anywhere resumes after the last
    one kept; nothing is created before the first write."""

    def state(self, name: str) -> WalkState:
        """Where the walk of `name` resumes: its recorded position, or the start (always
        the start for a walk started over)."""
        ...

    def recorded(self, name: str) -> WalkState | None:
        """The position recorded for `name`, or None when it never was."""
        ...

    def positions(self) -> dict[str, str]:
        """The cursor of every walk the copy remembers one for (and of its account)."""
        ...

    def held(
        self,
        name: str,
        columns: Sequence[str],
        limit: int,
        order: str | None = "updated_at DESC NULLS LAST",
        ids: Sequence[int] | None = None,
    ) -> list[tuple[Any, ...]]:
        """Up to `limit` rows the copy holds for `name`: the SQL `columns` of each."""
        ...

    def count(self, name: str) -> int:
        """The rows the copy holds for `name`."""
        ...

    def start_full_walk(self, resource: Resource) -> None:
        """A list read whole begins again: what an earlier walk of it staged goes."""
        ...

    def apply_page(
        self, resource: Resource, rows: list[dict[str, Any]], state: WalkState, *, done: bool
    ) -> None:
        """Upsert one page's rows by key and record `state`, together."""
        ...

    def apply_deletions(
        self, tombstones: list[dict[str, Any]], state: WalkState, *, done: bool
    ) -> int:
        """Remove the rows `tombstones` name and record `state`, together; how many."""
        ...

    def remember_account(self, cursor: str) -> None:
        """Keep `cursor`, a position of the account's initiatives, as the copy's account."""
        ...

    def forget_account(self) -> None:
        """The copy no longer remembers an account."""
        ...

    def finish(self) -> None:
        """At the end of a run: the store exists even when the account had nothing to copy."""
        ...

    def close(self) -> None: ...


def open_store(
    target: Path,
    fmt: Format,
    *,
    flush_rows: int | None = None,
    full_refresh: Iterable[str] = (),
) -> CopyStore:
    """The store of format `fmt` at `target`. Parquet and CSV files are written at the end of
    each walk, and also every `flush_rows` rows when given (a DuckDB copy is written with
    each batch). The walks named in `full_refresh` start over: each drops its copy and
    position at its first batch."""
    if fmt == "duckdb":
        return DuckDbStore(target, full_refresh=full_refresh)
    files = ParquetStore if fmt == "parquet" else CsvStore
    return files(target, flush_rows=flush_rows, full_refresh=full_refresh)
