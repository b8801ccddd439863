"""The bundle loader (BUNDLE.md): validation, upsert, deletes, vendors, tokens, files.

Every test runs on SQLite and PostgreSQL (the `engine` fixture). Bundles are
built here as plain dicts so each test shows exactly what it loads.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from airoi.db import tables
from airoi.db.tables import metadata
from airoi.load import BundleError, LoadReport, load_bundle
from airoi.load.stamping import locked
from airoi.timeutil import truncate_ms, utc_now
from airoi.tokens import SECRET_MIN_LENGTH, hash_token, new_token, secret_length, shown_prefix

NOW = datetime(2026, 3, 1, 12, 0, 0)
LATER = datetime(2026, 3, 2, 8, 30, 0, 250_000)
SECRET = "airoi_bundle-test-secret-" + "s" * 40

Bundle = dict[str, Any]


def base_bundle() -> Bundle:
    """Two accounts; account 1 holds one initiative with one record of every kind."""
    return {
        "accounts": [
            {"id": 1, "name": "Acme", "currency": "USD"},
            {"id": 2, "name": "Globex", "currency": "EUR", "internal": True},
        ],
        "users": [
            {"id": 1, "account_id": 1, "name": "Ada", "email": "ada@acme.example", "role": "owner"},
            {"id": 2, "account_id": 2, "name": "Bo", "email": "bo@globex.example", "role": "admin"},
        ],
        "tokens": [{"user_id": 1, "token": SECRET}],
        "fx_rates": [
            {"account_id": 1, "currency": "EUR", "rate": "1.0850", "effective_from": "2026-01-01"},
        ],
        "vendors": [
            {"id": 1, "account_id": 1, "name": "OpenAI"},
            {"id": 2, "account_id": 1, "name": "Anthropic"},
            {"id": 3, "account_id": 2, "name": "Mistral AI"},
        ],
        "integrations": [
            {
                "id": 4,
                "account_id": 1,
                "platform": "openai",
                "status": "active",
                "auth_type": "api_key",
                "credentials": {"api_key": "sk-test"},
                "primary_source_categories": ["ai_usage"],
                "metric_categories": ["ai_usage"],
            },
        ],
        "metrics": [
            {
                "id": 6,
                "account_id": 1,
                "metric_key": "tickets_deflected",
                "name": "Tickets deflected",
            }
        ],
        "initiatives": [
            {
                "id": 5,
                "account_id": 1,
                "title": "Support triage bot",
                "stage": "live",
                "owner_id": 1,
            },
            {"id": 7, "account_id": 2, "title": "Contract review", "stage": "reviewing"},
        ],
        "initiative_notes": [{"id": 51, "initiative_id": 5, "author_id": 1, "body": "Kick-off"}],
        "budget_versions": [
            {
                "id": 41,
                "initiative_id": 5,
                "effective_from": "2026-01-01",
                "capex_cents": 500_000,
                "opex_cents": 20_000,
                "status": "approved",
                "set_by_id": 1,
            },
        ],
        "cost_entries": [
            {
                "id": 17,
                "initiative_id": 5,
                "amount_cents": 1_000,
                "currency": "EUR",
                "cost_type": "tokens",
                "period_start": "2026-02-01",
                "vendor_name": "openai",
            },
            {
                "id": 18,
                "initiative_id": 5,
                "amount_cents": 50_000,
                "cost_type": "implementation",
                "period_start": "2026-01-15",
                "vendor_id": 2,
            },
        ],
        "value_entries": [
            {
                "id": 21,
                "initiative_id": 5,
                "amount_cents": 90_000,
                "status": "approved",
                "period_start": "2026-02-01",
            },
        ],
        "observations": [
            {"id": 31, "metric_id": 6, "initiative_id": 5, "value": 120.5, "role": "baseline"},
        ],
        "decisions": [
            {
                "id": 9,
                "account_id": 1,
                "initiative_id": 5,
                "subject_title": "Support triage bot",
                "outcome": "scale",
                "rationale": "Deflection doubled.",
                "stage_before": "live",
                "stage_after": "live",
                "decided_at": "2026-02-20T10:00:00Z",
                "decided_by_id": 1,
            },
        ],
        "assessments": [{"id": 61, "account_id": 1, "title": "AI readiness", "status": "active"}],
    }


BASE_COUNTS = {
    "accounts": 2,
    "users": 2,
    "tokens": 1,
    "fx_rates": 1,
    "vendors": 3,
    "integrations": 1,
    "metrics": 1,
    "initiatives": 2,
    "initiative_notes": 1,
    "budget_versions": 1,
    "cost_entries": 2,
    "value_entries": 1,
    "observations": 1,
    "decisions": 1,
    "assessments": 1,
}


def snapshot(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table a load writes, to prove a refused bundle wrote nothing (the
    store's secret, SEMANTICS R13, is the store's from its making)."""
    with engine.connect() as conn:
        return {
            table.name: sorted((tuple(row) for row in conn.execute(select(table))), key=repr)
            for table in metadata.sorted_tables
            if table.name != "store_secret"
        }


def rows(engine: Engine, table: Any, **where: Any) -> list[dict[str, Any]]:
    query = select(table).where(*(table.c[k] == v for k, v in where.items()))
    with engine.connect() as conn:
        return [dict(row) for row in conn.execute(query.order_by(*table.primary_key)).mappings()]


def one(engine: Engine, table: Any, **where: Any) -> dict[str, Any]:
    found = rows(engine, table, **where)
    assert len(found) == 1, found
    return found[0]


def refused(engine: Engine, bundle: Bundle | Path) -> list[str]:
    """Load a bundle that must be refused; return its problems, checking nothing changed."""
    before = snapshot(engine)
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, bundle, now=LATER)
    assert snapshot(engine) == before
    assert caught.value.problems == str(caught.value).split("\n")
    return caught.value.problems


def loaded(engine: Engine, bundle: Bundle | None = None, now: datetime = NOW) -> LoadReport:
    return load_bundle(engine, base_bundle() if bundle is None else bundle, now=now)


def record(bundle: Bundle, key: str, record_id: int) -> dict[str, Any]:
    return next(r for r in bundle[key] if r.get("id") == record_id)


# --------------------------------------------------------------------------- loading


def test_a_valid_bundle_inserts_every_record(engine: Engine) -> None:
    report = loaded(engine)
    assert {k: v for k, v in report.inserted.items() if v} == BASE_COUNTS
    assert report.totals() == {"inserted": 21, "updated": 0, "unchanged": 0, "deleted": 0}
    initiative = one(engine, tables.initiatives, id=5)
    assert initiative["account_id"] == 1
    assert initiative["owner_id"] == 1
    assert initiative["is_sample"] is False
    assert initiative["created_at"] == NOW
    assert initiative["updated_at"] == NOW
    account = one(engine, tables.accounts, id=1)
    assert (account["api_access"], account["fiscal_year_start_month"], account["internal"]) == (
        True,
        1,
        False,
    )
    # Entries take their account from their initiative.
    assert one(engine, tables.cost_entries, id=17)["account_id"] == 1
    assert one(engine, tables.observations, id=31)["metric_key"] == "tickets_deflected"


def test_reloading_the_same_bundle_changes_nothing(engine: Engine) -> None:
    loaded(engine)
    before = snapshot(engine)
    report = loaded(engine, now=LATER)
    assert report.totals() == {"inserted": 0, "updated": 0, "unchanged": 21, "deleted": 0}
    assert {k: v for k, v in report.unchanged.items() if v} == BASE_COUNTS
    assert snapshot(engine) == before  # every updated_at kept


def test_changing_one_field_updates_that_row_only(engine: Engine) -> None:
    loaded(engine)
    bundle = base_bundle()
    record(bundle, "cost_entries", 18)["amount_cents"] = 55_000
    report = loaded(engine, bundle, now=LATER)
    assert report.updated == {**dict.fromkeys(report.updated, 0), "cost_entries": 1}
    assert report.totals()["unchanged"] == 20
    changed = one(engine, tables.cost_entries, id=18)
    assert changed["amount_cents"] == 55_000
    assert changed["updated_at"] == LATER
    assert changed["created_at"] == NOW
    assert one(engine, tables.cost_entries, id=17)["updated_at"] == NOW


def test_a_field_left_out_keeps_its_stored_value_and_null_clears_it(engine: Engine) -> None:
    # SEMANTICS R33: a record changes only the fields it gives.
    loaded(engine)
    kept = {
        "cost_entries": [{"id": 18, "amount_cents": 55_000}],
        "initiatives": [{"id": 5, "stage": "paused"}],
        "users": [{"id": 1, "name": "Ada King"}],
    }
    before_entry = one(engine, tables.cost_entries, id=18)
    before_user = one(engine, tables.users, id=1)
    report = loaded(engine, kept, now=LATER)
    assert (report.updated["cost_entries"], report.updated["initiatives"]) == (1, 1)
    entry = one(engine, tables.cost_entries, id=18)
    assert entry["amount_cents"] == 55_000
    for column in ("initiative_id", "period_start", "currency", "vendor_name", "source_type"):
        assert entry[column] == before_entry[column], column
    initiative = one(engine, tables.initiatives, id=5)
    assert (initiative["stage"], initiative["title"], initiative["owner_id"]) == (
        "paused",
        "Support triage bot",
        1,
    )
    user = one(engine, tables.users, id=1)
    assert (user["name"], user["email"], user["role"]) == (
        "Ada King",
        before_user["email"],
        before_user["role"],
    )
    # Given as null, a field is cleared.
    loaded(engine, {"cost_entries": [{"id": 18, "period_start": None}]}, now=LATER)
    assert one(engine, tables.cost_entries, id=18)["period_start"] is None
    loaded(engine, {"initiatives": [{"id": 5, "owner_id": None}]}, now=LATER)
    assert one(engine, tables.initiatives, id=5)["owner_id"] is None


def test_a_nested_source_is_one_field(engine: Engine) -> None:
    # SEMANTICS R33 on SPEC 2.1's source object: given, it is given whole (its parts left out
    # are null); left out, the stored source stays.
    bundle = base_bundle()
    record(bundle, "cost_entries", 17)["source"] = {"type": "import", "ref": "inv-7"}
    loaded(engine, bundle)
    loaded(engine, {"cost_entries": [{"id": 17, "amount_cents": 5}]}, now=LATER)
    stored = one(engine, tables.cost_entries, id=17)
    assert (stored["source_type"], stored["source_ref"]) == ("import", "inv-7")
    loaded(engine, {"cost_entries": [{"id": 17, "source": {"type": "manual"}}]}, now=LATER)
    stored = one(engine, tables.cost_entries, id=17)
    assert (stored["source_type"], stored["source_ref"], stored["source_connection_id"]) == (
        "manual",
        None,
        None,
    )


def test_a_required_field_left_out_of_an_existing_row_is_kept(engine: Engine) -> None:
    # SEMANTICS R33: only a new row must give its required fields.
    loaded(engine)
    report = loaded(
        engine,
        {
            "cost_entries": [{"id": 17, "notes": "checked"}],
            "value_entries": [{"id": 21, "notes": "checked"}],
            "decisions": [{"id": 9}],
            "accounts": [{"id": 1, "api_access": True}],
        },
        now=LATER,
    )
    assert report.updated["cost_entries"] == report.updated["value_entries"] == 1
    assert report.unchanged["decisions"] == report.unchanged["accounts"] == 1
    assert one(engine, tables.cost_entries, id=17)["initiative_id"] == 5
    assert one(engine, tables.value_entries, id=21)["status"] == "approved"
    # Unless the bundle deletes the row first: then the record makes a new one.
    problems = refused(
        engine,
        {"delete": {"cost_entries": [17]}, "cost_entries": [{"id": 17, "notes": "again"}]},
    )
    assert problems == ["cost_entries[id=17].initiative_id: required"]


