"""A directory of files, one a list: a CSV store reads back the text it wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airoi.client.copies.files import CsvStore
from airoi.client.copies.lists import RESOURCES

duckdb = pytest.importorskip("duckdb")


def test_a_csv_store_reads_back_what_it_wrote(tmp_path: Path) -> None:
    # The next run used to re-read the CSV files with type detection: "7.10" came back as
    # 7.1, "" as null, and a later text value in that column stopped every run.
    from airoi.client.walk import WalkState

    resource = next(r for r in RESOURCES if r.name == "cost_entries")
    target = tmp_path / "out"
    first = [
        {
            "id": 1,
            "amount_cents": 2**53 + 1,
            "vendor_name": "7.10",
            "description": "",
            "notes": None,
            "is_estimated": True,
            "updated_at": "2026-01-01T06:15:00.016Z",
        },
        {
            "id": 2,
            "amount_cents": None,
            "vendor_name": "12.50",
            "description": 'a, "quoted" one',
            "notes": "x",
            "is_estimated": False,
            "updated_at": "2026-01-02T00:00:00.000Z",
        },
    ]
    store = CsvStore(target)
    store.apply_page(resource, first, WalkState(), done=True)
    store.close()
    types = dict(json.loads((target / "_airoi_columns.json").read_text())["cost_entries"])
    assert types["amount_cents"] == "BIGINT" and types["vendor_name"] == "VARCHAR"
    store = CsvStore(target)
    later = {**first[1], "id": 3, "vendor_name": "acct-9", "updated_at": "2026-01-03T00:00:00.000Z"}
    store.apply_page(resource, [later], WalkState(), done=True)
    store.close()
    conn = duckdb.connect()
    text = conn.execute(
        "SELECT id, amount_cents, vendor_name, description, notes, is_estimated, updated_at "
        "FROM read_csv(?, all_varchar = true, allow_quoted_nulls = false) ORDER BY id",
        [str(target / "cost_entries.csv")],
    ).fetchall()
    conn.close()
    assert text == [
        ("1", str(2**53 + 1), "7.10", "", None, "true", "2026-01-01 06:15:00.016+00"),
        ("2", None, "12.50", 'a, "quoted" one', "x", "false", "2026-01-02 00:00:00+00"),
        ("3", None, "acct-9", 'a, "quoted" one', "x", "false", "2026-01-03 00:00:00+00"),
    ]
