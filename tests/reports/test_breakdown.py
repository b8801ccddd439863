"""GET /roi/breakdown, worked by hand (SEMANTICS R37, with R2, R5-R9, R12, R13, R23, R31)."""

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
TODAY = date(2026, 6, 15)  # 1yr is 2025-06-16 .. 2026-06-15 (R8)
FIGURES = ("approved_value_cents", "capex_cents", "opex_cents", "total_cost_cents")


@pytest.fixture
def account(engine: Engine) -> dict[str, Any]:
    b = BundleBuilder()
    # SEMANTICS R23: the fiscal year starts in April, so its quarters start Apr, Jul, Oct, Jan.
    acct = b.account(currency="USD", fiscal_year_start_month=4)
    other = b.account(name="Other")
    token = b.token(b.user(acct))
    b.user(other)
    b.fx_rate(acct, "EUR", "1.10", "2025-01-01")  # R5: every EUR entry here is at 1.10
    a = b.initiative(acct, title="Alpha")
    bb = b.initiative(acct, title="Beta")
    c = b.initiative(acct, title="Unspent")
    s = b.initiative(acct, title="Sample", is_sample=True)
    foreign = b.initiative(other, title="Not ours")

    def cost(i: int, cents: int | None, category: str, day: str, **fields: Any) -> None:
        b.cost_entry(i, amount_cents=cents, cost_category=category, period_start=day, **fields)

    cost(a, 10_000, "capex", "2026-05-10", cost_type="software", vendor_name="Acme")
    # 20000 EUR cents at 1.10 = 22000 USD cents.
    cost(a, 20_000, "opex", "2026-04-02", currency="EUR", cost_type="tokens", vendor_name="Acme")
    cost(bb, -5_000, "opex", "2026-01-20", cost_type="software")  # a refund, no vendor (R6)
    cost(bb, None, "opex", "2025-03-01", vendor_name="Beta Corp")  # adds nothing: outside 1yr
    cost(bb, 7_000, "capex", "2024-12-31", vendor_name="Beta Corp")  # outside 1yr
    cost(s, 99_999, "capex", "2026-05-01", cost_type="software")  # sample: never in portfolio
    cost(foreign, 55_555, "capex", "2026-05-01")

    b.value_entry(a, amount_cents=50_000, period_start="2026-05-20")
    # 3333 EUR cents at 1.10 = 3666.3 -> 3666.
    b.value_entry(bb, amount_cents=3_333, currency="EUR", period_start="2026-02-01")
    b.value_entry(a, amount_cents=100_000, status="draft", period_start="2026-05-20")
    b.value_entry(bb, amount_cents=1_000, period_start="2024-11-15")  # outside 1yr
    b.value_entry(s, amount_cents=123_456, period_start="2026-05-01")
    b.load(engine)
    return {"token": token, "a": a, "b": bb, "c": c, "s": s, "foreign": foreign}


