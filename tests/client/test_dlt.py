"""The dlt source end to end: the running server into a DuckDB file, a change, a second load."""

# ruff: noqa: S608 - SQL names here are the fixed dataset and table names.

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime
from pathlib import Path
from typing import Any

import dlt
import duckdb
import pytest
from sqlalchemy import Engine

from airoi.client.dlt_source import INCREMENTAL, airoi_source, api_datetime, rest_api_config
from tests.client.conftest import LATER, Account, raw_walk

RESOURCES = (*INCREMENTAL, "budgets")
DATASET = "airoi"
COSTS = f"{DATASET}.cost_entries"
VALUES = f"{DATASET}.value_entries"


@pytest.fixture
def pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dlt.Pipeline:
    """A pipeline whose state, settings and destination all live in `tmp_path`."""
    monkeypatch.setenv("RUNTIME__DLTHUB_TELEMETRY", "false")  # no network here
    monkeypatch.setenv("RUNTIME__LOG_LEVEL", "WARNING")
    monkeypatch.setenv("DLT_DATA_DIR", str(tmp_path / "dlt"))
    monkeypatch.setenv("DLT_PROJECT_DIR", str(tmp_path))
    pipeline = dlt.pipeline(
        pipeline_name="airoi_test",
        destination=dlt.destinations.duckdb(str(tmp_path / "warehouse.duckdb")),
        dataset_name=DATASET,
        pipelines_dir=str(tmp_path / "pipelines"),
    )
    # dlt reads its runtime settings once a process: they must have been these.
    assert not pipeline.run_context.runtime_config.dlthub_telemetry
    return pipeline


def run(pipeline: dlt.Pipeline, base_url: str, token: str) -> dict[str, int]:
    """Load once; the rows each resource's table received in this load (children apart)."""
    info = pipeline.run(airoi_source(base_url, token, page_size=2))  # several pages each
    assert not info.has_failed_jobs
    counts = pipeline.last_trace.last_normalize_info.row_counts
    return {name: counts.get(name, 0) for name in RESOURCES}


def api_rows(base_url: str, token: str, name: str) -> list[dict[str, Any]]:
    """The served rows as dlt lays them out: nested objects joined with `__`, by key."""
    params = {"include_sample": "true"} if name in ("initiatives", "budgets") else {}
    key = "initiative_id" if name == "budgets" else "id"

    def flat(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field, value in row.items():
            if isinstance(value, dict):
                out.update(flat(value, f"{prefix}{field}__"))
            else:
                out[prefix + field] = value
        return out

    rows = [flat(row) for row in raw_walk(base_url, token, name, **params)]
    # A null object is one null field, a present one several: every row gets every field.
    fields = {field for row in rows for field in row}
    return sorted(({f: row.get(f) for f in fields} for row in rows), key=lambda r: r[key])


def _as_api(value: Any) -> Any:
    if isinstance(value, datetime):
        return api_datetime(value)
    if isinstance(value, date):
        return value.isoformat()
    return value


def table(conn: duckdb.DuckDBPyConnection, name: str) -> list[dict[str, Any]]:
    query = f"SELECT * FROM {DATASET}.{name}"
    # Through Arrow: DuckDB's own conversion of TIMESTAMPTZ to Python needs pytz.
    rows: list[dict[str, Any]] = conn.execute(query).to_arrow_table().to_pylist()
    return rows


def loaded(conn: duckdb.DuckDBPyConnection, name: str, like: list[dict[str, Any]]) -> list[Any]:
    """The destination's rows of `name` in the API's spelling, with each of the fields of
    `like` (a column dlt never saw a value for is absent: null), arrays from child tables."""
    found = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", [DATASET]
    )
    present = {row[0] for row in found.fetchall()}
    key = "initiative_id" if name == "budgets" else "id"
    fields = {field for row in like for field in row}
    out = []
    for row in sorted(table(conn, name), key=lambda r: r[key]):
        shaped = {}
        for field in fields:
            if isinstance(like[0].get(field), list) or f"{name}__{field}" in present:
                shaped[field] = []
            else:
                shaped[field] = _as_api(row.get(field))
        shaped["_dlt_id"] = row["_dlt_id"]
        out.append(shaped)
    for field in fields:
        child = f"{name}__{field}"
        if child not in present:
            continue
        values: dict[str, list[Any]] = defaultdict(list)
        for item in sorted(table(conn, child), key=lambda r: r["_dlt_list_idx"]):
            values[item["_dlt_parent_id"]].append(item["value"])
        for shaped in out:
            shaped[field] = values.get(shaped["_dlt_id"], [])
    for shaped in out:
        del shaped["_dlt_id"]
    return out


