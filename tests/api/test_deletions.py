"""Served deletions: every served row a load removes leaves a tombstone (SEMANTICS R34)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.load import load_bundle
from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
EARLY = datetime(2026, 3, 1, 9, 0, 0)
LATER = datetime(2026, 3, 2, 9, 0, 0)
LATEST = datetime(2026, 3, 3, 9, 0, 0)


def walk(client: Client, token: str, path: str, **params: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    params = {"limit": 2, **params}
    while True:
        response = client.get(f"/api/v1/{path}", params=params, headers=bearer(token))
        assert response.status_code == 200, response.text
        body = response.json()
        rows += body["data"]
        if not body["page"]["has_more"]:
            return rows
        params["cursor"] = body["page"]["next_cursor"]


def tombstones(client: Client, token: str, **params: Any) -> set[tuple[str, int]]:
    return {(row["resource"], row["id"]) for row in walk(client, token, "deletions", **params)}


def build() -> tuple[BundleBuilder, dict[str, Any]]:
    b = BundleBuilder()
    acct = b.account()
    owner = b.user(acct)
    token = b.token(owner)
    doomed = b.initiative(acct, title="Doomed")
    kept = b.initiative(acct, title="Kept")
    metric = b.metric(acct)
    ids = {
        "acct": acct,
        "token": token,
        "doomed": doomed,
        "kept": kept,
        "metric": metric,
        "doomed_cost": b.cost_entry(doomed),
        "doomed_value": b.value_entry(doomed),
        "doomed_reading": b.observation(initiative_id=doomed, metric_id=metric),
        "decision": b.decision(acct, initiative_id=doomed),
        "kept_cost": b.cost_entry(kept),
        "connection": b.integration(acct),
    }
    return b, ids


def test_an_initiative_leaves_tombstones_for_itself_and_its_rows(
    client: Client, engine: Engine
) -> None:
    b, ids = build()
    b.load(engine, now=EARLY)
    assert tombstones(client, ids["token"]) == set()
    report = load_bundle(engine, {"delete": {"initiatives": [ids["doomed"]]}}, now=LATER)
    assert report.deleted["initiatives"] == 1
    served = walk(client, ids["token"], "deletions")
    # Its entries and readings went with it (BUNDLE.md); its decision stays, unlinked, and is
    # no deletion: it is served again with a later updated_at.
    assert {(row["resource"], row["id"]) for row in served} == {
        ("initiatives", ids["doomed"]),
        ("cost_entries", ids["doomed_cost"]),
        ("value_entries", ids["doomed_value"]),
        ("observations", ids["doomed_reading"]),
    }
    assert {row["deleted_at"] for row in served} == {"2026-03-02T09:00:00.000Z"}
    (decision,) = walk(client, ids["token"], "decisions")
    assert decision["initiative_id"] is None
    assert decision["updated_at"] == "2026-03-02T09:00:00.000Z"


def test_rows_given_in_delete_leave_tombstones_by_list(client: Client, engine: Engine) -> None:
    b, ids = build()
    b.load(engine, now=EARLY)
    load_bundle(
        engine,
        {
            "delete": {
                "cost_entries": [ids["kept_cost"]],
                "metrics": [ids["metric"]],
                "integrations": [ids["connection"]],
            }
        },
        now=LATER,
    )
    token = ids["token"]
    assert tombstones(client, token) == {
        ("cost_entries", ids["kept_cost"]),
        ("metrics", ids["metric"]),
        ("integrations", ids["connection"]),
    }
    # The resource filter; updated_since matches deleted_at, inclusive.
    assert tombstones(client, token, resource="metrics") == {("metrics", ids["metric"])}
    assert len(tombstones(client, token, updated_since="2026-03-02T09:00:00Z")) == 3
    assert tombstones(client, token, updated_since="2026-03-02T09:00:00.001Z") == set()


def test_an_id_nothing_held_leaves_no_tombstone(client: Client, engine: Engine) -> None:
    b, ids = build()
    b.load(engine, now=EARLY)
    load_bundle(engine, {"delete": {"cost_entries": [987_654]}}, now=LATER)
    assert tombstones(client, ids["token"]) == set()


def test_a_row_deleted_and_given_in_one_bundle_is_not_deleted(
    client: Client, engine: Engine
) -> None:
    # The bundle's net effect: the row is there, so no copy should drop it.
    b, ids = build()
    b.load(engine, now=EARLY)
    again = {
        "delete": {"cost_entries": [ids["kept_cost"]]},
        "cost_entries": [{"id": ids["kept_cost"], "initiative_id": ids["kept"], "amount_cents": 7}],
    }
    load_bundle(engine, again, now=LATER)
    assert tombstones(client, ids["token"]) == set()


def test_a_row_given_again_after_its_deletion_is_served_after_its_tombstone(
    client: Client, engine: Engine
) -> None:
    b, ids = build()
    b.load(engine, now=EARLY)
    load_bundle(engine, {"delete": {"cost_entries": [ids["kept_cost"]]}}, now=LATER)
    back = {"cost_entries": [{"id": ids["kept_cost"], "initiative_id": ids["kept"]}]}
    load_bundle(engine, back, now=LATEST)
    (stone,) = walk(client, ids["token"], "deletions")
    (row,) = [r for r in walk(client, ids["token"], "cost_entries") if r["id"] == ids["kept_cost"]]
    assert row["updated_at"] > stone["deleted_at"]


def test_tombstones_are_the_accounts_own(client: Client, engine: Engine) -> None:
    b, ids = build()
    other = b.account(name="Other")
    other_token = b.token(b.user(other, name="Bob", email=None))
    other_initiative = b.initiative(other)
    b.load(engine, now=EARLY)
    load_bundle(engine, {"delete": {"initiatives": [other_initiative]}}, now=LATER)
    assert tombstones(client, ids["token"]) == set()
    assert tombstones(client, other_token) == {("initiatives", other_initiative)}
