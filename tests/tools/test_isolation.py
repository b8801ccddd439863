"""Every tool, called with one account's token, answers nothing of the other (SPEC 5.6, R27)."""

from __future__ import annotations

from typing import Any

from tests.tools.conftest import Served, as_json
from tests.tools.world import A_MARKERS, B_MARKER, SECRETS, World

WINDOWS = ("1yr", "3yr", "5yr", "all")


def calls_naming(world: World, own: str) -> list[tuple[str, dict[str, Any]]]:
    """Each tool, with its own records and words of both accounts as arguments."""
    ids = world.ids
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_initiatives", {}),
        ("list_initiatives", {"status": "active", "limit": 50}),
        ("list_integrations", {}),
        ("get_help_article", {"id": 5}),
        ("get_platform_setup_guide", {"platform": "openai"}),
        ("get_platform_setup_guide", {"platform": "slack"}),
        ("get_initiative", {"initiative_id": ids[own]}),
        ("list_decisions", {}),
        ("list_decisions", {"initiative_id": ids[own]}),
        ("list_metric_readings", {}),
        ("list_metric_readings", {"initiative_id": ids[own]}),
        ("list_metric_readings", {"metric_key": "invoices_processed"}),
        ("list_metric_readings", {"metric_key": "zebra_stripes"}),
    ]
    for by in ("initiative", "month", "quarter", "cost_type", "vendor", "value_status"):
        calls.append(("get_roi_breakdown", {"by": by}))
        calls.append(("get_roi_breakdown", {"by": by, "initiative_id": ids[own], "limit": 50}))
    for window in WINDOWS:
        calls.append(("get_roi_summary", {"window": window}))
        calls.append(("get_roi_summary", {"window": window, "initiative_id": ids[own]}))
    for query in ("invoice", "zebra", "readiness", "vendor", "ada", "zed", "openai", "slack"):
        calls.append(("search", {"query": query}))
    return calls


def record_text(result: dict[str, Any]) -> str:
    """The result without shipped content, which is the same for every account."""
    if "results" in result:  # search: keep the account's own records
        result = {
            "results": [
                h for h in result["results"] if h["id"] is not None and h["kind"] != "help_article"
            ]
        }
    if "steps" in result:  # a setup guide: keep what is about the account
        result = {"connected": result["connected"], "connections": result["connections"]}
    if "body" in result and "slug" in result:  # a help article
        return ""
    return as_json(result)


def test_account_b_sees_nothing_of_account_a(served: Served, world: World) -> None:
    calls = calls_naming(world, own="z")
    for (name, arguments), result in zip(calls, served.calls(world.token_b, calls), strict=True):
        assert not result.is_error, (name, arguments, result.content)
        text = record_text(result.structured_content or {})
        for marker in (*A_MARKERS, *SECRETS, "OpenAI production"):
            assert marker not in text, (name, arguments)


def test_account_a_sees_nothing_of_account_b(served: Served, world: World) -> None:
    calls = calls_naming(world, own="p")
    for (name, arguments), result in zip(calls, served.calls(world.token_a, calls), strict=True):
        assert not result.is_error, (name, arguments, result.content)
        assert B_MARKER not in record_text(result.structured_content or {}), (name, arguments)


def test_ids_of_the_other_account_answer_as_missing(served: Served, world: World) -> None:
    foreign = {"b": ("p", "q", "eur", "sample", "r"), "a": ("z",)}
    for token, keys in ((world.token_b, foreign["b"]), (world.token_a, foreign["a"])):
        calls: list[tuple[str, dict[str, Any]]] = []
        for key in keys:
            calls.append(("get_initiative", {"initiative_id": world.ids[key]}))
            calls.append(("get_roi_breakdown", {"by": "month", "initiative_id": world.ids[key]}))
            calls.append(("list_decisions", {"initiative_id": world.ids[key]}))
            calls.append(("list_metric_readings", {"initiative_id": world.ids[key]}))
            for window in WINDOWS:
                calls.append(
                    ("get_roi_summary", {"initiative_id": world.ids[key], "window": window})
                )
        for (_, arguments), result in zip(calls, served.calls(token, calls), strict=True):
            assert result.is_error
            assert result.structured_content is None
            text = getattr(result.content[0], "text", "")
            assert text == f"No initiative with id {arguments['initiative_id']} in this account."
