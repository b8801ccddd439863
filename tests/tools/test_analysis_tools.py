"""The analysis tools (issue 23): get_roi_breakdown against GET /roi/breakdown (SEMANTICS R37),
list_decisions against GET /decisions, list_metric_readings against GET /observations, and a
cursor on every list (R13, R27). Figures checked by hand are worked out in the comments."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.conftest import Served
from tests.tools.world import World

# SEMANTICS R37: value_status too, whose rows come in SPEC 3's order of the statuses.
BYS = ("initiative", "month", "quarter", "cost_type", "vendor", "value_status")
NOT_ISSUED = (
    "The cursor is not one this tool issued; pass the next_cursor of a previous call unchanged."
)
FOREIGN = (
    "The cursor was issued to another account; a cursor only continues a list for the "
    "account of the token it was served to."
)


def walk(
    served: Served, token: str, tool: str, arguments: dict[str, Any], rows: str
) -> list[dict[str, Any]]:
    """Every row of a list tool, page by page through next_cursor."""
    seen: list[dict[str, Any]] = []
    cursor = None
    for _ in range(200):
        page = served.ok(token, tool, {**arguments, "cursor": cursor})
        seen.extend(page[rows])
        cursor = page["next_cursor"]
        assert page["has_more"] is (cursor is not None)
        if cursor is None:
            return seen
    raise AssertionError("the walk did not end")


def api_rows(served: Served, token: str, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of an HTTP list, walked with its own cursors."""
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        extra = {} if cursor is None else {"cursor": cursor}
        page = served.api(token, path, limit=500, **params, **extra)
        rows.extend(page["data"])
        cursor = page["page"]["next_cursor"]
        if cursor is None:
            return rows


def without_nulls(tool: dict[str, Any]) -> dict[str, Any]:
    """scope and period as the API serves them: absent keys instead of nulls."""
    return {k: v for k, v in tool.items() if v is not None}


def vendor_id(served: Served, token: str, name: str) -> int:
    """The id of a vendor hit of search (the ids get_roi_breakdown's vendor_id takes)."""
    hits = served.ok(token, "search", {"query": name, "types": ["vendor"]})["results"]
    (hit,) = [h for h in hits if h["title"] == name]
    return int(hit["id"])


# get_roi_breakdown --------------------------------------------------------------------------


@pytest.mark.parametrize("window", ["all", "1yr"])
@pytest.mark.parametrize("by", BYS)
def test_breakdown_rows_are_the_endpoints(
    served: Served, world: World, by: str, window: str
) -> None:
    # SEMANTICS R37: the same rows, figures and order as GET /roi/breakdown, same token/store.
    first = served.ok(world.token_a, "get_roi_breakdown", {"by": by, "window": window})
    api = served.api(world.token_a, "/roi/breakdown", by=by, window=window, limit=20)
    assert first["data"] == api["data"]
    assert (first["by"], first["currency"]) == (api["by"], api["currency"]) == (by, "USD")
    assert without_nulls(first["scope"]) == api["scope"]
    assert without_nulls(first["period"]) == api["period"]
    assert first["has_more"] == api["page"]["has_more"]
    assert first["vendor_id"] is None
    # Paging through the cursor walks them all, each once, in the endpoint's order.
    every = api_rows(served, world.token_a, "/roi/breakdown", by=by, window=window)
    assert len(every) >= 2
    paged = walk(
        served, world.token_a, "get_roi_breakdown", {"by": by, "window": window, "limit": 2}, "data"
    )
    assert paged == every


def test_breakdown_of_one_initiative_is_the_endpoints(served: Served, world: World) -> None:
    p = world.ids["p"]
    for by in BYS:
        tool = walk(
            served, world.token_a, "get_roi_breakdown", {"by": by, "initiative_id": p}, "data"
        )
        assert tool == api_rows(served, world.token_a, "/roi/breakdown", by=by, initiative_id=p)