def test_bundle_given_timestamps_are_ignored_unless_kept(engine: Engine) -> None:
    # SEMANTICS R32: the store stamps what a load changes; created_at given is kept.
    bundle = base_bundle()
    initiative = record(bundle, "initiatives", 5)
    initiative["created_at"] = "2025-06-01T08:00:00Z"
    initiative["updated_at"] = "2025-07-01T09:15:30.5+02:00"
    report = loaded(engine, bundle)
    assert report.ignored_stamps == 1
    assert report.stamp == NOW
    stored = one(engine, tables.initiatives, id=5)
    assert stored["created_at"] == datetime(2025, 6, 1, 8, 0)
    assert stored["updated_at"] == NOW
    # A different given updated_at alone changes nothing.
    initiative["updated_at"] = "2025-08-01T00:00:00Z"
    report = loaded(engine, bundle, now=LATER)
    assert (report.updated["initiatives"], report.ignored_stamps) == (0, 1)
    assert one(engine, tables.initiatives, id=5)["updated_at"] == NOW
    # A changed row given with an older updated_at takes the load's stamp.
    initiative["title"] = "Support triage assistant"
    loaded(engine, bundle, now=LATER)
    assert one(engine, tables.initiatives, id=5)["updated_at"] == LATER


def test_keep_stamps_keeps_the_bundles_updated_at(engine: Engine) -> None:
    # SEMANTICS R32: --keep-stamps keeps them as given (fixtures, copying a store).
    bundle = base_bundle()
    initiative = record(bundle, "initiatives", 5)
    initiative["created_at"] = "2025-06-01T08:00:00Z"
    initiative["updated_at"] = "2025-07-01T09:15:30.5+02:00"
    report = load_bundle(engine, bundle, now=NOW, keep_stamps=True)
    assert report.ignored_stamps == 0
    stored = one(engine, tables.initiatives, id=5)
    assert stored["updated_at"] == datetime(2025, 7, 1, 7, 15, 30, 500_000)
    # A different given updated_at alone is a change, and is kept as given.
    initiative["updated_at"] = "2025-08-01T00:00:00Z"
    report = load_bundle(engine, bundle, now=LATER, keep_stamps=True)
    assert report.updated["initiatives"] == 1
    assert one(engine, tables.initiatives, id=5)["updated_at"] == datetime(2025, 8, 1)
    # A content change with a given updated_at takes the given one, not the load's.
    initiative["title"] = "Support triage assistant"
    load_bundle(engine, bundle, now=LATER, keep_stamps=True)
    assert one(engine, tables.initiatives, id=5)["updated_at"] == datetime(2025, 8, 1)


def test_a_sample_size_below_none_is_refused(engine: Engine) -> None:
    # SPEC 2.6 sample_size: how many readings a value stands for; -1 was stored and served.
    loaded(engine)
    bundle = base_bundle()
    record(bundle, "observations", 31)["sample_size"] = -1
    assert refused(engine, bundle) == [
        "observations[id=31].sample_size: -1 is out of range (0 to 2147483647)"
    ]
    record(bundle, "observations", 31)["sample_size"] = 0
    loaded(engine, bundle, now=LATER)
    assert one(engine, tables.observations, id=31)["sample_size"] == 0


def test_a_kept_stamp_leaves_later_loads_room(engine: Engine) -> None:
    # SEMANTICS R32: every later load stamps after the latest kept stamp, a millisecond on;
    # one at the end of the year 9999 left none, and each later load crashed.
    loaded(engine)
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["updated_at"] = "9999-12-31T23:59:59.999Z"
    before = snapshot(engine)
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, bundle, now=LATER, keep_stamps=True)
    assert caught.value.problems == [
        "initiatives[id=5].updated_at: too late to keep: a kept updated_at must be before "
        "9999-01-01T00:00:00Z, so that later loads can still stamp after it"
    ]
    assert snapshot(engine) == before
    # Without --keep-stamps the given stamp is ignored, so it is no problem.
    record(bundle, "initiatives", 5)["title"] = "Renamed"
    assert loaded(engine, bundle, now=LATER).ignored_stamps == 1
    # The last moment allowed is kept, and the next load stamps a millisecond after it.
    record(bundle, "initiatives", 5)["updated_at"] = "9998-12-31T23:59:59.999Z"
    load_bundle(engine, bundle, now=LATER, keep_stamps=True)
    record(bundle, "initiatives", 5)["title"] = "Renamed again"
    report = loaded(engine, bundle, now=LATER)
    assert report.stamp == datetime(9999, 1, 1)
    assert one(engine, tables.initiatives, id=5)["updated_at"] == datetime(9999, 1, 1)


def test_a_load_that_waited_stamps_when_it_holds_the_lock(engine: Engine) -> None:
    # SEMANTICS R32: one moment taken once the load holds the store's write lock, not when
    # the load was asked for (a load that waited stamped the moment it began waiting).
    loaded(engine)
    holding, released = threading.Event(), []

    def another_load() -> None:
        with locked(engine, wait=5):
            holding.set()
            time.sleep(0.5)
            released.append(utc_now())

    other = threading.Thread(target=another_load)
    other.start()
    assert holding.wait(5)
    asked = utc_now()
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["title"] = "Renamed"
    report = load_bundle(engine, bundle, wait=5)
    other.join()
    assert report.stamp is not None
    assert report.stamp >= truncate_ms(released[0]) > asked


def test_a_store_stamped_at_the_end_of_time_refuses_a_load_by_a_clear_line(
    engine: Engine,
) -> None:
    # A stamp kept before the bound above existed: the load says so, it does not crash.
    loaded(engine)
    with engine.begin() as conn:
        end = datetime(9999, 12, 31, 23, 59, 59, 999_000)
        conn.execute(tables.store_clock.update().values(last_stamp=end))
    before = snapshot(engine)
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["title"] = "Renamed"
    assert refused(engine, bundle) == [
        "store: its last stamp 9999-12-31T23:59:59.999Z leaves no later moment to stamp with"
    ]
    assert snapshot(engine) == before


def test_datetimes_are_stored_utc_truncated_to_the_millisecond(engine: Engine) -> None:
    bundle = base_bundle()
    record(bundle, "decisions", 9)["decided_at"] = "2026-02-20T10:00:00.123456789Z"
    record(bundle, "initiatives", 5)["went_live_at"] = "2026-02-01 09:30:00.9999-05:00"
    record(bundle, "value_entries", 21)["approved_at"] = "2026-02-03T04:05:06"
    loaded(engine, bundle, now=datetime(2026, 3, 1, 12, 0, 0, 456_789))
    assert one(engine, tables.decisions, id=9)["decided_at"] == datetime(
        2026, 2, 20, 10, 0, 0, 123_000
    )
    assert one(engine, tables.initiatives, id=5)["went_live_at"] == datetime(
        2026, 2, 1, 14, 30, 0, 999_000
    )
    assert one(engine, tables.value_entries, id=21)["approved_at"] == datetime(2026, 2, 3, 4, 5, 6)
    assert one(engine, tables.metrics, id=6)["created_at"] == datetime(
        2026, 3, 1, 12, 0, 0, 456_000
    )


def test_derived_fields_are_computed_and_served_only_fields_ignored(engine: Engine) -> None:
    bundle = base_bundle()
    bundle["cost_entries"] += [
        {"id": 19, "initiative_id": 5, "amount_cents": 700, "cost_type": "Consulting"},
        {"id": 20, "initiative_id": 5, "amount_cents": 800},
        {
            "id": 22,
            "initiative_id": 5,
            "amount_cents": 900,
            "cost_type": "training",
            "cost_category": "opex",
            # SEMANTICS R35's fields of a row copied from the API: computed again, not loaded.
            "account_amount_cents": 1,
            "reported_on": "1999-01-01",
        },
    ]
    bundle["value_entries"] += [
        {
            "id": 23,
            "initiative_id": 5,
            "amount_cents": 1,
            "status": "draft",
            "counts_toward_roi": False,
            "source": {"type": "sync", "connection_id": 4},
        },
        {"id": 24, "initiative_id": 5, "amount_cents": 2, "status": "draft", "formula_id": 7101},
        {
            "id": 25,
            "initiative_id": 5,
            "amount_cents": 3,
            "status": "draft",
            "provenance": "imported from the finance system",
        },
    ]
    decision = record(bundle, "decisions", 9)
    decision.update(outcome_label="Scale", stage_changed=False)
    loaded(engine, bundle)
    category = {r["id"]: r["cost_category"] for r in rows(engine, tables.cost_entries)}
    assert category == {17: "opex", 18: "capex", 19: "capex", 20: "opex", 22: "opex"}
    copied = one(engine, tables.cost_entries, id=22)
    # No period and no currency: the account's, at its own amount, dated by created_at (R2).
    assert copied["account_amount_cents"] == 900
    assert copied["entry_date"] == copied["created_at"].date()
    provenance = {r["id"]: r["provenance"] for r in rows(engine, tables.value_entries)}
    assert provenance == {
        21: "entered by hand",
        23: "synced from a connection",
        24: "calculated from a formula",
        25: "imported from the finance system",
    }


def test_person_references_and_nested_or_flat_sources_are_accepted(engine: Engine) -> None:
    bundle = base_bundle()
    initiative = record(bundle, "initiatives", 5)
    del initiative["owner_id"]
    initiative["owner"] = {"id": 1, "name": "Ada"}
    decision = record(bundle, "decisions", 9)
    del decision["decided_by_id"]
    decision["decided_by"] = {"id": 1, "name": "Ada"}
    bundle["integrations"][0]["connected_by"] = {"id": 1, "name": "Ada"}
    bundle["initiative_notes"][0] = {
        "id": 51,
        "initiative_id": 5,
        "body": "Kick-off",
        "author": {"id": 1, "name": "Ada"},
    }
    bundle["cost_entries"] += [
        {
            "id": 19,
            "initiative_id": 5,
            "amount_cents": 1,
            "source": {"type": "import", "ref": "INV-1", "connection_id": 4},
        },
        {
            "id": 20,
            "initiative_id": 5,
            "amount_cents": 1,
            "source_type": "import",
            "source_ref": "INV-1",
            "source_connection_id": 4,
        },
    ]
    loaded(engine, bundle)
    assert one(engine, tables.initiatives, id=5)["owner_id"] == 1
    assert one(engine, tables.decisions, id=9)["decided_by_id"] == 1
    assert one(engine, tables.integrations, id=4)["connected_by_id"] == 1
    assert one(engine, tables.initiative_notes, id=51)["author_id"] == 1
    sources = [
        (r["source_type"], r["source_ref"], r["source_connection_id"])
        for r in rows(engine, tables.cost_entries)
        if r["id"] in (19, 20)
    ]
    assert sources == [("import", "INV-1", 4), ("import", "INV-1", 4)]


