"""Which target means which format (`format_for`), and the checks made on a target before
anything is written to it (`check_target`): a file or directory `airoi pull` did not make is
left as it is."""

from __future__ import annotations

from pathlib import Path

import duckdb

from airoi.client.copies.layout import (
    DUCKDB_SUFFIXES,
    FILE_FORMATS,
    PENDING_FILE,
    STATE_FILE,
    STATE_TABLE,
    Format,
)


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
    if fmt == "duckdb":
        check_duckdb_target(target)
    else:
        check_directory_target(target)


def check_directory_target(target: Path) -> None:
    """Refuse, with NotACopy, a directory that holds files and not a copy's state."""
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


def check_duckdb_target(target: Path) -> None:
    """Refuse, with NotACopy, a file that is not a DuckDB database, or one that holds tables
    and none of them a copy's state."""
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
