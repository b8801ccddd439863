"""A load from end to end (BUNDLE.md): every record of a valid bundle written and counted, a
bundle loaded again changing nothing, and a refused bundle writing nothing while naming
every problem."""

from __future__ import annotations

from sqlalchemy import Engine

from airoi.db import tables
from tests.load.bundles import (
    BASE_COUNTS,
    LATER,
    NOW,
    STAGES,
    base_bundle,
    loaded,
    one,
    record,
    refused,
    snapshot,
)


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
