"""GET /budgets, worked by hand (SPEC 2.7, 4.A.10; SEMANTICS R4, R5, R16-R25, R46).

today = 2026-06-15, so the current month `cur` is June 2026; fiscal years start in January
unless a test says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
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
def budgets(engine: Engine) -> dict[str, Any]:
    b = BundleBuilder()
    acct = b.account(currency="USD")
    owner = b.user(acct, name="Maya Chen")
    token = b.token(owner)
    b.fx_rate(acct, "EUR", "1.20", "2026-01-01")

    # B1: a revision in April, a pending and a rejected version that change nothing.
    b1 = b.initiative(acct, title="B1 revised")
    b.budget_version(
        b1,
        effective_from="2026-01-10",
        capex_cents=50_000,
        opex_cents=3_000,
        approved_at="2025-12-20T10:00:00Z",
        source="approval",
        set_by_id=owner,
    )
    v2 = b.budget_version(
        b1,
        effective_from="2026-04-01",
        capex_cents=60_000,
        opex_cents=12_000,
        opex_cadence="quarterly",
        approved_at="2026-03-25T10:00:00Z",
        source="revision",
        reason="Second region",
        set_by_id=owner,
    )
    b.budget_version(
        b1, effective_from="2026-06-01", opex_cents=100_000, status="pending", source="revision"
    )
    b.budget_version(
        b1,
        effective_from="2026-02-01",
        capex_cents=1,
        opex_cents=1,
        status="rejected",
        source="revision",
    )
    b.cost_entry(b1, amount_cents=55_000, cost_category="capex", period_start="2026-02-15")
    for month, cents in ((1, 2_000), (2, 3_500), (3, 3_100), (4, 4_500), (5, 4_100)):
        b.cost_entry(b1, amount_cents=cents, period_start=f"2026-{month:02d}-05")
    b.cost_entry(b1, amount_cents=1_000, period_start="2026-06-10")
    b.cost_entry(b1, amount_cents=7_777, period_start="2026-06-20")  # after today: nowhere (R21)
    b.cost_entry(b1, amount_cents=800, period_start="2025-12-31")  # before the budget
    b.cost_entry(b1, amount_cents=1_500, cost_category="capex", period_start="2025-11-03")

    # B2: over on both halves since May.
    b2 = b.initiative(acct, title="B2 over")
    b.budget_version(
        b2,
        effective_from="2026-05-01",
        capex_cents=1_000,
        opex_cents=1_000,
        approved_at="2026-04-20T00:00:00Z",
    )
    b.cost_entry(b2, amount_cents=2_000, cost_category="capex", period_start="2026-05-02")
    b.cost_entry(b2, amount_cents=2_500, period_start="2026-05-03")

    # B3: a budget that starts next month (scheduled), with pilot spend already.
    b3 = b.initiative(acct, title="B3 scheduled")
    b.budget_version(
        b3,
        effective_from="2026-07-01",
        capex_cents=10_000,
        opex_cents=5_000,
        approved_at="2026-06-01T00:00:00Z",
    )
    b.cost_entry(b3, amount_cents=300, period_start="2026-06-01")

    # B4: no budget at all.
    b4 = b.initiative(acct, title="B4 unbudgeted")
    b.cost_entry(b4, amount_cents=1_234, period_start="2026-03-01")

    # B5: an EUR initiative; USD spend is converted into EUR (R4, R5).
    b5 = b.initiative(acct, title="B5 euro", currency="EUR")
    b.budget_version(
        b5, effective_from="2026-06-01", opex_cents=1_000, approved_at="2026-05-30T00:00:00Z"
    )
    b.cost_entry(b5, amount_cents=900, currency="EUR", period_start="2026-06-02")
    b.cost_entry(b5, amount_cents=1_200, currency="USD", period_start="2026-06-03")

    sample = b.initiative(acct, title="Sample", is_sample=True)
    b.load(engine)
    return {
        "token": token,
        "b1": b1,
        "v2": v2,
        "b2": b2,
        "b3": b3,
        "b4": b4,
        "b5": b5,
        "sample": sample,
        "owner": owner,
    }


def rows(client: TestClient[Litestar], token: str, **params: Any) -> dict[int, dict[str, Any]]:
    response = client.get("/api/v1/budgets", params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    return {row["initiative_id"]: row for row in response.json()["data"]}


def test_revised_budget_within(client_at: MakeClient, budgets: dict[str, Any]) -> None:
    row = rows(client_at(TODAY), budgets["token"])[budgets["b1"]]
    assert row["as_of"] == "2026-06-15"
    assert row["currency"] == "USD"
    # SEMANTICS R16/R17/R20: Jan-Mar at 3000 (v1), Apr-Jun at 12000/3 = 4000 (v2): 9000 + 12000.
    assert row["opex_budget_to_date_cents"] == 21_000
    assert row["capex_budget_cents"] == 60_000  # current version v2 (R19, R20)
    assert row["budget_to_date_cents"] == 81_000
    assert row["budget_monthly_run_rate_cents"] == 4_000
    # R21: spend from 2026-01-01 through today; the 2026-06-20 entry counts nowhere.
    assert row["capex_actual_cents"] == 55_000
    assert row["capex_remaining_cents"] == 5_000
    assert row["opex_actual_cents"] == 2_000 + 3_500 + 3_100 + 4_500 + 4_100 + 1_000
    assert row["actual_to_date_cents"] == 73_200
    assert row["variance_cents"] == 7_800
    assert row["used_ratio"] == pytest.approx(73_200 / 81_000)
    assert row["spent_before_budget_cents"] == 800 + 1_500
    # R18: neither half over.
    assert (row["budgeted"], row["status"], row["over_parts"]) == (True, "within", [])
    # R22: complete covered months Jan-May; the last three are Mar-May: (3100+4500+4100)/3.
    assert row["actual_monthly_run_rate_cents"] == 3_900
    # R23: Jan-Mar 3000 + Apr-Dec 9 x 4000; year to date through June is 21000.
    assert row["opex_budget_fiscal_year_cents"] == 45_000
    assert row["opex_budget_fiscal_ytd_cents"] == 21_000
    assert row["opex_actual_fiscal_ytd_cents"] == 18_200
    # R18, R24: pending and rejected versions do not count, but pending shows.
    assert row["budget_started_on"] == "2026-01-01"
    assert (row["revised"], row["version_count"], row["revision_pending"]) == (True, 2, True)
    assert row["current_version"] == {
        "id": budgets["v2"],
        "effective_from": "2026-04-01",
        "ends_on": None,
        "capex_cents": 60_000,
        "opex_cents": 12_000,
        "opex_cadence": "quarterly",
        "source": "revision",
        "reason": "Second region",
        "set_by": {"id": budgets["owner"], "name": "Maya Chen"},
    }


def test_over_on_both_halves(client_at: MakeClient, budgets: dict[str, Any]) -> None:
    row = rows(client_at(TODAY), budgets["token"])[budgets["b2"]]
    # May and June at 1000: 2000 opex budget; 2500 spent. capex 2000 > 1000 (R18).
    assert row["opex_budget_to_date_cents"] == 2_000
    assert (row["status"], row["over_parts"]) == ("over", ["capex", "opex"])
    assert row["capex_remaining_cents"] == -1_000
    assert row["variance_cents"] == 3_000 - 4_500
    assert row["actual_monthly_run_rate_cents"] == 2_500  # one complete month, May (R22)


def test_scheduled_budget(client_at: MakeClient, budgets: dict[str, Any]) -> None:
    row = rows(client_at(TODAY), budgets["token"])[budgets["b3"]]
    # SEMANTICS R18, R25: starts in July, after cur; nothing has begun.
    assert (row["budgeted"], row["status"], row["over_parts"]) == (True, "scheduled", [])
    for field in (
        "capex_budget_cents",
        "capex_actual_cents",
        "opex_budget_to_date_cents",
        "opex_actual_cents",
        "budget_to_date_cents",
        "actual_to_date_cents",
    ):
        assert row[field] == 0, field
    assert row["spent_before_budget_cents"] == 300
    assert row["current_version"] is None
    assert row["budget_started_on"] == "2026-07-01"
    # R23: July-December at 5000 fall in this fiscal year; none of it is to date.
    assert row["opex_budget_fiscal_year_cents"] == 30_000
    assert row["opex_budget_fiscal_ytd_cents"] == 0
    assert row["opex_actual_fiscal_ytd_cents"] == 300


def test_unbudgeted_row(client_at: MakeClient, budgets: dict[str, Any]) -> None:
    row = rows(client_at(TODAY), budgets["token"])[budgets["b4"]]
    # SEMANTICS R25: every amount 0, the nullable figures null.
    assert (row["budgeted"], row["status"], row["over_parts"]) == (False, "no_budget", [])
    amounts = [k for k, v in row.items() if k.endswith("_cents") and v is not None]
    assert amounts and all(row[k] == 0 for k in amounts)
    for field in (
        "used_ratio",
        "actual_monthly_run_rate_cents",
        "budget_started_on",
        "current_version",
    ):
        assert row[field] is None, field


def test_row_in_the_initiatives_currency(client_at: MakeClient, budgets: dict[str, Any]) -> None:
    row = rows(client_at(TODAY), budgets["token"])[budgets["b5"]]
    # SEMANTICS R4, R5: 900 EUR + 1200 USD * 1 / 1.20 = 900 + 1000 EUR cents.
    assert row["currency"] == "EUR"
    assert row["opex_actual_cents"] == 1_900
    assert (row["status"], row["over_parts"]) == ("over", ["opex"])


def test_one_row_per_initiative_and_filters(client_at: MakeClient, budgets: dict[str, Any]) -> None:
    client = client_at(TODAY)
    token = budgets["token"]
    everything = rows(client, token)
    assert set(everything) == {budgets[k] for k in ("b1", "b2", "b3", "b4", "b5")}
    assert budgets["sample"] in rows(client, token, include_sample="true")
    assert set(rows(client, token, budgeted="true")) == {
        budgets[k] for k in ("b1", "b2", "b3", "b5")
    }
    assert set(rows(client, token, initiative_id=budgets["b2"])) == {budgets["b2"]}


def test_a_named_sample_initiative_is_selected(
    client_at: MakeClient, budgets: dict[str, Any]
) -> None:
    # SEMANTICS R31 (and R7): an initiative_id naming one of the account's sample initiatives
    # selects it, whatever include_sample says; without initiative_id samples stay out unless
    # include_sample=true (SPEC 4.A.4, 4.A.10).
    client = client_at(TODAY)
    token, sample = budgets["token"], budgets["sample"]
    assert set(rows(client, token, initiative_id=sample)) == {sample}
    assert set(rows(client, token, initiative_id=sample, include_sample="false")) == {sample}
    assert set(rows(client, token, initiative_id=sample, include_sample="true")) == {sample}
    assert sample not in rows(client, token)
    assert sample in rows(client, token, include_sample="true")


def test_budgeted_filter_applies_after_paging(
    client_at: MakeClient, budgets: dict[str, Any]
) -> None:
    # SPEC 4.A.10: a page may hold fewer rows than limit while has_more is still true.
    client = client_at(TODAY)
    seen: list[int] = []
    cursor = None
    short_page_with_more = False
    while True:
        params: dict[str, Any] = {"limit": 2, "budgeted": "true"}
        if cursor:
            params["cursor"] = cursor
        body = client.get("/api/v1/budgets", params=params, headers=bearer(budgets["token"])).json()
        seen += [row["initiative_id"] for row in body["data"]]
        if not body["page"]["has_more"]:
            break
        short_page_with_more |= len(body["data"]) < 2
        cursor = body["page"]["next_cursor"]
    assert sorted(seen) == sorted(budgets[k] for k in ("b1", "b2", "b3", "b5"))
    assert short_page_with_more  # b4 (unbudgeted) sits among the first four initiatives


def test_budgets_refuses_updated_since_and_foreign_ids(
    client_at: MakeClient, budgets: dict[str, Any]
) -> None:
    client = client_at(TODAY)
    headers = bearer(budgets["token"])
    response = client.get(
        "/api/v1/budgets", params={"updated_since": "2026-01-01T00:00:00Z"}, headers=headers
    )
    assert response.status_code == 400
    assert "updated_since" in response.json()["error"]["message"]
    assert (
        client.get(
            "/api/v1/budgets", params={"initiative_id": 999_999}, headers=headers
        ).status_code
        == 404
    )


def test_fiscal_year_starting_in_april(engine: Engine, client_at: MakeClient) -> None:
    # SEMANTICS R23: with today 2026-02-10 and an April start, the fiscal year began 2025-04-01.
    b = BundleBuilder()
    acct = b.account(fiscal_year_start_month=4)
    token = b.token(b.user(acct))
    init = b.initiative(acct)
    b.budget_version(
        init,
        effective_from="2025-10-01",
        opex_cents=1_200,
        opex_cadence="annually",
        approved_at="2025-09-01T00:00:00Z",
    )
    b.cost_entry(init, amount_cents=70, period_start="2025-04-02")  # in the FY, before the budget
    b.cost_entry(init, amount_cents=90, period_start="2025-03-31")  # the previous FY
    b.cost_entry(init, amount_cents=110, period_start="2026-01-15")
    b.load(engine)
    row = rows(client_at(date(2026, 2, 10)), token)[init]
    # 1200 a year is 100 a month; covered Oct 2025 - Mar 2026 in this FY (6 months) = 600;
    # through February: Oct-Feb, 5 months = 500; to date since the start: the same 500.
    assert row["opex_budget_fiscal_year_cents"] == 600
    assert row["opex_budget_fiscal_ytd_cents"] == 500
    assert row["opex_budget_to_date_cents"] == 500
    assert row["opex_actual_fiscal_ytd_cents"] == 70 + 110
    assert row["spent_before_budget_cents"] == 70 + 90
    # SEMANTICS R46: complete covered months Oct 2025 - Jan 2026; the last three, Nov-Jan,
    # spent 0 + 0 + 110: 110 / 3 = 36.67 -> 37 a month (R22). One month of the fiscal year,
    # March, follows February: 180 + 37 × 1 = 217; 600 - 217 = 383; not above 600: within.
    assert row["actual_monthly_run_rate_cents"] == 37
    assert row["projected_opex_fiscal_year_cents"] == 217
    assert row["projected_fiscal_year_variance_cents"] == 383
    assert row["projected_fiscal_year_status"] == "within"


def test_fiscal_year_projection_of_every_kind_of_row(
    client_at: MakeClient, budgets: dict[str, Any]
) -> None:
    # SEMANTICS R46: today 2026-06-15 in a calendar fiscal year: July to December, 6 months,
    # follow June.
    served = rows(client_at(TODAY), budgets["token"])
    projected = {
        name: (
            served[budgets[name]]["projected_opex_fiscal_year_cents"],
            served[budgets[name]]["projected_fiscal_year_variance_cents"],
            served[budgets[name]]["projected_fiscal_year_status"],
        )
        for name in ("b1", "b2", "b3", "b4", "b5")
    }
    assert projected == {
        # B1: opex Jan-Jun 2000 + 3500 + 3100 + 4500 + 4100 + 1000 = 18200, run rate 3900
        # (Mar-May): 18200 + 3900 × 6 = 41600; the year's budget 45000 - 41600 = 3400: within.
        "b1": (41_600, 3_400, "within"),
        # B2: opex 2500 in May, run rate 2500 (May alone): 2500 + 2500 × 6 = 17500; the year's
        # budget May-Dec 8 × 1000 = 8000 - 17500 = -9500: over.
        "b2": (17_500, -9_500, "over"),
        # B3: scheduled, no run rate (R25): nothing projected.
        "b3": (None, None, None),
        # B4: not budgeted.
        "b4": (None, None, "no_budget"),
        # B5: began in June, no complete month, no run rate (R22): nothing projected.
        "b5": (None, None, None),
    }


def test_budget_rows_of_one_account_only(engine: Engine, client_at: MakeClient) -> None:
    b = BundleBuilder()
    mine, theirs = b.account(name="Mine"), b.account(name="Theirs")
    token = b.token(b.user(mine))
    b.user(theirs)
    own = b.initiative(mine)
    foreign = b.initiative(theirs)
    b.budget_version(
        foreign, effective_from="2026-01-01", opex_cents=5_000, approved_at="2025-12-01T00:00:00Z"
    )
    b.cost_entry(foreign, amount_cents=9_999, period_start="2026-02-01")
    b.load(engine)
    client = client_at(TODAY)
    assert set(rows(client, token, include_sample="true")) == {own}
    response = client.get(
        "/api/v1/budgets", params={"initiative_id": foreign}, headers=bearer(token)
    )
    assert response.status_code == 404  # SEMANTICS R31, never an empty list


def test_a_budget_from_the_first_day_there_is(engine: Engine, client_at: MakeClient) -> None:
    # A version effective since 0001-01-01 ("since forever"): nothing can be spent before it,
    # and the page of every initiative is served (one such row made the whole page a 500).
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    forever = b.initiative(acct, title="Since forever")
    other = b.initiative(acct, title="Unbudgeted")
    b.budget_version(
        forever, effective_from="0001-01-01", opex_cents=100, approved_at="2020-01-01T00:00:00Z"
    )
    b.cost_entry(forever, amount_cents=250, period_start="0001-01-15")
    b.cost_entry(forever, amount_cents=40, period_start="2026-02-03")
    b.load(engine)
    served = rows(client_at(date(2026, 3, 10)), token)
    assert set(served) == {forever, other}
    row = served[forever]
    assert row["budget_started_on"] == "0001-01-01"
    assert row["spent_before_budget_cents"] == 0
    # Months 0001-01 through 2026-03: 2025 whole years of 12, then 3 = 24,303 at 100 a month.
    assert row["opex_budget_to_date_cents"] == 2_430_300
    assert row["opex_actual_cents"] == 250 + 40
