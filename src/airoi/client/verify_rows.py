"""`airoi verify --rows`: every row of a copy against the service's, list by list.

The figures `airoi verify` recomputes catch a cent gone astray, but not a row whose name,
date or note differs, an observation the copy lacks, or a row the service no longer has.
With `--rows` verify also walks every list the copy holds from its start, as a first pull
would (the same requests, 500 rows a page), stages the rows in memory in the columns
`airoi pull` writes (`rows_to_arrow`), and compares them with the copy's by id, in one
query a list.

A copy is of a moment and the service goes on, so what changed after it is told apart from
what the copy got wrong:

- a served row whose `updated_at` is later than the largest the copy holds for its list
  (the position `airoi pull` keeps) was changed since the copy: counted, not compared;
- a row of the copy that a tombstone after the copy's own /deletions position removes
  (SEMANTICS R34; read by walking /deletions from that position) was deleted since;
- anything else is a difference: `missing` (served, not in the copy), `extra` (in the copy,
  not served) or `different` (in both; the columns that differ are named).

Budgets are not compared row by row: `airoi pull` reads them whole and their figures move
with the day; verify recomputes their actual figures instead.
"""

# ruff: noqa: S608 - SQL names here are fixed resource and column names, always quoted.

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final, Literal

import duckdb

from airoi.client.client import Client
from airoi.client.copies.layout import (
    BATCH_ROWS,
    COLUMNS_FILE,
    PENDING_FILE,
    STATE_FILE,
    STATE_TABLE,
    Format,
    saved_state,
)
from airoi.client.copies.lists import DELETIONS, RESOURCES, Resource
from airoi.client.copies.sql import csv_header, first_row, typed_csv
from airoi.client.errors import CopyError
from airoi.client.frames import rows_to_arrow
from airoi.client.walk import Walk, WalkState

Kind = Literal["missing", "extra", "different", "duplicate"]
# The lists compared row by row: those `airoi pull` keeps incrementally, by id.
ROW_LISTS: Final[tuple[Resource, ...]] = tuple(r for r in RESOURCES if r.incremental)
SERVED: Final = "served_rows"
# How far apart the clock that stamped the service's rows and the one that dated the copy's
# files may be.
CLOCK_MARGIN: Final = timedelta(seconds=60)

ListProgress = Callable[[str, int], None]  # (list, rows read so far)


@dataclass(frozen=True)
class RowDifference:
    resource: str
    id: int | None  # None: a row of the copy with no id
    kind: Kind
    columns: tuple[str, ...] = ()  # for `different`: the columns whose values differ


@dataclass
class ListCheck:
    """One list of the copy compared with the service's."""

    resource: str
    served: int = 0  # rows the service serves
    held: int = 0  # rows the copy holds
    changed_since: int = 0  # served rows changed after the copy's position: not compared
    deleted_since: int = 0  # copy rows removed by a tombstone after the copy's position
    differences: list[RowDifference] = field(default_factory=list)
    # Served columns the copy has no column for (a copy pulled before the service served
    # them): not compared.
    not_in_copy: tuple[str, ...] = ()

    def count(self, kind: Kind) -> int:
        return sum(1 for d in self.differences if d.kind == kind)


def last_written(store: Path, fmt: Format, name: str) -> datetime:
    """When `airoi pull` last wrote the list `name` of the copy (the DuckDB file and its
    log; a list's own file), by the machine's clock, in UTC."""
    if fmt == "duckdb":
        paths = [store, store.with_name(store.name + ".wal")]
    else:
        paths = [store / f"{name}.{fmt}", store / STATE_FILE]
    times = [path.stat().st_mtime for path in paths if path.exists()]
    return datetime.fromtimestamp(max(times, default=0.0), tz=UTC)


def copy_positions(
    conn: duckdb.DuckDBPyConnection, store: Path, fmt: Format
) -> dict[str, WalkState]:
    """Where the copy stands in each walk, as `airoi pull` remembers it."""
    if fmt == "duckdb":
        rows = conn.execute(
            f"SELECT resource, updated_since, cursor, walk_max FROM pulled.{STATE_TABLE}"
        ).fetchall()
        return {str(r[0]): saved_state(r[1], r[2], r[3]) for r in rows}
    saved = json.loads((store / STATE_FILE).read_text())
    return {
        str(name): saved_state(s.get("updated_since"), s.get("cursor"), s.get("walk_max"))
        for name, s in saved.items()
    }


