"""The dlt source end to end: the running server into a DuckDB file, changes, deletions."""

# ruff: noqa: S608 - SQL names here are the fixed dataset and table names.

from __future__ import annotations

import json
import logging
from datetime import date, datetime
from pathlib import Path
from typing import Any

import dlt
import duckdb
import pytest
from dlt.pipeline.exceptions import PipelineStepFailed
from sqlalchemy import Engine

from airoi.client import Client
from airoi.client.dlt_source import (
    DELETED,
    INCREMENTAL,
    SAMPLE_ROWS,
    Samples,
    UnprovenPipelineCopy,
    airoi_source,
    api_datetime,
    rest_api_config,
)
from airoi.client.frames import LIST_FIELDS, flatten
from airoi.client.pull import pull
from airoi.client.walk import AnotherAccountsCopy
from airoi.load import load_bundle
from tests.client.conftest import ACCOUNT_ROWS, LATER, Account, raw_walk
from tests.client.test_pull import delete, other_account

RESOURCES = (*INCREMENTAL, "budgets")
DATASET = "airoi"
COSTS = f"{DATASET}.cost_entries"
VALUES = f"{DATASET}.value_entries"
# Later loads, each stamping what it changes later than the one before (SEMANTICS R32).
THEN = [datetime(2026, 6, 11, 9, 0), datetime(2026, 6, 12, 9, 0), datetime(2026, 6, 13, 9, 0)]


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
    """Load once; the rows (tombstones included) each resource read in this load."""
    info = pipeline.run(airoi_source(base_url, token, page_size=2))  # several pages each
    assert not info.has_failed_jobs
    counts = pipeline.last_trace.last_normalize_info.row_counts
    return {name: counts.get(name, 0) for name in RESOURCES}


def api_rows(base_url: str, token: str, name: str) -> list[dict[str, Any]]:
    """The served rows flattened as `airoi pull` and the source lay them out, by key."""
    params = {"include_sample": "true"} if name in ("initiatives", "budgets") else {}
    key = "initiative_id" if name == "budgets" else "id"
    rows = [flatten(row) for row in raw_walk(base_url, token, name, **params)]
    # A field a row leaves out is null in its columns: every row gets every field.
    fields = {field for row in rows for field in row}
    return sorted(({f: row.get(f) for f in fields} for row in rows), key=lambda r: r[key])


def _as_api(field: str, value: Any) -> Any:
    if isinstance(value, datetime):
        return api_datetime(value)
    if isinstance(value, date):
        return value.isoformat()
    if field in LIST_FIELDS and isinstance(value, str):  # a json column
        return json.loads(value)
    return value


def table(conn: duckdb.DuckDBPyConnection, name: str) -> list[dict[str, Any]]:
    query = f"SELECT * FROM {DATASET}.{name}"
    # Through Arrow: DuckDB's own conversion of TIMESTAMPTZ to Python needs pytz.
    rows: list[dict[str, Any]] = conn.execute(query).to_arrow_table().to_pylist()
    return rows


def loaded(conn: duckdb.DuckDBPyConnection, name: str, like: list[dict[str, Any]]) -> list[Any]:
    """The destination's rows of `name` in the API's spelling, with the fields of `like`."""
    key = "initiative_id" if name == "budgets" else "id"
    fields = {field for row in like for field in row}
    return [
        {field: _as_api(field, row.get(field)) for field in fields}
        for row in sorted(table(conn, name), key=lambda r: r[key])
    ]


def assert_destination_equals_api(pipeline: dlt.Pipeline, base_url: str, token: str) -> None:
    with pipeline.sql_client() as client:
        conn = client.native_connection
        for name in RESOURCES:
            served = api_rows(base_url, token, name)
            assert loaded(conn, name, served) == served, name


