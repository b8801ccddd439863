"""`airoi pull` into DuckDB, Parquet and CSV: full, incremental, replaced, resumed, deleted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from airoi.client import Client
from airoi.client.column_types import COLUMNS
from airoi.client.copies.layout import Format
from airoi.client.copies.lists import DELETIONS, RESOURCES
from airoi.client.copies.protocol import open_store
from airoi.client.copies.tables import CopyTables
from airoi.client.pull import ResourceReport, choose_resources, pull, pull_deletions, pull_resource
from airoi.client.walk import ANOTHER_ACCOUNTS_CURSOR, AnotherAccountsCopy
from airoi.load import load_bundle
from tests.client.conftest import ACCOUNT_ROWS, FIRST_LOAD, LATER, Account, raw_walk
from tests.factories import BundleBuilder

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


def assert_store_equals_service(target: Path, fmt: Format, base_url: str, token: str) -> None:
    """Every list's ids, and each row's updated_at, as the service serves them now."""
    for resource in RESOURCES:
        rows = stored(target, fmt, resource.name)
        assert [row[resource.key] for row in rows] == expected_ids(
            base_url, token, resource.name
        ), resource.name
    served = {row["id"]: row["updated_at"] for row in raw_walk(base_url, token, "cost_entries")}
    kept = {
        row["id"]: row["updated_at"].strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        for row in stored(target, fmt, "cost_entries")
    }
    assert kept == served


class Counting(httpx.BaseTransport):
    """The real transport, counting the rows each list's pages held (by path) and requests."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.rows: Counter[str] = Counter()
        self.requests = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        response.read()
        self.requests += 1
        if response.status_code == 200:
            name = request.url.path.rsplit("/", 1)[-1]
            self.rows[name] += len(json.loads(response.content)["data"])
        return response

    def reset(self) -> None:
        self.rows.clear()
        self.requests = 0


# Later loads, each stamping what it changes later than the one before (SEMANTICS R32).
THEN = [datetime(2026, 6, 11, 9, 0), datetime(2026, 6, 12, 9, 0), datetime(2026, 6, 13, 9, 0)]


def delete(engine: Engine, now: datetime, **ids: list[int]) -> None:
    load_bundle(engine, {"delete": ids}, now=now)


def give(engine: Engine, now: datetime, name: str, record: dict[str, Any]) -> None:
    load_bundle(engine, {name: [record]}, now=now)


def cost_resource() -> Any:
    return next(r for r in RESOURCES if r.name == "cost_entries")