def copy_source(conn: duckdb.DuckDBPyConnection, store: Path, fmt: Format, name: str) -> str | None:
    """The SQL reading list `name` of the copy, with the types pull gave its columns; None
    when the copy has no table or file for it."""
    if fmt == "duckdb":
        found = first_row(
            conn.execute(
                "SELECT count(*) FROM information_schema.tables"
                " WHERE table_catalog = 'pulled' AND table_name = ?",
                [name],
            )
        )
        return f'pulled."{name}"' if found and found[0] else None
    path = store / f"{name}.{fmt}"
    if not path.exists():
        return None
    if fmt == "parquet":
        return "read_parquet('" + str(path).replace("'", "''") + "')"
    columns = store / COLUMNS_FILE
    types = json.loads(columns.read_text()).get(name) if columns.exists() else None
    if types is None:  # a store of a version that kept no types: as DuckDB detects them
        return "read_csv('" + str(path).replace("'", "''") + "', header = true)"
    return typed_csv(path, csv_header(conn, path), types)


def held_lists(conn: duckdb.DuckDBPyConnection, store: Path, fmt: Format) -> set[str]:
    """The lists the copy holds: those it has a table or file for, or a position of (a list
    that had no row when pulled)."""
    positions = copy_positions(conn, store, fmt)
    return {
        r.name for r in RESOURCES if r.name in positions or copy_source(conn, store, fmt, r.name)
    }


def check_rows(
    client: Client,
    conn: duckdb.DuckDBPyConnection,
    store: Path,
    fmt: Format,
    *,
    progress: ListProgress | None = None,
    only: Collection[str] | None = None,
) -> tuple[list[ListCheck], list[str]]:
    """Each list the copy holds against the service's rows; and the lists left out (not
    pulled into this copy). `conn` is verify's connection over the copy (`open_copy`).
    With `only`, those lists alone, each compared whether or not the copy holds it."""
    if fmt != "duckdb" and (store / PENDING_FILE).exists():
        raise CopyError(
            f"A pull into {store} was cut off: rows it read are still in {PENDING_FILE}, not "
            "in the files. Pull again, then verify."
        )
    positions = copy_positions(conn, store, fmt)
    _stage_deleted_since(client, conn, positions.get(DELETIONS), progress)
    checks: list[ListCheck] = []
    skipped: list[str] = []
    for resource in ROW_LISTS:
        if only is not None and resource.name not in only:
            continue
        source = copy_source(conn, store, fmt, resource.name)
        if only is None and source is None and resource.name not in positions:
            skipped.append(resource.name)  # never pulled into this copy (`--resources`)
            continue
        written = last_written(store, fmt, resource.name) - CLOCK_MARGIN
        position = positions.get(resource.name)
        checks.append(_check_list(client, conn, resource, source, position, written, progress))
    return checks, skipped


def _stage_deleted_since(
    client: Client,
    conn: duckdb.DuckDBPyConnection,
    position: WalkState | None,
    progress: ListProgress | None,
) -> None:
    """Table `deleted_since` (resource, id): the tombstones served after the copy's
    /deletions position (all of them when it has none)."""
    conn.execute("CREATE OR REPLACE TEMP TABLE deleted_since (resource VARCHAR, id BIGINT)")
    walk = Walk(client, DELETIONS, {}, position or WalkState(), stamp="deleted_at")
    read = 0
    for page in walk:
        if page.data:
            conn.executemany(
                "INSERT INTO deleted_since VALUES (?, ?)",
                [[str(t.get("resource")), int(t["id"])] for t in page.data],
            )
        read += len(page.data)
        if progress is not None:
            progress(DELETIONS, read)


def _stage(conn: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]], columns: set[str]) -> None:
    """Add `rows` to the served rows' table, with a column for every field they give (as
    pull writes them: a field null in every row of the batch is text)."""
    batch = rows_to_arrow(rows)
    conn.register("batch", batch)
    try:
        if not columns:
            conn.execute(f"CREATE OR REPLACE TEMP TABLE {SERVED} AS SELECT * FROM batch LIMIT 0")
            columns.update(batch.column_names)
        types = {row[0]: row[1] for row in conn.execute("DESCRIBE batch").fetchall()}
        for name in batch.column_names:
            if name not in columns:
                conn.execute(f'ALTER TABLE {SERVED} ADD COLUMN "{name}" {types[name]}')
                columns.add(name)
        conn.execute(f"INSERT INTO {SERVED} BY NAME SELECT * FROM batch")
    finally:
        conn.unregister("batch")


