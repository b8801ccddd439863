"""Properties of /roi and /budgets over random accounts, checked against an independent
calculation written here (SEMANTICS R2, R5, R7-R9, R20, R21), on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from fractions import Fraction
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from tests.conftest import _empty, bearer
from tests.factories import BundleBuilder

MakeClient = Callable[[date], TestClient[Litestar]]
TODAY = date(2026, 6, 15)
RATES = {
    "EUR": [(date(2025, 1, 1), "1.10"), (date(2026, 3, 1), "1.17")],
    "GBP": [(date(2025, 6, 1), "1.2733")],
}

entry = st.fixed_dictionaries(
    {
        "amount_cents": st.one_of(st.none(), st.integers(-50_000, 5_000_000)),
        "currency": st.sampled_from([None, "USD", "EUR", "GBP"]),
        "days_ago": st.integers(-60, 6 * 365),
        "category": st.sampled_from(["capex", "opex"]),
        "status": st.sampled_from(["approved", "approved", "draft", "disputed", "archived"]),
        "initiative": st.integers(0, 2),
    }
)


def rate(currency: str | None, on: date) -> Fraction:
    """SEMANTICS R5, written independently of the service."""
    if currency in (None, "USD"):
        return Fraction(1)
    table = sorted(RATES[currency])
    older = [r for d, r in table if d <= on]
    return Fraction(older[-1] if older else table[0][1])


def to_usd(amount: int, currency: str | None, on: date) -> int:
    return round(amount * rate(currency, on))  # round() on a Fraction is half to even


def walk(
    client: TestClient[Litestar], token: str, path: str, **params: Any
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    params = {**params, "limit": 7}
    while True:
        body = client.get(f"/api/v1/{path}", params=params, headers=bearer(token)).json()
        rows += body["data"]
        if not body["page"]["has_more"]:
            return rows
        params["cursor"] = body["page"]["next_cursor"]


@settings(
    max_examples=12,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(costs=st.lists(entry, max_size=25), values=st.lists(entry, max_size=25))
def test_roi_agrees_with_walking_the_entries(
    engine: Engine, client_at: MakeClient, costs: list[dict[str, Any]], values: list[dict[str, Any]]
) -> None:
    _empty(engine)
    b = BundleBuilder()
    acct = b.account(currency="USD")
    token = b.token(b.user(acct))
    for currency, rates in RATES.items():
        for effective_from, value in rates:
            b.fx_rate(acct, currency, value, effective_from.isoformat())
    ids = [b.initiative(acct, title=f"I{i}") for i in range(3)]
    b.initiative(acct, title="Sample", is_sample=True)
    for e in costs:
        b.cost_entry(
            ids[e["initiative"]],
            amount_cents=e["amount_cents"],
            currency=e["currency"],
            cost_category=e["category"],
            period_start=(TODAY - timedelta(days=e["days_ago"])).isoformat(),
        )
    for e in values:
        b.value_entry(
            ids[e["initiative"]],
            amount_cents=e["amount_cents"],
            currency=e["currency"],
            status=e["status"],
            period_start=(TODAY - timedelta(days=e["days_ago"])).isoformat(),
        )
    b.load(engine)
    client = client_at(TODAY)
    cost_rows = walk(client, token, "cost_entries")
    approved_rows = walk(client, token, "value_entries", status="approved")
    assert len(cost_rows) == len(costs)
    assert all(r["counts_toward_roi"] for r in approved_rows)

    for window, start in (("all", None), ("1yr", date(2025, 6, 16)), ("3yr", date(2023, 6, 16))):

        def counted(row: dict[str, Any], start: date | None = start, window: str = window) -> bool:
            day = date.fromisoformat(row["period_start"])
            return row["amount_cents"] is not None and (
                window == "all" or (start is not None and start <= day <= TODAY)
            )

        def usd(row: dict[str, Any]) -> int:
            return to_usd(
                row["amount_cents"], row["currency"], date.fromisoformat(row["period_start"])
            )

        capex = sum(usd(r) for r in cost_rows if counted(r) and r["cost_category"] == "capex")
        opex = sum(usd(r) for r in cost_rows if counted(r) and r["cost_category"] == "opex")
        value = sum(usd(r) for r in approved_rows if counted(r))
        body = client.get("/api/v1/roi", params={"window": window}, headers=bearer(token)).json()
        # SEMANTICS R9: capex + opex = total; net = value - total.
        assert body["cost"] == {"capex_cents": capex, "opex_cents": opex}, window
        assert body["total_cost_cents"] == capex + opex
        assert body["approved_value_cents"] == value
        assert body["net_value_cents"] == value - capex - opex
        if capex + opex:
            assert body["roi"] == float(Fraction(value - capex - opex, capex + opex))
        else:
            assert body["roi"] is None

        # The initiatives' own scopes add up to the portfolio (R7).
        per_initiative = [
            client.get(
                "/api/v1/roi", params={"window": window, "initiative_id": i}, headers=bearer(token)
            ).json()
            for i in ids
        ]
        assert sum(p["total_cost_cents"] for p in per_initiative) == body["total_cost_cents"]
        assert (
            sum(p["approved_value_cents"] for p in per_initiative) == body["approved_value_cents"]
        )


@settings(
    max_examples=10,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    costs=st.lists(entry, max_size=20),
    start_months_ago=st.integers(-2, 20),
    opex=st.integers(0, 100_000),
    cadence=st.sampled_from(["monthly", "quarterly", "annually"]),
)
def test_budget_actuals_agree_with_the_cost_entries(
    engine: Engine,
    client_at: MakeClient,
    costs: list[dict[str, Any]],
    start_months_ago: int,
    opex: int,
    cadence: str,
) -> None:
    _empty(engine)
    b = BundleBuilder()
    acct = b.account(currency="USD")
    token = b.token(b.user(acct))
    for currency, rates in RATES.items():
        for effective_from, value in rates:
            b.fx_rate(acct, currency, value, effective_from.isoformat())
    init = b.initiative(acct)
    month_index = TODAY.year * 12 + TODAY.month - 1 - start_months_ago
    start = date(month_index // 12, month_index % 12 + 1, 1)
    b.budget_version(
        init,
        effective_from=start.isoformat(),
        capex_cents=250_000,
        opex_cents=opex,
        opex_cadence=cadence,
        approved_at="2024-01-01T00:00:00Z",
    )
    for e in costs:
        b.cost_entry(
            init,
            amount_cents=e["amount_cents"],
            currency=e["currency"],
            cost_category=e["category"],
            period_start=(TODAY - timedelta(days=e["days_ago"])).isoformat(),
        )
    b.load(engine)
    row = client_at(TODAY).get("/api/v1/budgets", headers=bearer(token)).json()["data"][0]
    rows = walk(client_at(TODAY), token, "cost_entries")

    def in_budget(r: dict[str, Any], category: str) -> bool:
        day = date.fromisoformat(r["period_start"])
        return (
            r["amount_cents"] is not None
            and r["cost_category"] == category
            and start <= day <= TODAY
        )

    def usd(r: dict[str, Any]) -> int:
        return to_usd(r["amount_cents"], r["currency"], date.fromisoformat(r["period_start"]))

    if start > TODAY:
        assert row["status"] == "scheduled"
        assert row["actual_to_date_cents"] == 0
        return
    capex = sum(usd(r) for r in rows if in_budget(r, "capex"))
    opex_actual = sum(usd(r) for r in rows if in_budget(r, "opex"))
    before = sum(
        usd(r)
        for r in rows
        if r["amount_cents"] is not None and date.fromisoformat(r["period_start"]) < start
    )
    # SEMANTICS R21
    assert (row["capex_actual_cents"], row["opex_actual_cents"]) == (capex, opex_actual)
    assert row["actual_to_date_cents"] == capex + opex_actual
    assert row["spent_before_budget_cents"] == before
    # SEMANTICS R17, R20: one version from `start`, every month through today covered.
    months = month_index_of(TODAY) - month_index + 1
    per_month = Fraction(opex, {"monthly": 1, "quarterly": 3, "annually": 12}[cadence])
    assert row["opex_budget_to_date_cents"] == round(per_month * months)
    assert row["budget_to_date_cents"] == 250_000 + row["opex_budget_to_date_cents"]
    assert row["variance_cents"] == row["budget_to_date_cents"] - row["actual_to_date_cents"]
    over = [
        p
        for p, a, b_ in (
            ("capex", capex, 250_000),
            ("opex", opex_actual, row["opex_budget_to_date_cents"]),
        )
        if a > b_
    ]
    assert row["over_parts"] == over
    assert row["status"] == ("over" if over else "within")


def month_index_of(day: date) -> int:
    return day.year * 12 + day.month - 1
