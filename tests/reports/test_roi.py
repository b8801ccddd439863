"""GET /roi, worked by hand (SPEC 2.10, 4.A.3; SEMANTICS R2, R4-R9)."""

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
def portfolio(engine: Engine) -> dict[str, Any]:
    b = BundleBuilder()
    acct = b.account(currency="USD")
    other = b.account(name="Other")
    token = b.token(b.user(acct))
    b.user(other)
    # SEMANTICS R5: EUR is worth 1.10 USD from 2025-01-01 and 1.20 from 2026-01-01.
    b.fx_rate(acct, "EUR", "1.10", "2025-01-01")
    b.fx_rate(acct, "EUR", "1.20", "2026-01-01")
    p = b.initiative(acct, title="Invoice capture", stage="live")
    q = b.initiative(acct, title="Sales email drafts", stage="implementing")
    r = b.initiative(acct, title="No cost yet", stage="identified")
    s = b.initiative(acct, title="Sample bot", is_sample=True)
    foreign = b.initiative(other, title="Not ours")

    b.cost_entry(p, amount_cents=100_000, cost_category="capex", period_start="2026-02-01")
    # 1001 EUR cents at 1.20 = 1201.2 -> 1201.
    b.cost_entry(p, amount_cents=1001, currency="EUR", period_start="2026-03-01")
    # 1005 at 1.10 = 1105.5 -> half to even -> 1106 (outside 1yr, inside 3yr).
    b.cost_entry(p, amount_cents=1005, currency="EUR", period_start="2025-03-01")
    b.cost_entry(p, amount_cents=-500, period_start="2026-04-01")  # a refund (R6)
    b.cost_entry(p, amount_cents=None, period_start="2026-04-01")  # adds nothing (R6)
    # No period_start: dated by created_at (R2), 2026-05-01.
    b.cost_entry(q, amount_cents=20_000, cost_category="capex", created_at="2026-05-01T23:59:59Z")
    b.cost_entry(q, amount_cents=3000, period_start="2027-01-01")  # future: in "all" only (R8)
    b.cost_entry(s, amount_cents=99_999, period_start="2026-03-01")  # sample: not portfolio (R7)
    b.cost_entry(foreign, amount_cents=55_555, period_start="2026-03-01")

    b.value_entry(p, amount_cents=500_000, period_start="2026-03-01")
    # Before any rate: the earliest (1.10) applies; 2500 * 1.10 = 2750 (R5).
    b.value_entry(p, amount_cents=2500, currency="EUR", period_start="2024-12-31")
    b.value_entry(p, amount_cents=777_777, status="draft", period_start="2026-03-01")
    b.value_entry(p, amount_cents=888_888, status="reviewed", period_start="2026-03-01")
    b.value_entry(q, amount_cents=10_000, period_start="2026-06-15")  # today: inclusive
    b.value_entry(r, amount_cents=4_000, period_start="2026-06-01")
    b.value_entry(s, amount_cents=123_456, period_start="2026-03-01")
    b.value_entry(foreign, amount_cents=66_666, period_start="2026-03-01")
    b.load(engine)
    return {"token": token, "p": p, "q": q, "r": r, "s": s, "foreign": foreign}


