"""get_business_cases and get_initiative's plan are GET /business_cases's rows, to the cent
(SEMANTICS R43-R45), on the world of world.py and on random accounts.

The figures themselves are worked by hand in tests/reports/test_business_cases.py and
tests/finance/test_business_cases.py; here both interfaces are held to each other.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from tests.factories import BundleBuilder
from tests.tools.conftest import TODAY, Served
from tests.tools.world import World

CURRENCIES = ("USD", "EUR", "GBP")
STATUSES = ("draft", "calculated", "reviewed", "approved", "disputed", "archived")


def walk_tool(served: Served, token: str, **arguments: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    arguments = {"limit": 3, **arguments}
    while True:
        body = served.ok(token, "get_business_cases", arguments)
        rows += body["business_cases"]
        if not body["has_more"]:
            assert body["next_cursor"] is None
            return rows
        arguments["cursor"] = body["next_cursor"]


def walk_api(served: Served, token: str, **params: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    params = {"limit": 4, **params}
    while True:
        body = served.api(token, "/business_cases", **params)
        rows += body["data"]
        if not body["page"]["has_more"]:
            return rows
        params["cursor"] = body["page"]["next_cursor"]


def agree(served: Served, token: str, initiatives: list[int]) -> list[dict[str, Any]]:
    """Both interfaces' rows, held equal; the API's returned."""
    api = walk_api(served, token)
    assert walk_tool(served, token) == api
    for initiative_id in initiatives:
        (row,) = served.api(
            token, "/business_cases", initiative_id=initiative_id, include_sample="true"
        )["data"]
        detail = served.ok(token, "get_initiative", {"initiative_id": initiative_id})
        assert detail["plan"] == row
        (tool_row,) = served.ok(token, "get_business_cases", {"initiative_id": initiative_id})[
            "business_cases"
        ]
        assert tool_row == row
    return api


def test_the_worlds_rows_agree(served: Served, world: World) -> None:
    # SEMANTICS R43-R45: the same rows, samples left out of the list as on the endpoint.
    rows = agree(served, world.token_a, [world.ids[key] for key in ("p", "eur", "q", "sample")])
    assert world.ids["sample"] not in {row["initiative_id"] for row in rows}
    assert {row["as_of"] for row in rows} == {TODAY.isoformat()}


def _random_account(engine: Engine, seed: int) -> tuple[str, list[int], set[int]]:
    """An account of a few initiatives with random plans, currencies and entries, some
    dated after today, some in other currencies at rates that change during the year."""
    rng = random.Random(seed)
    b = BundleBuilder()
    acct = b.account(currency="USD")
    token = b.token(b.user(acct))
    for currency in CURRENCIES[1:]:
        for month in (1, 4, 7):
            rate = f"{rng.uniform(0.5, 2.0):.4f}"
            b.fx_rate(acct, currency, rate, f"2025-{month:02d}-01")
    ids, samples = [], set()
    for n in range(rng.randint(2, 6)):

        def maybe(low: int, high: int) -> int | None:
            return None if rng.random() < 0.3 else rng.randint(low, high)

        live = TODAY - timedelta(days=rng.randint(-60, 900))
        fields: dict[str, Any] = {
            "expected_capex_cents": maybe(0, 5_000_000),
            "expected_opex_cents": maybe(0, 5_000_000),
            "expected_cost_savings_cents": maybe(0, 9_000_000),
            "expected_revenue_uplift_cents": maybe(0, 9_000_000),
            "roi_time_horizon_years": maybe(1, 5),
            "went_live_at": None if rng.random() < 0.2 else f"{live.isoformat()}T12:00:00Z",
            "currency": rng.choice((None, *CURRENCIES)),
        }
        sample = rng.random() < 0.2
        initiative = b.initiative(acct, title=f"Random {n}", is_sample=sample, **fields)
        ids.append(initiative)
        if sample:
            samples.add(initiative)
        for _ in range(rng.randint(0, 25)):
            day = TODAY - timedelta(days=rng.randint(-40, 800))
            currency = rng.choice((None, *CURRENCIES))
            if rng.random() < 0.5:
                b.cost_entry(
                    initiative,
                    amount_cents=rng.randint(-5_000, 400_000),
                    currency=currency,
                    cost_category=rng.choice(("capex", "opex")),
                    period_start=day.isoformat(),
                )
            else:
                b.value_entry(
                    initiative,
                    amount_cents=rng.randint(0, 600_000),
                    currency=currency,
                    status=rng.choice(STATUSES),
                    period_start=day.isoformat(),
                )
    b.load(engine)
    return token, ids, samples


@pytest.mark.parametrize("seed", range(6))
def test_random_accounts_agree(served: Served, engine: Engine, seed: int) -> None:
    # SEMANTICS R43-R45, R5: whatever the plans, currencies and dates, the tool's rows are
    # the endpoint's, field for field.
    token, ids, samples = _random_account(engine, seed)
    rows = agree(served, token, ids)
    # The list holds every initiative but the samples, once each, in order.
    assert [row["initiative_id"] for row in rows] == [i for i in ids if i not in samples]
    for row in rows:
        assert row["as_of"] == TODAY.isoformat()
        assert row["cost_to_date_cents"] == row["capex_to_date_cents"] + row["opex_to_date_cents"]
        assert row["net_value_to_date_cents"] == (
            row["approved_value_to_date_cents"] - row["cost_to_date_cents"]
        )