def test_breakdown_figures_by_hand(served: Served, world: World) -> None:
    # p's twelve cost entries of Acme Vendor are 10_000 + i cents, i = 0..11, capex when i is
    # 0, 4 or 8: capex 10_000 + 10_004 + 10_008 = 30_012; all twelve 120_066; opex 90_054.
    # q's one entry of Beta Labs is 5_000 EUR at 1.10: 5_500 USD, opex.
    rows = served.ok(world.token_a, "get_roi_breakdown", {"by": "vendor"})["data"]
    by_label = {row["label"]: row for row in rows}
    acme = by_label["Acme Vendor"]
    assert (acme["capex_cents"], acme["opex_cents"], acme["total_cost_cents"]) == (
        30_012,
        90_054,
        120_066,
    )
    assert (acme["approved_value_cents"], acme["net_value_cents"], acme["roi"]) == (None,) * 3
    assert by_label["Beta Labs"]["total_cost_cents"] == 5_500
    assert rows[-1]["key"] is None and rows[-1]["label"] == "No vendor"  # null last
    # By initiative, p: approved value 300_000 + 50_000 (the draft and reviewed ones never
    # count), net 350_000 - 120_066 = 229_934.
    p_row = next(
        row
        for row in served.ok(world.token_a, "get_roi_breakdown", {"by": "initiative"})["data"]
        if row["key"] == world.ids["p"]
    )
    assert (p_row["approved_value_cents"], p_row["net_value_cents"]) == (350_000, 229_934)


def test_vendor_id_from_a_search_hit_splits_that_vendors_cost(served: Served, world: World) -> None:
    acme = vendor_id(served, world.token_a, "Acme Vendor")
    # Today is 2026-06-15; the last year holds Acme's entries of 2025-07 (i=7: 10_007 opex),
    # 2026-01 (i=8: 10_008 capex), 2026-03 (10_009) and 2026-05 (10_010); 2026-07 is later.
    result = served.ok(
        world.token_a,
        "get_roi_breakdown",
        {"by": "month", "window": "1yr", "vendor_id": acme, "limit": 50},
    )
    assert result["vendor_id"] == acme and result["has_more"] is False
    spent = {
        row["key"]: row["total_cost_cents"] for row in result["data"] if row["total_cost_cents"]
    }
    assert spent == {
        "2025-07-01": 10_007,
        "2026-01-01": 10_008,
        "2026-03-01": 10_009,
        "2026-05-01": 10_010,
    }
    assert sum(row["capex_cents"] for row in result["data"]) == 10_008
    # Value entries name no vendor: the value fields are null on every row.
    assert all(row["approved_value_cents"] is None and row["roi"] is None for row in result["data"])
    # The vendor's row of by=vendor is the same money: 40_034 over the year.
    year = served.ok(world.token_a, "get_roi_breakdown", {"by": "vendor", "window": "1yr"})
    (own,) = [row for row in year["data"] if row["key"] == acme]
    assert own["total_cost_cents"] == sum(spent.values()) == 40_034
    beta = vendor_id(served, world.token_a, "Beta Labs")
    by_type = served.ok(world.token_a, "get_roi_breakdown", {"by": "cost_type", "vendor_id": beta})
    assert [(r["key"], r["total_cost_cents"]) for r in by_type["data"]] == [("tokens", 5_500)]


def test_breakdown_by_value_status_by_hand(served: Served, world: World) -> None:
    # SEMANTICS R37: account A's value entries: p approved 300000 (2026-02-01) and 50000
    # (2023-02-01), draft 777777, reviewed 888888; q approved 20000 (2025-09-01); none of the
    # other statuses (their rows 0). All time, approved 300000 + 50000 + 20000 = 370000.
    rows = served.ok(world.token_a, "get_roi_breakdown", {"by": "value_status"})["data"]
    assert [(r["key"], r["label"], r["value_cents"], r["approved_value_cents"]) for r in rows] == [
        ("draft", "Draft", 777_777, 0),
        ("calculated", "Calculated", 0, 0),
        ("reviewed", "Reviewed", 888_888, 0),
        ("approved", "Approved", 370_000, 370_000),
        ("disputed", "Disputed", 0, 0),
        ("archived", "Archived", 0, 0),
    ]
    assert all(
        r[field] is None
        for r in rows
        for field in ("capex_cents", "opex_cents", "total_cost_cents", "net_value_cents", "roi")
    )
    # 1yr (2025-06-16 .. 2026-06-15) leaves out 2023's 50000: approved 320000, as
    # get_roi_summary counts it.
    year = served.ok(world.token_a, "get_roi_breakdown", {"by": "value_status", "window": "1yr"})
    approved = [r["value_cents"] for r in year["data"] if r["key"] == "approved"]
    summary = served.ok(world.token_a, "get_roi_summary", {"window": "1yr"})
    assert approved == [320_000] == [summary["approved_value_cents"]]


