"""Which target means which format: the documented targets, and those refused before
anything is created."""

from __future__ import annotations

from pathlib import Path

import pytest

from airoi.client.copies.targets import format_for


@pytest.mark.parametrize(
    ("name", "fmt", "expected"),
    [
        ("airoi.duckdb", None, "duckdb"),
        ("airoi.db", None, "duckdb"),
        ("airoi-data", None, "parquet"),
        ("airoi-data", "csv", "csv"),
        ("store.ddb", "duckdb", "duckdb"),
    ],
)
def test_the_documented_targets(tmp_path: Path, name: str, fmt: str | None, expected: str) -> None:
    assert format_for(tmp_path / name, fmt) == expected


def test_a_directory_that_holds_csv_files_stays_csv(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "cost_entries.csv").write_text("id\n1\n")
    assert format_for(tmp_path / "store", None) == "csv"
    assert format_for(tmp_path / "store", "csv") == "csv"
    # Parquet files written beside them held only the rows changed since the positions the
    # store shares (26 of 40,287 cost entries), and the CSV files never got those changes.
    with pytest.raises(ValueError) as refused:
        format_for(tmp_path / "store", "parquet")
    assert str(refused.value) == (
        f"{tmp_path / 'store'} holds CSV files: --format parquet would write a second, partial "
        "copy beside them. Leave out --format (or give csv), or give another directory."
    )
    (tmp_path / "store" / "cost_entries.csv").rename(tmp_path / "store" / "cost_entries.parquet")
    with pytest.raises(ValueError, match="holds PARQUET files: --format csv would write"):
        format_for(tmp_path / "store", "csv")
    (tmp_path / "odd.name").mkdir()  # an existing directory is taken as it is named
    assert format_for(tmp_path / "odd.name", None) == "parquet"


@pytest.mark.parametrize(
    ("name", "fmt", "message"),
    [
        ("out.txt", None, r"\.txt is no format airoi pull writes\. Give a \.duckdb file"),
        ("out.csv", None, r"a CSV store is a directory of files, one per list"),
        ("out.parquet", "parquet", r"a PARQUET store is a directory of files"),
        ("airoi.duckdb", "csv", r"names a DuckDB file, but --format csv writes a directory"),
        ("data", "json", r"Unknown format 'json'"),
    ],
)
def test_a_target_of_no_known_format_is_refused(
    tmp_path: Path, name: str, fmt: str | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        format_for(tmp_path / name, fmt)
    assert list(tmp_path.iterdir()) == []


def test_a_file_is_no_directory_store(tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("x")
    with pytest.raises(ValueError, match="is a file, not a directory"):
        format_for(tmp_path / "notes", "parquet")
    (tmp_path / "old.duckdb").mkdir()  # a directory an earlier version made: files
    assert format_for(tmp_path / "old.duckdb", None) == "parquet"
    with pytest.raises(ValueError, match="is a directory: a DuckDB store is a file"):
        format_for(tmp_path / "old.duckdb", "duckdb")
