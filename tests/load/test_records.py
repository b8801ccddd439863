"""One record (airoi.load.records): the fields it gives merged with its stored row
(SEMANTICS R33), its person references and source as given, its derived fields computed,
and each problem line naming its key, id and field."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import Engine

from airoi.db import tables
from airoi.tokens import hash_token
from tests.load.bundles import (
    LATER,
    SECRET,
    STAGES,
    Bundle,
    base_bundle,
    loaded,
    one,
    record,
    refused,
    rows,
)


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


@pytest.mark.parametrize(("change", "expected"), PROBLEMS)
def test_a_problem_names_key_id_and_field_and_nothing_is_written(
    engine: Engine, change: Any, expected: str
) -> None:
    loaded(engine)
    bundle = base_bundle()
    change(bundle)
    problems = refused(engine, bundle)
    assert expected in problems, problems


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
