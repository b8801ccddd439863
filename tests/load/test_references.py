"""References resolve inside the record's own account, and an upsert never moves a row to
another account (BUNDLE.md load rules; airoi.load.presence and airoi.load.references)."""

from __future__ import annotations

from sqlalchemy import Engine

from tests.load.bundles import base_bundle, loaded, record, refused


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