def test_observation_account_comes_from_its_metric_or_is_given(engine: Engine) -> None:
    loaded(engine)
    bundle = {
        "observations": [
            {
                "id": 32,
                "metric_id": 6,
                "value": 1.0,
                "role": "reading",
                "observed_at": "2026-02-01T00:00:00Z",
            },
            {"id": 33, "account_id": 2, "metric_key": "nps", "value": None},
        ]
    }
    report = loaded(engine, bundle)
    assert report.inserted["observations"] == 2
    assert one(engine, tables.observations, id=32)["account_id"] == 1
    assert one(engine, tables.observations, id=32)["metric_key"] == "tickets_deflected"
    assert one(engine, tables.observations, id=33)["account_id"] == 2


def test_fx_rates_upsert_by_account_currency_and_date(engine: Engine) -> None:
    loaded(engine)
    bundle = {
        "fx_rates": [
            {"account_id": 1, "currency": "EUR", "rate": "1.1", "effective_from": "2026-01-01"},
            {"account_id": 1, "currency": "GBP", "rate": "1.2650", "effective_from": "2026-01-01"},
        ]
    }
    report = loaded(engine, bundle, now=LATER)
    assert (report.updated["fx_rates"], report.inserted["fx_rates"]) == (1, 1)
    stored = {(r["currency"], r["rate"]) for r in rows(engine, tables.fx_rates)}
    assert stored == {("EUR", "1.1"), ("GBP", "1.2650")}


# --------------------------------------------------------------------------- problems


def _set(key: str, record_id: int, **fields: Any) -> Any:
    def change(bundle: Bundle) -> None:
        record(bundle, key, record_id).update(fields)

    return change


def _drop(key: str, record_id: int, name: str) -> Any:
    def change(bundle: Bundle) -> None:
        del record(bundle, key, record_id)[name]

    return change


def _fresh(key: str, record_id: int, *names: str) -> Any:
    """A new record like `record_id` (id + 1000) without `names`: a new row's required
    fields must be given (SEMANTICS R33), where an existing row keeps what is left out."""

    def change(bundle: Bundle) -> None:
        fresh = {**record(bundle, key, record_id), "id": record_id + 1000}
        for name in names:
            fresh.pop(name, None)
        bundle[key].append(fresh)

    return change


def _add(key: str, **fields: Any) -> Any:
    def change(bundle: Bundle) -> None:
        bundle.setdefault(key, []).append(fields)

    return change


def _top(key: str, value: Any) -> Any:
    def change(bundle: Bundle) -> None:
        bundle[key] = value

    return change


STAGES = "identified, reviewing, implementing, live, paused, completed, rejected, dismissed"

PROBLEMS = [
    (_top("costs", []), "bundle: unknown key 'costs'"),
    (_top("initiatives", {"id": 5}), "bundle: 'initiatives' must be an array"),
    (_top("delete", [5]), "bundle: 'delete' must be an object"),
    (_set("initiatives", 5, stauts="live"), "initiatives[id=5].stauts: unknown field"),
    (_set("initiatives", 5, stage="liv"), f"initiatives[id=5].stage: 'liv' is not one of {STAGES}"),
    (_fresh("initiatives", 5, "title"), "initiatives[id=1005].title: required"),
    (_set("initiatives", 5, title=None), "initiatives[id=5].title: required"),
    (
        _set("initiatives", 5, title="x" * 501),
        "initiatives[id=5].title: longer than 500 characters",
    ),
    (
        _set("initiatives", 5, priority=2**31),
        "initiatives[id=5].priority: 2147483648 is out of range (-2147483648 to 2147483647)",
    ),
    (
        _set("initiatives", 5, started_at="1700000000"),
        "initiatives[id=5].started_at: '1700000000' is not an ISO 8601 date-time",
    ),
    (
        _set("initiatives", 5, closed_at="2026-02-01"),
        "initiatives[id=5].closed_at: '2026-02-01' is not an ISO 8601 date-time",
    ),
    (
        # SEMANTICS R3: well formed, but before year 1 once in UTC.
        _set("initiatives", 5, closed_at="0001-01-01T00:00:00+01:00"),
        "initiatives[id=5].closed_at: '0001-01-01T00:00:00+01:00' is not an ISO 8601 date-time",
    ),
    (
        _set("initiatives", 5, confidence_score="high"),
        "initiatives[id=5].confidence_score: 'high' is not a number",
    ),
    (
        _set("initiatives", 5, owner={"id": 2, "name": "Bo"}),
        "initiatives[id=5].owner: id 2 does not match owner_id 1",
    ),
    (_fresh("initiatives", 5, "account_id"), "initiatives[id=1005].account_id: required"),
    (_set("initiatives", 5, account_id=3), "initiatives[id=5].account_id: no account 3"),
    (
        _set("cost_entries", 17, amount_cents="1000"),
        "cost_entries[id=17].amount_cents: '1000' is not an integer",
    ),
    (
        _set("cost_entries", 17, amount_cents=True),
        "cost_entries[id=17].amount_cents: true is not an integer",
    ),
    (
        _set("cost_entries", 17, amount_cents=10.5),
        "cost_entries[id=17].amount_cents: 10.5 is not an integer",
    ),
    (
        _set("cost_entries", 17, currency="eur"),
        "cost_entries[id=17].currency: 'eur' is not a currency code (three upper-case letters)",
    ),
    (
        _set("cost_entries", 17, period_start="2026-02-30"),
        "cost_entries[id=17].period_start: '2026-02-30' is not a date (YYYY-MM-DD)",
    ),
    (
        _set("cost_entries", 17, is_estimated="yes"),
        "cost_entries[id=17].is_estimated: 'yes' is not a boolean (true or false)",
    ),
    (
        _set("cost_entries", 17, cost_category="running"),
        "cost_entries[id=17].cost_category: 'running' is not one of capex, opex",
    ),
    (
        _set("cost_entries", 17, source={"kind": "import"}),
        "cost_entries[id=17].source.kind: unknown field",
    ),
    (
        _set("cost_entries", 17, source={"connection_id": 4}, source_connection_id=5),
        "cost_entries[id=17].source.connection_id: does not match source_connection_id",
    ),
    (
        _drop("cost_entries", 17, "id"),
        "cost_entries[#0].id: required (or a source ref to match the row by, SEMANTICS R42)",
    ),
    (
        _set("cost_entries", 17, id=0),
        "cost_entries[#0].id: 0 is not an id (a positive integer below 2**63)",
    ),
    (
        _set("cost_entries", 17, id=2**63),
        "cost_entries[#0].id: 9223372036854775808 is not an id (a positive integer below 2**63)",
    ),
    (
        _set("cost_entries", 17, id="17"),
        "cost_entries[#0].id: '17' is not an id (a positive integer below 2**63)",
    ),
    (
        _fresh("cost_entries", 17, "initiative_id"),
        "cost_entries[id=1017].initiative_id: required",
    ),
    (
        _set("cost_entries", 17, initiative_id=99),
        "cost_entries[id=17].initiative_id: no initiative 99",
    ),
    (_set("cost_entries", 18, id=17), "cost_entries[id=17].id: duplicate id 17 in this bundle"),
    (_top("cost_entries", ["not a record"]), "cost_entries[#0]: 'not a record' is not an object"),
    (
        _set("value_entries", 21, status="paid"),
        "value_entries[id=21].status: 'paid' is not one "
        "of draft, calculated, reviewed, approved, "
        "disputed, archived",
    ),
    (_fresh("value_entries", 21, "status"), "value_entries[id=1021].status: required"),
    (
        _set("observations", 31, role="target"),
        "observations[id=31].role: 'target' is not one of baseline, reading",
    ),
    (
        _fresh("observations", 31, "metric_id", "initiative_id", "account_id"),
        "observations[id=1031].account_id: required when neither initiative_id nor metric_id "
        "is given",
    ),
    (_set("observations", 31, metric_id=60), "observations[id=31].metric_id: no metric 60"),
    (_set("metrics", 6, metric_key=None), "metrics[id=6].metric_key: required"),
    (
        _set("users", 1, role="boss"),
        "users[id=1].role: 'boss' is not one of owner, admin, member, viewer",
    ),
    (_fresh("users", 1, "name"), "users[id=1001].name: required"),
    (
        _set("accounts", 1, fiscal_year_start_month=13),
        "accounts[id=1].fiscal_year_start_month: 13 is out of range (1 to 12)",
    ),
    (
        _set("accounts", 1, api_access="yes"),
        "accounts[id=1].api_access: 'yes' is not a boolean (true or false)",
    ),
    (_fresh("accounts", 1, "name"), "accounts[id=1001].name: required"),
    (
        _set("budget_versions", 41, opex_cadence="weekly"),
        "budget_versions[id=41].opex_cadence: 'weekly' is not one of monthly, quarterly, annually",
    ),
    (
        _set("budget_versions", 41, source="import"),
        "budget_versions[id=41].source: 'import' is not one of approval, revision, manual",
    ),
    (
        _set("budget_versions", 41, status="draft"),
        "budget_versions[id=41].status: 'draft' is not one of approved, pending, rejected",
    ),
    (
        _fresh("budget_versions", 41, "effective_from"),
        "budget_versions[id=1041].effective_from: required",
    ),
    (
        _set("decisions", 9, outcome="grow"),
        "decisions[id=9].outcome: 'grow' is not one of continue, scale, fix, pause, retire",
    ),
    (_fresh("decisions", 9, "rationale"), "decisions[id=1009].rationale: required"),
    (
        _set("decisions", 9, stage_after="done"),
        f"decisions[id=9].stage_after: 'done' is not one of {STAGES}",
    ),
    (
        _set("integrations", 4, status="broken"),
        "integrations[id=4].status: 'broken' is not one of active, paused, error, disconnected",
    ),
    (
        _set("integrations", 4, auth_type="password"),
        "integrations[id=4].auth_type: 'password' is not one of oauth, api_key, basic, webhook, "
        "github_app, service_account",
    ),
    (_fresh("integrations", 4, "platform"), "integrations[id=1004].platform: required"),
    (
        _set("integrations", 4, simulated=True),
        "integrations[id=4].simulated: only an internal account can hold a simulated connection",
    ),
    (
        _set("integrations", 4, metric_categories="ai_usage"),
        "integrations[id=4].metric_categories: 'ai_usage' is not an array of strings",
    ),
    (
        _set("assessments", 61, status="open"),
        "assessments[id=61].status: 'open' is not one of active, closed",
    ),
    (
        _add("tokens", user_id=99, token="airoi_other-secret"),
        "tokens[#1,user_id=99].user_id: no user 99",
    ),
    (_add("tokens", user_id=1), "tokens[#1,user_id=1].token: required"),
    (
        _add("tokens", user_id=1, token=SECRET),
        "tokens[#1,user_id=1].token: duplicate token in this bundle",
    ),
    (
        _add("fx_rates", account_id=1, currency="GBP", rate="-1.2", effective_from="2026-01-01"),
        "fx_rates[account_id=1,currency=GBP,effective_from=2026-01-01].rate: '-1.2' is not a "
        "decimal number such as '1.0825'",
    ),
    (
        _add("fx_rates", account_id=1, currency="GBP", rate="0", effective_from="2026-01-01"),
        "fx_rates[account_id=1,currency=GBP,effective_from=2026-01-01].rate: '0' is not greater "
        "than 0",
    ),
    (
        _add("fx_rates", account_id=1, currency="GBP", rate="1.2"),
        "fx_rates[#1].effective_from: required",
    ),
    (
        _add("fx_rates", account_id=9, currency="GBP", rate="1.2", effective_from="2026-01-01"),
        "fx_rates[account_id=9,currency=GBP,effective_from=2026-01-01].account_id: no account 9",
    ),
    (
        _set("vendors", 2, merged_into_id=2),
        "vendors[id=2].merged_into_id: a vendor cannot be merged into itself",
    ),
    (
        _set("vendors", 2, merged_into_id=42),
        "vendors[id=2].merged_into_id: no vendor 42 in account 1",
    ),
    (_top("delete", {"decisions": [9]}), "delete.decisions: a decision is never deleted (SPEC 3)"),
    (_top("delete", {"vendors": [1]}), "delete.vendors: not a kind that can be deleted"),
    # A secret the client cannot send (a lone surrogate, a space, a line break, é) opens nothing.
    *[
        (
            _add("tokens", user_id=1, token="airoi_" + "s" * 43 + odd),
            "tokens[#1,user_id=1].token: holds a space, a line break or a character that is not "
            "ASCII: a client cannot send it as given",
        )
        for odd in ("\ud800", " ", "\n", "é")
    ],
    (
        _top("delete", {"initiatives": ["5"]}),
        "delete.initiatives[#0]: '5' is not an id (a positive integer below 2**63)",
    ),
]


