"""GET /business_cases, worked by hand (SEMANTICS R43-R45; the list rules of SPEC 4.A.1).

today = 2026-06-15, so the current month `cur` is June 2026. The account is in USD and
1 EUR = 1.20 USD from 2026-01-01 on.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from fractions import Fraction
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from tests.conftest import bearer
from tests.factories import BundleBuilder

MakeClient = Callable[[date], TestClient[Litestar]]
TODAY = date(2026, 6, 15)


@pytest.fixture
def cases(engine: Engine) -> dict[str, Any]:
    b = BundleBuilder()
    acct = b.account(currency="USD")
    token = b.token(b.user(acct))
    b.fx_rate(acct, "EUR", "1.20", "2026-01-01")

    # C1, in USD: a three-year case, live since 20 January; paid back in May.
    c1 = b.initiative(
        acct,
        title="C1 dollars",
        expected_capex_cents=120_000,
        expected_opex_cents=360_000,
        expected_cost_savings_cents=600_000,
        expected_revenue_uplift_cents=300_000,
        roi_time_horizon_years=3,
        went_live_at="2026-01-20T09:00:00Z",
    )
    b.cost_entry(c1, amount_cents=100_000, cost_category="capex", period_start="2026-01-10")
    for month in range(1, 7):
        b.cost_entry(c1, amount_cents=10_000, period_start=f"2026-{month:02d}-05")
    b.cost_entry(c1, amount_cents=5_000, period_start="2026-06-20")  # after today
    for month, cents in ((2, 30_000), (3, 40_000), (4, 50_000), (5, 60_000), (6, 70_000)):
        b.value_entry(c1, amount_cents=cents, period_start=f"2026-{month:02d}-12")
    b.value_entry(c1, amount_cents=99_999, status="draft", period_start="2026-03-01")
    b.value_entry(c1, amount_cents=1_000_000, period_start="2026-07-01")  # after today

    # C2, in EUR: opex and savings only, two years, live since the end of April; its USD
    # entries are converted into EUR one by one (R5), and it has not paid back.
    c2 = b.initiative(
        acct,
        title="C2 euros",
        currency="EUR",
        expected_opex_cents=240_000,
        expected_cost_savings_cents=480_000,
        roi_time_horizon_years=2,
        went_live_at="2026-04-30T23:00:00Z",
    )
    b.cost_entry(
        c2, amount_cents=6_000, currency="EUR", cost_category="capex", period_start="2026-03-15"
    )
    b.cost_entry(c2, amount_cents=12_000, currency="USD", period_start="2026-04-10")
    b.cost_entry(c2, amount_cents=10_000, currency="EUR", period_start="2026-05-10")
    b.cost_entry(c2, amount_cents=1_001, currency="USD", period_start="2026-06-01")
    b.value_entry(c2, amount_cents=7_000, currency="USD", period_start="2026-05-20")
    b.value_entry(c2, amount_cents=20_000, currency="EUR", period_start="2026-06-02")
    b.value_entry(c2, amount_cents=3, currency="USD", period_start="2026-06-03")

    # C3: no business case, live since May, some spend.
    c3 = b.initiative(
        acct, title="C3 no case", roi_time_horizon_years=2, went_live_at="2026-05-01T00:00:00Z"
    )
    b.cost_entry(c3, amount_cents=5_000, period_start="2026-06-01")
    # C4: nothing at all.
    c4 = b.initiative(acct, title="C4 empty")
    sample = b.initiative(acct, title="Sample", is_sample=True, expected_capex_cents=1)

    other = b.account(currency="USD")
    theirs = b.initiative(other, title="Theirs", expected_capex_cents=5)
    b.load(engine)
    return {
        "token": token,
        "c1": c1,
        "c2": c2,
        "c3": c3,
        "c4": c4,
        "sample": sample,
        "theirs": theirs,
    }


def page(client: TestClient[Litestar], token: str, **params: Any) -> dict[str, Any]:
    response = client.get("/api/v1/business_cases", params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def rows(client: TestClient[Litestar], token: str, **params: Any) -> dict[int, dict[str, Any]]:
    return {row["initiative_id"]: row for row in page(client, token, **params)["data"]}


def test_a_case_in_the_account_currency(client_at: MakeClient, cases: dict[str, Any]) -> None:
    # SEMANTICS R43, R44, R45
    row = rows(client_at(TODAY), cases["token"])[cases["c1"]]
    assert row == {
        "initiative_id": cases["c1"],
        "currency": "USD",
        "as_of": "2026-06-15",
        "has_business_case": True,
        "horizon_years": 3,
        "planned_capex_cents": 120_000,
        "planned_opex_cents": 360_000,
        "planned_cost_cents": 480_000,
        "planned_value_cents": 900_000,  # 600,000 savings + 300,000 uplift
        "planned_net_value_cents": 420_000,
        "planned_roi": 0.875,  # 420,000 / 480,000
        "plan_started_on": "2026-01-01",
        "months_elapsed": 6,  # January through June
        "planned_value_to_date_cents": 150_000,  # 900,000 x 6/36
        "planned_cost_to_date_cents": 180_000,  # 120,000 + 360,000 x 6/36
        # Approved value Feb-Jun 30+40+50+60+70 thousand; the draft and July's are left out.
        "approved_value_to_date_cents": 250_000,
        "capex_to_date_cents": 100_000,
        "opex_to_date_cents": 60_000,  # 10,000 a month Jan-Jun; 20 June is after today
        "cost_to_date_cents": 160_000,
        "net_value_to_date_cents": 90_000,
        "roi_to_date": 0.5625,  # 90,000 / 160,000
        "value_realization_ratio": pytest.approx(250_000 / 150_000),
        # Cumulative net: Jan -110k, Feb -90k, Mar -60k, Apr -20k, May +30k, Jun +90k.
        "payback_month": "2026-05-01",
    }


def test_a_case_in_another_currency(client_at: MakeClient, cases: dict[str, Any]) -> None:
    # SEMANTICS R4, R5 (each entry converted at its date, rounded half to even), R43-R45.
    row = rows(client_at(TODAY), cases["token"])[cases["c2"]]
    usd_in_eur = Fraction(1, Fraction("1.20"))
    assert round(12_000 * usd_in_eur) == 10_000
    assert round(1_001 * usd_in_eur) == 834  # 834.17
    assert round(7_000 * usd_in_eur) == 5_833  # 5,833.33
    assert round(3 * usd_in_eur) == 2  # 2.5, half to even
    assert row["currency"] == "EUR"
    assert row["has_business_case"] is True
    assert (row["planned_capex_cents"], row["planned_opex_cents"]) == (0, 240_000)
    assert (row["planned_cost_cents"], row["planned_value_cents"]) == (240_000, 480_000)
    assert (row["planned_net_value_cents"], row["planned_roi"]) == (240_000, 1.0)
    assert (row["plan_started_on"], row["months_elapsed"]) == ("2026-04-01", 3)  # Apr-Jun
    assert row["planned_value_to_date_cents"] == 60_000  # 480,000 x 3/24
    assert row["planned_cost_to_date_cents"] == 30_000  # 0 + 240,000 x 3/24
    assert row["capex_to_date_cents"] == 6_000
    assert row["opex_to_date_cents"] == 10_000 + 10_000 + 834
    assert row["cost_to_date_cents"] == 26_834
    assert row["approved_value_to_date_cents"] == 5_833 + 20_000 + 2
    assert row["net_value_to_date_cents"] == 25_835 - 26_834
    assert row["roi_to_date"] == pytest.approx(-999 / 26_834)
    assert row["value_realization_ratio"] == pytest.approx(25_835 / 60_000)
    # Mar -6,000; Apr -16,000; May -20,167; Jun -999: below 0 now, so no payback.
    assert row["payback_month"] is None


def test_without_a_case_and_without_entries(client_at: MakeClient, cases: dict[str, Any]) -> None:
    # SEMANTICS R43: no expected figure, so every planned figure is null.
    found = rows(client_at(TODAY), cases["token"])
    c3, c4 = found[cases["c3"]], found[cases["c4"]]
    planned = [name for name in c3 if name.startswith("planned_")]
    assert len(planned) == 8
    for row in (c3, c4):
        assert row["has_business_case"] is False
        assert all(row[name] is None for name in planned)
        assert row["plan_started_on"] is None
        assert row["value_realization_ratio"] is None
        assert row["currency"] == "USD"
    assert (c3["horizon_years"], c3["months_elapsed"]) == (2, 2)  # May and June
    assert (c3["cost_to_date_cents"], c3["roi_to_date"], c3["payback_month"]) == (5_000, -1, None)
    assert (c4["horizon_years"], c4["months_elapsed"]) == (None, 0)
    assert (c4["cost_to_date_cents"], c4["net_value_to_date_cents"]) == (0, 0)
    assert (c4["roi_to_date"], c4["payback_month"]) == (None, None)


def test_the_list_rules(client_at: MakeClient, cases: dict[str, Any]) -> None:
    # SPEC 4.A.1 as on /budgets: ordered by the initiative, samples out unless asked for or
    # named, another account's initiative not found, paged by limit and cursor.
    client, token = client_at(TODAY), cases["token"]
    ours = [cases[name] for name in ("c1", "c2", "c3", "c4")]
    assert list(rows(client, token)) == ours
    assert list(rows(client, token, include_sample="true")) == [*ours, cases["sample"]]
    assert list(rows(client, token, initiative_id=cases["sample"])) == [cases["sample"]]
    assert list(rows(client, token, initiative_id=cases["c2"])) == [cases["c2"]]
    seen: list[int] = []
    params: dict[str, Any] = {"limit": 3}
    while True:
        body = page(client, token, **params)
        seen += [row["initiative_id"] for row in body["data"]]
        assert len(body["data"]) <= 3
        if not body["page"]["has_more"]:
            assert body["page"]["next_cursor"] is None
            break
        params["cursor"] = body["page"]["next_cursor"]
    assert seen == ours
    missing = client.get(
        "/api/v1/business_cases", params={"initiative_id": cases["theirs"]}, headers=bearer(token)
    )
    assert missing.status_code == 404
    assert missing.json()["error"]["status"] == 404
    refused = client.get("/api/v1/business_cases", params={"limit": 0}, headers=bearer(token))
    assert refused.status_code == 400


def test_the_same_rows_a_day_later(client_at: MakeClient, cases: dict[str, Any]) -> None:
    # SEMANTICS R1, R44: on 1 July a seventh month has elapsed and July's entries count.
    row = rows(client_at(date(2026, 7, 1)), cases["token"])[cases["c1"]]
    assert row["as_of"] == "2026-07-01"
    assert row["months_elapsed"] == 7
    assert row["planned_value_to_date_cents"] == 175_000  # 900,000 x 7/36
    assert row["planned_cost_to_date_cents"] == 190_000  # 120,000 + 360,000 x 7/36
    assert row["opex_to_date_cents"] == 65_000  # 20 June's 5,000 is to date now
    assert row["approved_value_to_date_cents"] == 1_250_000
