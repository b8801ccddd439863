"""The demo bundle, checked without a database: complete, consistent and deterministic.

Loading it through the real loader is tested with the loader; these tests pin what
the demo promises on its own (BUNDLE.md shape, every enum value, references).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from airoi.demo import (
    DEMO_ACCOUNT_ID,
    DEMO_OWNER_USER_ID,
    DEMO_SECRET_MARKER,
    build_demo_bundle,
)

Bundle = dict[str, Any]

TODAY = date(2026, 3, 17)
# Days that stress month arithmetic: a month's first and last day, a leap day, a year end.
TODAYS = [TODAY, date(2026, 3, 1), date(2026, 1, 31), date(2024, 2, 29), date(2025, 12, 31)]

STAGES = {
    "identified",
    "reviewing",
    "implementing",
    "live",
    "paused",
    "completed",
    "rejected",
    "dismissed",
}
VALUE_STATUSES = {"draft", "calculated", "reviewed", "approved", "disputed", "archived"}
OUTCOMES = {"continue", "scale", "fix", "pause", "retire"}
INTEGRATION_STATUSES = {"active", "paused", "error", "disconnected"}

SOURCE = {"type", "ref", "connection_id"}
SOURCED = {"cost_entries", "value_entries", "observations"}  # `source` is an object
# Exactly the fields of SPEC section 2 plus the BUNDLE.md extras, with person
# references as *_id and without derived fields (counts_toward_roi, stage_changed,
# outcome_label).
FIELDS: dict[str, set[str]] = {
    "accounts": {
        "id",
        "name",
        "currency",
        "api_access",
        "fiscal_year_start_month",
        "approval_threshold_cents",
        "internal",
    },
    "users": {"id", "account_id", "name", "email", "role", "removed_at"},
    "fx_rates": {"account_id", "currency", "rate", "effective_from"},
    "vendors": {"id", "account_id", "name", "merged_into_id"},
    "initiatives": {
        "id",
        "account_id",
        "owner_id",
        "title",
        "description",
        "hypothesis",
        "stage",
        "is_sample",
        "category",
        "priority",
        "source",
        "business_unit",
        "department",
        "gl_dimension_value",
        "confidence_score",
        "roi_time_horizon_years",
        "currency",
        "expected_capex_cents",
        "expected_opex_cents",
        "expected_cost_savings_cents",
        "expected_revenue_uplift_cents",
        "started_at",
        "went_live_at",
        "approved_at",
        "closed_at",
        "submitted_for_review_at",
        "created_at",
        "updated_at",
    },
    "initiative_notes": {"id", "initiative_id", "author_id", "body", "created_at"},
    "cost_entries": {
        "id",
        "initiative_id",
        "amount_cents",
        "currency",
        "cost_type",
        "cost_category",
        "period_start",
        "period_end",
        "vendor_id",
        "vendor_name",
        "description",
        "notes",
        "is_estimated",
        "locked",
        "source",
        "created_at",
        "updated_at",
    },
    "value_entries": {
        "id",
        "initiative_id",
        "amount_cents",
        "currency",
        "status",
        "entry_type",
        "period_start",
        "period_end",
        "is_estimated",
        "confidence_score",
        "quality_score",
        "notes",
        "provenance",
        "calculation_version",
        "formula_id",
        "source",
        "approved_at",
        "created_at",
        "updated_at",
    },
    "metrics": {
        "id",
        "account_id",
        "metric_key",
        "name",
        "description",
        "metric_type",
        "unit",
        "currency_metric",
        "active",
        "created_at",
        "updated_at",
    },
    "observations": {
        "id",
        "metric_id",
        "metric_key",
        "initiative_id",
        "value",
        "role",
        "baseline_method",
        "observed_at",
        "period_start",
        "period_end",
        "is_estimated",
        "sample_size",
        "quality_score",
        "source",
        "created_at",
        "updated_at",
    },
    "budget_versions": {
        "id",
        "initiative_id",
        "effective_from",
        "ends_on",
        "capex_cents",
        "opex_cents",
        "opex_cadence",
        "source",
        "reason",
        "set_by_id",
        "status",
        "approved_at",
    },
    "decisions": {
        "id",
        "account_id",
        "initiative_id",
        "subject_title",
        "outcome",
        "rationale",
        "stage_before",
        "stage_after",
        "decided_at",
        "decided_by_id",
        "next_review_on",
        "currency",
        "approved_value_cents",
        "cost_to_date_cents",
        "net_cents",
        "planned_value_cents",
        "planned_value_to_date_cents",
        "roi",
        "created_at",
        "updated_at",
    },
    "integrations": {
        "id",
        "account_id",
        "platform",
        "name",
        "description",
        "status",
        "auth_type",
        "last_sync_status",
        "last_synced_at",
        "reauth_required_at",
        "external_account_id",
        "external_account_name",
        "primary_source_categories",
        "metric_categories",
        "simulated",
        "connected_by_id",
        "credentials",
        "settings",
        "last_error",
        "created_at",
        "updated_at",
    },
    "assessments": {"id", "account_id", "title", "status", "created_at"},
}

DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
DATE_FIELDS = {
    "effective_from",
    "ends_on",
    "period_start",
    "period_end",
    "next_review_on",
}

# (key, field) -> the key whose record it references.
REFERENCES: dict[tuple[str, str], str] = {
    ("users", "account_id"): "accounts",
    ("fx_rates", "account_id"): "accounts",
    ("vendors", "account_id"): "accounts",
    ("vendors", "merged_into_id"): "vendors",
    ("initiatives", "account_id"): "accounts",
    ("initiatives", "owner_id"): "users",
    ("initiative_notes", "initiative_id"): "initiatives",
    ("initiative_notes", "author_id"): "users",
    ("cost_entries", "initiative_id"): "initiatives",
    ("cost_entries", "vendor_id"): "vendors",
    ("value_entries", "initiative_id"): "initiatives",
    ("metrics", "account_id"): "accounts",
    ("observations", "initiative_id"): "initiatives",
    ("observations", "metric_id"): "metrics",
    ("budget_versions", "initiative_id"): "initiatives",
    ("budget_versions", "set_by_id"): "users",
    ("decisions", "account_id"): "accounts",
    ("decisions", "initiative_id"): "initiatives",
    ("decisions", "decided_by_id"): "users",
    ("integrations", "account_id"): "accounts",
    ("integrations", "connected_by_id"): "users",
    ("assessments", "account_id"): "accounts",
}


def _months_between(earlier: date, later: date) -> int:
    return (later.year - earlier.year) * 12 + later.month - earlier.month


def _first_of_next_month(day: date) -> date:
    return (day.replace(day=28) + timedelta(days=4)).replace(day=1)


def _account_of(bundle: Bundle, key: str, record: dict[str, Any]) -> int:
    """A record's account: its own account_id, or its initiative's (entries carry none)."""
    if key == "accounts":
        return int(record["id"])
    if "account_id" in record:
        return int(record["account_id"])
    initiatives = {row["id"]: row for row in bundle["initiatives"]}
    return int(initiatives[record["initiative_id"]]["account_id"])


def _annual_cents(version: dict[str, Any]) -> int:
    per_year = {"monthly": 12, "quarterly": 4, "annually": 1}[version["opex_cadence"]]
    return int(version["capex_cents"] + version["opex_cents"] * per_year)


@pytest.fixture(scope="module", params=TODAYS, ids=str)
def dated(request: pytest.FixtureRequest) -> tuple[date, Bundle]:
    today: date = request.param
    return today, build_demo_bundle(today)


@pytest.fixture(scope="module")
def bundle() -> Bundle:
    return build_demo_bundle(TODAY)


def test_the_same_today_gives_the_same_bundle() -> None:
    random.seed(1)
    first = build_demo_bundle(TODAY)
    random.seed(2)  # the global generator plays no part
    second = build_demo_bundle(TODAY)
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)


def test_a_later_today_moves_the_story_forward() -> None:
    now, later = build_demo_bundle(TODAY), build_demo_bundle(date(2026, 7, 17))
    assert {k: len(v) for k, v in now.items()} == {k: len(v) for k, v in later.items()}
    now_first = min(e["period_start"] for e in now["cost_entries"] if e["period_start"])
    later_first = min(e["period_start"] for e in later["cost_entries"] if e["period_start"])
    assert _months_between(date.fromisoformat(now_first), date.fromisoformat(later_first)) == 4


def test_the_bundle_is_plain_json(dated: tuple[date, Bundle]) -> None:
    _, bundle = dated
    assert json.loads(json.dumps(bundle)) == bundle


def test_keys_and_fields_are_those_of_the_bundle_format(dated: tuple[date, Bundle]) -> None:
    _, bundle = dated
    assert set(bundle) == set(FIELDS)  # no tokens: the CLI issues one
    for key, rows in bundle.items():
        assert rows, key
        for row in rows:
            assert set(row) == FIELDS[key], (key, row.get("id"))
            if key in SOURCED:
                assert set(row["source"]) == SOURCE, (key, row["id"])


def test_ids_are_unique_per_key_and_in_the_demo_range(dated: tuple[date, Bundle]) -> None:
    _, bundle = dated
    for key, rows in bundle.items():
        if key == "fx_rates":
            natural = [(r["account_id"], r["currency"], r["effective_from"]) for r in rows]
            assert len(natural) == len(set(natural))
            continue
        ids = [row["id"] for row in rows]
        assert len(ids) == len(set(ids)), key
        assert all(isinstance(i, int) and i >= DEMO_ACCOUNT_ID for i in ids), key


def test_every_reference_resolves_inside_the_demo_account(dated: tuple[date, Bundle]) -> None:
    _, bundle = dated
    records = {key: {row["id"]: row for row in rows if "id" in row} for key, rows in bundle.items()}
    assert list(records["accounts"]) == [DEMO_ACCOUNT_ID]
    for key, rows in bundle.items():
        for row in rows:
            account = _account_of(bundle, key, row)
            assert account == DEMO_ACCOUNT_ID
            for (ref_key, field), target in REFERENCES.items():
                if ref_key != key or row[field] is None:
                    continue
                assert row[field] in records[target], (key, row.get("id"), field)
                assert _account_of(bundle, target, records[target][row[field]]) == account
            if key in SOURCED and row["source"]["connection_id"] is not None:
                assert row["source"]["connection_id"] in records["integrations"], (key, row["id"])


def test_observations_name_their_metric_by_its_key(bundle: Bundle) -> None:
    keys = {metric["id"]: metric["metric_key"] for metric in bundle["metrics"]}
    for observation in bundle["observations"]:
        assert observation["metric_key"] == keys[observation["metric_id"]]


def test_dates_and_datetimes_are_strings_in_the_bundle_format(dated: tuple[date, Bundle]) -> None:
    today, bundle = dated
    end_of_today = datetime.combine(today, time.max)
    for key, rows in bundle.items():
        for row in rows:
            for field, value in row.items():
                if value is None:
                    continue
                if field in DATE_FIELDS:
                    assert DATE.fullmatch(value), (key, field, value)
                    date.fromisoformat(value)
                elif field.endswith("_at"):
                    assert DATETIME.fullmatch(value), (key, field, value)
                    moment = datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")
                    assert moment <= end_of_today, (key, row.get("id"), field, value)
            if "created_at" in row and "updated_at" in row:
                assert row["created_at"] <= row["updated_at"], (key, row["id"])


def test_amounts_are_integer_cents(dated: tuple[date, Bundle]) -> None:
    _, bundle = dated
    for key, rows in bundle.items():
        for row in rows:
            for field, value in row.items():
                if field.endswith("_cents") and value is not None:
                    assert type(value) is int, (key, row.get("id"), field)


def test_a_dozen_initiatives_in_every_stage_plus_samples(bundle: Bundle) -> None:
    real = [row for row in bundle["initiatives"] if not row["is_sample"]]
    samples = [row for row in bundle["initiatives"] if row["is_sample"]]
    assert len(real) == 12
    assert {row["stage"] for row in real} == STAGES
    assert len(samples) >= 2
    assert all(row["title"] and row["description"] for row in real)
    assert all(row["hypothesis"] for row in real)


def test_people_have_roles_and_e_mail_addresses(bundle: Bundle) -> None:
    users = {user["id"]: user for user in bundle["users"]}
    owner = users[DEMO_OWNER_USER_ID]
    assert owner["role"] == "owner"
    assert owner["removed_at"] is None
    assert owner["account_id"] == DEMO_ACCOUNT_ID
    assert {"owner", "admin", "member"} <= {user["role"] for user in users.values()}
    assert all("@" in user["email"] for user in users.values())


def test_account_settings(bundle: Bundle) -> None:
    (account,) = bundle["accounts"]
    assert account["currency"] == "USD"
    assert account["fiscal_year_start_month"] == 1
    assert account["api_access"] is True
    assert account["internal"] is False
    assert isinstance(account["approval_threshold_cents"], int)


def test_costs_span_eighteen_months_before_today(dated: tuple[date, Bundle]) -> None:
    today, bundle = dated
    starts = [
        date.fromisoformat(entry["period_start"])
        for entry in bundle["cost_entries"]
        if entry["period_start"] is not None
    ]
    assert 16 <= _months_between(min(starts), today) <= 19
    assert max(starts) <= _first_of_next_month(today)
    # Each of the last eighteen months (this one included) has costs from several vendors.
    vendors_by_month: dict[int, set[int]] = {}
    for entry in bundle["cost_entries"]:
        if entry["period_start"] is not None and entry["vendor_id"] is not None:
            ago = _months_between(date.fromisoformat(entry["period_start"]), today)
            vendors_by_month.setdefault(ago, set()).add(entry["vendor_id"])
    for ago in range(18):
        assert len(vendors_by_month.get(ago, set())) >= 2, ago
    assert 300 <= len(bundle["cost_entries"]) <= 600


def test_cost_types_and_categories(bundle: Bundle) -> None:
    entries = bundle["cost_entries"]
    assert {"software", "tokens", "implementation", "infrastructure"} <= {
        entry["cost_type"] for entry in entries
    }
    for entry in entries:
        expected = "capex" if entry["cost_type"] == "implementation" else "opex"
        assert entry["cost_category"] == expected, entry["id"]


def test_edge_case_entries_are_present(bundle: Bundle) -> None:
    entries = bundle["cost_entries"]
    assert sum(entry["period_start"] is None for entry in entries) >= 2  # SEMANTICS R2
    assert any(entry["amount_cents"] is None for entry in entries)  # R6
    assert any((entry["amount_cents"] or 0) < 0 for entry in entries)  # a refund
    assert any(entry["vendor_id"] is None and entry["vendor_name"] is None for entry in entries)


def test_a_merged_vendor_and_entries_naming_both(bundle: Bundle) -> None:
    vendors = {vendor["id"]: vendor for vendor in bundle["vendors"]}
    merged = [vendor for vendor in vendors.values() if vendor["merged_into_id"] is not None]
    assert merged
    for vendor in merged:
        survivor = vendors[vendor["merged_into_id"]]
        assert survivor["merged_into_id"] is None
        names = {
            entry["vendor_name"]
            for entry in bundle["cost_entries"]
            if entry["vendor_id"] == survivor["id"]
        }
        # Entries were repointed to the survivor and keep the name they were recorded with.
        assert {vendor["name"], survivor["name"]} <= names
    merged_ids = {vendor["id"] for vendor in merged}
    assert not any(entry["vendor_id"] in merged_ids for entry in bundle["cost_entries"])


def test_every_foreign_currency_has_rates(dated: tuple[date, Bundle]) -> None:
    _, bundle = dated
    (account,) = bundle["accounts"]
    rates: dict[str, list[str]] = {}
    for rate in bundle["fx_rates"]:
        assert Decimal(rate["rate"]) > 0
        rates.setdefault(rate["currency"], []).append(rate["effective_from"])
    used = {
        row["currency"]
        for key in ("initiatives", "cost_entries", "value_entries", "decisions")
        for row in bundle[key]
        if row["currency"] is not None
    }
    foreign = used - {account["currency"]}
    assert foreign == {"EUR"}
    for currency in foreign:
        assert len(set(rates[currency])) >= 2, currency
        earliest_use = min(
            entry["period_start"] or entry["created_at"][:10]
            for entry in bundle["cost_entries"]
            if entry["currency"] == currency
        )
        assert min(rates[currency]) <= earliest_use


def test_value_entries_in_every_status(bundle: Bundle) -> None:
    entries = bundle["value_entries"]
    assert {entry["status"] for entry in entries} == VALUE_STATUSES
    assert {"cost_savings", "revenue_uplift", "time_saved"} <= {e["entry_type"] for e in entries}
    for entry in entries:
        assert (entry["approved_at"] is not None) == (entry["status"] == "approved"), entry["id"]


def test_metrics_have_baselines_and_readings(bundle: Bundle) -> None:
    roles: dict[int, Counter[str]] = {}
    for observation in bundle["observations"]:
        roles.setdefault(observation["metric_id"], Counter())[observation["role"]] += 1
        if observation["role"] == "baseline":
            assert observation["baseline_method"]
    assert len(roles) >= 5
    for metric_id, counts in roles.items():
        assert counts["baseline"] >= 1, metric_id
        assert counts["reading"] >= 2, metric_id
    assert any(not metric["active"] for metric in bundle["metrics"])


def test_budget_versions_exercise_the_budget_rules(dated: tuple[date, Bundle]) -> None:
    today, bundle = dated
    (account,) = bundle["accounts"]
    versions = bundle["budget_versions"]
    assert {v["status"] for v in versions} == {"approved", "pending", "rejected"}
    assert {"monthly", "quarterly", "annually"} == {v["opex_cadence"] for v in versions}
    assert {"approval", "revision", "manual"} == {v["source"] for v in versions}
    for version in versions:
        assert (version["approved_at"] is not None) == (version["status"] == "approved")
    approved = [v for v in versions if v["status"] == "approved"]
    by_initiative: dict[int, list[dict[str, Any]]] = {}
    for version in approved:
        by_initiative.setdefault(version["initiative_id"], []).append(version)
    # A revision (R24 revised) and a pending revision above the approval threshold.
    (pending,) = [v for v in versions if v["status"] == "pending"]
    assert len(by_initiative[pending["initiative_id"]]) >= 2
    assert _annual_cents(pending) > account["approval_threshold_cents"]
    assert all(_annual_cents(v) <= account["approval_threshold_cents"] for v in approved)
    # A budget that starts next month (R18 scheduled), on an initiative already spending.
    next_month = _first_of_next_month(today).isoformat()
    scheduled = [
        initiative_id
        for initiative_id, own in by_initiative.items()
        if min(v["effective_from"] for v in own) == next_month
    ]
    assert scheduled
    assert any(e["initiative_id"] in scheduled for e in bundle["cost_entries"])
    # One that ended (R16 ends_on).
    assert any(v["ends_on"] is not None and v["ends_on"] < today.isoformat() for v in approved)
    # Initiatives without any budget (R25 no_budget).
    assert {row["id"] for row in bundle["initiatives"]} - set(by_initiative)


def test_decisions_of_every_outcome(bundle: Bundle) -> None:
    decisions = bundle["decisions"]
    assert {d["outcome"] for d in decisions} == OUTCOMES
    assert any(d["stage_before"] == d["stage_after"] for d in decisions)
    assert any(d["stage_before"] != d["stage_after"] for d in decisions)
    for decision in decisions:
        assert {decision["stage_before"], decision["stage_after"]} <= STAGES
        assert decision["subject_title"]
        assert decision["rationale"]
        net = decision["approved_value_cents"] - decision["cost_to_date_cents"]
        assert decision["net_cents"] == net
        if decision["cost_to_date_cents"] == 0:
            assert decision["roi"] is None
        else:
            assert decision["roi"] == pytest.approx(
                float(Fraction(net, decision["cost_to_date_cents"]))
            )


def test_connections_in_every_status_with_stored_secrets(bundle: Bundle) -> None:
    integrations = bundle["integrations"]
    assert {i["status"] for i in integrations} == INTEGRATION_STATUSES
    assert {"openai", "anthropic", "github_copilot", "zendesk", "salesforce", "snowflake"} <= {
        i["platform"] for i in integrations
    }
    reauth = [i for i in integrations if i["reauth_required_at"] is not None]
    assert reauth
    assert all(i["status"] == "error" for i in reauth)
    for integration in integrations:
        assert integration["simulated"] is False  # the demo account is not internal
        credentials = json.dumps(integration["credentials"])
        assert DEMO_SECRET_MARKER in credentials, integration["id"]
        assert isinstance(integration["settings"], dict)
        if integration["status"] == "error":
            assert DEMO_SECRET_MARKER in integration["last_error"]