def test_an_account_holding_a_simulated_connection_stays_internal(engine: Engine) -> None:
    # SPEC 2.9: only an internal account holds a simulated connection. The rule was checked
    # when the connection was loaded, not when its account was loaded again without it.
    bundle = base_bundle()
    bundle["integrations"].append(
        {
            "id": 14,
            "account_id": 2,
            "platform": "openai",
            "status": "active",
            "auth_type": "api_key",
            "simulated": True,
        }
    )
    loaded(engine, bundle)
    globex = {**base_bundle()["accounts"][1], "internal": False}
    assert refused(engine, {"accounts": [globex]}) == [
        "accounts[id=2].internal: false, but its connection 14 is simulated, which only an "
        "internal account can hold (SPEC 2.9)"
    ]
    # Without the simulated connection (deleted, or given again as real) it may change.
    real = {**bundle["integrations"][1], "simulated": False}
    assert loaded(engine, {"accounts": [globex], "integrations": [real]}).updated["accounts"] == 1
    loaded(
        engine,
        {"accounts": [base_bundle()["accounts"][1]], "integrations": [bundle["integrations"][1]]},
    )
    report = loaded(engine, {"accounts": [globex], "delete": {"integrations": [14]}})
    assert (report.updated["accounts"], report.deleted["integrations"]) == (1, 1)


@pytest.mark.parametrize(("change", "expected"), PROBLEMS)
def test_a_problem_names_key_id_and_field_and_nothing_is_written(
    engine: Engine, change: Any, expected: str
) -> None:
    loaded(engine)
    bundle = base_bundle()
    change(bundle)
    problems = refused(engine, bundle)
    assert expected in problems, problems


def test_problems_on_an_empty_store_write_nothing(engine: Engine) -> None:
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["stage"] = "liv"
    refused(engine, bundle)
    assert all(not table_rows for table_rows in snapshot(engine).values())


def test_several_problems_are_reported_at_once(engine: Engine) -> None:
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["stage"] = "liv"
    record(bundle, "cost_entries", 17)["currency"] = "GBP"
    record(bundle, "users", 2)["role"] = "boss"
    bundle["costs"] = []
    del record(bundle, "value_entries", 21)["status"]
    problems = refused(engine, bundle)
    assert sorted(problems) == sorted(
        [
            "bundle: unknown key 'costs'",
            "users[id=2].role: 'boss' is not one of owner, admin, member, viewer",
            f"initiatives[id=5].stage: 'liv' is not one of {STAGES}",
            "value_entries[id=21].status: required",
            "cost_entries[id=17].currency: no FX rate for GBP in account 1",
        ]
    )


def test_a_flood_of_problems_is_capped_with_a_count(engine: Engine) -> None:
    bundle = {
        "accounts": [{"id": 1, "name": "Acme"}],
        "cost_entries": [{"id": n, "amount_cents": 1} for n in range(1, 1_006)],
    }
    problems = refused(engine, bundle)
    assert len(problems) == 1_001
    assert problems[0] == "cost_entries[id=1].initiative_id: required"
    assert problems[-1] == "bundle: 5 more problems not listed"


def test_a_file_that_is_not_json_is_refused(engine: Engine, tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"accounts": [{"id": 1,, }]}')
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, path)
    assert len(caught.value.problems) == 1
    assert caught.value.problems[0].startswith("bundle: not valid JSON (")
    path.write_text("[1, 2]")
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, path)
    assert caught.value.problems == ["bundle: not a JSON object"]
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, tmp_path / "missing.json")
    assert caught.value.problems[0].startswith("bundle: cannot read ")


ONE_OBJECT = (
    "bundle: text follows the JSON object (a second document or trailing text); "
    "a bundle is exactly one JSON object"
)
ACME_2 = '{"accounts": [{"id": 3, "name": "Initech"}]'
VENDOR_A = '{"id": 8, "account_id": 3, "name": "Initrode"}'
VENDOR_B = '{"id": 9, "account_id": 3, "name": "Initrode Two"}'


@pytest.mark.parametrize("name", ["bundle.json", "bundle.json.gz"])
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (ACME_2 + '}{"vendors": [' + VENDOR_A + "]}", ONE_OBJECT),
        (ACME_2 + "} trailing", ONE_OBJECT),
        (ACME_2 + "}\n[]\n", ONE_OBJECT),
        (
            ACME_2 + ', "vendors": [' + VENDOR_A + '], "vendors": [' + VENDOR_B + "]}",
            "bundle: the key 'vendors' is given more than once",
        ),
    ],
    ids=["two-documents", "trailing-text", "trailing-array", "repeated-key"],
)
def test_a_file_is_exactly_one_json_object(
    engine: Engine, tmp_path: Path, name: str, text: str, expected: str
) -> None:
    loaded(engine)
    path = tmp_path / name
    data = text.encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    assert refused(engine, path) == [expected]
    # Whitespace after the object is not more text.
    whole = ACME_2 + ', "vendors": [' + VENDOR_A + "]}\n \n"
    path.write_bytes(gzip.compress(whole.encode()) if name.endswith(".gz") else whole.encode())
    assert load_bundle(engine, path, now=LATER).inserted["vendors"] == 1


@pytest.mark.parametrize("name", ["bundle.json", "bundle.json.gz"])
def test_a_byte_order_mark_before_the_object_is_read_past(
    engine: Engine, tmp_path: Path, name: str
) -> None:
    # RFC 8259 8.1: a parser may ignore a UTF-8 byte order mark; Windows tools write one.
    # It was "bundle: not valid JSON (lexical error: invalid char in json text.)".
    path = tmp_path / name
    text = b"\xef\xbb\xbf" + (ACME_2 + ', "vendors": [' + VENDOR_A + "]}").encode()
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    report = load_bundle(engine, path, now=LATER)
    assert (report.inserted["accounts"], report.inserted["vendors"]) == (1, 1)
    # Only before the object: one inside a string is kept as the text it is.
    path.write_bytes(b'{"accounts": [{"id": 3, "name": "\xef\xbb\xbfInitech"}]}')
    load_bundle(engine, path, now=LATER)
    assert one(engine, tables.accounts, id=3)["name"] == "\ufeffInitech"


def test_a_name_given_twice_in_a_record_is_refused(engine: Engine, tmp_path: Path) -> None:
    loaded(engine)
    path = tmp_path / "repeated.json"
    path.write_text(
        '{"vendors": [{"id": 1, "account_id": 1, "name": "OpenAI", "name": "Other"}],'
        ' "cost_entries": [{"id": 17, "initiative_id": 5, "amount_cents": 1,'
        ' "source": {"type": "csv", "type": "api"}}],'
        ' "integrations": [{"id": 4, "account_id": 1, "platform": "openai", "status": "active",'
        ' "credentials": {"api_key": "sk-a", "api_key": "sk-b"}}],'
        ' "delete": {"initiatives": [404], "initiatives": [7]}}'
    )
    assert sorted(refused(engine, path)) == [
        "cost_entries[id=17].source.type: given more than once",
        "delete.initiatives: given more than once",
        # A name inside credentials is not said, as its value is not (SEMANTICS R15).
        "integrations[id=4].credentials: a name inside it is given more than once",
        "vendors[id=1].name: given more than once",
    ]


def test_a_record_or_delete_past_its_size_is_one_problem(engine: Engine, tmp_path: Path) -> None:
    # A 30 MB `settings` object was built whole and kept (a 45 MB row, the load's memory
    # about twelve times the file). A record is read up to 4 MiB of JSON text (and the
    # parser's read-ahead, 64 KiB); 'delete' up to 1,000,000 ids.
    loaded(engine)
    path = tmp_path / "large.json"
    integration = base_bundle()["integrations"][0]
    largest = {"id": 4, "account_id": 1, "platform": "openai", "status": "active"}
    for field in ("primary_source_categories", "metric_categories"):
        largest[field] = [f"{n:04d}" + "c" * 996 for n in range(1_000)]  # each list's most
    path.write_text(json.dumps({"integrations": [largest]}))
    assert load_bundle(engine, path, now=LATER).updated["integrations"] == 1
    too_large = (
        "bundle: integrations[#0].settings is too large: a record is at most 4 MiB of JSON text"
    )
    texts = {f"k{n}": "x" * 100_000 for n in range(43)}  # 4.3 MB
    many = {"list": [1] * 2_200_000}  # 4.4 MB: two bytes a value
    for settings in (texts, many):
        path.write_text(compact({"integrations": [{**integration, "settings": settings}]}))
        assert refused(engine, path) == [too_large]
    # The same in a .json.gz: what counts is the JSON text, not the compressed bytes.
    path = tmp_path / "large.json.gz"
    path.write_bytes(
        gzip.compress(compact({"integrations": [{**integration, "settings": many}]}).encode())
    )
    assert refused(engine, path) == [too_large]
    fewer = {"list": [1] * 1_900_000}  # 3.8 MB
    path.write_bytes(
        gzip.compress(compact({"integrations": [{**integration, "settings": fewer}]}).encode())
    )
    assert load_bundle(engine, path, now=LATER).updated["integrations"] == 1
    too_many = (
        "bundle: 'delete' holds more than 1,000,000 ids; delete them over more than one bundle"
    )
    path = tmp_path / "delete.json"
    for ids in (
        {"cost_entries": list(range(1, 1_000_002))},  # counted once read
        {"cost_entries": [1] * 6_000_000, "value_entries": [1] * 6_000_000},  # while read
    ):
        path.write_text(compact({"delete": ids}))
        assert refused(engine, path) == [too_many]


def compact(bundle: Bundle) -> str:
    return json.dumps(bundle, separators=(",", ":"))