def get(client: TestClient[Litestar], token: str, path: str, **params: Any) -> Any:
    response = client.get(f"/api/v1/{path}", params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    return response.json()


def walk(client: TestClient[Litestar], token: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of a breakdown, a page of `limit` at a time."""
    rows: list[dict[str, Any]] = []
    while True:
        body = get(client, token, "roi/breakdown", **params)
        rows += body["data"]
        if not body["page"]["has_more"]:
            assert body["page"]["next_cursor"] is None
            return rows
        params["cursor"] = body["page"]["next_cursor"]


def row(key: Any, label: str, value: int | None, capex: int, opex: int) -> dict[str, Any]:
    """A row as R37 and R9 define it, from hand-worked sums."""
    total = capex + opex
    return {
        "key": key,
        "label": label,
        "approved_value_cents": value,
        "capex_cents": capex,
        "opex_cents": opex,
        "total_cost_cents": total,
        "net_value_cents": None if value is None else value - total,
        "roi": None if value is None or total == 0 else float(Fraction(value - total, total)),
        "value_cents": None,  # SEMANTICS R37: by=value_status's alone
    }


def test_by_initiative_has_a_row_for_every_initiative_and_adds_up_to_roi(
    account: dict[str, Any], client_at: MakeClient
) -> None:
    # SEMANTICS R37: every initiative in scope, spent or not (Unspent), samples left out (R7).
    client, token = client_at(TODAY), account["token"]
    body = get(client, token, "roi/breakdown", by="initiative")
    assert body["by"] == "initiative"
    assert body["scope"] == {"type": "portfolio"}
    assert body["period"] == {"window": "all", "label": "All time"}
    assert body["currency"] == "USD"
    assert body["data"] == [
        row(account["a"], "Alpha", 50_000, 10_000, 22_000),
        row(account["b"], "Beta", 4_666, 7_000, -5_000),  # 3666 + 1000 of value
        row(account["c"], "Unspent", 0, 0, 0),
    ]
    # Each row equals /roi for that initiative (R37), and together they are /roi (R9).
    for r in body["data"]:
        one = get(client, token, "roi", initiative_id=r["key"])
        assert r["approved_value_cents"] == one["approved_value_cents"]
        assert r["total_cost_cents"] == one["total_cost_cents"]
        assert r["roi"] == one["roi"]
    whole = get(client, token, "roi")
    assert whole["total_cost_cents"] == 34_000
    assert whole["approved_value_cents"] == 54_666


def test_by_month_covers_every_month_of_the_window(
    account: dict[str, Any], client_at: MakeClient
) -> None:
    # SEMANTICS R37: a row for every month across the window, empty months included.
    client, token = client_at(TODAY), account["token"]
    body = get(client, token, "roi/breakdown", by="month", window="1yr", limit=500)
    assert body["period"]["from"] == "2025-06-16"
    months = [f"2025-{m:02d}" for m in range(6, 13)] + [f"2026-{m:02d}" for m in range(1, 7)]
    assert [r["label"] for r in body["data"]] == months
    assert [r["key"] for r in body["data"]] == [f"{m}-01" for m in months]
    by_label = {r["label"]: r for r in body["data"]}
    assert by_label["2026-01"] == row("2026-01-01", "2026-01", 0, 0, -5_000)
    assert by_label["2026-02"] == row("2026-02-01", "2026-02", 3_666, 0, 0)
    assert by_label["2026-04"] == row("2026-04-01", "2026-04", 0, 0, 22_000)
    assert by_label["2026-05"] == row("2026-05-01", "2026-05", 50_000, 10_000, 0)
    assert by_label["2025-09"] == row("2025-09-01", "2025-09", 0, 0, 0)


def test_by_quarter_follows_the_fiscal_year(account: dict[str, Any], client_at: MakeClient) -> None:
    # SEMANTICS R23, R37: quarters of a fiscal year starting in April; for all, from the
    # quarter of the first entry (value, 2024-11-15) through that of the last (2026-05-20).
    client, token = client_at(TODAY), account["token"]
    rows = walk(client, token, by="quarter", limit=2)
    assert rows == [
        row("2024-10-01", "FY2024/25 Q3", 1_000, 7_000, 0),
        row("2025-01-01", "FY2024/25 Q4", 0, 0, 0),  # one entry, its amount null (R6)
        row("2025-04-01", "FY2025/26 Q1", 0, 0, 0),
        row("2025-07-01", "FY2025/26 Q2", 0, 0, 0),
        row("2025-10-01", "FY2025/26 Q3", 0, 0, 0),
        row("2026-01-01", "FY2025/26 Q4", 3_666, 0, -5_000),
        row("2026-04-01", "FY2026/27 Q1", 50_000, 10_000, 22_000),
    ]


def test_by_cost_type_and_vendor_split_cost_only(
    account: dict[str, Any], client_at: MakeClient
) -> None:
    # SEMANTICS R37: value fields, net value and roi null; a null key last.
    client, token = client_at(TODAY), account["token"]
    assert walk(client, token, by="cost_type", limit=1) == [
        row("software", "software", None, 10_000, -5_000),
        row("tokens", "tokens", None, 0, 22_000),
        row(None, "No cost type", None, 7_000, 0),
    ]
    # Ordered by key (R37): the vendors made from a name have random ids, so either may lead.
    vendors = walk(client, token, by="vendor", limit=1)
    assert vendors[0]["key"] < vendors[1]["key"]
    assert vendors[2]["key"] is None
    if vendors[0]["label"] != "Acme":
        vendors[:2] = vendors[1::-1]
    assert [r["label"] for r in vendors] == ["Acme", "Beta Corp", "No vendor"]
    assert vendors[0] == row(vendors[0]["key"], "Acme", None, 10_000, 22_000)
    assert vendors[1] == row(vendors[1]["key"], "Beta Corp", None, 7_000, 0)
    assert vendors[2] == row(None, "No vendor", None, 0, -5_000)
    # The vendor ids are the cost entries' own (SPEC 2: vendor_id).
    served = {r["vendor_id"] for r in get(client, token, "cost_entries")["data"]}
    assert {vendors[0]["key"], vendors[1]["key"], None} == served


def test_one_initiative_and_a_window(account: dict[str, Any], client_at: MakeClient) -> None:
    client, token = client_at(TODAY), account["token"]
    body = get(client, token, "roi/breakdown", by="cost_type", initiative_id=account["b"])
    assert body["scope"] == {"type": "initiative", "id": account["b"], "title": "Beta"}
    assert body["data"] == [
        row("software", "software", None, 0, -5_000),
        row(None, "No cost type", None, 7_000, 0),
    ]
    one = get(client, token, "roi/breakdown", by="initiative", window="1yr")
    assert one["data"][0] == row(account["a"], "Alpha", 50_000, 10_000, 22_000)
    assert one["data"][1] == row(account["b"], "Beta", 3_666, 0, -5_000)
    # A sample initiative named by initiative_id is selected, as on /roi (R31, R7).
    sample = get(client, token, "roi/breakdown", by="initiative", initiative_id=account["s"])
    assert sample["data"] == [row(account["s"], "Sample", 123_456, 99_999, 0)]


def test_every_split_adds_up_to_roi(account: dict[str, Any], client_at: MakeClient) -> None:
    # SEMANTICS R37: across all pages the rows sum exactly to /roi for the same window.
    client, token = client_at(TODAY), account["token"]
    for window in ("1yr", "3yr", "5yr", "all"):
        whole = get(client, token, "roi", window=window)
        for by in ("initiative", "month", "quarter", "cost_type", "vendor"):
            rows = walk(client, token, by=by, window=window, limit=3)
            assert sum(r["capex_cents"] for r in rows) == whole["cost"]["capex_cents"], by
            assert sum(r["opex_cents"] for r in rows) == whole["cost"]["opex_cents"], by
            assert sum(r["total_cost_cents"] for r in rows) == whole["total_cost_cents"], by
            if by in ("cost_type", "vendor"):
                assert all(r["approved_value_cents"] is None for r in rows)
            else:
                value = sum(r["approved_value_cents"] for r in rows)
                assert value == whole["approved_value_cents"], (by, window)
                net = sum(r["net_value_cents"] for r in rows)
                assert net == whole["net_value_cents"]


@pytest.mark.parametrize(
    ("params", "names"),
    [
        ({}, "by"),  # required
        ({"by": "week"}, "by"),
        ({"by": "month", "window": "2yr"}, "window"),
        ({"by": "month", "limit": 0}, "limit"),
        ({"by": "month", "limit": 501}, "limit"),
        ({"by": "month", "cursor": "not-a-cursor"}, "cursor"),
        ({"by": "month", "group": "x"}, "group"),  # R12: undeclared
    ],
)
def test_bad_parameters_are_refused(
    account: dict[str, Any], client_at: MakeClient, params: dict[str, Any], names: str
) -> None:
    # SEMANTICS R12: 400 with the SPEC 7 body, naming the parameter.
    response = client_at(TODAY).get(
        "/api/v1/roi/breakdown", params=params, headers=bearer(account["token"])
    )
    assert response.status_code == 400, response.text
    assert names in response.text


def test_a_foreign_initiative_is_not_found(account: dict[str, Any], client_at: MakeClient) -> None:
    # SEMANTICS R31: 404, never an empty split.
    response = client_at(TODAY).get(
        "/api/v1/roi/breakdown",
        params={"by": "month", "initiative_id": account["foreign"]},
        headers=bearer(account["token"]),
    )
    assert response.status_code == 404
    assert response.json()["error"]["status"] == 404
    assert "initiative" in response.json()["error"]["message"]


def test_a_cursor_continues_only_its_own_split(
    account: dict[str, Any], client_at: MakeClient
) -> None:
    # SEMANTICS R13: a cursor from another list, or of another split, is refused with 400.
    client, token = client_at(TODAY), account["token"]
    month = get(client, token, "roi/breakdown", by="month", limit=1)["page"]["next_cursor"]
    other = client.get(
        "/api/v1/roi/breakdown",
        params={"by": "vendor", "cursor": month},
        headers=bearer(token),
    )
    assert other.status_code == 400
    assert "by month" in other.json()["error"]["message"]
    listed = get(client, token, "cost_entries", limit=1)["page"]["next_cursor"]
    foreign = client.get(
        "/api/v1/roi/breakdown", params={"by": "month", "cursor": listed}, headers=bearer(token)
    )
    assert foreign.status_code == 400
    # And a breakdown's cursor is no list's.
    refused = client.get("/api/v1/cost_entries", params={"cursor": month}, headers=bearer(token))
    assert refused.status_code == 400


# -- by=value_status (SEMANTICS R37) -----------------------------------------------------------

STATUSES = ("draft", "calculated", "reviewed", "approved", "disputed", "archived")


@pytest.fixture
def valued(engine: Engine) -> dict[str, Any]:
    """Value entries of every status but archived; today 2026-06-15, so 1yr is 2025-06-16
    through 2026-06-15 (R8)."""
    b = BundleBuilder()
    acct = b.account(currency="USD")
    other = b.account(name="Other")
    token = b.token(b.user(acct))
    b.user(other)
    b.fx_rate(acct, "EUR", "1.25", "2025-01-01")
    p = b.initiative(acct, title="Pilot")
    q = b.initiative(acct, title="Queue")
    s = b.initiative(acct, title="Sample", is_sample=True)
    foreign = b.initiative(other, title="Not ours")

    def value(i: int, cents: int | None, status: str, day: str, **fields: Any) -> None:
        b.value_entry(i, amount_cents=cents, status=status, period_start=day, **fields)

    value(p, 10_000, "draft", "2026-03-01")
    value(p, 2_500, "draft", "2025-01-10")  # outside 1yr
    value(p, 7_000, "calculated", "2026-04-01")
    value(p, 40_000, "approved", "2026-05-01")
    value(p, 8_000, "approved", "2026-02-01", currency="EUR")  # 8000 × 1.25 = 10000 (R5)
    value(q, 3_000, "reviewed", "2026-01-05")
    value(q, 5_000, "approved", "2025-03-01")  # outside 1yr
    value(q, None, "approved", "2026-05-02")  # adds nothing (R6)
    value(q, 6_000, "disputed", "2026-06-01")
    value(q, -1_000, "disputed", "2026-06-02")  # summed as it is (R6)
    value(q, 4_000, "draft", "2026-06-20")  # after today: in all, outside 1yr
    value(s, 99_000, "approved", "2026-05-01")  # sample: never in the portfolio (R7)
    value(s, 11_000, "draft", "2026-05-01")
    value(foreign, 77_777, "approved", "2026-05-01")  # another account's
    b.cost_entry(p, amount_cents=20_000, cost_category="capex", period_start="2026-05-01")
    b.load(engine)
    return {"token": token, "p": p, "q": q, "s": s}


def status_rows(*values: int) -> list[dict[str, Any]]:
    """The six rows of R37, in SPEC 3's order, from hand-worked sums of each status."""
    return [
        {
            "key": status,
            "label": status.capitalize(),
            "approved_value_cents": cents if status == "approved" else 0,
            "capex_cents": None,
            "opex_cents": None,
            "total_cost_cents": None,
            "net_value_cents": None,
            "roi": None,
            "value_cents": cents,
        }
        for status, cents in zip(STATUSES, values, strict=True)
    ]


def test_by_value_status_sums_each_status_of_the_portfolio(
    valued: dict[str, Any], client_at: MakeClient
) -> None:
    # SEMANTICS R37 (R7: the sample's 99000 and 11000 left out; R5, R6):
    # draft 10000 + 2500 + 4000 = 16500; calculated 7000; reviewed 3000;
    # approved 40000 + 10000 (8000 EUR) + 5000 + 0 (null) = 55000;
    # disputed 6000 - 1000 = 5000; archived none: 0.
    client, token = client_at(TODAY), valued["token"]
    body = get(client, token, "roi/breakdown", by="value_status")
    assert (body["by"], body["scope"], body["currency"]) == (
        "value_status",
        {"type": "portfolio"},
        "USD",
    )
    assert body["data"] == status_rows(16_500, 7_000, 3_000, 55_000, 5_000, 0)
    assert body["page"] == {"has_more": False, "next_cursor": None}
    # The approved row is /roi's approved value (R9).
    assert get(client, token, "roi")["approved_value_cents"] == 55_000


def test_by_value_status_in_a_window_and_for_one_initiative(
    valued: dict[str, Any], client_at: MakeClient
) -> None:
    # SEMANTICS R37, R8: 1yr is 2025-06-16 .. 2026-06-15: the 2500 draft (2025-01-10), the 5000
    # approved (2025-03-01) and the 4000 draft (2026-06-20) fall outside.
    client, token = client_at(TODAY), valued["token"]
    year = get(client, token, "roi/breakdown", by="value_status", window="1yr")
    # draft 10000; calculated 7000; reviewed 3000; approved 40000 + 10000 = 50000; disputed 5000.
    assert year["data"] == status_rows(10_000, 7_000, 3_000, 50_000, 5_000, 0)
    assert get(client, token, "roi", window="1yr")["approved_value_cents"] == 50_000
    # Pilot alone, all time: draft 10000 + 2500 = 12500; calculated 7000; approved 50000.
    pilot = get(client, token, "roi/breakdown", by="value_status", initiative_id=valued["p"])
    assert pilot["scope"] == {"type": "initiative", "id": valued["p"], "title": "Pilot"}
    assert pilot["data"] == status_rows(12_500, 7_000, 0, 50_000, 0, 0)
    # Queue in 1yr: reviewed 3000; approved 0 (null amount); disputed 5000; the rest 0.
    queue = get(
        client, token, "roi/breakdown", by="value_status", window="1yr", initiative_id=valued["q"]
    )
    assert queue["data"] == status_rows(0, 0, 3_000, 0, 5_000, 0)
    # A sample initiative named by initiative_id is its own scope (R7, R31): draft 11000,
    # approved 99000.
    sample = get(client, token, "roi/breakdown", by="value_status", initiative_id=valued["s"])
    assert sample["data"] == status_rows(11_000, 0, 0, 99_000, 0, 0)


def test_by_value_status_adds_up_to_every_value_entry_in_scope(
    valued: dict[str, Any], client_at: MakeClient
) -> None:
    # SEMANTICS R37: the six rows hold every value entry of the window and scope, each once:
    # their value_cents add up to the served entries' account_amount_cents, status by status.
    client, token = client_at(TODAY), valued["token"]
    entries = [
        e
        for e in get(client, token, "value_entries", limit=500)["data"]
        if e["account_amount_cents"] is not None
    ]
    for window, first in (("all", "0001-01-01"), ("1yr", "2025-06-16")):
        for initiative_id in (None, valued["p"], valued["q"], valued["s"]):
            params: dict[str, Any] = {"by": "value_status", "window": window}
            if initiative_id is not None:
                params["initiative_id"] = initiative_id
            rows = walk(client, token, limit=4, **params)
            in_scope = [
                e
                for e in entries
                if (
                    e["initiative_id"] == initiative_id
                    if initiative_id is not None
                    else e["initiative_id"] != valued["s"]
                )
                and (window == "all" or first <= e["reported_on"] <= TODAY.isoformat())
            ]
            expected = {
                status: sum(e["account_amount_cents"] for e in in_scope if e["status"] == status)
                for status in STATUSES
            }
            assert {r["key"]: r["value_cents"] for r in rows} == expected, params
            assert sum(r["value_cents"] for r in rows) == sum(
                e["account_amount_cents"] for e in in_scope
            )
    # The hand-worked portfolio total (the test above): 16500 + 7000 + 3000 + 55000 + 5000.
    rows = walk(client, token, by="value_status")
    assert sum(r["value_cents"] for r in rows) == 86_500


def test_by_value_status_pages_in_the_order_of_the_statuses(
    valued: dict[str, Any], client_at: MakeClient
) -> None:
    # SEMANTICS R37, R13: two rows a page, in SPEC 3's order (alphabetical would put approved
    # and archived first), each row once, the cursor continuing after the status it ended on.
    client, token = client_at(TODAY), valued["token"]
    pages = []
    params: dict[str, Any] = {"by": "value_status", "limit": 2}
    while True:
        body = get(client, token, "roi/breakdown", **params)
        pages.append(([r["key"] for r in body["data"]], body["page"]["has_more"]))
        if not body["page"]["has_more"]:
            break
        params["cursor"] = body["page"]["next_cursor"]
    assert pages == [
        (["draft", "calculated"], True),
        (["reviewed", "approved"], True),
        (["disputed", "archived"], False),
    ]
    assert walk(client, token, by="value_status", limit=2) == status_rows(
        16_500, 7_000, 3_000, 55_000, 5_000, 0
    )
    # A value_status cursor continues only that split.
    response = client.get(
        "/api/v1/roi/breakdown",
        params={"by": "month", "cursor": params["cursor"]},
        headers=bearer(token),
    )
    assert response.status_code == 400
    assert "by value_status" in response.json()["error"]["message"]


def test_a_quarter_begun_before_year_one_is_keyed_by_its_first_day(
    engine: Engine, client_at: MakeClient
) -> None:
    # SEMANTICS R23, R37: with the fiscal year starting in February, January of year 1 falls in
    # the quarter November of year 0 to January of year 1, whose first day is no date: its row
    # is keyed by the first day there is. The next quarter starts in February, as every other.
    b = BundleBuilder()
    acct = b.account(fiscal_year_start_month=2)
    token = b.token(b.user(acct))
    init = b.initiative(acct)
    b.cost_entry(init, amount_cents=300, cost_category="capex", period_start="0001-01-15")
    b.cost_entry(init, amount_cents=20, period_start="0001-02-01")
    b.cost_entry(init, amount_cents=5, period_start="0001-05-31")
    b.load(engine)
    client = client_at(TODAY)
    first = get(client, token, "roi/breakdown", by="quarter", limit=3)
    assert [r["key"] for r in first["data"]] == ["0001-01-01", "0001-02-01", "0001-05-01"]
    assert first["data"][0] == row("0001-01-01", "FY0/01 Q4", 0, 300, 0)
    assert first["data"][1] == row("0001-02-01", "FY1/02 Q1", 0, 0, 20)
    assert first["data"][2] == row("0001-05-01", "FY1/02 Q2", 0, 0, 5)
    # For `all`, from the first quarter with an entry to the last: those three (R37).
    assert not first["page"]["has_more"]
    assert get(client, token, "roi")["total_cost_cents"] == 300 + 20 + 5