def columns(conn: duckdb.DuckDBPyConnection, schema: str, name: str) -> dict[str, str]:
    found = conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = ? AND table_name = ?",
        [schema, name],
    ).fetchall()
    return dict(found)


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
    assert first == ACCOUNT_ROWS
    assert_destination_equals_api(pipeline, base_url, account.token)
    with pipeline.sql_client() as client:
        conn = client.native_connection
        types = columns(conn, DATASET, "cost_entries")
        links = columns(conn, DATASET, "integrations")
        tables = {row[0] for row in conn.execute("SHOW ALL TABLES").fetchall()}
        costs = conn.execute(f"SELECT id, amount_cents FROM {COSTS} ORDER BY id").fetchall()
    assert (types["amount_cents"], types["account_amount_cents"]) == ("BIGINT", "BIGINT")
    assert (types["period_start"], types["reported_on"]) == ("DATE", "DATE")
    assert types["updated_at"] == "TIMESTAMP WITH TIME ZONE"
    assert links["metric_categories"] == "JSON"  # one column, not a child table
    assert not [name for name in tables if "__" in name]
    assert [amount for _, amount in costs] == [10_000 + n for n in range(7)]

    # Nothing changed: the first load stamped every row alike, and none is read again (R36).
    assert run(pipeline, base_url, account.token) == dict.fromkeys(INCREMENTAL, 0) | {"budgets": 3}

    # The loader changes one cost entry, adds one, and approves a draft value entry, later.
    changed_cost = account.builder.data["cost_entries"][3]
    changed_cost["amount_cents"] = 99_999
    new_cost = account.builder.cost_entry(account.initiatives[0], amount_cents=1, currency="USD")
    approved = account.builder.data["value_entries"][1]
    assert approved["status"] == "draft"
    approved["status"] = "approved"
    account.load(engine, LATER)

    second = run(pipeline, base_url, account.token)
    assert second == dict.fromkeys(INCREMENTAL, 0) | {
        "cost_entries": 2,
        "value_entries": 1,
        "budgets": 3,  # no updated_since: replaced whole
    }
    assert_destination_equals_api(pipeline, base_url, account.token)
    with pipeline.sql_client() as client:
        conn = client.native_connection
        costs = conn.execute(f"SELECT id, amount_cents FROM {COSTS}").fetchall()
        statuses = dict(conn.execute(f"SELECT id, status FROM {VALUES}").fetchall())
    assert len(costs) == 8
    assert len({cost_id for cost_id, _ in costs}) == 8  # merged by id: no duplicates
    amounts = dict(costs)
    assert (amounts[changed_cost["id"]], amounts[new_cost]) == (99_999, 1)
    assert statuses[approved["id"]] == "approved"

    third = run(pipeline, base_url, account.token)
    assert third == dict.fromkeys(INCREMENTAL, 0) | {"budgets": 3}


def test_deletions_are_applied_and_a_row_given_again_is_kept(
    pipeline: dlt.Pipeline, base_url: str, account: Account, engine: Engine
) -> None:
    run(pipeline, base_url, account.token)
    data = account.builder.data["cost_entries"]
    back, gone = dict(data[1]), dict(data[4])  # both of initiative 1
    doomed = account.initiatives[0]
    # `back` deleted then given again; `gone` given again then deleted (SEMANTICS R34).
    load_bundle(engine, {"delete": {"cost_entries": [back["id"]]}}, now=THEN[0])
    load_bundle(engine, {"cost_entries": [{**back, "amount_cents": 424_242}]}, now=THEN[1])
    load_bundle(engine, {"cost_entries": [{**gone, "amount_cents": 515_151}]}, now=THEN[0])
    load_bundle(engine, {"delete": {"cost_entries": [gone["id"]]}}, now=THEN[1])
    # An initiative, with its entries and readings; its decision stays.
    load_bundle(engine, {"delete": {"initiatives": [doomed]}}, now=THEN[2])

    counts = run(pipeline, base_url, account.token)
    # Rows, then tombstones: `back`, and the tombstones of `back`, `gone`, the initiative,
    # its three cost entries, three value entries and three readings.
    assert counts["cost_entries"] == 1 + 2 + 3
    assert counts["initiatives"] == 1
    assert_destination_equals_api(pipeline, base_url, account.token)
    with pipeline.sql_client() as client:
        conn = client.native_connection
        amounts = dict(conn.execute(f"SELECT id, amount_cents FROM {COSTS}").fetchall())
        flags = conn.execute(f"SELECT count(*) FROM {COSTS} WHERE {DELETED}").fetchone()
        budgets = conn.execute(f"SELECT initiative_id FROM {DATASET}.budgets").fetchall()
    assert amounts[back["id"]] == 424_242
    assert gone["id"] not in amounts
    assert flags == (0,)  # a tombstone is never stored
    assert doomed not in {initiative_id for (initiative_id,) in budgets}

    # Each tombstone is read once.
    assert run(pipeline, base_url, account.token) == dict.fromkeys(INCREMENTAL, 0) | {"budgets": 2}