@pytest.mark.parametrize(
    ("field", "opening", "closing", "shallower"),
    [
        ("notes", '{"k":', "}", "an object is not a string"),
        ("tags", "[", "]", "unknown field"),
    ],
)
def test_a_value_nested_past_any_record_is_one_problem(
    engine: Engine, tmp_path: Path, field: str, opening: str, closing: str, shallower: str
) -> None:
    # 5,000 levels used to exhaust the stack: a RecursionError traceback, not a problem line.
    loaded(engine)
    deep = opening * 5_000 + "1" + closing * 5_000
    path = tmp_path / "deep.json"
    path.write_text(
        '{"cost_entries": [{"id": 17, "initiative_id": 5, "amount_cents": 1},'
        ' {"id": 19, "initiative_id": 5, "amount_cents": 1, "' + field + '": ' + deep + "}]}"
    )
    assert refused(engine, path) == [
        f"bundle: cost_entries[#1].{field} nests deeper than 64 levels"
    ]
    # 63 levels below the record's field are read (and the field refused for what it holds).
    path.write_text(
        '{"cost_entries": [{"id": 17, "initiative_id": 5, "amount_cents": 1, "'
        + field
        + '": '
        + opening * 63
        + "1"
        + closing * 63
        + "}]}"
    )
    assert refused(engine, path) == [f"cost_entries[id=17].{field}: {shallower}"]


def test_a_gzip_file_is_read_to_its_end(engine: Engine, tmp_path: Path) -> None:
    loaded(engine)
    packed = gzip.compress((ACME_2 + "}").encode())
    path = tmp_path / "bundle.json.gz"
    path.write_bytes(packed[:-4])  # the JSON is whole, the gzip stream is not
    problems = refused(engine, path)
    assert len(problems) == 1 and problems[0].startswith("bundle: not a valid gzip file ("), (
        problems
    )
    path.write_bytes(packed + b"trailing")
    problems = refused(engine, path)
    assert len(problems) == 1 and problems[0].startswith("bundle: not a valid gzip file ("), (
        problems
    )


# --------------------------------------------------------------------------- references


def test_references_across_accounts_are_refused(engine: Engine) -> None:
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["owner_id"] = 2
    record(bundle, "cost_entries", 18)["vendor_id"] = 3
    record(bundle, "cost_entries", 17)["account_id"] = 2
    record(bundle, "decisions", 9)["initiative_id"] = 7
    record(bundle, "budget_versions", 41)["set_by_id"] = 2
    record(bundle, "value_entries", 21)["source"] = {"connection_id": 4}
    record(bundle, "initiatives", 7)["owner_id"] = 1
    record(bundle, "observations", 31)["initiative_id"] = 7
    problems = refused(engine, bundle)
    assert sorted(problems) == sorted(
        [
            "initiatives[id=5].owner_id: no user 2 in account 1",
            "initiatives[id=7].owner_id: no user 1 in account 2",
            "budget_versions[id=41].set_by_id: no user 2 in account 1",
            "decisions[id=9].initiative_id: no initiative 7 in account 1",
            "cost_entries[id=17].account_id: initiative 5 is in account 1, not 2",
            "cost_entries[id=18].vendor_id: no vendor 3 in account 1",
            "observations[id=31].metric_id: no metric 6 in account 2",
        ]
    )
    # The connection of value entry 21 is in its own account: no problem there.


def test_references_resolve_against_rows_already_stored(engine: Engine) -> None:
    loaded(engine)
    report = loaded(
        engine,
        {
            "cost_entries": [
                {
                    "id": 40,
                    "initiative_id": 5,
                    "amount_cents": 10,
                    "currency": "EUR",
                    "vendor_id": 1,
                    "source": {"connection_id": 4},
                }
            ],
            "initiatives": [
                {"id": 8, "account_id": 1, "title": "New", "stage": "identified", "owner_id": 1}
            ],
        },
    )
    assert (report.inserted["cost_entries"], report.inserted["initiatives"]) == (1, 1)
    problems = refused(
        engine,
        {"cost_entries": [{"id": 41, "initiative_id": 7, "amount_cents": 10, "vendor_id": 1}]},
    )
    assert problems == ["cost_entries[id=41].vendor_id: no vendor 1 in account 2"]


def test_an_id_that_belongs_to_another_account_is_refused(engine: Engine) -> None:
    loaded(engine)
    problems = refused(
        engine,
        {
            "initiatives": [{"id": 5, "account_id": 2, "title": "Taken", "stage": "live"}],
            "users": [{"id": 1, "account_id": 2, "name": "Ada", "role": "member"}],
            "cost_entries": [{"id": 17, "initiative_id": 7, "amount_cents": 1}],
            "vendors": [{"id": 3, "account_id": 1, "name": "Mistral AI"}],
        },
    )
    assert sorted(problems) == sorted(
        [
            "users[id=1].account_id: id 1 belongs to another account",
            "vendors[id=3].account_id: id 3 belongs to another account",
            "initiatives[id=5].account_id: id 5 belongs to another account",
            "cost_entries[id=17].initiative_id: initiative 7 is in account 2, but id 17 "
            "belongs to account 1: a row never moves to another account",
        ]
    )


def test_a_refusal_names_the_field_the_bundle_gave(engine: Engine) -> None:
    loaded(engine)
    # Records whose account follows their initiative (or metric) name that field.
    problems = refused(
        engine,
        {
            "cost_entries": [{"id": 17, "initiative_id": 7, "amount_cents": 1}],
            "initiative_notes": [{"id": 51, "initiative_id": 7, "body": "Moved"}],
            "observations": [
                {"id": 31, "metric_id": 6},
                {"id": 32, "account_id": 2, "value": 1.0},
            ],
            "metrics": [{"id": 6, "account_id": 2, "metric_key": "k", "name": "Moved"}],
        },
    )
    moved = "belongs to account 1: a row never moves to another account"
    assert sorted(problems) == [
        f"cost_entries[id=17].initiative_id: initiative 7 is in account 2, but id 17 {moved}",
        f"initiative_notes[id=51].initiative_id: initiative 7 is in account 2, but id 51 {moved}",
        "metrics[id=6].account_id: id 6 belongs to another account",
    ]
    # A record refused for its own account_id is named once; the records that hang off it
    # or refer to it say nothing of an account it cannot have.
    for key, record_id, account_id, expected in (
        ("initiatives", 5, 777, "initiatives[id=5].account_id: no account 777"),
        ("initiatives", 5, 2, "initiatives[id=5].account_id: id 5 belongs to another account"),
        ("users", 1, 777, "users[id=1].account_id: no account 777"),
        ("users", 1, 2, "users[id=1].account_id: id 1 belongs to another account"),
        ("vendors", 2, 777, "vendors[id=2].account_id: no account 777"),
        ("metrics", 6, 2, "metrics[id=6].account_id: id 6 belongs to another account"),
    ):
        bundle = base_bundle()
        record(bundle, key, record_id)["account_id"] = account_id
        assert refused(engine, bundle) == [expected], (key, account_id)


def test_a_new_initiative_of_no_account_is_named_once(engine: Engine) -> None:
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["account_id"] = 777
    assert refused(engine, bundle) == ["initiatives[id=5].account_id: no account 777"]


def test_a_token_issued_to_another_user_is_refused(engine: Engine) -> None:
    loaded(engine)
    problems = refused(engine, {"tokens": [{"user_id": 2, "token": SECRET}]})
    assert problems == ["tokens[#0,user_id=2].token: this token is already issued to another user"]


def test_a_currency_without_fx_rate_is_refused_naming_it(engine: Engine) -> None:
    bundle = base_bundle()
    record(bundle, "cost_entries", 18)["currency"] = "GBP"
    record(bundle, "value_entries", 21)["currency"] = "JPY"
    record(bundle, "initiatives", 5)["currency"] = "CHF"
    record(bundle, "decisions", 9)["currency"] = "SEK"
    # Account 2's own currency needs no rate; account 1's EUR rate does not serve account 2.
    bundle["cost_entries"].append(
        {"id": 19, "initiative_id": 7, "amount_cents": 5, "currency": "EUR"}
    )
    bundle["cost_entries"].append(
        {"id": 20, "initiative_id": 7, "amount_cents": 5, "currency": "USD"}
    )
    problems = refused(engine, bundle)
    assert sorted(problems) == sorted(
        [
            "cost_entries[id=18].currency: no FX rate for GBP in account 1",
            "value_entries[id=21].currency: no FX rate for JPY in account 1",
            "initiatives[id=5].currency: no FX rate for CHF in account 1",
            "decisions[id=9].currency: no FX rate for SEK in account 1",
            "cost_entries[id=20].currency: no FX rate for USD in account 2",
        ]
    )


def test_an_fx_rate_already_stored_serves_a_later_bundle(engine: Engine) -> None:
    loaded(engine)
    report = loaded(
        engine,
        {
            "cost_entries": [
                {"id": 30, "initiative_id": 5, "amount_cents": 2_000, "currency": "EUR"}
            ]
        },
    )
    assert report.inserted["cost_entries"] == 1


# --------------------------------------------------------------------------- decisions


def test_a_decision_never_changes_once_written(engine: Engine) -> None:
    loaded(engine)
    bundle = base_bundle()
    record(bundle, "decisions", 9).update(rationale="Deflection tripled.", roi=1.5)
    problems = refused(engine, bundle)
    assert sorted(problems) == [
        "decisions[id=9].rationale: a decision never changes once written",
        "decisions[id=9].roi: a decision never changes once written",
    ]
    report = loaded(engine, now=LATER)
    assert report.unchanged["decisions"] == 1
    assert one(engine, tables.decisions, id=9)["updated_at"] == NOW


# --------------------------------------------------------------------------- deletes


def test_deleting_an_initiative_removes_its_records_and_unlinks_its_decisions(
    engine: Engine,
) -> None:
    loaded(engine)
    report = loaded(engine, {"delete": {"initiatives": [5, 404]}}, now=LATER)
    assert {k: v for k, v in report.deleted.items() if v} == {
        "initiatives": 1,
        "cost_entries": 2,
        "value_entries": 1,
        "observations": 1,
        "budget_versions": 1,
        "initiative_notes": 1,
    }
    for table in (
        tables.cost_entries,
        tables.value_entries,
        tables.observations,
        tables.budget_versions,
        tables.initiative_notes,
    ):
        assert rows(engine, table, initiative_id=5) == []
    assert rows(engine, tables.initiatives, id=5) == []
    decision = one(engine, tables.decisions, id=9)
    assert decision["initiative_id"] is None
    # The unlinked decision changed: a new updated_at, so a sync by updated_since sees it.
    assert (decision["created_at"], decision["updated_at"]) == (NOW, LATER)
    assert report.updated["decisions"] == 1
    # Deleting again is a no-op; the original bundle's decision still reads as unchanged.
    again = loaded(engine, {"delete": {"initiatives": [5]}})
    assert (again.totals()["deleted"], again.totals()["updated"]) == (0, 0)
    bundle = base_bundle()
    del bundle["decisions"]
    loaded(engine, bundle, now=LATER)
    assert loaded(engine, {"decisions": base_bundle()["decisions"]}).unchanged["decisions"] == 1
    # So does the decision with the stamps it had before it was unlinked.
    stamped = {**base_bundle()["decisions"][0], "created_at": "2026-03-01T12:00:00Z"}
    stamped["updated_at"] = "2026-03-01T12:00:00Z"
    assert loaded(engine, {"decisions": [stamped]}).unchanged["decisions"] == 1
    assert one(engine, tables.decisions, id=9)["updated_at"] == LATER


def test_deleting_records_by_kind(engine: Engine) -> None:
    loaded(engine)
    report = loaded(
        engine,
        {
            "delete": {
                "cost_entries": [17],
                "value_entries": [21],
                "observations": [31],
                "metrics": [6],
                "integrations": [4],
                "assessments": [61],
                "budget_versions": [41],
                "initiative_notes": [51],
                "fx_rates": [1],
            }
        },
    )
    assert report.totals()["deleted"] == 8
    assert [r["id"] for r in rows(engine, tables.cost_entries)] == [18]
    assert rows(engine, tables.metrics) == []
    assert len(rows(engine, tables.fx_rates)) == 1