def test_breakdown_refusals(served: Served, world: World) -> None:
    refused = served.refused
    assert refused(world.token_a, "get_roi_breakdown", {}) == "The by argument is required."
    assert refused(world.token_a, "get_roi_breakdown", {"by": "week"}).startswith(
        "The by argument is not valid: "
    )
    assert refused(world.token_a, "get_roi_breakdown", {"by": "month", "limit": 51}).startswith(
        "The limit argument is not valid: "
    )
    z = world.ids["z"]
    assert (
        refused(world.token_a, "get_roi_breakdown", {"by": "month", "initiative_id": z})
        == f"No initiative with id {z} in this account."
    )
    zebra_vendor = vendor_id(served, world.token_b, "Zebra Vendor")
    assert (
        refused(world.token_a, "get_roi_breakdown", {"by": "month", "vendor_id": zebra_vendor})
        == f"No vendor with id {zebra_vendor} in this account."
    )
    # SEMANTICS R37: value entries name no vendor, so a split of value by status takes none.
    beta = vendor_id(served, world.token_a, "Beta Labs")
    assert refused(
        world.token_a, "get_roi_breakdown", {"by": "value_status", "vendor_id": beta}
    ) == (
        "by=value_status splits value entries, which name no vendor; leave vendor_id out or "
        "split by another dimension."
    )
    # SEMANTICS R13, R27: a cursor of another split, of another account, or none at all.
    month = served.ok(world.token_a, "get_roi_breakdown", {"by": "month", "limit": 1})
    assert refused(
        world.token_a, "get_roi_breakdown", {"by": "vendor", "cursor": month["next_cursor"]}
    ) == (
        "The cursor continues the breakdown by month, not by vendor; repeat the by of the page "
        "it came from."
    )
    assert (
        refused(world.token_b, "get_roi_breakdown", {"by": "month", "cursor": month["next_cursor"]})
        == FOREIGN
    )
    for bad in ("nonsense", month["next_cursor"][:-2] + "AA"):
        assert (
            refused(world.token_a, "get_roi_breakdown", {"by": "month", "cursor": bad})
            == NOT_ISSUED
        )


# list_decisions, list_metric_readings -------------------------------------------------------


def test_list_decisions_are_the_endpoints_rows(served: Served, world: World) -> None:
    every = api_rows(served, world.token_a, "/decisions")
    assert [d["id"] for d in every] == world.ids["decisions"]
    assert served.ok(world.token_a, "list_decisions")["decisions"] == every
    assert walk(served, world.token_a, "list_decisions", {"limit": 1}, "decisions") == every
    p = world.ids["p"]
    on_p = served.ok(world.token_a, "list_decisions", {"initiative_id": p})["decisions"]
    assert on_p == api_rows(served, world.token_a, "/decisions", initiative_id=p)
    assert [(d["outcome"], d["net_cents"]) for d in on_p] == [
        ("scale", 179_934),
        ("continue", None),
    ]
    fixes = served.ok(world.token_a, "list_decisions", {"outcome": "fix"})["decisions"]
    assert [d["subject_title"] for d in fixes] == ["Sales email drafts"]
    # Another account sees only its own.
    (only_b,) = served.ok(world.token_b, "list_decisions")["decisions"]
    assert only_b["id"] == world.ids["z_decision"]
    z = world.ids["z"]
    assert (
        served.refused(world.token_a, "list_decisions", {"initiative_id": z})
        == f"No initiative with id {z} in this account."
    )


def test_list_metric_readings_are_the_endpoints_rows(served: Served, world: World) -> None:
    every = api_rows(served, world.token_a, "/observations")
    assert [r["id"] for r in every] == world.ids["readings"]
    assert served.ok(world.token_a, "list_metric_readings")["readings"] == every
    assert walk(served, world.token_a, "list_metric_readings", {"limit": 3}, "readings") == every
    # The key of a metric hit of search feeds metric_key.
    hits = served.ok(world.token_a, "search", {"query": "invoices processed", "types": ["metric"]})
    key = hits["results"][0]["key"]
    assert key == "invoices_processed"
    readings = served.ok(world.token_a, "list_metric_readings", {"metric_key": key})["readings"]
    assert [r["value"] for r in readings] == [120.0, 180.0, 240.5]
    assert readings == api_rows(served, world.token_a, "/observations", metric_key=key)
    q = world.ids["q"]
    (on_q,) = served.ok(world.token_a, "list_metric_readings", {"initiative_id": q})["readings"]
    assert (on_q["metric_key"], on_q["value"]) == ("hours_saved", 12.0)
    (only_b,) = served.ok(world.token_b, "list_metric_readings")["readings"]
    assert only_b["id"] == world.ids["z_reading"]


