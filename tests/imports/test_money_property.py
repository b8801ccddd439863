"""SEMANTICS R40 and R5 as a property: for random FOCUS rows (sub-cent amounts, negative
credits, three currencies with FX rates that change within the days), the served `/roi` and
`/roi/breakdown?by=vendor` equal the sums worked out here, independently, from the file:
rows grouped by R40's key, summed exactly, rounded half to even once a group, converted once an
entry at the rate of its date."""

from __future__ import annotations

import decimal
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from tests.conftest import _empty, bearer
from tests.imports.helpers import account_with, airoi_import, write_csv

HEADER = (
    "BillingAccountId",
    "BillingCurrency",
    "EffectiveCost",
    "ChargePeriodStart",
    "ChargePeriodEnd",
    "ChargeFrequency",
    "ProviderName",
    "ServiceName",
)
RULES = """\
[[map]]
initiative_id = 101
where = { ServiceName = "Bedrock" }

[[map]]
initiative_id = 102
where = { ServiceName = ["Vertex AI", "Azure OpenAI"] }
vendor_name = "Model APIs"
"""
# (currency, effective_from, units of USD per unit)
FX = {"EUR": [("2020-01-01", "1.1"), ("2026-03-03", "1.2")], "GBP": [("2026-03-02", "1.3")]}
FIRST = datetime(2026, 3, 1, tzinfo=UTC)

rows = st.lists(
    st.tuples(
        st.sampled_from(["A1", "B2"]),
        st.sampled_from(["USD", "EUR", "GBP"]),
        # Thousandths make half cents often (ties: half to even); ten-millionths, sub-cents.
        st.one_of(
            st.decimals(min_value=-50, max_value=500, places=3, allow_nan=False),
            st.decimals(min_value=-50, max_value=500, places=7, allow_nan=False),
        ),
        st.integers(min_value=0, max_value=4 * 24 - 1),  # the start hour
        st.sampled_from([1, 3]),  # hours long: some cross midnight
        st.sampled_from(["Usage-Based", "usage-based", "One-Time", "Recurring"]),
        st.sampled_from(["AWS", "Google Cloud", "Microsoft"]),
        st.sampled_from(["Bedrock", "Vertex AI", "Azure OpenAI", "Compute"]),
    ),
    min_size=1,
    max_size=40,
)


def _stamp(hour: int, *, spaced: bool = False) -> str:
    """FIRST plus `hour` hours, as exports write it: `YYYY-MM-DD HH:MM:SS` or ISO with Z."""
    moment = FIRST + timedelta(hours=hour)
    return moment.strftime("%Y-%m-%d %H:%M:%S" if spaced else "%Y-%m-%dT%H:%M:%SZ")


def _rate(currency: str, on: date) -> Decimal:
    if currency == "USD":
        return Decimal(1)
    rates = sorted((date.fromisoformat(d), Decimal(r)) for d, r in FX[currency])
    older = [rate for since, rate in rates if since <= on]
    return older[-1] if older else rates[0][1]


def _expected(data: list[tuple]) -> tuple[dict[str, int], dict[str, int]]:
    sums: dict[tuple, Decimal] = defaultdict(Decimal)
    rule = {
        "Bedrock": (101, None),
        "Vertex AI": (102, "Model APIs"),
        "Azure OpenAI": (102, "Model APIs"),
    }
    with decimal.localcontext() as exact:
        exact.prec = 100
        for billing, currency, amount, hour, hours, frequency, provider, service in data:
            if service not in rule:
                continue
            initiative, vendor = rule[service]
            start = FIRST + timedelta(hours=hour)
            end = start + timedelta(hours=hours)
            category = "capex" if frequency.lower() == "one-time" else "opex"
            key = (
                initiative,
                start.date(),
                (end - timedelta(seconds=1)).date(),
                currency,
                category,
                vendor or provider,
                service,
                billing,
            )
            sums[key] += amount * 100
        figures = {"capex_cents": 0, "opex_cents": 0}
        by_vendor: dict[str, int] = defaultdict(int)
        for key, cents in sums.items():
            entry = int(cents.quantize(Decimal(1), rounding=decimal.ROUND_HALF_EVEN))
            converted = int(
                (entry * _rate(key[3], key[1])).quantize(
                    Decimal(1), rounding=decimal.ROUND_HALF_EVEN
                )
            )
            figures[f"{key[4]}_cents"] += converted
            by_vendor[key[5]] += converted
    return figures, dict(by_vendor)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=rows)
def test_served_roi_equals_the_files_summed_by_r40(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path, data: list[tuple]
) -> None:
    # SEMANTICS R40, R5, R35
    _empty(engine)
    fx = {code: rates[0][1] for code, rates in FX.items()}
    token = account_with(engine, fx=fx)
    from airoi.load import load_bundle

    load_bundle(engine, {"fx_rates": [
        {"account_id": 1, "currency": code, "rate": rate, "effective_from": since}
        for code, rates in FX.items() for since, rate in rates
    ]})  # fmt: skip
    written = [
        (billing, currency, f"{amount:f}", _stamp(hour, spaced=True), _stamp(hour + hours),
         frequency, provider, service)
        for billing, currency, amount, hour, hours, frequency, provider, service in data
    ]  # fmt: skip
    bill = write_csv(tmp_path / "bill.csv", HEADER, written)
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES, encoding="utf-8")
    result = airoi_import(db_url, "focus", bill, "--account", "1", "--rules", rules)
    assert result.exit_code == 0, result.output

    figures, by_vendor = _expected(data)
    roi = client.get("/api/v1/roi?window=all", headers=bearer(token)).json()
    assert roi["cost"] == figures
    assert roi["total_cost_cents"] == figures["capex_cents"] + figures["opex_cents"]
    split = client.get(
        "/api/v1/roi/breakdown?by=vendor&window=all&limit=100", headers=bearer(token)
    ).json()["data"]
    served = {row["label"]: row["total_cost_cents"] for row in split if row["total_cost_cents"]}
    assert served == {vendor: cents for vendor, cents in by_vendor.items() if cents}