def test_deleting_a_metric_or_a_connection_unlinks_the_rows_that_named_it(engine: Engine) -> None:
    # BUNDLE.md: references resolve inside the account. Deleting metric 6 or connection 4 used
    # to leave observation 31 and the entries naming them with a dangling id, which a re-load
    # of those same rows then refused. They are unlinked, as a deleted initiative's decisions
    # are, and get a new updated_at so a sync by updated_since sees the change.
    bundle = base_bundle()
    bundle["cost_entries"][0]["source"] = {"type": "sync", "connection_id": 4}
    bundle["value_entries"][0]["source"] = {"type": "sync", "connection_id": 4}
    bundle["observations"][0]["source"] = {"type": "sync", "ref": "r-1", "connection_id": 4}
    loaded(engine, bundle)
    report = loaded(engine, {"delete": {"metrics": [6], "integrations": [4]}}, now=LATER)
    assert {k: v for k, v in report.deleted.items() if v} == {"metrics": 1, "integrations": 1}
    assert {k: v for k, v in report.updated.items() if v} == {
        "cost_entries": 1,
        "value_entries": 1,
        "observations": 1,
    }
    observation = one(engine, tables.observations, id=31)
    assert (observation["metric_id"], observation["source_connection_id"]) == (None, None)
    assert (observation["source_type"], observation["source_ref"]) == ("sync", "r-1")
    assert observation["updated_at"] == LATER
    for table, entry_id in ((tables.cost_entries, 17), (tables.value_entries, 21)):
        entry = one(engine, table, id=entry_id)
        assert (entry["source_connection_id"], entry["updated_at"]) == (None, LATER)
    # Rows that named neither are untouched.
    assert one(engine, tables.cost_entries, id=18)["updated_at"] == NOW
    # The rows as they now are load back unchanged; as they were, naming what is gone, they
    # are refused (references must resolve).
    again = base_bundle()
    refused = [
        ({"observations": again["observations"]}, "observations[id=31].metric_id: no metric 6"),
        ({"cost_entries": bundle["cost_entries"][:1]}, "no integration 4 in account 1"),
    ]
    for given, expected in refused:
        with pytest.raises(BundleError) as caught:
            loaded(engine, given)
        assert any(expected in problem for problem in caught.value.problems), caught.value
    deleting_again = loaded(engine, {"delete": {"metrics": [6], "integrations": [4]}})
    assert deleting_again.totals() == {"inserted": 0, "updated": 0, "unchanged": 0, "deleted": 0}
    # Connection 4 deleted and given again in one bundle, with the rows naming it: it is there
    # after the load, so nothing naming it is unlinked, and the rows given as they are stay
    # unchanged, counted once each.
    loaded(engine, bundle)
    again = loaded(engine, {**bundle, "delete": {"integrations": [4]}}, now=LATER)
    counts = {k: (again.updated[k], again.unchanged[k]) for k in ("cost_entries", "observations")}
    assert counts == {"cost_entries": (0, 2), "observations": (0, 1)}, counts
    assert one(engine, tables.observations, id=31)["source_connection_id"] == 4
    # Given again as it now is (no connection): still a row this load changed.
    as_now = {**bundle["cost_entries"][0], "source": {"type": "sync"}}
    after = loaded(engine, {"cost_entries": [as_now], "delete": {"integrations": [4]}}, now=LATER)
    assert (after.updated["cost_entries"], after.unchanged["cost_entries"]) == (1, 0)
    assert one(engine, tables.cost_entries, id=17)["source_connection_id"] is None


def test_a_metric_given_a_new_key_takes_its_readings_with_it(engine: Engine) -> None:
    # SPEC 4.A.9: ?metric_key= filters by the canonical key. Renaming metric 6's key used to
    # leave observation 31 under the old one: found by the old key, missed by the new, and
    # refused when loaded again as it was served.
    loaded(engine)
    metric = {**base_bundle()["metrics"][0], "metric_key": "tickets_resolved"}
    report = loaded(engine, {"metrics": [metric]}, now=LATER)
    assert (report.updated["metrics"], report.updated["observations"]) == (1, 1)
    observation = one(engine, tables.observations, id=31)
    assert (observation["metric_key"], observation["updated_at"]) == ("tickets_resolved", LATER)
    served = {**base_bundle()["observations"][0], "metric_key": "tickets_resolved"}
    assert loaded(engine, {"observations": [served]}).unchanged["observations"] == 1
    # The same key again changes nothing.
    assert loaded(engine, {"metrics": [metric]}).totals()["updated"] == 0


def test_a_reference_to_a_row_deleted_in_the_same_bundle_is_refused(engine: Engine) -> None:
    loaded(engine)
    problems = refused(
        engine,
        {
            "delete": {"initiatives": [5]},
            "cost_entries": [{"id": 90, "initiative_id": 5, "amount_cents": 1}],
        },
    )
    assert problems == ["cost_entries[id=90].initiative_id: no initiative 5"]


def test_deletes_are_applied_before_upserts(engine: Engine) -> None:
    loaded(engine)
    report = loaded(
        engine,
        {
            "delete": {"cost_entries": [17]},
            "cost_entries": [{"id": 17, "initiative_id": 5, "amount_cents": 3}],
        },
        now=LATER,
    )
    assert (report.deleted["cost_entries"], report.inserted["cost_entries"]) == (1, 1)
    assert one(engine, tables.cost_entries, id=17)["created_at"] == LATER


# --------------------------------------------------------------------------- vendors


def test_a_vendor_name_resolves_case_insensitively_or_creates_a_vendor(engine: Engine) -> None:
    bundle = base_bundle()
    bundle["cost_entries"] += [
        {"id": 19, "initiative_id": 5, "amount_cents": 1, "vendor_name": "  ANTHROPIC "},
        {"id": 20, "initiative_id": 5, "amount_cents": 1, "vendor_name": "Kestrel Partners"},
        {"id": 22, "initiative_id": 5, "amount_cents": 1, "vendor_name": "kestrel partners"},
        {"id": 23, "initiative_id": 7, "amount_cents": 1, "vendor_name": "Kestrel Partners"},
        {"id": 24, "initiative_id": 5, "amount_cents": 1},
    ]
    report = loaded(engine, bundle)
    assert report.inserted["vendors"] == 5  # three given, two created
    # Made from a name: ids from 10**15 up, out of the way of the bundle's own (below 2**53),
    # drawn at random, so one account's tell nothing of another's.
    created = rows(engine, tables.vendors, name="Kestrel Partners")
    by_account = {v["account_id"]: v["id"] for v in created}
    first, second = by_account[1], by_account[2]
    assert all(10**15 <= made < 2**53 for made in (first, second)) and first != second
    assert {(v["account_id"], v["created_at"]) for v in created} == {(1, NOW), (2, NOW)}
    vendor = {r["id"]: r["vendor_id"] for r in rows(engine, tables.cost_entries)}
    assert vendor == {17: 1, 18: 2, 19: 2, 20: first, 22: first, 23: second, 24: None}
    # The names as recorded are left alone.
    assert one(engine, tables.cost_entries, id=19)["vendor_name"] == "  ANTHROPIC "
    # Reloading resolves to the same vendors: nothing changes, nothing is created.
    again = loaded(engine, bundle, now=LATER)
    assert again.inserted["vendors"] == 0
    assert again.unchanged["cost_entries"] == 7


def test_a_vendor_made_from_a_name_never_takes_an_id_a_later_bundle_gives(engine: Engine) -> None:
    # It took the next id (here 4), and a later bundle's vendor 4 renamed it: its spend was then
    # reported under that vendor's name.
    bundle = base_bundle()
    bundle["cost_entries"].append(
        {"id": 19, "initiative_id": 5, "amount_cents": 1, "vendor_name": "Kestrel Partners"}
    )
    loaded(engine, bundle)
    made = one(engine, tables.vendors, name="Kestrel Partners")["id"]
    loaded(engine, {"vendors": [{"id": 4, "account_id": 1, "name": "Google"}]}, now=LATER)
    assert one(engine, tables.vendors, id=made)["name"] == "Kestrel Partners"
    assert one(engine, tables.cost_entries, id=19)["vendor_id"] == made
    assert one(engine, tables.vendors, id=4)["name"] == "Google"


def test_a_merged_vendor_is_followed_to_the_one_it_was_merged_into(engine: Engine) -> None:
    bundle = base_bundle()
    bundle["vendors"] += [
        {"id": 10, "account_id": 1, "name": "AWS", "merged_into_id": 11},
        {"id": 11, "account_id": 1, "name": "Amazon Web Services Inc", "merged_into_id": 12},
        {"id": 12, "account_id": 1, "name": "Amazon Web Services"},
    ]
    bundle["cost_entries"] += [
        {"id": 19, "initiative_id": 5, "amount_cents": 1, "vendor_name": "aws"},
        {"id": 20, "initiative_id": 5, "amount_cents": 1, "vendor_id": 10},
    ]
    loaded(engine, bundle)
    assert one(engine, tables.cost_entries, id=19)["vendor_id"] == 12
    assert one(engine, tables.cost_entries, id=20)["vendor_id"] == 12


def test_merging_a_vendor_repoints_existing_entries(engine: Engine) -> None:
    loaded(engine)
    assert one(engine, tables.cost_entries, id=17)["vendor_id"] == 1
    report = loaded(
        engine,
        {"vendors": [{"id": 1, "account_id": 1, "name": "OpenAI", "merged_into_id": 2}]},
        now=LATER,
    )
    assert report.updated == {**dict.fromkeys(report.updated, 0), "vendors": 1, "cost_entries": 1}
    entry = one(engine, tables.cost_entries, id=17)
    assert (entry["vendor_id"], entry["vendor_name"], entry["updated_at"]) == (2, "openai", LATER)
    assert one(engine, tables.cost_entries, id=18)["updated_at"] == NOW


def test_a_merge_cycle_is_refused(engine: Engine) -> None:
    loaded(engine)
    problems = refused(
        engine,
        {
            "vendors": [
                {"id": 1, "account_id": 1, "name": "OpenAI", "merged_into_id": 2},
                {"id": 2, "account_id": 1, "name": "Anthropic", "merged_into_id": 1},
            ]
        },
    )
    assert sorted(problems) == [
        "vendors[id=1].merged_into_id: merging into vendor 2 makes a cycle",
        "vendors[id=2].merged_into_id: merging into vendor 1 makes a cycle",
    ]


# --------------------------------------------------------------------------- tokens


def test_tokens_are_stored_hashed_never_in_clear(engine: Engine) -> None:
    bundle = base_bundle()
    bundle["tokens"][0].update(expires_at="2026-06-01T00:00:00Z")
    loaded(engine, bundle)
    token = one(engine, tables.tokens, user_id=1)
    assert token["token_hash"] == hash_token(SECRET)
    assert token["prefix"] == shown_prefix(SECRET)
    assert token["expires_at"] == datetime(2026, 6, 1)
    assert token["created_at"] == NOW
    for table_rows in snapshot(engine).values():
        for row in table_rows:
            assert not any(isinstance(v, str) and SECRET in v for v in row)
    # Revoking through a later bundle updates the same token.
    bundle["tokens"][0]["revoked_at"] = "2026-03-02T00:00:00Z"
    assert loaded(engine, bundle, now=LATER).updated["tokens"] == 1
    assert one(engine, tables.tokens, user_id=1)["revoked_at"] == datetime(2026, 3, 2)