@pytest.mark.parametrize("fmt", FORMATS)
def test_incremental_pull(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        first = by_name(pull(api, target, fmt))
    assert first == {**ACCOUNT_ROWS, DELETIONS: 0}
    assert_store_equals_service(target, fmt, base_url, account.token)
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
        second = pull(api, target, fmt)
        # From the remembered cursor: the two rows changed since, none of the others (R36).
        assert by_name(second)["cost_entries"] == 2
        assert by_name(second)["budgets"] == 3
        # Budgets are read whole; /deletions has served no row yet, so no position either.
        starts = {r.name: r.start for r in second}
        assert starts == dict.fromkeys(starts, "cursor") | {"budgets": "full", DELETIONS: "full"}
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
        assert_store_equals_service(target, fmt, base_url, account.token)

        # Nothing changed since: one empty page per list and /deletions, budgets whole.
        requests_before = api.requests_sent
        third = by_name(pull(api, target, fmt))
        assert third == dict.fromkeys(third, 0) | {"budgets": 3}
        assert api.requests_sent - requests_before == 7 + 1 + 2
        assert len(stored(target, fmt, "cost_entries")) == 8


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_idle_run_after_a_bulk_load_reads_no_row_again(
    base_url: str, account: Account, tmp_path: Path, fmt: Format
) -> None:
    # SEMANTICS R36: the first load stamped every row alike. Asked again with the inclusive
    # updated_since, every one of them came again; from the resume cursor, none does.
    assert (
        len({row["updated_at"] for row in raw_walk(base_url, account.token, "cost_entries")}) == 1
    )
    target = target_for(tmp_path, fmt)
    counting = Counting()
    with Client(base_url, account.token, page_size=2, transport=counting) as api:
        pull(api, target, fmt)
        assert counting.rows["cost_entries"] == 7
        files = {path.name: path.stat().st_mtime_ns for path in target.parent.rglob("*.*")}
        counting.reset()
        pull(api, target, fmt)
    assert counting.rows == Counter({"budgets": 3})
    assert counting.requests == 7 + 1 + 2
    assert_store_equals_service(target, fmt, base_url, account.token)
    if fmt != "duckdb":  # a list's file is written again only when its table changed
        again = {path.name: path.stat().st_mtime_ns for path in target.parent.rglob("*.*")}
        written = {name.partition(".")[0] for name in files if files[name] != again[name]}
        assert written & {r.name for r in RESOURCES} == {"budgets"}


def test_a_row_stored_later_at_the_last_moment_is_not_missed(
    base_url: str, account: Account, engine: Engine, tmp_path: Path
) -> None:
    # SPEC 4.A.1 made updated_since inclusive so that a row saved in the same millisecond as
    # the last one seen is not missed; a cursor past that moment's lower ids once lost such a
    # row. Under SEMANTICS R32 a later load always stamps later than every stored row, so a
    # row with a lower id (here below every id of the first load) stored by a later load
    # comes after the remembered position, and the resume cursor serves it (R36).
    target = target_for(tmp_path, "duckdb")
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, "duckdb")
    late = account.builder.cost_entry(account.initiatives[0], id=7, amount_cents=7, currency="USD")
    account.load(engine, LATER)
    (served,) = [r for r in raw_walk(base_url, account.token, "cost_entries") if r["id"] == late]
    assert served["updated_at"] == "2026-06-10T09:00:00.000Z"
    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, "duckdb")}
    assert reports["cost_entries"].resumed
    assert reports["cost_entries"].rows == 1
    ids = [row["id"] for row in stored(target, "duckdb", "cost_entries")]
    assert late in ids
    assert ids == expected_ids(base_url, account.token, "cost_entries")


@pytest.mark.parametrize("fmt", FORMATS)
def test_rows_deleted_on_the_server_are_removed(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # SEMANTICS R34: a cost entry deleted alone, and an initiative deleted with its entries
    # and readings (their tombstones come with its own); its decision stays, unlinked.
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    lone = account.cost_entries[1]  # of initiative 1
    doomed = account.initiatives[0]
    before = {r["id"]: r["initiative_id"] for r in stored(target, fmt, "cost_entries")}
    assert lone in before and doomed in before.values()
    delete(engine, THEN[0], cost_entries=[lone], initiatives=[doomed])

    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt)}
    gone = {lone} | {row_id for row_id, owner in before.items() if owner == doomed}
    # And the initiative itself, its three value entries and its three readings.
    assert reports[DELETIONS].rows == len(gone) + 1 + 3 + 3
    assert reports[DELETIONS].deleted == reports[DELETIONS].rows
    costs = {row["id"] for row in stored(target, fmt, "cost_entries")}
    assert costs == set(before) - gone
    assert doomed not in {row["id"] for row in stored(target, fmt, "initiatives")}
    assert doomed not in {row["initiative_id"] for row in stored(target, fmt, "budgets")}
    assert stored(target, fmt, "observations") == []
    assert [row["initiative_id"] for row in stored(target, fmt, "decisions")] == [
        account.initiatives[1]
    ]  # the decision was of initiative 1, which stays
    assert_store_equals_service(target, fmt, base_url, account.token)

    # Each tombstone is read once: the next run reads none again.
    with Client(base_url, account.token, page_size=2) as api:
        again = {r.name: r for r in pull(api, target, fmt)}
    assert (again[DELETIONS].start, again[DELETIONS].rows) == ("cursor", 0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_row_deleted_then_given_again_is_kept(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    record = dict(account.builder.data["cost_entries"][2])
    delete(engine, THEN[0], cost_entries=[record["id"]])
    give(engine, THEN[1], "cost_entries", {**record, "amount_cents": 424_242})
    # Both happened before this run, which reads the row first and the tombstone after: the
    # row's updated_at is later than deleted_at, so the tombstone leaves it (SEMANTICS R34).
    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt)}
    assert (reports[DELETIONS].rows, reports[DELETIONS].deleted) == (1, 0)
    amounts = {row["id"]: row["amount_cents"] for row in stored(target, fmt, "cost_entries")}
    assert amounts[record["id"]] == 424_242
    assert_store_equals_service(target, fmt, base_url, account.token)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_row_given_again_then_deleted_is_removed(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    record = dict(account.builder.data["cost_entries"][2])
    give(engine, THEN[0], "cost_entries", {**record, "amount_cents": 424_242})
    delete(engine, THEN[1], cost_entries=[record["id"]])
    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt)}
    assert reports["cost_entries"].rows == 0  # no longer served
    assert (reports[DELETIONS].rows, reports[DELETIONS].deleted) == (1, 1)
    assert record["id"] not in {row["id"] for row in stored(target, fmt, "cost_entries")}
    assert_store_equals_service(target, fmt, base_url, account.token)