# cursors on the lists that had none, and the owner filter ------------------------------------


def test_list_initiatives_pages_through_a_cursor(served: Served, world: World) -> None:
    whole = served.ok(world.token_a, "list_initiatives", {"limit": 50})
    assert (whole["total"], whole["has_more"], whole["next_cursor"]) == (8, False, None)
    paged = walk(served, world.token_a, "list_initiatives", {"limit": 3}, "initiatives")
    assert paged == whole["initiatives"]
    first = served.ok(world.token_a, "list_initiatives", {"limit": 3})
    assert (first["total"], first["has_more"]) == (8, True)
    # With a status filter too: inactive is paused and rejected (SEMANTICS R26).
    inactive = walk(
        served, world.token_a, "list_initiatives", {"status": "inactive", "limit": 1}, "initiatives"
    )
    assert {i["id"] for i in inactive} == {world.ids["t"], world.ids["u"]}


def test_owner_id_from_a_person_hit_filters_list_initiatives(served: Served, world: World) -> None:
    hits = served.ok(world.token_a, "search", {"query": "grace", "types": ["person"]})["results"]
    grace = hits[0]["id"]
    assert grace == world.ids["grace"]
    owned = served.ok(world.token_a, "list_initiatives", {"owner_id": grace})
    assert [i["id"] for i in owned["initiatives"]] == [world.ids["r"]]
    assert owned["total"] == 1
    ada = served.ok(world.token_a, "list_initiatives", {"owner_id": world.ids["ada"]})
    assert [i["id"] for i in ada["initiatives"]] == [world.ids["p"]]  # the sample is left out
    zed = world.ids["zed"]
    assert (
        served.refused(world.token_a, "list_initiatives", {"owner_id": zed})
        == f"No person with id {zed} in this account."
    )


def test_list_integrations_pages_through_a_cursor(served: Served, world: World) -> None:
    first = served.ok(world.token_a, "list_integrations", {"limit": 1})
    assert (first["total"], first["has_more"]) == (2, True)
    paged = walk(served, world.token_a, "list_integrations", {"limit": 1}, "integrations")
    assert [i["id"] for i in paged] == [world.ids["openai"], world.ids["zendesk"]]
    assert paged == served.ok(world.token_a, "list_integrations")["integrations"]


def test_a_bad_or_foreign_cursor_is_one_sentence_on_every_list(
    served: Served, world: World
) -> None:
    # SEMANTICS R13, R27: a cursor of another account, of another list, or none this service
    # issued is a tool error of one sentence, never rows.
    initiatives = served.ok(world.token_a, "list_initiatives", {"limit": 1})["next_cursor"]
    integrations = served.ok(world.token_a, "list_integrations", {"limit": 1})["next_cursor"]
    decisions = served.ok(world.token_a, "list_decisions", {"limit": 1})["next_cursor"]
    readings = served.ok(world.token_a, "list_metric_readings", {"limit": 1})["next_cursor"]
    refused = served.refused
    for tool, cursor in (
        ("list_initiatives", initiatives),
        ("list_integrations", integrations),
        ("list_decisions", decisions),
        ("list_metric_readings", readings),
    ):
        assert refused(world.token_b, tool, {"cursor": cursor}) == FOREIGN, tool
        assert refused(world.token_a, tool, {"cursor": "x" + cursor}) == NOT_ISSUED, tool
        assert refused(world.token_a, tool, {"cursor": "not a cursor"}) == NOT_ISSUED, tool
    # One list's cursor does not continue another.
    assert refused(world.token_a, "list_integrations", {"cursor": initiatives}) == NOT_ISSUED
    assert refused(world.token_a, "list_initiatives", {"cursor": integrations}) == NOT_ISSUED
    assert refused(world.token_a, "list_decisions", {"cursor": readings}) == (
        "The cursor was issued by another list (observations); a cursor only continues the "
        "list it came from."
    )
    assert refused(world.token_a, "list_initiatives", {"cursor": ""}).startswith(
        "The cursor argument is not valid: "
    )