def _too_short(length: int, pos: int = 0) -> str:
    return (
        f"tokens[#{pos},user_id=1].token: too short to hold 32 bytes of entropy (SEMANTICS R29): "
        "the secret after the 'airoi_' prefix (or the whole token, without one) needs at least "
        f"43 characters, as 32 random bytes take in URL-safe base64; it has {length}"
    )


def test_a_token_too_short_for_32_bytes_of_entropy_is_refused(engine: Engine) -> None:
    loaded(engine)
    short = "airoi_" + "k" * 42
    problems = refused(
        engine, {"tokens": [{"user_id": 1, "token": "short"}, {"user_id": 1, "token": short}]}
    )
    # Two tokens of one user: each line says which (its place in the bundle's list).
    assert problems == [_too_short(5), _too_short(42, pos=1)]
    # 43 characters after the prefix (or without one) is what `airoi token issue` writes.
    assert secret_length(new_token()) == SECRET_MIN_LENGTH == 43
    enough = [{"user_id": 1, "token": short + "k"}, {"user_id": 1, "token": "k" * 43}]
    assert loaded(engine, {"tokens": enough}).inserted["tokens"] == 2
    # A revoked token opens nothing: a bundle may record (or revoke) one, however short.
    gone = {"user_id": 1, "token": "short", "revoked_at": "2026-03-01T00:00:00Z"}
    assert loaded(engine, {"tokens": [gone]}).inserted["tokens"] == 1


def test_a_token_for_a_user_who_is_not_owner_or_admin_is_refused(engine: Engine) -> None:
    loaded(engine)
    member = {"id": 3, "account_id": 1, "name": "Max", "role": "member"}
    token = {"user_id": 3, "token": SECRET + "-max"}
    problems = refused(engine, {"users": [member], "tokens": [token]})
    assert problems == [
        "tokens[#0,user_id=3].user_id: user 3 is a member; tokens are issued only to an Owner or "
        "Admin (SPEC 5)"
    ]
    # A stored user's role counts; a role given in the same bundle counts over the stored one.
    loaded(engine, {"users": [member]})
    assert refused(engine, {"tokens": [token]}) == problems
    viewer = {**record(base_bundle(), "users", 1), "role": "viewer"}
    assert refused(engine, {"users": [viewer], "tokens": base_bundle()["tokens"]}) == [
        "tokens[#0,user_id=1].user_id: user 1 is a viewer; tokens are issued only to an Owner or "
        "Admin (SPEC 5)"
    ]
    promoted = {**member, "role": "admin"}
    assert loaded(engine, {"users": [promoted], "tokens": [token]}).inserted["tokens"] == 1
    # A revoked token opens nothing: a bundle can revoke the token of a user who lost the role.
    revoked = {**token, "revoked_at": "2026-03-01T00:00:00Z"}
    report = loaded(engine, {"users": [member], "tokens": [revoked]}, now=LATER)
    assert (report.updated["users"], report.updated["tokens"]) == (1, 1)


# --------------------------------------------------------------------------- files


def _write(path: Path, bundle: Bundle) -> Path:
    text = json.dumps(bundle)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as out:
            out.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["bundle.json", "bundle.json.gz"])
def test_a_file_loads_like_the_dict(engine: Engine, tmp_path: Path, name: str) -> None:
    path = _write(tmp_path / name, base_bundle())
    calls: list[tuple[int, int]] = []
    report = load_bundle(engine, str(path), now=NOW, progress=lambda d, t: calls.append((d, t)))
    assert {k: v for k, v in report.inserted.items() if v} == BASE_COUNTS
    assert calls[-1][0] == calls[-1][1] == 2 * path.stat().st_size
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    # What the file wrote is exactly what the dict describes.
    assert loaded(engine, now=LATER).totals()["unchanged"] == 21


def test_a_dict_reports_progress_in_records(engine: Engine) -> None:
    calls: list[tuple[int, int]] = []
    load_bundle(engine, base_bundle(), now=NOW, progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (42, 42)  # 21 records, read twice


@pytest.mark.parametrize("name", ["rates.json", "rates.json.gz"])
def test_an_fx_rate_given_as_a_json_number_is_refused(
    engine: Engine, tmp_path: Path, name: str
) -> None:
    label = "fx_rates[account_id=1,currency=EUR,effective_from=2026-01-01].rate"
    text = json.dumps(base_bundle()).replace('"rate": "1.0850"', '"rate": 1.2345678901234567')
    assert '"rate": 1.2345678901234567' in text
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    assert refused(engine, path) == [
        f"{label}: 1.2345678901234567 is a JSON number; write the rate as a decimal string: "
        '"1.2345678901234567"'
    ]
    assert all(not table_rows for table_rows in snapshot(engine).values())
    # A parsed bundle is held to the same: a float, an int or a Decimal is not a string.
    for number, hint in ((1.085, "1.085"), (2, "2"), (Decimal("1E-7"), "0.0000001")):
        bundle = base_bundle()
        bundle["fx_rates"][0]["rate"] = number
        assert refused(engine, bundle) == [
            f'{label}: {number} is a JSON number; write the rate as a decimal string: "{hint}"'
        ]
    bundle = base_bundle()
    bundle["fx_rates"][0]["rate"] = True
    assert refused(engine, bundle) == [f"{label}: true is not a decimal string such as '1.0825'"]


@pytest.mark.parametrize("kinds", [("cost_entries",), ("cost_entries", "value_entries")])
def test_a_large_file_streams_in_batches(
    engine: Engine, tmp_path: Path, kinds: tuple[str, ...]
) -> None:
    bundle = base_bundle()
    bundle["cost_entries"] = [
        {
            "id": 1000 + n,
            "initiative_id": 5,
            "amount_cents": n,
            "currency": "EUR",
            "vendor_name": f"Vendor {n % 3}",
            "period_start": "2026-02-01",
        }
        for n in range(2_500)
    ]
    bundle["value_entries"] = [
        {"id": 5000 + n, "initiative_id": 5, "amount_cents": n, "status": "approved"}
        for n in range(1_200)
    ]
    for big in ("value_entries", "observations"):
        if big not in kinds:
            del bundle[big]  # one big key: the file is streamed again by ijson's C pipeline
    path = _write(tmp_path / "large.json.gz", bundle)
    report = load_bundle(engine, path, now=NOW)
    assert report.inserted["cost_entries"] == 2_500
    assert report.inserted["vendors"] == 3 + 3
    again = load_bundle(engine, path, now=LATER)
    assert again.unchanged["cost_entries"] == 2_500
    assert again.totals()["inserted"] == again.totals()["updated"] == 0
    bundle["cost_entries"][1_700]["amount_cents"] = -1
    bundle["cost_entries"][2_100]["currency"] = "GBP"
    bundle["cost_entries"][2_200]["initiative_id"] = 7
    problems = refused(engine, _write(tmp_path / "refused.json", bundle))
    assert sorted(problems) == [
        "cost_entries[id=3100].currency: no FX rate for GBP in account 1",
        "cost_entries[id=3200].initiative_id: initiative 7 is in account 2, but id 3200 "
        "belongs to account 1: a row never moves to another account",
    ]


# --------------------------------------------------------------------------- reporting


needs_reporting = pytest.mark.skipif(
    "account_amount_cents" not in tables.cost_entries.c,
    reason="the store has no derived reporting columns",
)


@needs_reporting
def test_entries_carry_their_date_and_amount_in_account_currency(engine: Engine) -> None:
    bundle = base_bundle()
    bundle["cost_entries"].append({"id": 19, "initiative_id": 5, "amount_cents": 333})
    loaded(engine, bundle)
    entry = one(engine, tables.cost_entries, id=17)
    # 1,000 EUR cents at 1.0850 USD per EUR.
    assert entry["account_amount_cents"] == 1_085
    assert str(entry["entry_date"]) == "2026-02-01"
    assert str(entry["entry_month"]) == "2026-02-01"
    undated = one(engine, tables.cost_entries, id=19)  # SEMANTICS R2: the created_at date
    assert (str(undated["entry_date"]), undated["account_amount_cents"]) == ("2026-03-01", 333)


@needs_reporting
def test_a_new_fx_rate_converts_stored_entries_again_and_stamps_them(engine: Engine) -> None:
    loaded(engine)
    report = loaded(
        engine,
        {
            "fx_rates": [
                {
                    "account_id": 1,
                    "currency": "EUR",
                    "rate": "1.2000",
                    "effective_from": "2026-02-01",
                }
            ]
        },
        now=LATER,
    )
    assert report.inserted["fx_rates"] == 1
    entry = one(engine, tables.cost_entries, id=17)
    # 1,000 EUR cents on 2026-02-01 now at 1.2000.
    assert entry["account_amount_cents"] == 1_200
    # SEMANTICS R32, R35: what the entry serves moved, so does its updated_at; the entry in
    # the account currency serves the same and keeps its stamp.
    assert entry["updated_at"] == LATER
    assert one(engine, tables.cost_entries, id=18)["updated_at"] == NOW
    assert report.updated["cost_entries"] == 1


@needs_reporting
def test_a_currency_change_that_strands_stored_entries_is_refused(engine: Engine) -> None:
    bundle = base_bundle()
    bundle["cost_entries"].append(
        {"id": 19, "initiative_id": 5, "amount_cents": 50_000, "currency": "USD"}
    )
    loaded(engine, bundle)
    # Account 1 turns to EUR: its stored USD entry would have no USD rate.
    problems = refused(engine, {"accounts": [{"id": 1, "name": "Acme", "currency": "EUR"}]})
    assert problems == [
        "accounts[id=1].currency: stored cost_entries in USD would have no FX rate for USD "
        "in account 1"
    ]
    report = loaded(
        engine,
        {
            "accounts": [{"id": 1, "name": "Acme", "currency": "EUR"}],
            "fx_rates": [
                {
                    "account_id": 1,
                    "currency": "USD",
                    "rate": "0.9000",
                    "effective_from": "2026-01-01",
                }
            ],
        },
        now=LATER,
    )
    assert report.updated["accounts"] == 1
    amounts = {r["id"]: r["account_amount_cents"] for r in rows(engine, tables.cost_entries)}
    # 50,000 USD cents at 0.9000 EUR per USD; 17 is in EUR already; 18 has no
    # currency, so it is in the account's currency, now EUR (SEMANTICS R5).
    assert amounts == {17: 1_000, 18: 50_000, 19: 45_000}
    # SEMANTICS R32, R35: the served account_amount_cents moved, and so did updated_at.
    assert one(engine, tables.cost_entries, id=19)["updated_at"] == LATER


# --------------------------------------------------------------------------- review findings


@pytest.mark.parametrize("name", ["bundle.json", "bundle.json.gz"])
def test_a_bad_byte_is_refused_without_quoting_the_file(
    engine: Engine, tmp_path: Path, name: str
) -> None:
    # SEMANTICS R15: the parser quotes the text around a bad byte; that text is the bundle's,
    # credentials and e-mail addresses included, and is never printed.
    text = json.dumps(base_bundle()).encode()
    for secret in (b'"sk-test"', b'"ada@acme.example"', SECRET.encode()):
        at = text.index(secret) + len(secret) - 1
        broken = text[:at] + b"\xff" + text[at:]
        path = tmp_path / name
        path.write_bytes(gzip.compress(broken) if name.endswith(".gz") else broken)
        problems = refused(engine, path)
        assert problems == ["bundle: not valid JSON (lexical error: invalid bytes in UTF8 string.)"]


def test_a_credential_given_as_text_is_never_echoed(engine: Engine) -> None:
    bundle = base_bundle()
    record(bundle, "integrations", 4)["credentials"] = "sk-live-do-not-print"
    assert refused(engine, bundle) == ["integrations[id=4].credentials: a string is not an object"]


NUL_REFUSED = "holds a NUL character (\\u0000), which text cannot hold"


def test_a_nul_character_is_refused_by_field(engine: Engine, tmp_path: Path) -> None:
    # The same on both stores: PostgreSQL refused it with a message naming no record, SQLite
    # kept it. The file holds it as the JSON escape \u0000.
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["title"] = "Support \u0000 bot"
    record(bundle, "integrations", 4)["metric_categories"] = ["ai_usage", "a\u0000b"]
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    assert "\\u0000" in path.read_text()
    assert sorted(refused(engine, path)) == [
        f"initiatives[id=5].title: {NUL_REFUSED}",
        f"integrations[id=4].metric_categories: {NUL_REFUSED}",
    ]


def test_a_lone_surrogate_is_refused_by_field(engine: Engine, tmp_path: Path) -> None:
    # A bundle given as a mapping holds one as it is; a file's are marked on the way to the
    # parser (tests/load/test_texts.py), which would turn them into "?".
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["title"] = "Support \ud800 bot"
    assert refused(engine, bundle) == [
        "initiatives[id=5].title: holds a lone surrogate (a \\ud800 to \\udfff escape without "
        "its pair) or U+FFFF, which no text holds"
    ]
    # A pair of surrogate escapes in a file is one character, and is kept.
    record(bundle, "initiatives", 5)["title"] = "Support \U0001f600 bot"
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(bundle))
    assert "\\ud83d\\ude00" in path.read_text()
    loaded(engine, path)
    assert one(engine, tables.initiatives, id=5)["title"] == "Support \U0001f600 bot"