@pytest.mark.parametrize("fmt", FORMATS)
def test_rows_and_tombstones_end_as_served_whichever_walk_sees_them_first(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    """The two walks of a run taken apart, in each order, over a row deleted then given
    again (`back`) and a row given again then deleted (`gone`)."""
    rows_first, tombstones_first = (target_for(tmp_path / name, fmt) for name in ("a", "b"))
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, rows_first, fmt)
        pull(api, tombstones_first, fmt)
    back, gone = (dict(account.builder.data["cost_entries"][n]) for n in (2, 4))
    delete(engine, THEN[0], cost_entries=[back["id"]])
    give(engine, THEN[1], "cost_entries", {**back, "amount_cents": 424_242})
    give(engine, THEN[0], "cost_entries", {**gone, "amount_cents": 515_151})
    delete(engine, THEN[1], cost_entries=[gone["id"]])

    with Client(base_url, account.token, page_size=2) as api:
        # Rows first, as if a run stopped before its deletions: `back` is stored as given
        # again; the next run applies both tombstones, and `back` outlives its own.
        store = open_store(rows_first, fmt)
        try:
            assert pull_resource(api, store, cost_resource()).rows == 1
        finally:
            store.close()
        amounts = {r["id"]: r["amount_cents"] for r in stored(rows_first, fmt, "cost_entries")}
        assert (amounts[back["id"]], amounts[gone["id"]]) == (424_242, 10_004)
        reports = {r.name: r for r in pull(api, rows_first, fmt)}
        assert (reports[DELETIONS].rows, reports[DELETIONS].deleted) == (2, 1)

        # Tombstones first: both rows as first loaded are removed; the rows walk then
        # stores `back` as given again.
        store = open_store(tombstones_first, fmt)
        try:
            assert pull_deletions(api, store).deleted == 2
        finally:
            store.close()
        ids = {row["id"] for row in stored(tombstones_first, fmt, "cost_entries")}
        assert not ids & {back["id"], gone["id"]}
        reports = {r.name: r for r in pull(api, tombstones_first, fmt)}
        assert (reports["cost_entries"].rows, reports[DELETIONS].rows) == (1, 0)
    for target in (rows_first, tombstones_first):
        assert_store_equals_service(target, fmt, base_url, account.token)


