"""list_initiatives (SEMANTICS R26) and get_initiative (budget row as GET /budgets, R14, R27)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from tests.factories import BundleBuilder
from tests.tools.conftest import APP_URL, Served, as_json
from tests.tools.world import A_MARKERS, B_MARKER, EMAILS, World

ROLLED_UP = {
    "identified": "not_started",
    "reviewing": "not_started",
    "implementing": "active",
    "live": "active",
    "completed": "completed",
    "paused": "inactive",
    "rejected": "inactive",
    "dismissed": "inactive",
}


def titles(body: dict[str, Any]) -> set[str]:
    return {item["title"] for item in body["initiatives"]}


def test_list_initiatives_rolls_up_status_and_leaves_samples_out(
    served: Served, world: World
) -> None:
    body = served.ok(world.token_a, "list_initiatives")
    assert body["total"] == 8
    assert body["has_more"] is False
    assert "Sample invoice bot" not in titles(body)
    for item in body["initiatives"]:
        assert set(item) == {"id", "title", "stage", "status"}
        assert item["status"] == ROLLED_UP[item["stage"]]  # SEMANTICS R26
    by_status = {
        status: titles(served.ok(world.token_a, "list_initiatives", {"status": status}))
        for status in ("not_started", "active", "completed", "inactive")
    }
    assert by_status == {
        "not_started": {"Support triage", "Triage for invoices"},
        "active": {"Invoice capture", "Sales email drafts", "Euro rollout"},
        "completed": {"Completed pilot"},
        "inactive": {"Paused chatbot", "Rejected idea"},
    }


def test_list_initiatives_limit_defaults_to_20_and_stops_at_50(
    served: Served, engine: Engine
) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    for n in range(55):
        b.initiative(acct, title=f"Initiative {n:02d}", stage="live")
    b.load(engine)
    default = served.ok(token, "list_initiatives")
    assert len(default["initiatives"]) == 20
    assert (default["total"], default["has_more"]) == (55, True)
    most = served.ok(token, "list_initiatives", {"limit": 50, "status": "active"})
    assert len(most["initiatives"]) == 50
    assert served.ok(token, "list_initiatives", {"limit": 1})["initiatives"][0]["id"] > 0
    assert "limit" in served.refused(token, "list_initiatives", {"limit": 51})
    assert "limit" in served.refused(token, "list_initiatives", {"limit": 0})


@pytest.mark.parametrize("status", ["live", "started", "", "ACTIVE"])
def test_list_initiatives_refuses_an_unknown_status(
    served: Served, world: World, status: str
) -> None:
    assert "status" in served.refused(world.token_a, "list_initiatives", {"status": status})


def test_get_initiative_detail(served: Served, world: World) -> None:
    p = world.ids["p"]
    body = served.ok(world.token_a, "get_initiative", {"initiative_id": p})
    assert (body["id"], body["title"], body["stage"], body["status"]) == (
        p,
        "Invoice capture",
        "live",
        "active",
    )
    assert body["category"] == "finance"
    assert body["owner"] == {"id": world.ids["ada"], "name": "Ada Lovelace"}
    assert body["url"] == f"{APP_URL}/initiatives/{p}"
    assert body["business_case"] == {
        "currency": "USD",
        "expected_capex_cents": 200_000,
        "expected_opex_cents": 30_000,
        "expected_cost_savings_cents": 900_000,
        "expected_revenue_uplift_cents": None,
        "roi_time_horizon_years": 3,
        "confidence_score": 0.7,
    }
    # The ten most recent of twelve cost entries, newest first.
    costs = body["recent_costs"]
    assert body["cost_entry_count"] == 12
    assert len(costs) == 10
    dates = [c["entry_date"] for c in costs]
    assert dates == sorted(dates, reverse=True)
    assert dates[0] == "2026-07-01"
    assert costs[0]["vendor_name"] == "Acme Vendor"
    # Value entries carry their status and whether they count (SEMANTICS R14).
    values = body["recent_value_entries"]
    assert body["value_entry_count"] == 4
    assert {(v["status"], v["counts_toward_roi"]) for v in values} == {
        ("approved", True),
        ("draft", False),
        ("reviewed", False),
    }
    assert [(n["author"], n["body"]) for n in body["notes"]] == [
        ("Grace Hopper", "Vendor confirmed the OCR upgrade."),
        ("Ada Lovelace", "Kick-off done."),
    ]
    assert body["note_count"] == 2
    text = as_json(body)
    for email in EMAILS:
        assert email not in text


@pytest.mark.parametrize("key", ["p", "eur", "q", "sample"])
def test_get_initiative_budget_is_the_budgets_row(served: Served, world: World, key: str) -> None:
    initiative_id = world.ids[key]
    body = served.ok(world.token_a, "get_initiative", {"initiative_id": initiative_id})
    rows = served.api(
        world.token_a, "/budgets", initiative_id=initiative_id, include_sample="true"
    )["data"]
    assert body["budget"] == rows[0]


def test_the_budget_figures_are_worked(served: Served, world: World) -> None:
    budget = served.ok(world.token_a, "get_initiative", {"initiative_id": world.ids["p"]})["budget"]
    assert (budget["budgeted"], budget["as_of"]) == (True, "2026-06-15")
    assert budget["capex_budget_cents"] == 150_000
    assert budget["opex_budget_to_date_cents"] == 6 * 12_000  # January to June
    assert budget["current_version"]["set_by"] == {"id": world.ids["ada"], "name": "Ada Lovelace"}


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({}, "The initiative_id argument is required."),
        ({"initiative_id": "seven"}, "initiative_id"),
        ({"initiative_id": -1}, "initiative_id"),
        ({"initiative_id": 2**63}, "initiative_id"),
        ({"initiative_id": 424_242}, "No initiative with id 424242 in this account."),
    ],
)
def test_get_initiative_refuses_bad_ids(
    served: Served, world: World, arguments: dict[str, Any], words: str
) -> None:
    assert words in served.refused(world.token_a, "get_initiative", arguments)


def test_initiatives_of_another_account_are_invisible(served: Served, world: World) -> None:
    # Each account's list names only its own; the other's ids answer as missing ones.
    listed_b = served.ok(world.token_b, "list_initiatives", {"limit": 50})
    assert titles(listed_b) == {"Zebra forecasting"}
    listed_a = served.ok(world.token_a, "list_initiatives", {"limit": 50})
    assert B_MARKER not in as_json(listed_a)
    for key in ("p", "q", "eur", "sample"):
        sentence = served.refused(
            world.token_b, "get_initiative", {"initiative_id": world.ids[key]}
        )
        assert sentence == f"No initiative with id {world.ids[key]} in this account."
    refused = served.refused(world.token_a, "get_initiative", {"initiative_id": world.ids["z"]})
    assert B_MARKER not in refused
    own = served.ok(world.token_b, "get_initiative", {"initiative_id": world.ids["z"]})
    text = as_json(own)
    for marker in A_MARKERS:
        assert marker not in text
    assert own["recent_costs"][0]["amount_cents"] == 44_444