def assert_destination_equals_api(pipeline: dlt.Pipeline, base_url: str, token: str) -> None:
    with pipeline.sql_client() as client:
        conn = client.native_connection
        for name in RESOURCES:
            served = api_rows(base_url, token, name)
            assert served, name
            assert loaded(conn, name, served) == served, name


def test_config_reads_the_api_as_spec_says() -> None:
    config = rest_api_config("http://h/api/v1", "t", start="2026-06-01T09:00:00Z")
    assert config["client"]["paginator"] == {
        "type": "cursor",
        "cursor_path": "page.next_cursor",
        "cursor_param": "cursor",
        "has_more_path": "page.has_more",
    }
    assert config["resource_defaults"]["endpoint"]["data_selector"] == "data"
    by_name = {r["name"]: r for r in config["resources"]}
    assert set(by_name) == set(RESOURCES)
    costs = by_name["cost_entries"]
    assert (costs["primary_key"], costs["write_disposition"]) == ("id", "merge")
    since = costs["endpoint"]["params"]["updated_since"]
    assert (since["cursor_path"], since["initial_value"]) == (
        "updated_at",
        "2026-06-01T09:00:00.000Z",  # spelt as the rows' updated_at, so strings compare right
    )
    assert by_name["budgets"]["write_disposition"] == "replace"
    assert "updated_since" not in by_name["budgets"]["endpoint"]["params"]


def test_incremental_loads_into_duckdb(
    pipeline: dlt.Pipeline, base_url: str, account: Account, engine: Engine
) -> None:
    first = run(pipeline, base_url, account.token)
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
    assert_destination_equals_api(pipeline, base_url, account.token)
    with pipeline.sql_client() as client:
        conn = client.native_connection
        types = dict(
            conn.execute(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_schema = ? AND table_name = 'cost_entries'",
                [DATASET],
            ).fetchall()
        )
        costs = conn.execute(f"SELECT id, amount_cents FROM {COSTS} ORDER BY id").fetchall()
    assert (types["amount_cents"], types["period_start"]) == ("BIGINT", "DATE")
    assert types["updated_at"] == "TIMESTAMP WITH TIME ZONE"
    assert [amount for _, amount in costs] == [10_000 + n for n in range(7)]

    # The loader changes one cost entry, adds one, and approves a draft value entry, later.
    changed_cost = account.builder.data["cost_entries"][3]
    changed_cost["amount_cents"] = 99_999
    new_cost = account.builder.cost_entry(account.initiatives[0], amount_cents=1, currency="USD")
    approved = account.builder.data["value_entries"][1]
    assert approved["status"] == "draft"
    approved["status"] = "approved"
    account.load(engine, LATER)

    second = run(pipeline, base_url, account.token)
    # The rows stamped at the first load's moment come again (the bound is inclusive) and
    # dlt drops them before they are written: only the changed rows are loaded.
    assert second == dict.fromkeys(INCREMENTAL, 0) | {
        "cost_entries": 2,
        "value_entries": 1,
        "budgets": 3,  # no updated_since: replaced whole
    }
    assert_destination_equals_api(pipeline, base_url, account.token)
    with pipeline.sql_client() as client:
        conn = client.native_connection
        loads = conn.execute(
            f"SELECT load_id FROM {DATASET}._dlt_loads WHERE status = 0 ORDER BY load_id"
        ).fetchall()
        second_load = loads[-1][0]
        costs = conn.execute(f"SELECT id, amount_cents, _dlt_load_id FROM {COSTS}").fetchall()
        statuses = dict(conn.execute(f"SELECT id, status FROM {VALUES}").fetchall())
    assert len(loads) == 2
    assert len(costs) == 8
    assert len({cost_id for cost_id, _, _ in costs}) == 8  # merged by id: no duplicates
    amounts = {cost_id: amount for cost_id, amount, _ in costs}
    assert (amounts[changed_cost["id"]], amounts[new_cost]) == (99_999, 1)
    assert {cost_id for cost_id, _, load in costs if load == second_load} == {
        changed_cost["id"],
        new_cost,
    }
    assert sum(amounts.values()) == sum(10_000 + n for n in range(7)) - 10_003 + 99_999 + 1
    assert statuses[approved["id"]] == "approved"
    assert len(statuses) == 6

    # Nothing changed since: the rows stamped at the remembered moment are dropped again.
    third = run(pipeline, base_url, account.token)
    assert third == dict.fromkeys(INCREMENTAL, 0) | {"budgets": 3}