def forget_cursors(target: Path, fmt: Format) -> None:
    """Leave the store as the previous version of `airoi pull` left it after a finished
    walk: the largest updated_at of each list, no cursor, and no walk of /deletions."""
    if fmt == "duckdb":
        conn = duckdb.connect(str(target))
        try:
            conn.execute("DELETE FROM _airoi_state WHERE resource = ?", [DELETIONS])
            conn.execute("UPDATE _airoi_state SET cursor = NULL")
        finally:
            conn.close()
        return
    path = target / "_airoi_state.json"
    saved = json.loads(path.read_text())
    saved.pop(DELETIONS, None)
    path.write_text(
        json.dumps(
            {
                name: {
                    "updated_since": state["updated_since"],
                    "walk_since": None,
                    "cursor": None,
                    "walk_max": None,
                }
                for name, state in saved.items()
            }
        )
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_store_of_the_previous_version_asks_from_updated_since_once(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    forget_cursors(target, fmt)
    # A deletion the previous version never applied: the first run walks /deletions whole.
    delete(engine, THEN[0], cost_entries=[account.cost_entries[0]])

    counting = Counting()
    with Client(base_url, account.token, page_size=2, transport=counting) as api:
        first = {r.name: r for r in pull(api, target, fmt)}
        # The rows at the remembered moment come again (the inclusive bound), once.
        assert first["cost_entries"].start == "updated_since"
        assert first["cost_entries"].since == "2026-06-01T09:00:00.000Z"
        assert counting.rows["cost_entries"] == 6
        assert (first[DELETIONS].start, first[DELETIONS].deleted) == ("full", 1)
        assert_store_equals_service(target, fmt, base_url, account.token)
        counting.reset()
        second = {r.name: r for r in pull(api, target, fmt)}
    assert {second[name].start for name in second if name != "budgets"} == {"cursor"}
    assert counting.rows == Counter({"budgets": 3})
    assert_store_equals_service(target, fmt, base_url, account.token)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_refused_cursor_falls_back_to_updated_since_saying_so(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # A store pulled from another server, or a service whose cursor secret changed (R13):
    # here the remembered cursor of cost_entries is one of another list, which is refused.
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    store = open_store(target, fmt)
    try:
        foreign = store.state("initiatives").cursor
        store.apply_page(
            cost_resource(), [], replace(store.state("cost_entries"), cursor=foreign), done=True
        )
    finally:
        store.close()
    new_id = account.builder.cost_entry(account.initiatives[0], amount_cents=1, currency="USD")
    account.load(engine, LATER)

    said: list[str] = []
    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt, notice=said.append)}
        (notice,) = said
        assert notice.startswith(
            "cost_entries: asking from updated_since 2026-06-01T09:00:00.000Z instead, as the "
            "service refused the position this store remembered: 400: The cursor was issued "
            "by another endpoint (initiatives); a cursor only continues the list it came from."
        )
        # From the largest updated_at stored, inclusive: the first load's rows, and the new.
        assert (reports["cost_entries"].start, reports["cost_entries"].rows) == (
            "updated_since",
            8,
        )
        assert reports["cost_entries"].refused is not None
        assert new_id in {row["id"] for row in stored(target, fmt, "cost_entries")}
        assert_store_equals_service(target, fmt, base_url, account.token)
        # The walk made a cursor of its own: the next run uses it, and says nothing.
        said.clear()
        again = {r.name: r for r in pull(api, target, fmt, notice=said.append)}
    assert said == []
    assert (again["cost_entries"].start, again["cost_entries"].rows) == ("cursor", 0)


def test_pull_says_on_stderr_what_it_refused_and_what_it_removed(
    base_url: str, account: Account, engine: Engine, tmp_path: Path
) -> None:
    target = tmp_path / "airoi.duckdb"
    argv = [sys.executable, "-m", "airoi", "pull", "--base-url", base_url, "--to", str(target)]
    env = {**os.environ, "AIROI_TOKEN": account.token, "COLUMNS": "400"}
    first = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    conn = duckdb.connect(str(target))
    try:
        conn.execute("UPDATE _airoi_state SET cursor = 'bogus' WHERE resource = 'metrics'")
    finally:
        conn.close()
    delete(engine, THEN[0], cost_entries=account.cost_entries[:2])
    second = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    assert second.returncode == 0, second.stderr
    refused = [line for line in second.stderr.splitlines() if "refused" in line]
    assert len(refused) == 1
    assert refused[0].startswith(
        "metrics: asking from updated_since 2026-06-01T09:00:00.000Z instead, as the service "
        "refused the position this store remembered: 400: The cursor parameter is not a "
        "cursor this endpoint issued;"
    )
    assert "Removed 2 rows deleted on the server (2 deletions read)." in second.stdout
    assert account.token not in second.stdout + second.stderr


class Interrupted(RuntimeError):
    pass


class InterruptAfter(httpx.BaseTransport):
    """The real transport, until the `limit`-th request (of those whose path ends with `path`,
    when given): then the run is cut off."""

    def __init__(self, limit: int, path: str = "") -> None:
        self.inner = httpx.HTTPTransport()
        self.limit = limit
        self.path = path
        self.count = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith(self.path):
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
    assert reports["initiatives"].rows == 0  # its walk had ended: nothing changed since
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


@pytest.mark.parametrize("fmt", FORMATS)
def test_deletions_resume_after_the_last_batch_written(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    doomed = account.cost_entries[:5]
    delete(engine, THEN[0], cost_entries=doomed)
    # Seven lists, one page each with nothing changed; two pages of tombstones are written
    # one by one, and the request for the third is cut off.
    cut = InterruptAfter(limit=7 + 3)
    with (
        Client(base_url, account.token, page_size=2, transport=cut) as api,
        pytest.raises(Interrupted),
    ):
        pull(api, target, fmt, flush_rows=1, batch_rows=1)
    costs = {row["id"] for row in stored(target, fmt, "cost_entries")}
    assert len(costs) == len(account.cost_entries) - 4
    assert costs > set(account.cost_entries) - set(doomed)

    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt)}
    # The tombstones after the last batch written, and only those, each applied once.
    assert reports[DELETIONS].resumed
    assert (reports[DELETIONS].rows, reports[DELETIONS].deleted) == (1, 1)
    assert_store_equals_service(target, fmt, base_url, account.token)


