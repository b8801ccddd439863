"""The nine read endpoints: fields, filters, keyset pages, strict parameters, isolation.

SPEC 2, 4.A; SEMANTICS R3, R11-R15, R31.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine, text
from sqlalchemy.dialects import sqlite

from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
LISTS = [
    "initiatives",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "decisions",
    "integrations",
]
# SPEC 2.2 - 2.9, written out here from the specification (not from the code); the entries'
# reported_on and account_amount_cents are SEMANTICS R35's.
FIELDS = {
    "initiatives": """id title description hypothesis stage is_sample category priority source
        business_unit department gl_dimension_value owner confidence_score roi_time_horizon_years
        currency expected_capex_cents expected_opex_cents expected_cost_savings_cents
        expected_revenue_uplift_cents started_at went_live_at approved_at closed_at
        submitted_for_review_at created_at updated_at""",
    "cost_entries": """id initiative_id amount_cents currency cost_type cost_category period_start
        period_end vendor_id vendor_name description notes is_estimated locked source created_at
        updated_at reported_on account_amount_cents""",
    "value_entries": """id initiative_id amount_cents currency status counts_toward_roi entry_type
        period_start period_end is_estimated confidence_score quality_score notes provenance
        calculation_version formula_id source approved_at created_at updated_at reported_on
        account_amount_cents""",
    "metrics": """id metric_key name description metric_type unit currency_metric active created_at
        updated_at""",
    "observations": """id metric_id metric_key initiative_id value role baseline_method
        observed_at period_start period_end is_estimated sample_size quality_score source
        created_at updated_at""",
    "decisions": """id initiative_id subject_title outcome outcome_label rationale stage_before
        stage_after stage_changed decided_at decided_by next_review_on currency approved_value_cents
        cost_to_date_cents net_cents planned_value_cents planned_value_to_date_cents roi created_at
        updated_at""",
    "integrations": """id platform name description status auth_type last_sync_status last_synced_at
        reauth_required_at external_account_id external_account_name primary_source_categories
        metric_categories simulated connected_by created_at updated_at""",
}
DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
SECRETS = (
    "sk-live-SECRET-123",
    "refresh-SECRET-456",
    "token expired for SECRET user",
    "@example.com",
)


@dataclass
class World:
    token_a: str
    token_b: str
    ids_a: dict[str, set[int]]
    ids_b: dict[str, set[int]]
    initiative_a: int
    initiative_b: int


def _fill(b: BundleBuilder, account: int, name: str, ids: dict[str, set[int]]) -> int:
    owner = b.user(
        account, role="owner", name=f"{name} Owner", email=f"owner-{account}@example.com"
    )
    initiative = b.initiative(account, title=f"{name} triage bot", owner_id=owner, currency="USD")
    ids["initiatives"] = {initiative}
    ids["cost_entries"] = {
        b.cost_entry(initiative, amount_cents=1000 * k, period_start=f"2026-0{k}-01")
        for k in (1, 2)
    }
    ids["value_entries"] = {
        b.value_entry(initiative, status="approved"),
        b.value_entry(initiative, status="draft"),
    }
    metric = b.metric(account)
    ids["metrics"] = {metric}
    ids["observations"] = {
        b.observation(metric_id=metric, initiative_id=initiative, role="baseline", value=40.0)
    }
    ids["decisions"] = {b.decision(account, initiative_id=initiative, decided_by_id=owner)}
    ids["integrations"] = {
        b.integration(
            account,
            connected_by_id=owner,
            credentials={"api_key": SECRETS[0], "refresh_token": SECRETS[1]},
            settings={"region": "eu"},
            last_error=SECRETS[2],
        )
    }
    return initiative


@pytest.fixture
def world(engine: Engine) -> World:
    b = BundleBuilder()
    a, bb = b.account(name="Alpha"), b.account(name="Beta")
    ids_a: dict[str, set[int]] = {}
    ids_b: dict[str, set[int]] = {}
    init_a = _fill(b, a, "Alpha", ids_a)
    init_b = _fill(b, bb, "Beta", ids_b)
    owner_a = b.data["users"][0]["id"]
    owner_b = b.data["users"][1]["id"]
    token_a, token_b = b.token(owner_a), b.token(owner_b)
    b.load(engine)
    return World(token_a, token_b, ids_a, ids_b, init_a, init_b)


def get(client: Client, token: str, path: str, **params: Any) -> Any:
    response = client.get(f"/api/v1/{path}", params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    return response.json()


def refused(client: Client, token: str, path: str, status: int = 400, **params: Any) -> str:
    response = client.get(f"/api/v1/{path}", params=params, headers=bearer(token))
    assert response.status_code == status, response.text
    body = response.json()
    # SPEC 7's body, plus the request id that matches the response's X-Request-Id.
    assert body == {
        "error": {
            "status": status,
            "message": body["error"]["message"],
            "request_id": response.headers["x-request-id"],
        }
    }
    return str(body["error"]["message"])


@pytest.mark.parametrize("path", LISTS)
def test_rows_carry_every_spec_field(client: Client, world: World, path: str) -> None:
    body = get(client, world.token_a, path)
    assert set(body) == {"data", "page"}
    # SEMANTICS R36: the last page too carries the position after its last row.
    assert body["page"] == {
        "has_more": False,
        "next_cursor": None,
        "resume_cursor": body["page"]["resume_cursor"],
    }
    assert isinstance(body["page"]["resume_cursor"], str)
    assert body["data"]
    for row in body["data"]:
        assert set(row) == set(FIELDS[path].split())
        # SEMANTICS R3: every datetime in UTC, millisecond precision, Z.
        assert DATETIME.fullmatch(row["created_at"]) and DATETIME.fullmatch(row["updated_at"])


@pytest.mark.parametrize("path", LISTS)
def test_lists_show_only_the_token_holders_account(client: Client, world: World, path: str) -> None:
    for token, mine, theirs in (
        (world.token_a, world.ids_a, world.ids_b),
        (world.token_b, world.ids_b, world.ids_a),
    ):
        seen = {row["id"] for row in get(client, token, path)["data"]}
        assert seen == mine[path]
        assert not seen & theirs[path]


@pytest.mark.parametrize("path", LISTS)
def test_nothing_secret_is_served(client: Client, world: World, path: str) -> None:
    # SEMANTICS R15: no e-mail address, credential, stored setting or error prose.
    text = client.get(f"/api/v1/{path}", headers=bearer(world.token_a)).text
    for secret in SECRETS:
        assert secret not in text
    for key in ('"credentials"', '"settings"', '"last_error"', '"email"'):
        assert key not in text


def test_person_references_are_names_only(client: Client, world: World) -> None:
    initiative = get(client, world.token_a, "initiatives")["data"][0]
    assert initiative["owner"] == {"id": initiative["owner"]["id"], "name": "Alpha Owner"}
    decision = get(client, world.token_a, "decisions")["data"][0]
    assert decision["decided_by"]["name"] == "Alpha Owner"
    integration = get(client, world.token_a, "integrations")["data"][0]
    assert set(integration["connected_by"]) == {"id", "name"}


def test_single_initiative(client: Client, world: World) -> None:
    one = get(client, world.token_a, f"initiatives/{world.initiative_a}")
    listed = get(client, world.token_a, "initiatives")["data"][0]
    assert one == listed
    # SPEC 4.A.5: another account's id answers 404, never 403; so does an id nobody has.
    refused(client, world.token_a, f"initiatives/{world.initiative_b}", 404)
    refused(client, world.token_a, "initiatives/999999", 404)
    for bad in ("abc", "0", "-1", "1.5", "99999999999999999999"):
        refused(client, world.token_a, f"initiatives/{bad}", 400)


@pytest.mark.parametrize("path", ["cost_entries", "value_entries", "observations", "decisions"])
def test_initiative_filter(client: Client, world: World, path: str) -> None:
    rows = get(client, world.token_a, path, initiative_id=world.initiative_a)["data"]
    assert {r["id"] for r in rows} == world.ids_a[path]
    # SEMANTICS R31: a foreign or unknown initiative answers 404, not an empty list.
    refused(client, world.token_a, path, 404, initiative_id=world.initiative_b)
    refused(client, world.token_a, path, 404, initiative_id=987654)
    refused(client, world.token_a, path, 400, initiative_id="abc")
    # SEMANTICS R30: parameters (400) are judged before existence (404), so a cursor this
    # endpoint never issued is a 400 even beside a foreign initiative.
    refused(client, world.token_a, path, 400, initiative_id=world.initiative_b, cursor="bogus")


def test_derived_fields(client: Client, world: World) -> None:
    # SEMANTICS R14
    for row in get(client, world.token_a, "value_entries")["data"]:
        assert row["counts_toward_roi"] is (row["status"] == "approved")
    decision = get(client, world.token_a, "decisions")["data"][0]
    assert decision["outcome_label"] == "Continue"
    assert decision["stage_changed"] is False


@pytest.mark.parametrize("path", LISTS)
def test_unknown_and_repeated_parameters_are_refused(
    client: Client, world: World, path: str
) -> None:
    # SEMANTICS R12: a misspelt updated_sinse must not silently return everything.
    message = refused(client, world.token_a, path, updated_sinse="2026-01-01T00:00:00Z")
    assert "updated_sinse" in message
    response = client.get(f"/api/v1/{path}?limit=1&limit=2", headers=bearer(world.token_a))
    assert response.status_code == 400
    assert "limit" in response.json()["error"]["message"]


@pytest.mark.parametrize("limit", ["0", "501", "-5", "abc", "1e9", "2.5", ""])
def test_limit_outside_1_to_500_is_refused(client: Client, world: World, limit: str) -> None:
    # SEMANTICS R12, SPEC 8
    message = refused(client, world.token_a, "cost_entries", limit=limit)
    assert "limit" in message


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("value_entries", {"status": "approvedd"}),
        ("decisions", {"outcome": "kill"}),
        ("integrations", {"status": "broken"}),
        ("initiatives", {"include_sample": "maybe"}),
        ("cost_entries", {"period_from": "2026-13-01"}),
        ("cost_entries", {"period_to": "last week"}),
        ("initiatives/1/../2", {}),
    ],
)
def test_wrong_values_are_refused(
    client: Client, world: World, path: str, params: dict[str, str]
) -> None:
    response = client.get(f"/api/v1/{path}", params=params, headers=bearer(world.token_a))
    assert response.status_code in (400, 404)
    assert set(response.json()) == {"error"}
    if params:
        assert response.status_code == 400
        assert next(iter(params)) in response.json()["error"]["message"]


@pytest.mark.parametrize("since", ["1700000000", "2026-03-01", "yesterday", "2026-03-01T25:00:00Z"])
def test_updated_since_must_be_a_datetime(client: Client, world: World, since: str) -> None:
    # SEMANTICS R3
    message = refused(client, world.token_a, "metrics", updated_since=since)
    assert "updated_since" in message


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize("since", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_updated_since_beyond_the_datetime_range_in_utc_is_refused(
    client: Client, world: World, path: str, since: str
) -> None:
    # SEMANTICS R3, R12: well formed, but its UTC moment is before year 1 or after 9999.
    # Converting it to UTC raised OverflowError, answered 500.
    message = refused(client, world.token_a, path, updated_since=since)
    assert "updated_since" in message


@pytest.mark.parametrize("path", LISTS)
def test_updated_since_at_the_edges_of_the_datetime_range(
    client: Client, world: World, path: str
) -> None:
    # SEMANTICS R3: the earliest and latest moments that exist in UTC are served as asked.
    everything = get(client, world.token_a, path)["data"]
    assert everything
    earliest = get(client, world.token_a, path, updated_since="0001-01-01T00:00:00-01:00")
    assert earliest["data"] == everything
    latest = get(client, world.token_a, path, updated_since="9999-12-31T23:59:59+01:00")
    assert latest["data"] == []


@pytest.mark.parametrize("path", LISTS)
def test_updated_since_finer_than_a_millisecond_is_exact_on_both_stores(
    client: Client, world: World, path: str
) -> None:
    # SPEC 4.A.1 / SEMANTICS R3: inclusive. Rows are kept to the millisecond; a bound with
    # more digits leaves out a row kept at its millisecond, on SQLite (text) as on PostgreSQL.
    rows = get(client, world.token_a, path)["data"]
    stamp = rows[0]["updated_at"]  # '...:SS.mmmZ'
    before = [r["id"] for r in rows if r["updated_at"] < stamp]
    at_or_after = [r["id"] for r in rows if r["updated_at"] >= stamp]
    later = [r["id"] for r in rows if r["updated_at"] > stamp]
    assert at_or_after and not before
    for since, expected in (
        (stamp, at_or_after),
        (stamp[:-1] + "000Z", at_or_after),
        (stamp[:-1] + "000000Z", at_or_after),
        (stamp[:-1] + "999Z", later),  # 999 microseconds after the row's millisecond
        (stamp[:-1] + "000001Z", later),  # one nanosecond after it
    ):
        served = get(client, world.token_a, path, updated_since=since)["data"]
        assert [r["id"] for r in served] == expected, since


def test_a_lower_bound_past_the_last_millisecond_matches_nothing() -> None:
    from airoi.db.types import ServedTextLowerBound

    bind = ServedTextLowerBound().bind_processor(sqlite.dialect())
    assert bind(datetime(2026, 3, 1, 10, 0, 0, 300_999)) == "2026-03-01T10:00:00.301Z"
    assert bind(datetime(2026, 3, 1, 10, 0, 0, 300_000)) == "2026-03-01T10:00:00.300Z"
    assert bind(datetime(2026, 12, 31, 23, 59, 59, 999_001)) == "2027-01-01T00:00:00.000Z"
    past = bind(datetime(9999, 12, 31, 23, 59, 59, 999_001))
    assert past > "9999-12-31T23:59:59.999Z"


def _walk(client: Client, token: str, path: str, **params: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = get(client, token, path, **params, **({"cursor": cursor} if cursor else {}))
        rows.extend(page["data"])
        if not page["page"]["has_more"]:
            assert page["page"]["next_cursor"] is None
            return rows
        cursor = page["page"]["next_cursor"]
        assert cursor


def test_keyset_walk_orders_by_updated_at_then_id(client: Client, engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    # Ids deliberately out of updated_at order, with ties on updated_at broken by id.
    stamps = {
        50: "2026-03-01T09:00:00.000Z",
        10: "2026-03-01T10:00:00.000Z",
        40: "2026-03-01T10:00:00.000Z",
        30: "2026-03-01T10:00:00.001Z",
        20: "2026-02-01T00:00:00.000Z",
        60: "2026-03-02T00:00:00.000Z",
        70: "2026-03-01T10:00:00.000Z",
    }
    for entry_id, stamp in stamps.items():
        b.cost_entry(initiative, id=entry_id, updated_at=stamp, created_at="2026-01-01T00:00:00Z")
    b.load(engine, keep_stamps=True)
    for limit in (1, 2, 3, 500):
        rows = _walk(client, token, "cost_entries", limit=limit)
        assert [r["id"] for r in rows] == [20, 50, 10, 40, 70, 30, 60]
    # SPEC 4.A.1: updated_since is inclusive, to the millisecond; an offset is honoured.
    since = get(client, token, "cost_entries", updated_since="2026-03-01T10:00:00.000Z")["data"]
    assert [r["id"] for r in since] == [10, 40, 70, 30, 60]
    offset = get(client, token, "cost_entries", updated_since="2026-03-01T11:00:00.001+01:00")[
        "data"
    ]
    assert [r["id"] for r in offset] == [30, 60]
    naive = get(client, token, "cost_entries", updated_since="2026-03-01T10:00:00.001")["data"]
    assert [r["id"] for r in naive] == [30, 60]
    # The served updated_at is exactly what was stored.
    assert since[0]["updated_at"] == "2026-03-01T10:00:00.000Z"


@pytest.mark.postgresql
@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
def test_a_walk_is_exact_when_postgresql_holds_finer_than_milliseconds(
    client: Client, engine: Engine
) -> None:
    # SEMANTICS R13: the loader keeps milliseconds, but a row written another way may hold
    # microseconds; the cursor is made from the stored value, so no row comes twice.
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    for entry_id in (1, 2, 3, 4, 5):
        b.cost_entry(initiative, id=entry_id, created_at="2026-01-01T00:00:00Z")
    b.load(engine)
    # All within one millisecond, ids out of time order.
    micros = {5: 125_100, 3: 125_678, 4: 125_678, 1: 125_900, 2: 125_999}
    with engine.begin() as conn:
        for entry_id, micro in micros.items():
            conn.execute(
                text("UPDATE cost_entries SET updated_at = :at WHERE id = :id"),
                {"at": datetime(2026, 3, 1, 9, 30, 0, micro), "id": entry_id},
            )
    for limit in (1, 2):
        rows = _walk(client, token, "cost_entries", limit=limit)
        assert [r["id"] for r in rows] == [5, 3, 4, 1, 2]
    assert {r["updated_at"] for r in rows} == {"2026-03-01T09:30:00.125Z"}


def test_cursors_are_checked(client: Client, engine: Engine) -> None:
    # SEMANTICS R12, R13
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    for _ in range(3):
        b.cost_entry(initiative)
        b.value_entry(initiative)
    b.load(engine)
    cursor = get(client, token, "cost_entries", limit=1)["page"]["next_cursor"]
    assert get(client, token, "cost_entries", limit=1, cursor=cursor)["data"]
    message = refused(client, token, "value_entries", limit=1, cursor=cursor)
    assert "cursor" in message
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    # Every other last character, those that differ only in the bits base64 leaves unused
    # included: a cursor is taken only in the form it was issued in.
    other_ends = [cursor[:-1] + c for c in alphabet if c != cursor[-1]]
    for forged in ("abc", "x" * 300, cursor[:-2], "é", *other_ends):
        refused(client, token, "cost_entries", cursor=forged)


def test_filters_are_not_part_of_the_cursor(client: Client, engine: Engine) -> None:
    # SEMANTICS R13: the caller repeats the filters on every page.
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    approved = {b.value_entry(initiative, status="approved") for _ in range(5)}
    for _ in range(4):
        b.value_entry(initiative, status="draft")
    b.load(engine)
    rows = _walk(client, token, "value_entries", limit=2, status="approved")
    assert {r["id"] for r in rows} == approved
    assert len(rows) == 5


def test_period_filter_matches_the_entry_date(client: Client, engine: Engine) -> None:
    # SPEC 4.A.1, SEMANTICS R11: matched on where the period begins, or, with no period, on
    # the UTC date of created_at (R2), as /roi counts the entry.
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    year = b.cost_entry(initiative, period_start="2026-01-01", period_end="2026-12-31")
    march = b.cost_entry(initiative, period_start="2026-03-31", period_end="2026-03-31")
    april = b.cost_entry(initiative, period_start="2026-04-01")
    # 23:30 at UTC-5 is 04:30 on 1 April in UTC: an April entry.
    undated = b.cost_entry(initiative, period_start=None, created_at="2026-03-31T23:30:00-05:00")
    late = b.cost_entry(initiative, period_start=None, created_at="2026-07-01T00:00:00Z")
    b.load(engine)

    def ids(path: str = "cost_entries", **params: str) -> set[int]:
        return {r["id"] for r in get(client, token, path, **params)["data"]}

    assert ids(period_from="2026-01-01", period_to="2026-03-31") == {year, march}
    assert ids(period_from="2026-04-01", period_to="2026-06-30") == {april, undated}
    assert ids(period_from="2026-03-31") == {march, april, undated, late}
    assert ids(period_to="2026-01-01") == {year}
    assert ids(period_from="2026-07-01", period_to="2026-07-01") == {late}
    assert len(ids()) == 5
    refused(client, token, "cost_entries", period_from="2026-04-01", period_to="2026-03-01")
    served = {r["id"]: r["reported_on"] for r in get(client, token, "cost_entries")["data"]}
    assert served[undated] == "2026-04-01"
    assert served[year] == "2026-01-01"


def test_value_period_filter_matches_the_entry_date(client: Client, engine: Engine) -> None:
    # SEMANTICS R11 on the value entries too.
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    dated = b.value_entry(initiative, period_start="2026-02-10")
    undated = b.value_entry(initiative, period_start=None, created_at="2026-02-28T12:00:00Z")
    b.value_entry(initiative, period_start=None, created_at="2026-03-01T00:00:00Z")
    b.load(engine)
    rows = get(client, token, "value_entries", period_from="2026-02-01", period_to="2026-02-28")
    assert {r["id"] for r in rows["data"]} == {dated, undated}


def test_value_status_decision_outcome_and_integration_filters(
    client: Client, engine: Engine
) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    statuses = ["draft", "calculated", "reviewed", "approved", "disputed", "archived"]
    by_status = {s: b.value_entry(initiative, status=s) for s in statuses}
    outcomes = {
        o: b.decision(acct, outcome=o) for o in ("continue", "scale", "fix", "pause", "retire")
    }
    slack = b.integration(acct, platform="slack", status="paused")
    openai = b.integration(acct, platform="openai", status="error")
    b.load(engine)
    for status, entry_id in by_status.items():
        rows = get(client, token, "value_entries", status=status)["data"]
        assert [r["id"] for r in rows] == [entry_id]
    for outcome, decision_id in outcomes.items():
        rows = get(client, token, "decisions", outcome=outcome)["data"]
        assert [r["id"] for r in rows] == [decision_id]
        assert rows[0]["outcome_label"] == outcome.capitalize()
    assert [r["id"] for r in get(client, token, "integrations", platform="slack")["data"]] == [
        slack
    ]
    assert [r["id"] for r in get(client, token, "integrations", status="error")["data"]] == [openai]
    assert get(client, token, "integrations", platform="slack", status="error")["data"] == []


def test_sample_initiatives_only_when_asked(client: Client, engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    real = b.initiative(acct)
    sample = b.initiative(acct, is_sample=True)
    b.load(engine)
    assert {r["id"] for r in get(client, token, "initiatives")["data"]} == {real}
    assert {r["id"] for r in get(client, token, "initiatives", include_sample="false")["data"]} == {
        real
    }
    both = get(client, token, "initiatives", include_sample="true")["data"]
    assert {r["id"] for r in both} == {real, sample}
    assert get(client, token, f"initiatives/{sample}")["is_sample"] is True


def test_observation_metric_key_filter(client: Client, engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    tickets = b.metric(acct, metric_key="tickets_resolved")
    hours = b.metric(acct, metric_key="hours_saved", name="Hours saved")
    kept = b.observation(metric_id=tickets, value=12.5, role="reading")
    b.observation(metric_id=hours, value=3.0, role="reading")
    b.load(engine)
    rows = get(client, token, "observations", metric_key="tickets_resolved")["data"]
    assert [r["id"] for r in rows] == [kept]
    assert rows[0]["value"] == 12.5 and rows[0]["metric_key"] == "tickets_resolved"
    assert get(client, token, "observations", metric_key="nothing_like_it")["data"] == []


def test_amounts_are_integer_cents_with_currency(client: Client, engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    b.fx_rate(acct, "EUR", "1.08", "2026-01-01")
    initiative = b.initiative(acct, expected_capex_cents=1_250_000_00, currency="EUR")
    b.cost_entry(initiative, amount_cents=-1999, currency="EUR", cost_type="software")
    b.cost_entry(initiative, amount_cents=None)
    b.load(engine)
    rows = get(client, token, "cost_entries")["data"]
    assert [(r["amount_cents"], r["currency"]) for r in rows] == [(-1999, "EUR"), (None, None)]
    assert get(client, token, "initiatives")["data"][0]["expected_capex_cents"] == 125_000_000
