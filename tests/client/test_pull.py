"""`airoi pull` into DuckDB, Parquet and CSV: full, incremental, replaced, resumed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from airoi.client import Client
from airoi.client.pull import RESOURCES, Format, ResourceReport, pull
from tests.client.conftest import LATER, Account, raw_walk

duckdb = pytest.importorskip("duckdb")

FORMATS: list[Format] = ["duckdb", "parquet", "csv"]


def target_for(tmp_path: Path, fmt: Format) -> Path:
    return tmp_path / "airoi.duckdb" if fmt == "duckdb" else tmp_path / "out"


def stored(target: Path, fmt: Format, name: str) -> list[dict[str, Any]]:
    """The rows a pull left for `name`, ordered by key, as plain Python values."""
    key = "initiative_id" if name == "budgets" else "id"
    if fmt == "duckdb":
        conn = duckdb.connect(str(target), read_only=True)
        source = name
    else:
        conn = duckdb.connect()
        reader = "read_parquet" if fmt == "parquet" else "read_csv"
        source = f"{reader}('{target / f'{name}.{fmt}'}')"
    try:
        query = f"SELECT * FROM {source} ORDER BY {key}"  # noqa: S608
        # Through Arrow: DuckDB's own conversion of TIMESTAMPTZ to Python needs pytz.
        rows: list[dict[str, Any]] = conn.execute(query).to_arrow_table().to_pylist()
        return rows
    finally:
        conn.close()


def by_name(reports: list[ResourceReport]) -> dict[str, int]:
    return {r.name: r.rows for r in reports}


def expected_ids(base_url: str, token: str, name: str) -> list[int]:
    params = {"include_sample": "true"} if name in ("initiatives", "budgets") else {}
    key = "initiative_id" if name == "budgets" else "id"
    return sorted(row[key] for row in raw_walk(base_url, token, name, **params))


@pytest.mark.parametrize("fmt", FORMATS)
def test_incremental_pull(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        first = by_name(pull(api, target, fmt))
    assert first == {
        "initiatives": 3,
        "cost_entries": 7,
        "value_entries": 6,
        "metrics": 1,
        "observations": 3,
        "decisions": 1,
        "integrations": 1,
        "budgets": 3,
    }
    for resource in RESOURCES:
        key = resource.key
        ids = [row[key] for row in stored(target, fmt, resource.name)]
        assert ids == expected_ids(base_url, account.token, resource.name), resource.name
    costs = stored(target, fmt, "cost_entries")
    assert [row["amount_cents"] for row in costs] == [10_000 + n for n in range(7)]
    assert isinstance(costs[0]["amount_cents"], int)
    assert str(costs[0]["period_start"]) == "2026-01-01"

    # The loader changes one cost entry and adds one, later.
    changed = account.builder.data["cost_entries"][3]
    changed["amount_cents"] = 99_999
    new_id = account.builder.cost_entry(account.initiatives[0], amount_cents=1, currency="USD")
    account.load(engine, LATER)

    with Client(base_url, account.token, page_size=2) as api:
        second = by_name(pull(api, target, fmt))
        # Rows changed at or after the remembered moment come: every row of the first load
        # shares that one stamp (inclusive bound), plus the two changed later.
        assert second["cost_entries"] == 7 + 1
        assert second["budgets"] == 3
        costs = stored(target, fmt, "cost_entries")
        assert len(costs) == 8
        assert len({row["id"] for row in costs}) == 8
        amounts = {row["id"]: row["amount_cents"] for row in costs}
        assert amounts[changed["id"]] == 99_999
        assert amounts[new_id] == 1
        budgets = stored(target, fmt, "budgets")
        assert len(budgets) == 3
        assert [b["opex_actual_cents"] for b in budgets if b["budgeted"]] == [
            10_000 + 10_003 + 10_006 + (99_999 - 10_003) + 1
        ]

        # Nothing changed since: only the rows stamped at the remembered moment (LATER) come
        # again, which the upsert absorbs; budgets (no updated_since) come whole.
        requests_before = api.requests_sent
        third = by_name(pull(api, target, fmt))
        assert third["cost_entries"] == 2
        assert sum(third.values()) - third["budgets"] <= 2 + 3 + 6 + 1 + 3 + 1 + 1
        assert api.requests_sent - requests_before <= 16
        assert len(stored(target, fmt, "cost_entries")) == 8


def test_a_row_stored_later_at_the_last_moment_is_not_missed(
    base_url: str, account: Account, engine: Engine, tmp_path: Path
) -> None:
    # SPEC 4.A.1: updated_since is inclusive so that a row saved in the same millisecond as the
    # last one seen is not missed. A bundle may give updated_at itself, and its ids are the
    # source's: here a row with a lower id comes later, stamped with the moment already seen.
    # Starting the next walk at the last page's cursor (past that moment's lower ids) lost it.
    target = target_for(tmp_path, "duckdb")
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, "duckdb")
    last = max(raw_walk(base_url, account.token, "cost_entries"), key=lambda r: r["updated_at"])
    late = account.builder.cost_entry(
        account.initiatives[0],
        id=7,  # below every id the first load gave (they start at 1000)
        amount_cents=7,
        currency="USD",
        created_at=last["updated_at"],
        updated_at=last["updated_at"],
    )
    account.load(engine, LATER)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, "duckdb")
    ids = [row["id"] for row in stored(target, "duckdb", "cost_entries")]
    assert late in ids
    assert ids == expected_ids(base_url, account.token, "cost_entries")


class Interrupted(RuntimeError):
    pass


class InterruptAfter(httpx.BaseTransport):
    """The real transport, until the `limit`-th request: then the run is cut off."""

    def __init__(self, limit: int) -> None:
        self.inner = httpx.HTTPTransport()
        self.limit = limit
        self.count = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        if self.count >= self.limit:
            raise Interrupted(f"cut off at request {self.count}")
        return self.inner.handle_request(request)


@pytest.mark.parametrize("fmt", FORMATS)
def test_resume_after_interruption(
    base_url: str, account: Account, tmp_path: Path, fmt: Format
) -> None:
    target = target_for(tmp_path, fmt)
    # Two requests for initiatives (3 rows), then the first cost page; cut before the second.
    cut = InterruptAfter(limit=4)
    with (
        Client(base_url, account.token, page_size=2, transport=cut) as api,
        pytest.raises(Interrupted),
    ):
        pull(api, target, fmt, flush_rows=1, batch_rows=1)  # every page written on its own
    assert len(stored(target, fmt, "initiatives")) == 3
    assert len(stored(target, fmt, "cost_entries")) == 2

    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt)}
    assert reports["cost_entries"].resumed
    assert reports["cost_entries"].rows == 5  # the pages after the cut, and only those
    assert not reports["initiatives"].resumed
    costs = stored(target, fmt, "cost_entries")
    assert [row["id"] for row in costs] == expected_ids(base_url, account.token, "cost_entries")
    assert [row["amount_cents"] for row in costs] == [10_000 + n for n in range(7)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_resume_after_the_last_batch_written(
    base_url: str, account: Account, tmp_path: Path, fmt: Format
) -> None:
    """Rows are written two pages at a time here: a cut loses the unwritten page, never more."""
    target = target_for(tmp_path, fmt)
    # Initiatives take two requests; cost pages 1-2 are one batch, page 3 is fetched and
    # held, and the request for page 4 is cut off.
    cut = InterruptAfter(limit=6)
    with (
        Client(base_url, account.token, page_size=2, transport=cut) as api,
        pytest.raises(Interrupted),
    ):
        pull(api, target, fmt, flush_rows=1, batch_rows=4)
    assert len(stored(target, fmt, "cost_entries")) == 4

    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt, batch_rows=4)}
    assert reports["cost_entries"].resumed
    assert (reports["cost_entries"].rows, reports["cost_entries"].pages) == (3, 2)
    costs = stored(target, fmt, "cost_entries")
    assert [row["id"] for row in costs] == expected_ids(base_url, account.token, "cost_entries")
    assert [row["amount_cents"] for row in costs] == [10_000 + n for n in range(7)]


def test_interruption_inside_a_page_keeps_nothing_half_written(
    base_url: str, account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure while writing rolls back the rows and the state together."""
    from airoi.client import pull as pull_module

    target = tmp_path / "airoi.duckdb"
    real_upsert = pull_module.Store._upsert
    calls = {"n": 0}

    def failing_upsert(self: Any, table: str, key: str, rows: list[dict[str, Any]]) -> None:
        calls["n"] += 1
        real_upsert(self, table, key, rows)
        if table == "cost_entries" and calls["n"] == 4:
            raise Interrupted("after the insert, before the commit")

    monkeypatch.setattr(pull_module.Store, "_upsert", failing_upsert)
    with Client(base_url, account.token, page_size=2) as api, pytest.raises(Interrupted):
        pull(api, target, batch_rows=1)
    assert len(stored(target, "duckdb", "cost_entries")) == 2
    monkeypatch.undo()
    with Client(base_url, account.token, page_size=2) as api:
        reports = by_name(pull(api, target))
    assert reports["cost_entries"] == 5
    ids = [row["id"] for row in stored(target, "duckdb", "cost_entries")]
    assert ids == expected_ids(base_url, account.token, "cost_entries")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_row_served_twice_in_one_batch_is_kept_once_with_its_latest_values(
    tmp_path: Path, fmt: Format
) -> None:
    # A row changed while a walk runs is served again further on: only its latest copy stays
    # (both were inserted, and the store's sums counted it twice).
    from airoi.client.pull import Store, WalkState

    resource = next(r for r in RESOURCES if r.name == "cost_entries")
    target = target_for(tmp_path, fmt)
    store = Store(target, fmt)
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

    from airoi.client.pull import Store

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        store = Store(tmp_path / "out", "csv")
        zone = store.conn.execute("SELECT current_setting('TimeZone')").fetchone()
        store.close()
    finally:
        monkeypatch.undo()
        time.tzset()
    assert zone == ("UTC",)


def test_a_csv_store_reads_back_what_it_wrote(tmp_path: Path) -> None:
    # The next run used to re-read the CSV files with type detection: "7.10" came back as
    # 7.1, "" as null, and a later text value in that column stopped every run.
    from airoi.client.pull import Store, WalkState

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
    store = Store(target, "csv")
    store.apply_page(resource, first, WalkState(), done=True)
    store.close()
    store = Store(target, "csv")
    described = store.conn.execute("DESCRIBE cost_entries").fetchall()
    types = {row[0]: row[1] for row in described}
    assert types["amount_cents"] == "BIGINT" and types["vendor_name"] == "VARCHAR"
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
