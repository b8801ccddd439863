"""Strict tool arguments (SEMANTICS R12, R27): an argument a tool does not declare, or a value of
the wrong JSON type, is a one-sentence tool error naming it; it is never dropped or converted."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.conftest import Served
from tests.tools.world import World

# Arguments are checked before a tool reads the store: SQLite alone (tests/conftest.py).
pytestmark = pytest.mark.store_independent

MUST_BE_AN_INTEGER = "argument must be an integer."


@pytest.mark.parametrize(
    ("tool", "arguments", "sentence"),
    [
        # Dropped before, so this answered for the whole portfolio.
        (
            "get_roi_summary",
            {"initiativeId": 900301},
            "Unknown argument 'initiativeId'; this tool accepts: initiative_id, window.",
        ),
        # Dropped before, so this listed every initiative.
        (
            "list_initiatives",
            {"state": "active"},
            "Unknown argument 'state'; this tool accepts: status, limit, owner_id, cursor.",
        ),
        (
            "get_initiative",
            {"initiative_id": 1, "include": "budget"},
            "Unknown argument 'include'; this tool accepts: initiative_id.",
        ),
        (
            "search",
            {"query": "sales", "type": ["initiative"]},
            "Unknown argument 'type'; this tool accepts: query, types.",
        ),
        (
            "list_integrations",
            {"status": "error"},
            "Unknown argument 'status'; this tool accepts: limit, cursor.",
        ),
        (
            "get_help_article",
            {"name": "how-roi-is-computed"},
            "Unknown argument 'name'; this tool accepts: slug, id.",
        ),
        (
            "get_platform_setup_guide",
            {"platform": "openai", "account_id": 2},
            "Unknown argument 'account_id'; this tool accepts: platform.",
        ),
    ],
)
def test_an_undeclared_argument_is_refused_by_name(
    served: Served, world: World, tool: str, arguments: dict[str, Any], sentence: str
) -> None:
    assert served.refused(world.token_a, tool, arguments) == sentence


def test_an_undeclared_name_is_shown_on_one_line_and_cut(served: Served, world: World) -> None:
    sentence = served.refused(world.token_a, "list_integrations", {"a\nb" + "x" * 500: 1})
    assert sentence.startswith("Unknown argument 'a\\nb")
    assert len(sentence) < 200


@pytest.mark.parametrize(
    ("tool", "arguments", "sentence"),
    [
        ("get_initiative", {"initiative_id": "900301"}, "The initiative_id " + MUST_BE_AN_INTEGER),
        ("get_initiative", {"initiative_id": True}, "The initiative_id " + MUST_BE_AN_INTEGER),
        ("get_initiative", {"initiative_id": 5.0}, "The initiative_id " + MUST_BE_AN_INTEGER),
        ("get_roi_summary", {"initiative_id": "7"}, "The initiative_id " + MUST_BE_AN_INTEGER),
        ("get_roi_summary", {"initiative_id": False}, "The initiative_id " + MUST_BE_AN_INTEGER),
        # A string holding JSON is not parsed first: "null" is not an omitted id.
        ("get_roi_summary", {"initiative_id": "null"}, "The initiative_id " + MUST_BE_AN_INTEGER),
        ("list_initiatives", {"limit": True}, "The limit " + MUST_BE_AN_INTEGER),
        ("list_initiatives", {"limit": 5.0}, "The limit " + MUST_BE_AN_INTEGER),
        ("list_initiatives", {"limit": "5"}, "The limit " + MUST_BE_AN_INTEGER),
        ("get_help_article", {"id": "5"}, "The id " + MUST_BE_AN_INTEGER),
        ("get_help_article", {"id": True}, "The id " + MUST_BE_AN_INTEGER),
        ("search", {"query": 12345}, "The query argument must be a string."),
        ("get_help_article", {"slug": 5}, "The slug argument must be a string."),
        (
            "get_platform_setup_guide",
            {"platform": ["openai"]},
            "The platform argument must be a string.",
        ),
        (
            "search",
            {"query": "sales", "types": '["initiative"]'},
            "The types argument must be an array.",
        ),
        ("search", {"query": "sales", "types": "null"}, "The types argument must be an array."),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_not_converted(
    served: Served, world: World, tool: str, arguments: dict[str, Any], sentence: str
) -> None:
    assert served.refused(world.token_a, tool, arguments) == sentence


@pytest.mark.parametrize("status", ["null", None])
def test_an_enum_is_matched_as_sent(served: Served, world: World, status: str | None) -> None:
    # An explicit null is the advertised "omit"; the string "null" is an unknown status.
    if status is None:
        body = served.ok(world.token_a, "list_initiatives", {"status": None})
        assert body["total"] == 8
    else:
        sentence = served.refused(world.token_a, "list_initiatives", {"status": status})
        assert sentence.startswith("The status argument is not valid: ")


def test_json_integers_still_work(served: Served, world: World) -> None:
    p = world.ids["p"]
    assert served.ok(world.token_a, "get_initiative", {"initiative_id": p})["id"] == p
    roi = served.ok(world.token_a, "get_roi_summary", {"initiative_id": p, "window": "all"})
    assert roi["scope"]["id"] == p
    assert len(served.ok(world.token_a, "list_initiatives", {"limit": 3})["initiatives"]) == 3
    assert served.ok(world.token_a, "get_help_article", {"id": 5})["id"] == 5
    portfolio = served.ok(world.token_a, "get_roi_summary", {"initiative_id": None})
    assert portfolio["scope"]["type"] == "portfolio"


# The required arguments of each tool, and for get_help_article the one that stands in when
# the other is the optional argument under test (one of them must be given, SEMANTICS R28).
REQUIRED: dict[str, dict[str, Any]] = {
    "get_initiative": {"initiative_id": 0},  # p, filled in below
    "search": {"query": "invoice"},
    "get_platform_setup_guide": {"platform": "openai"},
    "get_roi_breakdown": {"by": "month"},
}
HELP_BESIDE = {"slug": {"id": 5}, "id": {"slug": "how-roi-is-computed"}}


def test_null_is_taken_as_omitted_for_every_optional_argument(served: Served, world: World) -> None:
    # Issue 23: JSON null for an optional argument was accepted by some tools and refused by
    # others. For every optional argument of every tool (read from tools/list, so a new one
    # is covered too), null answers exactly as leaving it out, and the schema says null is
    # accepted.
    tools = served.list_tools(world.token_a)
    calls: list[tuple[str, dict[str, Any]]] = []
    for tool in tools:
        schema = tool.input_schema
        required = set(schema.get("required", []))
        for name, prop in schema["properties"].items():
            if name in required:
                continue
            assert {"type": "null"} in prop.get("anyOf", []), (tool.name, name)
            base = dict(REQUIRED.get(tool.name, {}))
            if tool.name == "get_initiative":
                base["initiative_id"] = world.ids["p"]
            if tool.name == "get_help_article":
                base = dict(HELP_BESIDE[name])
            calls.append((tool.name, base))
            calls.append((tool.name, {**base, name: None}))
    assert len(calls) >= 2 * 20
    results = served.calls(world.token_a, calls)
    for i in range(0, len(calls), 2):
        omitted, null = results[i], results[i + 1]
        assert not omitted.is_error, (calls[i], omitted.content)
        assert not null.is_error, (calls[i + 1], null.content)
        assert null.structured_content == omitted.structured_content, calls[i + 1]


def test_null_for_a_required_argument_is_refused(served: Served, world: World) -> None:
    assert (
        served.refused(world.token_a, "get_initiative", {"initiative_id": None})
        == "The initiative_id " + MUST_BE_AN_INTEGER
    )
    assert (
        served.refused(world.token_a, "search", {"query": None})
        == "The query argument must be a string."
    )