def roi(client: TestClient[Litestar], token: str, **params: Any) -> dict[str, Any]:
    response = client.get("/api/v1/roi", params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def assert_figures(body: dict[str, Any], *, value: int, capex: int, opex: int) -> None:
    # SEMANTICS R9, with the expected figures worked out by hand in the fixture's comments.
    total = capex + opex
    assert body["approved_value_cents"] == value
    assert body["cost"] == {"capex_cents": capex, "opex_cents": opex}
    assert body["total_cost_cents"] == total
    assert body["net_value_cents"] == value - total
    if total == 0:
        assert body["roi"] is None
    else:
        assert body["roi"] == pytest.approx(float(Fraction(value - total, total)), rel=1e-15)


def test_portfolio_all_time(client_at: MakeClient, portfolio: dict[str, Any]) -> None:
    body = roi(client_at(TODAY), portfolio["token"])
    assert body["scope"] == {"type": "portfolio"}
    # SEMANTICS R8: "all" serves no period.from / period.through.
    assert body["period"] == {"window": "all", "label": "All time"}
    assert body["currency"] == "USD"
    # capex 100000 + 20000; opex 1201 + 1106 - 500 + 3000; value 500000 + 2750 + 10000 + 4000.
    assert_figures(body, value=516_750, capex=120_000, opex=4_807)
    assert body == roi(client_at(TODAY), portfolio["token"], window="all")


def test_portfolio_last_12_months(client_at: MakeClient, portfolio: dict[str, Any]) -> None:
    body = roi(client_at(TODAY), portfolio["token"], window="1yr")
    # SEMANTICS R8: from = today minus one year plus one day; through = today.
    assert body["period"] == {
        "window": "1yr",
        "label": "Last 12 months",
        "from": "2025-06-16",
        "through": "2026-06-15",
    }
    # capex 100000 + 20000; opex 1201 - 500; value 500000 + 10000 + 4000.
    assert_figures(body, value=514_000, capex=120_000, opex=701)


def test_portfolio_3_and_5_years(client_at: MakeClient, portfolio: dict[str, Any]) -> None:
    three = roi(client_at(TODAY), portfolio["token"], window="3yr")
    assert (three["period"]["from"], three["period"]["label"]) == ("2023-06-16", "Last 3 years")
    # opex 1201 + 1106 - 500; value adds the 2024-12-31 entry (2750).
    assert_figures(three, value=516_750, capex=120_000, opex=1_807)
    five = roi(client_at(TODAY), portfolio["token"], window="5yr")
    assert (five["period"]["from"], five["period"]["label"]) == ("2021-06-16", "Last 5 years")
    assert_figures(five, value=516_750, capex=120_000, opex=1_807)


def test_initiative_scope(client_at: MakeClient, portfolio: dict[str, Any]) -> None:
    client = client_at(TODAY)
    body = roi(client, portfolio["token"], initiative_id=portfolio["q"], window="1yr")
    assert body["scope"] == {
        "type": "initiative",
        "id": portfolio["q"],
        "title": "Sales email drafts",
    }
    assert_figures(body, value=10_000, capex=20_000, opex=0)
    assert body["roi"] == -0.5
    # SEMANTICS R7: a sample initiative has its own scope even though the portfolio leaves it out.
    sample = roi(client, portfolio["token"], initiative_id=portfolio["s"])
    assert_figures(sample, value=123_456, capex=0, opex=99_999)
    # No cost: roi is null, not zero (SPEC 2.10).
    none = roi(client, portfolio["token"], initiative_id=portfolio["r"])
    assert_figures(none, value=4_000, capex=0, opex=0)
    assert none["roi"] is None


def test_leap_day_window(engine: Engine, client_at: MakeClient, portfolio: dict[str, Any]) -> None:
    b = BundleBuilder(first_id=1000)
    b.cost_entry(portfolio["q"], amount_cents=444, period_start="2027-03-01")  # first day: in
    b.cost_entry(portfolio["q"], amount_cents=333, period_start="2027-02-28")  # a day early: out
    b.load(engine)
    # SEMANTICS R8: 2028-02-29 minus one year is 2027-02-28; plus one day is 2027-03-01.
    body = roi(client_at(date(2028, 2, 29)), portfolio["token"], window="1yr")
    assert (body["period"]["from"], body["period"]["through"]) == ("2027-03-01", "2028-02-29")
    assert_figures(body, value=0, capex=0, opex=444)
    three = roi(client_at(date(2028, 2, 29)), portfolio["token"], window="3yr")
    assert three["period"]["from"] == "2025-03-01"


@pytest.mark.parametrize("window", ["2yr", "ALL", "", "1y", "all "])
def test_unknown_window_is_refused(
    client_at: MakeClient, portfolio: dict[str, Any], window: str
) -> None:
    response = client_at(TODAY).get(
        "/api/v1/roi", params={"window": window}, headers=bearer(portfolio["token"])
    )
    assert response.status_code == 400
    assert "window" in response.json()["error"]["message"]


def test_foreign_or_unknown_initiative_is_404(
    client_at: MakeClient, portfolio: dict[str, Any]
) -> None:
    client = client_at(TODAY)
    for initiative_id in (portfolio["foreign"], 424242):
        response = client.get(
            "/api/v1/roi",
            params={"initiative_id": initiative_id},
            headers=bearer(portfolio["token"]),
        )
        assert response.status_code == 404
        assert response.json()["error"]["status"] == 404


def test_changing_an_fx_rate_reconverts(
    engine: Engine, client_at: MakeClient, portfolio: dict[str, Any]
) -> None:
    # SEMANTICS R5: the rate in effect at the entry date; a rate loaded later applies.
    b = BundleBuilder()
    acct = 1  # the portfolio fixture's first account
    b.fx_rate(acct, "EUR", "1.25", "2026-02-15")
    b.load(engine)
    body = roi(client_at(TODAY), portfolio["token"], window="1yr")
    # 1001 EUR cents on 2026-03-01 now at 1.25 = 1251.25 -> 1251; opex 1251 - 500.
    assert_figures(body, value=514_000, capex=120_000, opex=751)
