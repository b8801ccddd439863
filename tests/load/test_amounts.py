"""Entries in the account's currency (SEMANTICS R2, R5, R35; airoi.load.amounts): dated,
converted, converted again when a rate or the account's currency changes, and refused
where no rate or no 64-bit integer would hold them."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from airoi.db import tables
from airoi.load import load_bundle
from tests.load.bundles import LATER, NOW, base_bundle, loaded, one, record, refused, rows

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


def test_an_amount_out_of_range_once_converted_is_refused_by_field(engine: Engine) -> None:
    # 2**62 EUR cents at 2.5 USD per EUR is 2.5 * 2**62 > 2**63 - 1 USD cents: no store can
    # keep the converted amount (it was a traceback on SQLite, a COPY error on PostgreSQL).
    bundle = base_bundle()
    # Without a budget: a budgeted row's projection (R46) would bound its spend 12 times
    # tighter (tests/load/test_bounds.py), and this is about the entry alone.
    del bundle["budget_versions"]
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
