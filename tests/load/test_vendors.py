"""A cost entry's vendor (BUNDLE.md, SPEC 2.3; airoi.load.vendors): resolved from its name or
made, merged vendors followed, merge cycles refused."""

from __future__ import annotations

from sqlalchemy import Engine

from airoi.db import tables
from tests.load.bundles import LATER, NOW, base_bundle, loaded, one, refused, rows


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
