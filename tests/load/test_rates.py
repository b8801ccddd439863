"""A currency needs an FX rate in its account, given in the bundle or stored
(SEMANTICS R5; airoi.load.rates)."""

from __future__ import annotations

from sqlalchemy import Engine

from tests.load.bundles import base_bundle, loaded, record, refused


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
