"""get_roi_summary against GET /roi (SEMANTICS R7-R10, R27)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from airoi.finance.roi import roi_percent
from tests.tools.conftest import TODAY, Served, refusal, structured
from tests.tools.world import World

WINDOWS = ("1yr", "3yr", "5yr", "all")


def without_percent(tool: dict[str, Any]) -> dict[str, Any]:
    """The tool's result in GET /roi's shape: no roi_percent, absent keys instead of nulls."""
    body = {k: v for k, v in tool.items() if k != "roi_percent"}
    body["scope"] = {k: v for k, v in tool["scope"].items() if v is not None}
    body["period"] = {k: v for k, v in tool["period"].items() if v is not None}
    return body


def test_the_tool_reports_get_roi_for_every_window_and_scope(served: Served, world: World) -> None:
    # SEMANTICS R10: the same figures as GET /roi for the same arguments, over every
    # window, for the portfolio and for each initiative (sample, EUR and cost-free ones too).
    scopes: list[int | None] = [None, *(world.ids[k] for k in ("p", "q", "r", "eur", "sample"))]
    calls: list[tuple[str, dict[str, Any]]] = []
    expected: list[dict[str, Any]] = []
    for initiative_id in scopes:
        for window in WINDOWS:
            arguments: dict[str, Any] = {"window": window}
            params: dict[str, Any] = {"window": window}
            if initiative_id is not None:
                arguments["initiative_id"] = params["initiative_id"] = initiative_id
            calls.append(("get_roi_summary", arguments))
            expected.append(served.api(world.token_a, "/roi", **params))
    results = served.calls(world.token_a, calls)
    for (_, arguments), result, api in zip(calls, results, expected, strict=True):
        tool = structured(result)
        assert without_percent(tool) == api, arguments
        exact = (
            None
            if api["total_cost_cents"] == 0
            else Fraction(api["net_value_cents"], api["total_cost_cents"])
        )
        assert tool["roi_percent"] == roi_percent(exact)


def test_window_defaults_to_all_and_dates_follow_today(served: Served, world: World) -> None:
    default = served.ok(world.token_a, "get_roi_summary")
    assert default["period"] == {
        "window": "all",
        "label": "All time",
        "from": None,
        "through": None,
    }
    assert default["scope"] == {"type": "portfolio", "id": None, "title": None}
    one_year = served.ok(world.token_a, "get_roi_summary", {"window": "1yr"})
    assert one_year["period"]["through"] == TODAY.isoformat()
    assert one_year["period"]["from"] == "2025-06-16"


def test_roi_percent_is_roi_times_100_to_two_decimals(served: Served, world: World) -> None:
    body = served.ok(world.token_a, "get_roi_summary", {"initiative_id": world.ids["p"]})
    assert body["scope"] == {"type": "initiative", "id": world.ids["p"], "title": "Invoice capture"}
    assert body["roi"] is not None
    assert body["roi_percent"] == round(body["roi"] * 100, 2)
    free = served.ok(world.token_a, "get_roi_summary", {"initiative_id": world.ids["r"]})
    assert free["total_cost_cents"] == 0
    assert free["roi"] is None
    assert free["roi_percent"] is None  # null, not zero


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"window": "2yr"}, "window"),
        ({"window": "ALL"}, "window"),
        ({"initiative_id": 0}, "initiative_id"),
        ({"initiative_id": "abc"}, "initiative_id"),
        ({"initiative_id": 987_654}, "No initiative with id 987654"),
    ],
)
def test_bad_arguments_are_one_sentence_tool_errors(
    served: Served, world: World, arguments: dict[str, Any], words: str
) -> None:
    # SEMANTICS R27: an unknown enum value, a bad or unseen id: isError, one sentence.
    assert words in served.refused(world.token_a, "get_roi_summary", arguments)


def test_another_accounts_initiative_is_refused_like_a_missing_one(
    served: Served, world: World
) -> None:
    for window in WINDOWS:
        foreign = served.call(
            world.token_a, "get_roi_summary", {"initiative_id": world.ids["z"], "window": window}
        )
        missing = served.call(
            world.token_a, "get_roi_summary", {"initiative_id": 987_654, "window": window}
        )
        assert refusal(foreign) == refusal(missing).replace("987654", str(world.ids["z"]))
        assert "Zebra" not in refusal(foreign)


def test_each_account_sees_only_its_own_portfolio(served: Served, world: World) -> None:
    for window in WINDOWS:
        a = served.ok(world.token_a, "get_roi_summary", {"window": window})
        b = served.ok(world.token_b, "get_roi_summary", {"window": window})
        assert without_percent(a) == served.api(world.token_a, "/roi", window=window)
        assert without_percent(b) == served.api(world.token_b, "/roi", window=window)
        # Account B has exactly one cost and one approved value entry, both in March 2026.
        assert (b["approved_value_cents"], b["total_cost_cents"]) == (55_555, 44_444)