def test_rows_and_tombstones_of_a_list_with_array_columns_load_in_one_run(
    pipeline: dlt.Pipeline, base_url: str, account: Account, engine: Engine
) -> None:
    # An integration's category lists are arrays; its tombstones were a table of three
    # columns whose arrays dlt filled as text, and the run failed (IncompatibleArrowSchema),
    # every run after it too: an account that ever deleted an integration could not load.
    run(pipeline, base_url, account.token)
    first = account.builder.data["integrations"][0]
    second = {**first, "id": first["id"] + 1, "metric_categories": ["ai_usage", "finance"]}
    load_bundle(engine, {"integrations": [second]}, now=THEN[0])
    load_bundle(engine, {"delete": {"integrations": [first["id"]]}}, now=THEN[1])
    assert run(pipeline, base_url, account.token)["integrations"] == 2  # a row, a tombstone
    assert_destination_equals_api(pipeline, base_url, account.token)
    with pipeline.sql_client() as client:
        kept = client.native_connection.execute(
            f"SELECT id, metric_categories FROM {DATASET}.integrations"
        ).fetchall()
    assert [(row_id, json.loads(categories)) for row_id, categories in kept] == [
        (second["id"], ["ai_usage", "finance"])
    ]


class Interrupted(RuntimeError):
    pass


