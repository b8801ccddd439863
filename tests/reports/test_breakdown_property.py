"""GET /roi/breakdown over random accounts (SEMANTICS R37): FX, refunds, null amounts,
samples, null vendors and cost types, fiscal years starting in any month. Every split adds
up to /roi, a by=initiative row is /roi?initiative_id=, and each row's cost is the sum of
its own entries, grouped here independently of the service; by value_status each status's
row is the sum of its value entries."""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from tests.conftest import _empty, bearer
from tests.factories import BundleBuilder
from tests.reports.test_money_properties import RATES, TODAY, MakeClient, entry, to_usd, walk

BYS = ("initiative", "month", "quarter", "cost_type", "vendor")
STATUSES = ("draft", "calculated", "reviewed", "approved", "disputed", "archived")
WINDOWS = {"all": None, "1yr": date(2025, 6, 16), "3yr": date(2023, 6, 16)}

split_entry = st.fixed_dictionaries(
    {
        "cost_type": st.sampled_from([None, "software", "tokens"]),
        "vendor": st.sampled_from([None, "Acme", "Beta", "Gamma"]),
        "initiative": st.integers(0, 3),  # 3 is a sample initiative
    }
)


def fiscal_quarter(day: date, start_month: int) -> str:
    """The first day of the fiscal quarter holding `day` (R23), counted in months."""
    index = day.year * 12 + day.month - 1 - (start_month - 1)
    first = (index // 3) * 3 + (start_month - 1)
    return date(first // 12, first % 12 + 1, 1).isoformat()


@settings(
    max_examples=12,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    costs=st.lists(st.tuples(entry, split_entry), max_size=20),
    values=st.lists(st.tuples(entry, split_entry), max_size=12),
    fy_start=st.integers(1, 12),
)
def test_every_split_is_its_entries_and_adds_up_to_roi(
    engine: Engine,
    client_at: MakeClient,
    costs: list[tuple[dict[str, Any], dict[str, Any]]],
    values: list[tuple[dict[str, Any], dict[str, Any]]],
    fy_start: int,
) -> None:
    _empty(engine)
    b = BundleBuilder()
    acct = b.account(currency="USD", fiscal_year_start_month=fy_start)
    token = b.token(b.user(acct))
    for currency, rates in RATES.items():
        for effective_from, rate in rates:
            b.fx_rate(acct, currency, rate, effective_from.isoformat())
    ids = [b.initiative(acct, title=f"I{i}") for i in range(3)]
    ids.append(b.initiative(acct, title="Sample", is_sample=True))
    for e, split in costs:
        b.cost_entry(
            ids[split["initiative"]],
            amount_cents=e["amount_cents"],
            currency=e["currency"],
            cost_category=e["category"],
            period_start=(TODAY - timedelta(days=e["days_ago"])).isoformat(),
            cost_type=split["cost_type"],
            vendor_name=split["vendor"],
        )
    for e, split in values:
        b.value_entry(
            ids[split["initiative"]],
            amount_cents=e["amount_cents"],
            currency=e["currency"],
            status=e["status"],
            period_start=(TODAY - timedelta(days=e["days_ago"])).isoformat(),
        )
    b.load(engine)
    client = client_at(TODAY)
    portfolio = set(ids[:3])
    cost_rows = [r for r in walk(client, token, "cost_entries") if r["initiative_id"] in portfolio]
    value_rows = [
        r
        for r in walk(client, token, "value_entries", status="approved")
        if r["initiative_id"] in portfolio
    ]
    every_value = [
        r for r in walk(client, token, "value_entries") if r["initiative_id"] in portfolio
    ]

    def get(path: str, **params: Any) -> Any:
        response = client.get(f"/api/v1/{path}", params=params, headers=bearer(token))
        assert response.status_code == 200, response.text
        return response.json()

    def key_of(by: str, r: dict[str, Any]) -> Any:
        day = date.fromisoformat(r["period_start"])
        return {
            "initiative": lambda: r["initiative_id"],
            "month": lambda: day.replace(day=1).isoformat(),
            "quarter": lambda: fiscal_quarter(day, fy_start),
            "cost_type": lambda: r.get("cost_type"),
            "vendor": lambda: r.get("vendor_id"),
        }[by]()

    for window, start in WINDOWS.items():

        def counted(r: dict[str, Any], start: date | None = start) -> bool:
            day = date.fromisoformat(r["period_start"])
            return r["amount_cents"] is not None and (start is None or start <= day <= TODAY)

        def usd(r: dict[str, Any]) -> int:
            return to_usd(r["amount_cents"], r["currency"], date.fromisoformat(r["period_start"]))

        whole = get("roi", window=window)
        for by in BYS:
            rows = walk(client, token, "roi/breakdown", by=by, window=window)
            keys = [r["key"] for r in rows]
            assert len(set(keys)) == len(keys), (by, keys)
            # SEMANTICS R37: the rows sum exactly to /roi.
            for field in ("capex_cents", "opex_cents"):
                assert sum(r[field] for r in rows) == whole["cost"][field], (by, window)
            # Each row's cost is its own entries' (R5, R6, R2), grouped here.
            expected: dict[Any, dict[str, int]] = defaultdict(lambda: {"capex": 0, "opex": 0})
            for r in cost_rows:
                if counted(r):
                    expected[key_of(by, r)][r["cost_category"]] += usd(r)
            served = {r["key"]: r for r in rows}
            for key, sums in expected.items():
                assert served[key]["capex_cents"] == sums["capex"], (by, window, key)
                assert served[key]["opex_cents"] == sums["opex"], (by, window, key)
            if by in ("cost_type", "vendor"):
                assert all(r["roi"] is None and r["net_value_cents"] is None for r in rows)
                continue
            value = sum(r["approved_value_cents"] for r in rows)
            assert value == whole["approved_value_cents"], (by, window)
            approved: dict[Any, int] = defaultdict(int)
            for r in value_rows:
                if counted(r):
                    approved[key_of(by, r)] += usd(r)
            for key, cents in approved.items():
                assert served[key]["approved_value_cents"] == cents, (by, window, key)
        # SEMANTICS R37: by value_status, the six statuses in SPEC 3's order, each the sum of
        # its own value entries of the portfolio (R7) in the window; the approved row is /roi's.
        rows = walk(client, token, "roi/breakdown", by="value_status", window=window)
        by_status: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for r in every_value:
            if counted(r):
                by_status[r["status"]] += usd(r)
        assert [(r["key"], r["value_cents"]) for r in rows] == list(by_status.items()), window
        assert [r["approved_value_cents"] for r in rows] == [
            cents if status == "approved" else 0 for status, cents in by_status.items()
        ]
        assert by_status["approved"] == whole["approved_value_cents"]
        assert all(r["total_cost_cents"] is None and r["roi"] is None for r in rows)
        # A by=initiative row is /roi?initiative_id= (R37), every portfolio initiative present.
        rows = walk(client, token, "roi/breakdown", by="initiative", window=window)
        assert [r["key"] for r in rows] == ids[:3]
        for r in rows:
            one = get("roi", window=window, initiative_id=r["key"])
            assert r["approved_value_cents"] == one["approved_value_cents"]
            assert r["capex_cents"] == one["cost"]["capex_cents"]
            assert r["opex_cents"] == one["cost"]["opex_cents"]
            assert r["net_value_cents"] == one["net_value_cents"]
            assert r["roi"] == one["roi"]