@pytest.mark.parametrize(
    ("number", "why"),
    [
        ("1e300000000", "holds an integer past 64 bits"),  # minutes of CPU, the lock held
        ("1e5000", "holds an integer past 64 bits"),  # a traceback (4,300 digits at most)
        ("1e400", "holds an integer past 64 bits"),  # kept as 401 digits
        ("9223372036854775808", "holds an integer past 64 bits"),
        ("7" * 5000, "holds an integer past 64 bits"),  # was kept cut to 100 digits
        ("1.5e400", "holds an integer past 64 bits"),  # a JSON number: 15 and 399 zeros
    ],
)
def test_a_number_in_a_setting_past_what_is_stored_is_refused(
    engine: Engine, tmp_path: Path, number: str, why: str
) -> None:
    bundle = base_bundle()
    text = json.dumps(bundle).replace('"sk-test"', '"sk-test", "k": ' + number)
    path = tmp_path / "bundle.json"
    path.write_text(text)
    assert refused(engine, path) == [f"integrations[id=4].credentials: {why}"]
    # What fits is kept as given.
    path.write_text(
        json.dumps(bundle).replace(
            '"sk-test"', '"sk-test", "k": 9223372036854775807, "f": 1.5, "z": 1e-300000000'
        )
    )
    loaded(engine, path)
    credentials = one(engine, tables.integrations, id=4)["credentials"]
    assert credentials["k"] == 2**63 - 1 and credentials["f"] == 1.5 and credentials["z"] == 0.0


def test_a_persons_name_holding_an_e_mail_address_is_refused_by_field(engine: Engine) -> None:
    # SEMANTICS R15: a person's name is served (owner, decided_by, set_by, connected_by), an
    # e-mail address never; SPEC 2.1: names only. The problem line does not repeat the text.
    why = (
        "holds an e-mail address, and a person's name is served where an e-mail address never "
        "is (give the name alone; the address goes in email)"
    )
    for name in (
        "ada.king@acme.example",
        "Ada King <ada@acme.co.uk>",
        "Ada (a_king@mail.acme.io)",
        # Each of these was taken: a quoted local part, a comment, an address literal, and
        # the full-width and small at signs (read as @ once normalized, NFKC).
        '"ada king"@acme.example',
        "ada(work)@acme.example",
        "ada@(work)acme.example",
        "ada@[192.0.2.1]",
        "ada\uff20acme.example",
        "Ada <ada\ufe6bacme.example>",
    ):
        bundle = base_bundle()
        record(bundle, "users", 1)["name"] = name
        problems = refused(engine, bundle)
        assert problems == [f"users[id=1].name: {why}"], name
        assert "acme" not in "\n".join(problems)
    # An @ that is no address is a name like any other, and so is the address given as email.
    for name in ("Ada @ Finance", "@ada", "Ada at acme.example", "R&D@night", "Ada\uff20 HQ"):
        bundle = base_bundle()
        record(bundle, "users", 1)["name"] = name
        record(bundle, "users", 1)["email"] = "ada@acme.example"
        loaded(engine, bundle)
        assert one(engine, tables.users, id=1)["name"] == name


def test_an_amount_out_of_range_once_converted_is_refused_by_field(engine: Engine) -> None:
    # 2**62 EUR cents at 2.5 USD per EUR is 2.5 * 2**62 > 2**63 - 1 USD cents: no store can
    # keep the converted amount (it was a traceback on SQLite, a COPY error on PostgreSQL).
    bundle = base_bundle()
    bundle["fx_rates"][0]["rate"] = "2.5"
    record(bundle, "cost_entries", 17)["amount_cents"] = 2**62
    assert refused(engine, bundle) == [
        f"cost_entries[id=17].amount_cents: {2**62} EUR is out of range once converted to USD "
        f"(the store holds amounts up to {2**63 - 1} cents)"
    ]
    # Loaded at a rate that fits, then the rate changes: the stored entry is converted again.
    bundle["fx_rates"][0]["rate"] = "1.5"
    loaded(engine, bundle)
    assert one(engine, tables.cost_entries, id=17)["account_amount_cents"] == 3 * 2**61
    rate_change = {
        "fx_rates": [
            {"account_id": 1, "currency": "EUR", "rate": "2.5", "effective_from": "2026-01-01"}
        ]
    }
    assert refused(engine, rate_change) == [
        f"cost_entries[id=17].amount_cents: {2**62} EUR is out of range once converted to USD "
        f"(the store holds amounts up to {2**63 - 1} cents)"
    ]


def test_an_account_currency_that_leaves_an_initiative_without_a_rate_is_refused(
    engine: Engine,
) -> None:
    # SEMANTICS R4, R5: a budget row is in its initiative's currency. Initiative 5 is kept in
    # USD, the account's currency; moved to EUR, the account has no rate for USD, and /budgets
    # could not convert the initiative's entries (it answered 500 for the whole page).
    bundle = base_bundle()
    record(bundle, "initiatives", 5)["currency"] = "USD"
    loaded(engine, bundle)
    to_eur = {"accounts": [{"id": 1, "name": "Acme", "currency": "EUR"}]}
    assert refused(engine, to_eur) == [
        "accounts[id=1].currency: stored initiatives in USD would have no FX rate for USD in "
        "account 1"
    ]
    # With a rate for USD in the same bundle, the change is taken.
    to_eur["fx_rates"] = [
        {"account_id": 1, "currency": "USD", "rate": "0.92", "effective_from": "2026-01-01"}
    ]
    load_bundle(engine, to_eur, now=LATER)
    assert one(engine, tables.accounts, id=1)["currency"] == "EUR"


def test_an_observation_key_that_is_not_its_metrics_is_refused(engine: Engine) -> None:
    # Metric 6 is tickets_deflected: a reading of it filed under another key would be missed by
    # GET /observations?metric_key=tickets_deflected.
    bundle = base_bundle()
    record(bundle, "observations", 31)["metric_key"] = "csat"
    assert refused(engine, bundle) == [
        "observations[id=31].metric_key: 'csat' is not the key of metric 6 ('tickets_deflected')"
    ]
    record(bundle, "observations", 31)["metric_key"] = "tickets_deflected"
    loaded(engine, bundle)
    assert one(engine, tables.observations, id=31)["metric_key"] == "tickets_deflected"


# --------------------------------------------------------------------------- partial records


def test_a_record_deleted_and_given_again_keeps_what_names_it(engine: Engine) -> None:
    # A row the bundle deletes and gives again is there after the load: the decision naming
    # the initiative, the entries naming the connection stay linked (BUNDLE.md, R34).
    bundle = base_bundle()
    record(bundle, "cost_entries", 17)["source"] = {"connection_id": 4}
    loaded(engine, bundle)
    again = {
        "delete": {"initiatives": [5], "integrations": [4]},
        "initiatives": [record(base_bundle(), "initiatives", 5)],
        "integrations": [record(base_bundle(), "integrations", 4)],
    }
    report = loaded(engine, again, now=LATER)
    assert one(engine, tables.decisions, id=9)["initiative_id"] == 5
    assert report.updated["decisions"] == 0
    # The initiative's own entries went with it (the bundle deleted it); nothing else moved.
    assert rows(engine, tables.cost_entries) == []
    assert rows(engine, tables.deletions) and {
        r["resource"] for r in rows(engine, tables.deletions)
    } == {"cost_entries", "value_entries", "observations"}


def test_a_partial_record_of_a_row_the_bundle_deletes_names_only_what_it_lacks(
    engine: Engine,
) -> None:
    # SEMANTICS R33: deleted first, the row is made again, so the record must give what a new
    # row needs, and nothing else is said about the row it no longer has.
    loaded(engine)
    problems = refused(
        engine,
        {
            "delete": {"initiatives": [5]},
            "cost_entries": [{"id": 17, "amount_cents": 2_000}],
            "observations": [{"id": 31, "value": 1.0}],
        },
    )
    assert sorted(problems) == [
        "cost_entries[id=17].initiative_id: required",
        "observations[id=31].account_id: required when neither initiative_id nor metric_id is "
        "given",
    ]


def test_a_stored_token_is_revoked_by_its_secret_alone(engine: Engine) -> None:
    # SEMANTICS R33 for a kind keyed by what it gives: the user is the stored token's.
    loaded(engine)
    report = loaded(
        engine, {"tokens": [{"token": SECRET, "revoked_at": "2026-02-01T00:00:00Z"}]}, now=LATER
    )
    assert report.updated["tokens"] == 1
    stored = one(engine, tables.tokens, token_hash=hash_token(SECRET))
    assert (stored["user_id"], stored["revoked_at"]) == (1, datetime(2026, 2, 1))
    # A stored rate changes by its key and a new rate.
    rate = {"account_id": 1, "currency": "EUR", "effective_from": "2026-01-01"}
    assert (
        loaded(engine, {"fx_rates": [{**rate, "rate": "1.1000"}]}, now=LATER).updated["fx_rates"]
        == 1
    )
    assert refused(engine, {"fx_rates": [{**rate, "effective_from": "2026-02-01"}]}) == [
        "fx_rates[account_id=1,currency=EUR,effective_from=2026-02-01].rate: required"
    ]