def test_a_load_cut_off_keeps_nothing_and_the_next_one_loads_everything(
    pipeline: dlt.Pipeline,
    base_url: str,
    account: Account,
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # dlt keeps the resource state (the cursors) with the load it belongs to: a run that
    # fails part-way has moved no cursor, so nothing it read is lost.
    run(pipeline, base_url, account.token)
    load_bundle(engine, {"delete": {"cost_entries": [account.cost_entries[0]]}}, now=THEN[0])
    changed = {**account.builder.data["value_entries"][2], "amount_cents": 1}
    load_bundle(engine, {"value_entries": [changed]}, now=THEN[1])

    import airoi.client.dlt_source as source_module

    class CutOff(Client):
        asked = 0

        def get_json(self, path: str, params: Any = None) -> dict[str, Any]:
            CutOff.asked += 1
            if CutOff.asked > 6:  # part-way through the lists
                raise Interrupted("cut off")
            return super().get_json(path, params)

    monkeypatch.setattr(source_module, "Client", CutOff)
    with pytest.raises(PipelineStepFailed):
        pipeline.run(airoi_source(base_url, account.token, page_size=2))
    monkeypatch.undo()

    counts = run(pipeline, base_url, account.token)

    assert (counts["cost_entries"], counts["value_entries"]) == (1, 1)
    assert_destination_equals_api(pipeline, base_url, account.token)
    assert run(pipeline, base_url, account.token) == dict.fromkeys(INCREMENTAL, 0) | {"budgets": 3}


def test_a_refused_cursor_falls_back_to_updated_since(
    pipeline: dlt.Pipeline,
    base_url: str,
    account: Account,
    engine: Engine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    run(pipeline, base_url, account.token)
    with pipeline.managed_state() as state:
        kept = state["sources"]["airoi"]["resources"]["metrics"]["rows"]  # type: ignore[typeddict-item]
        kept["cursor"] = "not-a-cursor-of-this-service"
    new_metric = account.builder.metric(account.account_id, metric_key="m2", name="Second")
    account.load(engine, LATER)
    with caplog.at_level(logging.WARNING, logger="airoi.client.dlt_source"):
        counts = run(pipeline, base_url, account.token)
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "airoi.client.dlt_source"]
    assert warning.startswith(
        "metrics: asking from updated_since 2026-06-01T09:00:00.000Z, as the service refused "
        "the position this pipeline remembered: 400: "
    )
    # From the largest updated_at loaded, inclusive: the metric at that moment, and the new.
    assert counts["metrics"] == 2
    assert_destination_equals_api(pipeline, base_url, account.token)
    with pipeline.sql_client() as client:
        ids = client.native_connection.execute(f"SELECT id FROM {DATASET}.metrics").fetchall()
    assert new_metric in {metric_id for (metric_id,) in ids}
    assert run(pipeline, base_url, account.token)["metrics"] == 0


def _cause(failed: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The exception of `kind` that dlt's PipelineStepFailed wraps, if any."""
    seen: BaseException | None = failed
    while seen is not None and not isinstance(seen, kind):
        seen = seen.__cause__ or seen.__context__ or getattr(seen, "exception", None)
    return seen


def _destination(pipeline: dlt.Pipeline) -> dict[str, list[dict[str, Any]]]:
    """Every table of the dataset's lists, as loaded (those it has)."""
    with pipeline.sql_client() as client:
        conn = client.native_connection
        found = {row[0] for row in conn.execute("SHOW ALL TABLES").fetchall()}
        return {name: table(conn, name) for name in RESOURCES if name in found}


def test_another_accounts_token_after_the_secret_changed_loads_nothing(
    pipeline: dlt.Pipeline, base_url: str, rotated_url: str, account: Account, engine: Engine
) -> None:
    # SEMANTICS R13: after AIROI_SECRET_KEY is set or changed, every position the pipeline
    # keeps is refused as none of the service's, which says nothing of the account. With
    # another account's token the lists went on from updated_since: their rows joined ours.
    run(pipeline, base_url, account.token)
    before = _destination(pipeline)
    their_token = other_account(engine, with_costs=True)
    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(airoi_source(rotated_url, their_token, page_size=2))
    refused = _cause(failed.value, UnprovenPipelineCopy)
    assert isinstance(refused, UnprovenPipelineCopy), failed.value
    assert refused.resource in INCREMENTAL
    assert 'refresh="drop_sources"' in str(refused)
    assert _destination(pipeline) == before
    # The pipeline's own token goes on through the same service, then nothing is new.
    # (every row again: the first load stamped them all at the moment it goes on from)
    assert run(pipeline, rotated_url, account.token) == ACCOUNT_ROWS
    assert_destination_equals_api(pipeline, rotated_url, account.token)


def test_the_pipelines_own_token_after_the_secret_changed_goes_on(
    pipeline: dlt.Pipeline,
    base_url: str,
    rotated_url: str,
    account: Account,
    engine: Engine,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Its rows are served to it as loaded: each list goes on from updated_since (the rows
    # at that moment again, absorbed by the merge), the new row with them.
    run(pipeline, base_url, account.token)
    new_cost = account.builder.cost_entry(account.initiatives[1], amount_cents=3, currency="USD")
    account.load(engine, LATER)
    with caplog.at_level(logging.WARNING, logger="airoi.client.dlt_source"):
        counts = run(pipeline, rotated_url, account.token)
    warned = [r.getMessage() for r in caplog.records if r.name == "airoi.client.dlt_source"]
    # Each list's rows (no tombstone was read: their walks kept no position yet).
    assert sorted(line.split(":")[0] for line in warned) == sorted(INCREMENTAL)
    # From the largest updated_at loaded, inclusive: the first load's seven again, and the new.
    assert counts["cost_entries"] == ACCOUNT_ROWS["cost_entries"] + 1
    assert_destination_equals_api(pipeline, rotated_url, account.token)
    with pipeline.sql_client() as client:
        ids = client.native_connection.execute(f"SELECT id FROM {COSTS}").fetchall()
    assert new_cost in {cost_id for (cost_id,) in ids}


def test_a_pipeline_of_an_earlier_version_goes_on_saying_it_cannot_be_told(
    pipeline: dlt.Pipeline,
    base_url: str,
    rotated_url: str,
    account: Account,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # An earlier version kept no rows in the state: its positions refused, it goes on as it
    # did (a load of its own would otherwise be refused), and says so; from then on it keeps.
    run(pipeline, base_url, account.token)
    _strip_samples(pipeline)
    with caplog.at_level(logging.WARNING, logger="airoi.client.dlt_source"):
        run(pipeline, rotated_url, account.token)
    warned = [r.getMessage() for r in caplog.records if r.name == "airoi.client.dlt_source"]
    assert sum("loaded by an earlier version" in line for line in warned) == len(INCREMENTAL)
    assert_destination_equals_api(pipeline, rotated_url, account.token)
    with pipeline.managed_state() as state:
        kept = state["sources"]["airoi"]["resources"]["cost_entries"]  # type: ignore[typeddict-item]
        assert len(kept["samples"]["first"][1]) == ACCOUNT_ROWS["cost_entries"]


def _strip_samples(pipeline: dlt.Pipeline) -> None:
    """The state as an earlier version left it: positions, no rows kept."""
    with pipeline.managed_state() as state:
        for kept in state["sources"]["airoi"]["resources"].values():  # type: ignore[typeddict-item]
            kept.pop("samples", None)


def _refused_with(pipeline: dlt.Pipeline, source: Any, kind: type[BaseException]) -> Any:
    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(source)
    refused = _cause(failed.value, kind)
    assert isinstance(refused, kind), failed.value
    return refused


def test_a_pipeline_of_an_earlier_version_keeps_rows_once_its_position_is_continued(
    pipeline: dlt.Pipeline, base_url: str, rotated_url: str, account: Account, engine: Engine
) -> None:
    # Review: a run with nothing new wrote an empty "samples" into an earlier version's
    # state, which then read as a pipeline with no row loaded: another account's rows went
    # in unchecked, without the warning. A position the service continues tells the
    # token's account: the rows served from the list's latest stamp are kept then.
    run(pipeline, base_url, account.token)
    _strip_samples(pipeline)
    assert run(pipeline, base_url, account.token) == dict.fromkeys(INCREMENTAL, 0) | {"budgets": 3}
    with pipeline.managed_state() as state:
        resources = state["sources"]["airoi"]["resources"]  # type: ignore[typeddict-item]
        kept = {name: len(resources[name]["samples"]["last"][1]) for name in INCREMENTAL}
    assert kept == {name: ACCOUNT_ROWS[name] for name in INCREMENTAL}
    before = _destination(pipeline)
    their_token = other_account(engine, with_costs=True)
    _refused_with(
        pipeline, airoi_source(rotated_url, their_token, page_size=2), UnprovenPipelineCopy
    )
    assert _destination(pipeline) == before


def test_a_list_the_pipeline_holds_no_row_of_is_told_by_another(
    pipeline: dlt.Pipeline, base_url: str, rotated_url: str, account: Account, engine: Engine
) -> None:
    # Review: a list never loaded (or loaded empty) keeps no row, and budgets keep no
    # position: picked alone, another account's rows of them went in (`airoi pull` refuses).
    source = airoi_source(base_url, account.token, page_size=2)
    pipeline.run(source.with_resources("initiatives", "cost_entries"))
    before = _destination(pipeline)
    their_token = other_account(engine, with_costs=True)
    theirs = airoi_source(rotated_url, their_token, page_size=2)
    refused = _refused_with(pipeline, theirs.with_resources("value_entries"), UnprovenPipelineCopy)
    assert refused.resource == "value_entries"
    theirs = airoi_source(rotated_url, their_token, page_size=2)
    refused = _refused_with(pipeline, theirs.with_resources("budgets"), UnprovenPipelineCopy)
    assert refused.resource == "budgets"
    # Through the service whose cursors the pipeline keeps: refused as another account's.
    theirs = airoi_source(base_url, their_token, page_size=2)
    refused = _refused_with(pipeline, theirs.with_resources("budgets"), AnotherAccountsCopy)
    assert refused.resource == "budgets"
    assert _destination(pipeline) == before
    # The pipeline's own token loads both.
    ours = airoi_source(rotated_url, account.token, page_size=2)
    pipeline.run(ours.with_resources("value_entries", "budgets"))
    with pipeline.sql_client() as client:
        for name in ("value_entries", "budgets"):
            served = api_rows(rotated_url, account.token, name)
            assert loaded(client.native_connection, name, served) == served, name


def test_rows_of_one_moment_changed_since_do_not_stop_the_pipelines_own_token(
    pipeline: dlt.Pipeline, base_url: str, rotated_url: str, account: Account, engine: Engine
) -> None:
    # Review: 250 entries of one load, the first 100 (the rows kept of that moment, with the
    # seven before) changed since: they come later in the order, past a page of 100 from
    # that moment, and the pipeline's own token was refused. The page asked is the largest.
    added = [
        account.builder.cost_entry(account.initiatives[2], amount_cents=n, currency="USD")
        for n in range(250)
    ]
    account.load(engine, LATER)
    pipeline.run(airoi_source(base_url, account.token, page_size=500))
    for row in account.builder.data["cost_entries"]:
        if row["id"] not in added[100:]:  # the first load's seven too: every row kept
            row["amount_cents"] += 1
    account.load(engine, THEN[0])
    pipeline.run(airoi_source(rotated_url, account.token, page_size=500))
    assert_destination_equals_api(pipeline, rotated_url, account.token)


def test_a_position_refused_where_nothing_is_served_is_kept_to_be_told_again(
    pipeline: dlt.Pipeline, base_url: str, rotated_url: str, account: Account, engine: Engine
) -> None:
    # Review: the rows at a list's latest stamp deleted, then the secret changed: the walk
    # asked again from that stamp, nothing was served, and the state kept the stamp with
    # no cursor. No later run was refused, so none told its account: another store's (or
    # account's) rows under the pipeline's ids went in. The refused cursor is kept.
    initiative = account.builder.initiative(account.account_id, title="Short-lived")
    cost = account.builder.cost_entry(initiative, amount_cents=5, currency="USD")
    account.load(engine, LATER)
    run(pipeline, base_url, account.token)
    delete(engine, THEN[0], cost_entries=[cost], initiatives=[initiative])
    run(pipeline, base_url, account.token)
    run(pipeline, rotated_url, account.token)  # the pipeline's own token: goes on
    with pipeline.managed_state() as state:
        resources = state["sources"]["airoi"]["resources"]  # type: ignore[typeddict-item]
        cursors = {name: resources[name]["rows"]["cursor"] for name in INCREMENTAL}
    assert all(cursors.values()), cursors
    before = _destination(pipeline)
    their_token = other_account(engine, with_costs=True)
    theirs = airoi_source(rotated_url, their_token, page_size=2)
    refused = _refused_with(pipeline, theirs, UnprovenPipelineCopy)
    assert refused.resource == "initiatives"  # told by its rows, before any tombstone
    assert _destination(pipeline) == before
    assert_destination_equals_api(pipeline, rotated_url, account.token)


def test_deletions_after_the_secret_changed_do_not_stop_the_pipelines_own_token(
    pipeline: dlt.Pipeline, base_url: str, rotated_url: str, account: Account, engine: Engine
) -> None:
    # Review: the newest value entry deleted, the secret changed (the refused cursor kept:
    # nothing is served from its stamp), then every value entry deleted. The list's own
    # rows are gone; the other lists' tell the account, and the deletions are applied.
    newest = account.builder.value_entry(
        account.initiatives[0], amount_cents=9, currency="USD", status="approved"
    )
    account.load(engine, LATER)
    run(pipeline, base_url, account.token)
    delete(engine, THEN[0], value_entries=[newest])
    run(pipeline, rotated_url, account.token)
    rest = [row["id"] for row in account.builder.data["value_entries"] if row["id"] != newest]
    delete(engine, THEN[1], value_entries=rest)
    for _ in range(2):
        run(pipeline, rotated_url, account.token)
    assert_destination_equals_api(pipeline, rotated_url, account.token)


def test_an_emptied_list_does_not_stop_the_pipelines_own_token(
    pipeline: dlt.Pipeline, base_url: str, rotated_url: str, account: Account, engine: Engine
) -> None:
    # Review: every value entry deleted (the rows the list keeps gone), then the secret
    # changed: the list's own rows tell nothing, and another list's tell the account.
    run(pipeline, base_url, account.token)
    values = [row["id"] for row in account.builder.data["value_entries"]]
    delete(engine, THEN[0], value_entries=values)
    run(pipeline, base_url, account.token)
    run(pipeline, rotated_url, account.token)
    assert_destination_equals_api(pipeline, rotated_url, account.token)


def test_a_list_keeps_its_first_rows_and_the_first_at_its_latest_moment() -> None:
    # What a page served from each moment begins with ((updated_at, id) order), so one of
    # them is found again there unless changed since: 100 of each end, each row once.
    def rows(moment: str, ids: range) -> list[dict[str, Any]]:
        return [{"id": i, "created_at": f"c{i}", "updated_at": moment} for i in ids]

    one, two, three = (f"2026-06-0{day}T09:00:00.000Z" for day in (1, 2, 3))
    saved: dict[str, Any] = {}
    samples = Samples(saved)
    assert samples.known  # a new pipeline keeps them from its first load
    samples.add(rows(one, range(1, 151)))
    samples.add(rows(one, range(141, 151)))  # the same moment asked again (inclusive)
    assert saved["samples"]["first"] == [one, [[i, f"c{i}"] for i in range(1, 101)]]
    assert saved["samples"]["last"] == saved["samples"]["first"]
    samples.add(rows(two, range(300, 302)) + rows(three, range(400, 400 + SAMPLE_ROWS + 5)))
    assert saved["samples"]["first"][1][0] == [1, "c1"]  # the first never move
    assert saved["samples"]["last"] == [three, [[i, f"c{i}"] for i in range(400, 500)]]
    # A state of an earlier version (a position, no samples) cannot be told.
    assert not Samples({"rows": {"cursor": "c", "updated_since": one}}).known


def test_a_dlt_copy_and_a_pull_copy_have_the_same_columns(
    pipeline: dlt.Pipeline, base_url: str, account: Account, engine: Engine, tmp_path: Path
) -> None:
    # One naming of nested columns: `owner_id`, `source_type`, `current_version_set_by_name`,
    # the bundle's own flat names, in both; arrays one column each.
    load_bundle(engine, {"delete": {"cost_entries": [account.cost_entries[0]]}}, now=THEN[0])
    run(pipeline, base_url, account.token)
    target = tmp_path / "pulled.duckdb"
    with Client(base_url, account.token, page_size=2) as api:
        pull(api, target)
    conn = duckdb.connect(str(target), read_only=True)
    try:
        pulled = {name: set(columns(conn, "main", name)) for name in RESOURCES}
    finally:
        conn.close()
    with pipeline.sql_client() as client:
        conn = client.native_connection
        copied = {
            name: {c for c in columns(conn, DATASET, name) if not c.startswith("_dlt_")}
            for name in RESOURCES
        }
    copied = {name: names - {DELETED} for name, names in copied.items()}
    assert copied == pulled
    assert {"owner_id", "owner_name"} <= pulled["initiatives"]
    assert {"source_type", "source_ref", "source_connection_id"} <= pulled["cost_entries"]
    assert {"current_version_effective_from", "current_version_set_by_name"} <= pulled["budgets"]
    assert {"primary_source_categories", "metric_categories"} <= pulled["integrations"]