def _check_list(
    client: Client,
    conn: duckdb.DuckDBPyConnection,
    resource: Resource,
    source: str | None,
    position: WalkState | None,
    written: datetime,
    progress: ListProgress | None,
) -> ListCheck:
    name = resource.name
    check = ListCheck(name)
    conn.execute(f"DROP TABLE IF EXISTS {SERVED}")
    served_columns: set[str] = set()
    batch: list[dict[str, Any]] = []
    for page in Walk(client, name, resource.params, WalkState()):
        batch += page.data
        check.served += len(page.data)
        if len(batch) >= BATCH_ROWS or not page.has_more or not page.next_cursor:
            if batch:
                _stage(conn, batch, served_columns)
            batch = []
        if progress is not None:
            progress(name, check.served)
    copy = source if source is not None else "(SELECT NULL::BIGINT AS id WHERE false)"
    found = first_row(conn.execute(f"SELECT count(*) FROM {copy}"))
    check.held = int(found[0]) if found else 0
    if not served_columns:  # the service serves no row: every row of the copy is extra
        conn.execute(f"CREATE OR REPLACE TEMP TABLE {SERVED} (id BIGINT, updated_at VARCHAR)")
        served_columns = {"id", "updated_at"}
    held = {row[0]: row[1] for row in conn.execute(f"DESCRIBE SELECT * FROM {copy}").fetchall()}
    served = [row[0:2] for row in conn.execute(f"DESCRIBE {SERVED}").fetchall()]
    compared = [(c, kind) for c, kind in served if c in held and c != "id"]
    check.not_in_copy = tuple(c for c, _ in served if c not in held and source is not None)
    # Each column as the service serves it; the copy's cast to the served type (a CSV copy
    # was read back as text and cast already, so equal values compare equal).
    differing = ", ".join(
        f'CASE WHEN s."{c}" IS DISTINCT FROM TRY_CAST(c."{c}" AS {kind}) THEN \'{c}\' END'
        for c, kind in compared
    )
    any_differs = " OR ".join(
        f's."{c}" IS DISTINCT FROM TRY_CAST(c."{c}" AS {kind})' for c, kind in compared
    )
    # Changed since the copy: later than the largest updated_at it holds of the list, and
    # than its last write (less a margin for the two clocks). A walk sees every row changed
    # before its last page, so a row older than that write and not in the copy is missing:
    # a pull cut off, or a row lost, not a change made since.
    since = position.updated_since if position is not None else None
    newer = (
        "CAST(s.updated_at AS TIMESTAMPTZ) > CAST($written AS TIMESTAMPTZ)"
        " AND coalesce(CAST(s.updated_at AS TIMESTAMPTZ) > CAST($since AS TIMESTAMPTZ), true)"
    )
    # Presence is told by a marker, not by the id: a copy row with no id is extra, not missing.
    rows = conn.execute(
        f"SELECT coalesce(s.id, TRY_CAST(c.id AS BIGINT)) AS key,"
        f" CASE WHEN c.__held IS NULL THEN 'missing' WHEN s.__served IS NULL THEN 'extra'"
        f" ELSE 'different' END AS kind,"
        f" s.__served IS NOT NULL AND coalesce({newer}, false) AS newer,"
        f" EXISTS (SELECT 1 FROM deleted_since AS d WHERE d.resource = $name"
        f" AND d.id = TRY_CAST(c.id AS BIGINT)) AS gone,"
        f" [{differing or 'NULL'}] AS columns"
        f" FROM (SELECT *, true AS __served FROM {SERVED}) AS s"
        f" FULL OUTER JOIN (SELECT *, true AS __held FROM {copy}) AS c"
        f" ON s.id = TRY_CAST(c.id AS BIGINT)"
        f" WHERE c.__held IS NULL OR s.__served IS NULL OR {any_differs or 'false'}"
        f" ORDER BY key NULLS FIRST",
        {"since": since, "name": name, "written": written.isoformat()},
    ).fetchall()
    for key, kind, is_newer, gone, columns in rows:
        if is_newer:
            check.changed_since += 1
        elif kind == "extra" and gone:
            check.deleted_since += 1
        else:
            check.differences.append(
                RowDifference(
                    name,
                    None if key is None else int(key),
                    kind,
                    tuple(c for c in columns if c) if kind == "different" else (),
                )
            )
    # A second row of one id: the join pairs both with the service's one, so counted here.
    for key, extra in conn.execute(
        f"SELECT TRY_CAST(id AS BIGINT) AS key, count(*) - 1 FROM {copy}"
        " WHERE id IS NOT NULL GROUP BY key HAVING count(*) > 1 ORDER BY key"
    ).fetchall():
        check.differences += [RowDifference(name, int(key), "duplicate")] * int(extra)
    conn.execute(f"DROP TABLE IF EXISTS {SERVED}")
    return check
