"""What a copy is made of: its formats, the names of its state, staging and column files and
tables, and the positions as any version wrote them.

For Parquet and CSV each list is one file, `<dir>/<resource>.<format>`, one row per key, so
that a reader needs no rule to read it; `_airoi_state.json` beside them holds the positions
the files are at. A DuckDB copy keeps its lists as tables and the positions in
`_airoi_state`.
"""

from __future__ import annotations

from typing import Literal

from airoi.client.walk import WalkState, later

Format = Literal["duckdb", "parquet", "csv"]
FILE_FORMATS = ("parquet", "csv")
DUCKDB_SUFFIXES = (".duckdb", ".db")

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


def saved_state(updated_since: str | None, cursor: str | None, walk_max: str | None) -> WalkState:
    """A state as any version wrote it. Earlier versions kept `cursor` only while a walk
    was under way (the next page of a walk asked with `updated_since`), and that walk's
    largest updated_at in `walk_max`. The cursor is still the position after the last row
    written, and every row after it has an updated_at at or after that walk's
    `updated_since`, so asking with the cursor alone serves the same rows."""
    return WalkState(cursor, later(updated_since, walk_max))