def test_a_failure_applying_tombstones_keeps_nothing_half_done(
    base_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The rows removed and the position after their tombstones are written together."""
    target = tmp_path / "airoi.duckdb"
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target)
    delete(engine, THEN[0], cost_entries=account.cost_entries[:4])
    real_save = CopyTables._save_state

    def failing_save(self: CopyTables, name: str, state: Any) -> None:
        real_save(self, name, state)
        if name == DELETIONS and self.count("cost_entries") < 5:
            raise Interrupted("after the rows were removed, before the commit")

    monkeypatch.setattr(CopyTables, "_save_state", failing_save)
    with Client(base_url, account.token, page_size=2) as api, pytest.raises(Interrupted):
        pull(api, target, batch_rows=1)
    # The first two tombstones went in; the next batch's removal was rolled back with it.
    assert len(stored(target, "duckdb", "cost_entries")) == 5
    monkeypatch.undo()
    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target)}
    assert (reports[DELETIONS].rows, reports[DELETIONS].deleted) == (2, 2)
    assert_store_equals_service(target, "duckdb", base_url, account.token)


def test_interruption_inside_a_page_keeps_nothing_half_written(
    base_url: str, account: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure while writing rolls back the rows and the state together."""
    target = tmp_path / "airoi.duckdb"
    real_upsert = CopyTables._upsert
    calls = {"n": 0}

    def failing_upsert(self: Any, table: str, key: str, rows: list[dict[str, Any]]) -> None:
        calls["n"] += 1
        real_upsert(self, table, key, rows)
        if table == "cost_entries" and calls["n"] == 4:
            raise Interrupted("after the insert, before the commit")

    monkeypatch.setattr(CopyTables, "_upsert", failing_upsert)
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
def test_tombstones_of_a_list_not_pulled_are_passed_over(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # SEMANTICS R34: a pull of some lists reads every tombstone; those of a list the store
    # does not hold remove nothing (a DuckDB store failed on them, on every run after).
    target = target_for(tmp_path, fmt)
    costs_only = choose_resources("cost_entries")
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt, resources=costs_only)
    doomed = account.initiatives[2]
    before = {r["id"]: r["initiative_id"] for r in stored(target, fmt, "cost_entries")}
    delete(engine, THEN[0], initiatives=[doomed])
    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt, resources=costs_only)}
    gone = {row_id for row_id, owner in before.items() if owner == doomed}
    assert gone and reports[DELETIONS].deleted == len(gone)
    assert {row["id"] for row in stored(target, fmt, "cost_entries")} == set(before) - gone
    with Client(base_url, account.token, page_size=2) as api:
        again = {r.name: r for r in pull(api, target, fmt, resources=costs_only)}
    assert (again[DELETIONS].start, again[DELETIONS].rows) == ("cursor", 0)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_budgets_walk_cut_off_starts_over(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # Budgets are figures of a moment, read whole: a walk cut off after its first page
    # staged is not continued on the next run, where a load since has changed one row and
    # removed another (SEMANTICS R34: an initiative's tombstone means its budget row is gone).
    target = target_for(tmp_path, fmt)
    with (
        Client(
            base_url, account.token, page_size=2, transport=InterruptAfter(2, "/budgets")
        ) as api,
        pytest.raises(Interrupted),
    ):
        pull(api, target, fmt, batch_rows=1)
    budgeted, doomed = account.initiatives[0], account.initiatives[1]
    delete(engine, THEN[0], initiatives=[doomed])
    give(
        engine,
        THEN[1],
        "cost_entries",
        {"id": 990_001, "initiative_id": budgeted, "amount_cents": 7, "cost_category": "opex",
         "currency": "USD", "period_start": "2026-05-02"},
    )  # fmt: skip
    with Client(base_url, account.token, page_size=2) as api:
        reports = {r.name: r for r in pull(api, target, fmt, batch_rows=1)}
    assert reports["budgets"].start == "full"
    served = {row["initiative_id"]: row for row in raw_walk(base_url, account.token, "budgets")}
    kept = {row["initiative_id"]: row for row in stored(target, fmt, "budgets")}
    assert sorted(kept) == sorted(served) and doomed not in kept
    assert kept[budgeted]["opex_actual_cents"] == served[budgeted]["opex_actual_cents"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_copy_of_another_account_is_not_continued(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # SEMANTICS R13: the service refuses a cursor issued to another account. A copy whose
    # positions are another account's is not continued from updated_since (which put one
    # account's rows beside the other's, or copied nothing): the pull stops, writing nothing.
    other = BundleBuilder(first_id=5000)
    theirs = other.account(name="Theirs")
    their_token = other.token(
        other.user(theirs, email="them@example.com"), secret="airoi_theirs-" + "y" * 37
    )
    other.initiative(theirs, title="Theirs only")
    other.load(engine, now=LATER)
    target = target_for(tmp_path, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt)
    before = {r.name: stored(target, fmt, r.name) for r in RESOURCES}
    with (
        Client(base_url, their_token, page_size=2) as api,
        pytest.raises(AnotherAccountsCopy) as refused,
    ):
        pull(api, target, fmt)
    assert refused.value.status == 400
    assert str(refused.value).startswith(
        "400: the copy of initiatives here is of another account than this token's"
    )
    assert {r.name: stored(target, fmt, r.name) for r in RESOURCES} == before
    # The words the client knows the refusal by are the service's own.
    assert ANOTHER_ACCOUNTS_CURSOR in refused.value.body["error"]["message"]  # type: ignore[index]
    # A list with no position of its own (budgets, read whole) is refused all the same,
    # before anything is written: its rows joined the other account's.
    budgets = [r for r in RESOURCES if r.name == "budgets"]
    with (
        Client(base_url, their_token, page_size=2) as api,
        pytest.raises(AnotherAccountsCopy, match=r"another account .* nothing was written"),
    ):
        pull(api, target, fmt, resources=budgets)
    assert {r.name: stored(target, fmt, r.name) for r in RESOURCES} == before


def described(target: Path, fmt: Format, name: str) -> list[tuple[str, str]]:
    """Each column of the list in the copy, with the type a reader gets (CSV: the type the
    store wrote the column with, which the next run reads it back as)."""
    if fmt == "csv":
        written = json.loads((target / "_airoi_columns.json").read_text())[name]
        return [(column, kind) for column, kind in written]
    conn = duckdb.connect(str(target), read_only=True) if fmt == "duckdb" else duckdb.connect()
    source = name if fmt == "duckdb" else f"read_parquet('{target / f'{name}.parquet'}')"
    query = f"DESCRIBE SELECT * FROM {source}"  # noqa: S608
    try:
        return [(row[0], row[1]) for row in conn.execute(query).fetchall()]
    finally:
        conn.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_list_with_no_row_is_an_empty_table_of_its_columns(
    base_url: str, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # A list the account has no row of is still there to read: SELECT * FROM decisions (or
    # read_parquet('decisions.parquet')) finds it empty, not missing, with the list's columns
    # and their types, which the rows given later fill.
    b = BundleBuilder(first_id=7000)
    acct = b.account(name="New")
    token = b.token(b.user(acct, role="owner"), secret="airoi_newacct-" + "n" * 36)
    b.load(engine, now=FIRST_LOAD)
    target = target_for(tmp_path, fmt)
    with Client(base_url, token, page_size=2) as api:
        first = by_name(pull(api, target, fmt))
    assert first == dict.fromkeys(first, 0)
    for resource in RESOURCES:
        assert stored(target, fmt, resource.name) == [], resource.name
        columns = [column for column, _ in described(target, fmt, resource.name)]
        # SPEC 2's fields, each object's flattened with "_" (airoi.client.column_types).
        assert columns == [path.replace(".", "_") for path in COLUMNS[resource.name]]
    costs = dict(described(target, fmt, "cost_entries"))
    assert (costs["amount_cents"], costs["period_start"]) == ("BIGINT", "DATE")
    assert costs["updated_at"] == "TIMESTAMP WITH TIME ZONE"
    assert costs["is_estimated"] == "BOOLEAN"

    # A copy an earlier version made has no table (file) for a list that had no row: the next
    # run, with nothing changed, makes it.
    if fmt == "duckdb":
        with duckdb.connect(str(target)) as conn:
            conn.execute("DROP TABLE decisions")
    else:
        (target / f"decisions.{fmt}").unlink()
    with Client(base_url, token, page_size=2) as api:
        pull(api, target, fmt)
    assert stored(target, fmt, "decisions") == []

    # Rows come later: they fill the tables, whose columns are those a first pull of them
    # makes.
    initiative = b.initiative(acct, title="First", currency="USD")
    b.cost_entry(initiative, amount_cents=1_234, currency="USD", period_start="2026-02-01")
    b.decision(acct, initiative_id=initiative, decided_at="2026-05-01T10:00:00Z")
    b.load(engine, now=LATER)
    with Client(base_url, token, page_size=2) as api:
        pull(api, target, fmt)
        fresh = tmp_path / "fresh"
        pull(api, target_for(fresh, fmt), fmt)
    assert [row["amount_cents"] for row in stored(target, fmt, "cost_entries")] == [1_234]
    assert [row["initiative_id"] for row in stored(target, fmt, "decisions")] == [initiative]
    for resource in RESOURCES:
        assert described(target, fmt, resource.name) == described(
            target_for(fresh, fmt), fmt, resource.name
        ), resource.name
        assert stored(target, fmt, resource.name) == stored(
            target_for(fresh, fmt), fmt, resource.name
        ), resource.name


def other_account(engine: Engine, *, with_costs: bool = False) -> str:
    """A second account with one initiative (so a budget row) and nothing else: none of its
    lists but initiatives has a row; its token."""
    other = BundleBuilder(first_id=5000)
    theirs = other.account(name="Theirs")
    token = other.token(
        other.user(theirs, email="them@example.com"), secret="airoi_theirs-" + "y" * 37
    )
    initiative = other.initiative(theirs, title="Theirs only")
    if with_costs:
        other.cost_entry(initiative, amount_cents=5, currency="USD")
    other.load(engine, now=LATER)
    return token


def chosen(*names: str) -> list[Any]:
    return [r for r in RESOURCES if r.name in names]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    ("theirs", "ours", "full_refresh"),
    [
        # Their copy holds lists with no position of their own: an empty list and budgets.
        (("integrations", "budgets"), ("integrations",), False),
        (("budgets",), ("budgets",), False),
        # A list of their copy started over: the copy's other lists stay theirs.
        (("cost_entries", "budgets"), ("cost_entries",), True),
    ],
)
def test_a_copy_with_no_position_of_its_own_is_not_taken_over_by_another_account(
    base_url: str,
    account: Account,
    engine: Engine,
    tmp_path: Path,
    fmt: Format,
    theirs: tuple[str, ...],
    ours: tuple[str, ...],
    full_refresh: bool,
) -> None:
    # SEMANTICS R13: a copy holds one account. Their budgets (a position of no list) and an
    # empty list gave the check no position to ask with, and our rows joined theirs, exit 0.
    their_token = other_account(engine)
    target = target_for(tmp_path, fmt)
    with Client(base_url, their_token, page_size=2) as api:
        pull(api, target, fmt, resources=chosen(*theirs))
    before = {name: stored(target, fmt, name) for name in theirs}
    assert [row["initiative_id"] for row in before["budgets"]] == [5002]
    with (
        Client(base_url, account.token, page_size=2) as api,
        pytest.raises(AnotherAccountsCopy, match=r"another account .* nothing was written"),
    ):
        pull(api, target, fmt, resources=chosen(*ours), full_refresh=full_refresh)
    assert {name: stored(target, fmt, name) for name in theirs} == before
    # Their own token goes on as before.
    with Client(base_url, their_token, page_size=2) as api:
        pull(api, target, fmt, resources=chosen(*theirs))
    assert {name: stored(target, fmt, name) for name in theirs} == before


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_whole_copy_started_over_becomes_the_tokens_accounts(
    base_url: str, account: Account, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # --full-refresh of every list (and /deletions) replaces the whole copy: nothing of the
    # other account stays, so it is not refused, and the copy then goes on as the token's.
    their_token = other_account(engine)
    target = target_for(tmp_path, fmt)
    with Client(base_url, their_token, page_size=2) as api:
        pull(api, target, fmt)
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target, fmt, full_refresh=True)
        assert_store_equals_service(target, fmt, base_url, account.token)
        again = by_name(pull(api, target, fmt))
    assert again == dict.fromkeys(again, 0) | {"budgets": 3}
    assert_store_equals_service(target, fmt, base_url, account.token)
    with (
        Client(base_url, their_token, page_size=2) as api,
        pytest.raises(AnotherAccountsCopy),
    ):
        pull(api, target, fmt, resources=chosen("budgets"))


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_copy_started_over_by_an_account_with_nothing_forgets_the_account_before(
    base_url: str, engine: Engine, tmp_path: Path, fmt: Format
) -> None:
    # Their budgets-only copy remembers their account; started over whole by an account with
    # no initiative (no position to remember it by), it kept theirs, and refused its new
    # owner's next pull.
    their_token = other_account(engine)
    b = BundleBuilder(first_id=8000)
    empty_token = b.token(
        b.user(b.account(name="Empty"), role="owner"), secret="airoi_empty-" + "e" * 38
    )
    b.load(engine, now=LATER)
    target = target_for(tmp_path, fmt)
    with Client(base_url, their_token, page_size=2) as api:
        pull(api, target, fmt, resources=chosen("budgets"))
    with Client(base_url, empty_token, page_size=2) as api:
        pull(api, target, fmt, full_refresh=True)
        again = by_name(pull(api, target, fmt))
    assert again == dict.fromkeys(again, 0)
    assert all(stored(target, fmt, r.name) == [] for r in RESOURCES)
