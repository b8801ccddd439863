"""The tables and positions every store keeps in DuckDB: a page upserted by key, in UTC."""

from __future__ import annotations

from pathlib import Path

import pytest

from airoi.client.copies.files import CsvStore
from airoi.client.copies.layout import Format
from airoi.client.copies.lists import RESOURCES
from airoi.client.copies.protocol import open_store
from tests.client.test_pull import FORMATS, stored, target_for

pytest.importorskip("duckdb")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_row_served_twice_in_one_batch_is_kept_once_with_its_latest_values(
    tmp_path: Path, fmt: Format
) -> None:
    # A row changed while a walk runs is served again further on: only its latest copy stays
    # (both were inserted, and the store's sums counted it twice).
    from airoi.client.walk import WalkState

    resource = next(r for r in RESOURCES if r.name == "cost_entries")
    target = target_for(tmp_path, fmt)
    store = open_store(target, fmt)
    before = {"id": 1, "amount_cents": 104, "updated_at": "2026-01-01T00:00:00.000Z"}
    other = {"id": 2, "amount_cents": 5, "updated_at": "2026-01-01T00:00:01.000Z"}
    after = {"id": 1, "amount_cents": 424242, "updated_at": "2026-01-02T00:00:00.000Z"}
    store.apply_page(resource, [before, other, after], WalkState(), done=True)
    store.close()
    rows = stored(target, fmt, "cost_entries")
    assert [(r["id"], r["amount_cents"]) for r in rows] == [(1, 424242), (2, 5)]


def test_the_store_works_in_utc_whatever_the_machines_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CSV files got the machine's local time (2026-11-22 01:15:00.016-05 for 06:15 UTC).
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        store = CsvStore(tmp_path / "out")
        zone = store.conn.execute("SELECT current_setting('TimeZone')").fetchone()
        store.close()
    finally:
        monkeypatch.undo()
        time.tzset()
    assert zone == ("UTC",)
