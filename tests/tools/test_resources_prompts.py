"""Resources (help articles, the metric library) and prompts on /mcp, and capabilities that
advertise only what is served (issue: no empty lists, no subscribe, no listChanged)."""

from __future__ import annotations

import json
import re
from datetime import date
from importlib.resources import files
from typing import Any

import anyio
import httpx
import jsonschema
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import TextResourceContents, Tool

from airoi import catalog
from airoi.db.engine import make_engine
from airoi.settings import Settings
from airoi.tools import create_mcp_server
from airoi.tools.prompts import Toolbox, initiatives_over_budget, monthly_roi_review, what_to_retire
from airoi.tools.server import TOOL_TEXTS
from tests.conftest import bearer
from tests.tools.conftest import Served
from tests.tools.world import World

# Resources and prompts are shipped files and text, not the store's: SQLite alone
# (tests/conftest.py).
pytestmark = pytest.mark.store_independent

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
SERVED_CAPABILITIES = {
    "prompts": {"listChanged": False},
    "resources": {"subscribe": False, "listChanged": False},
    "tools": {"listChanged": False},
    # completion/complete for the prompts' arguments; logging/setLevel (tools/completion.py)
    "completions": {},
    "logging": {},
}
PROMPTS = {"monthly_roi_review", "initiatives_over_budget", "what_to_retire", "initiative_review"}
# How a prompt names a call: `tool` with `{json}`, <id> standing for an id from an answer.
CALL = re.compile(r"`([a-z_]+)` with `(\{[^`]*\})`")
UNKNOWN_RESOURCE = "No resource has that URI; resources/list names every one."


def rpc(
    served: Served, headers: dict[str, str], method: str, params: dict[str, Any] | None = None
) -> httpx.Response:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 3, "method": method}
    if params is not None:
        body["params"] = params
    return httpx.post(
        served.mcp_url,
        json=body,
        headers={**MCP_HEADERS, "mcp-protocol-version": "2025-06-18", **headers},
        timeout=30,
    )


def published() -> dict[str, catalog.HelpArticle]:
    return {article.slug: article for article in catalog.help_articles()}


def calls_in(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Each call a prompt names; <id> read as 1, any other <placeholder> as the string "x"."""
    return [
        (name, json.loads(re.sub(r"<[a-z_]+>", '"x"', args.replace("<id>", "1"))))
        for name, args in CALL.findall(text)
    ]


def prompt_text(served: Served, token: str, name: str, arguments: dict[str, str]) -> str:
    async def work(client: Client) -> str:
        result = await client.get_prompt(name, arguments)
        assert len(result.messages) == 1 and result.messages[0].role == "user"
        return str(result.messages[0].content.text)  # type: ignore[union-attr]

    return served.with_client(token, work)


def raw_prompt(served: Served, token: str, name: str, arguments: dict[str, Any]) -> Any:
    """prompts/get as sent by hand: the SDK's client refuses to send a null or a number."""
    params = {"name": name, "arguments": arguments}
    response = rpc(served, bearer(token), "prompts/get", params)
    assert response.status_code == 200, response.text
    return response.json()


# Capabilities ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_initialize_advertises_only_what_is_served(
    served: Served, world: World, version: str
) -> None:
    initialize = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    response = rpc(served, bearer(world.token_a), "initialize", initialize)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["capabilities"] == SERVED_CAPABILITIES


def test_the_sdk_client_sees_the_same_capabilities(served: Served, world: World) -> None:
    async def work(client: Client) -> dict[str, Any]:
        capabilities = client.server_capabilities
        assert capabilities is not None
        return capabilities.model_dump(by_alias=True, exclude_none=True)

    assert served.with_client(world.token_a, work) == SERVED_CAPABILITIES


def test_every_advertised_method_answers(served: Served, world: World) -> None:
    async def work(client: Client) -> dict[str, int]:
        answered = {
            "tools/list": len((await client.list_tools()).tools),
            "resources/list": len((await client.list_resources()).resources),
            "resources/templates/list": len(
                (await client.list_resource_templates()).resource_templates
            ),
            "prompts/list": len((await client.list_prompts()).prompts),
        }
        for resource in (await client.list_resources()).resources:
            contents = (await client.read_resource(resource.uri)).contents
            assert len(contents) == 1 and contents[0].uri == resource.uri
        for prompt in (await client.list_prompts()).prompts:
            assert (await client.get_prompt(prompt.name, {})).messages
        roi = await client.call_tool("get_roi_summary", {})
        assert not roi.is_error
        return answered

    answered = served.with_client(world.token_a, work)
    # Nothing advertised is empty; no template is needed when every resource is listed.
    assert answered == {
        "tools/list": len(TOOL_TEXTS),
        "resources/list": len(published()) + 1,
        "resources/templates/list": 0,
        "prompts/list": 4,
    }
    # Not advertised, and not answered: subscriptions (nothing here changes).
    subscribe = rpc(served, bearer(world.token_a), "resources/subscribe", {"uri": "airoi://x"})
    assert subscribe.json()["error"]["code"] == -32601


# Resources ------------------------------------------------------------------------------


def test_published_help_articles_are_resources(served: Served, world: World) -> None:
    articles = published()
    assert "change-notifications" not in articles  # the draft (SEMANTICS R28)
    assert len(articles) >= 10

    async def work(client: Client) -> dict[str, Any]:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        read = {}
        for uri in listed:
            (content,) = (await client.read_resource(uri)).contents
            assert isinstance(content, TextResourceContents)
            read[uri] = content
        return {"listed": listed, "read": read}

    seen = served.with_client(world.token_a, work)
    help_uris = {uri for uri in seen["listed"] if uri.startswith("airoi://help/")}
    assert help_uris == {f"airoi://help/{slug}" for slug in articles}
    for slug, article in articles.items():
        uri = f"airoi://help/{slug}"
        listed = seen["listed"][uri]
        assert (listed.name, listed.title, listed.description) == (
            slug,
            article.title,
            article.summary,
        )
        assert listed.mime_type == seen["read"][uri].mime_type == "text/markdown"
        assert seen["read"][uri].text == article.body
    assert seen["read"]["airoi://help/getting-started"].text.startswith(
        "# What the AI ROI API serves"
    )


def test_the_metric_library_is_a_resource(served: Served, world: World) -> None:
    async def work(client: Client) -> Any:
        (content,) = (await client.read_resource("airoi://metrics/library")).contents
        return content

    content = served.with_client(world.token_a, work)
    assert content.mime_type == "application/json"
    shipped = json.loads(files("airoi.catalog").joinpath("metrics.json").read_text("utf-8"))
    assert json.loads(content.text) == {"metrics": shipped}
    assert {"key": "ai_spend", "name": "AI spend"}.items() <= shipped[0].items()


@pytest.mark.parametrize(
    "uri",
    [
        "airoi://help/change-notifications",  # the draft
        "airoi://help/no-such-article",
        "airoi://metrics/SECRET-uri",
        "file:///etc/passwd",
    ],
)
def test_an_unknown_resource_is_a_fixed_invalid_params(
    served: Served, world: World, uri: str
) -> None:
    response = rpc(served, bearer(world.token_a), "resources/read", {"uri": uri})
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32602, "message": UNKNOWN_RESOURCE},
    }
    assert uri.rsplit("/", maxsplit=1)[-1] not in response.text  # SEMANTICS R15: not repeated


def test_resources_need_a_good_token(served: Served, world: World) -> None:
    params = {"uri": "airoi://help/getting-started"}
    assert rpc(served, {}, "resources/read", params).status_code == 401
    assert rpc(served, {}, "resources/list").status_code == 401
    refused = rpc(served, bearer(world.token_no_api), "resources/read", params)
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, -32004)
    assert rpc(served, bearer(world.token_a), "resources/read", params).status_code == 200


def test_a_read_without_a_principal_is_refused() -> None:
    # Only reachable with the server mounted without the token middleware.
    server = create_mcp_server(make_engine("sqlite://"), Settings())

    async def run() -> MCPError:
        async with Client(server) as client:
            try:
                await client.read_resource("airoi://help/getting-started")
            except MCPError as exc:
                return exc
        raise AssertionError("read without a principal")

    error = anyio.run(run)
    assert error.code == -32003


# Prompts --------------------------------------------------------------------------------


def test_prompts_are_listed_with_their_optional_arguments(served: Served, world: World) -> None:
    async def work(client: Client) -> Any:
        return (await client.list_prompts()).prompts

    prompts = {p.name: p for p in served.with_client(world.token_a, work)}
    assert set(prompts) == PROMPTS
    arguments = {
        name: [(a.name, a.required) for a in p.arguments or []] for name, p in prompts.items()
    }
    assert arguments == {
        "monthly_roi_review": [("month", False)],
        "initiatives_over_budget": [("min_overrun_percent", False)],
        "what_to_retire": [("window", False)],
        "initiative_review": [("initiative_id", False)],
    }
    for prompt in prompts.values():
        assert prompt.title and prompt.description and len(prompt.description) > 60


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("monthly_roi_review", {}),
        ("monthly_roi_review", {"month": "2026-01"}),
        ("initiatives_over_budget", {"min_overrun_percent": "10"}),
        ("what_to_retire", {}),
        ("what_to_retire", {"window": "all"}),
    ],
)
def test_a_prompt_names_only_calls_the_server_takes(
    served: Served, world: World, name: str, arguments: dict[str, str]
) -> None:
    tools = {tool.name: tool for tool in served.list_tools(world.token_a)}
    text = prompt_text(served, world.token_a, name, arguments)
    calls = calls_in(text)
    assert len(calls) >= 2, text
    for tool, call_arguments in calls:
        assert tool in tools, tool
        jsonschema.validate(call_arguments, tools[tool].input_schema)
    assert "integer cents" in text and "Only approved value counts" in text


def test_the_review_is_of_the_month_asked_or_the_last_complete_one(
    served: Served, world: World
) -> None:
    # The served app's today is 2026-06-15 (tests/tools/conftest.py): May is the last whole month.
    assert "review for May 2026 " in prompt_text(served, world.token_a, "monthly_roi_review", {})
    asked = prompt_text(served, world.token_a, "monthly_roi_review", {"month": "2026-01"})
    assert "review for January 2026 " in asked


def test_the_thresholds_reach_the_text(served: Served, world: World) -> None:
    over = prompt_text(served, world.token_a, "initiatives_over_budget", {})
    assert "with any overrun" in over
    ten = prompt_text(
        served, world.token_a, "initiatives_over_budget", {"min_overrun_percent": "10"}
    )
    assert "of at least 10%" in ten
    retire = prompt_text(served, world.token_a, "what_to_retire", {"window": "3yr"})
    assert "judged on the trailing three years" in retire
    assert '"window": "3yr"' in retire


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("nope", {}, "Unknown prompt"),
        ("monthly_roi_review", {"month": "2026-13"}, "The month must be written YYYY-MM"),
        ("monthly_roi_review", {"month": "May 2026"}, "The month must be written YYYY-MM"),
        # Prompt arguments are strings: the SDK refuses anything else, null included.
        ("monthly_roi_review", {"month": 202605}, "Invalid request parameters"),
        ("monthly_roi_review", {"month": None}, "Invalid request parameters"),
        ("monthly_roi_review", {"SECRET": "x"}, "This prompt takes only: month."),
        ("initiatives_over_budget", {"min_overrun_percent": "-5"}, "must be a whole number"),
        ("initiatives_over_budget", {"min_overrun_percent": "1001"}, "from 0 to 1000"),
        ("what_to_retire", {"window": "2yr"}, "The window must be one of 1yr, 3yr, 5yr or all."),
    ],
)
def test_a_bad_prompt_request_is_one_fixed_sentence(
    served: Served, world: World, name: str, arguments: dict[str, Any], message: str
) -> None:
    answer = raw_prompt(served, world.token_a, name, arguments)
    assert answer["error"]["code"] == -32602
    assert message in answer["error"]["message"]
    assert not answer["error"].get("data")  # nothing of what was sent
    text = json.dumps(answer)
    assert "SECRET" not in text and "nope" not in text and "pydantic" not in text.lower()


# Prompts written from the tools the server has -------------------------------------------


def tool(name: str, *arguments: str) -> Tool:
    properties = {argument: {"type": "string"} for argument in arguments}
    return Tool(name=name, input_schema={"type": "object", "properties": properties})


BASE = [
    tool("get_roi_summary", "initiative_id", "window"),
    tool("list_initiatives", "status", "limit"),
    tool("get_initiative", "initiative_id"),
]
RICHER = [
    tool("get_roi_summary", "initiative_id", "window"),
    tool("list_initiatives", "status", "limit", "cursor"),
    tool("get_initiative", "initiative_id"),
    tool("get_roi_breakdown", "by", "window", "initiative_id", "limit", "cursor"),
    tool("list_decisions", "initiative_id"),
]


def test_with_a_breakdown_tool_the_prompts_use_it() -> None:
    richer, base = Toolbox(RICHER), Toolbox(BASE)
    review = monthly_roi_review(richer, date(2026, 6, 15), "2026-01")
    names = [name for name, _ in calls_in(review)]
    year = {"window": "1yr", "limit": 50}
    assert ("get_roi_breakdown", {"by": "month", **year}) in calls_in(review)
    assert ("get_roi_breakdown", {"by": "initiative", **year}) in calls_in(review)
    # Every page of rows: the cursor passed back.
    assert ("get_roi_breakdown", {"by": "month", **year, "cursor": "x"}) in calls_in(review)
    # January's row and December's before it (the year turns).
    assert "row keyed 2026-01-01" in review and "row keyed 2025-12-01" in review
    assert "list_initiatives" not in names
    assert "get_roi_breakdown" not in monthly_roi_review(base, date(2026, 6, 15), None)

    retire = what_to_retire(richer, "5yr")
    five = {"by": "initiative", "window": "5yr", "limit": 50}
    assert ("get_roi_breakdown", five) in calls_in(retire)
    assert ("list_decisions", {"initiative_id": 1}) in calls_in(retire)
    assert "list_decisions" not in what_to_retire(base, None)

    # A cursor on list_initiatives: page through rather than warn of the first 50 only.
    paged = initiatives_over_budget(richer, None)
    assert ("list_initiatives", {"status": "active", "limit": 50, "cursor": "x"}) in calls_in(paged)
    assert "only the 50 most recently changed" in initiatives_over_budget(base, None)
    # With no budget every budget figure is 0 (SEMANTICS R25): the spend is asked of /roi's tool.
    unbudgeted = ("get_roi_summary", {"initiative_id": 1, "window": "all"})
    assert unbudgeted in calls_in(initiatives_over_budget(base, None))


def test_the_default_month_turns_the_year() -> None:
    review = monthly_roi_review(Toolbox(RICHER), date(2026, 1, 1), None)
    assert "review for December 2025 " in review
    assert "row keyed 2025-12-01" in review and "row keyed 2025-11-01" in review


@pytest.mark.parametrize(
    ("month", "window"),
    [
        ("2026-06", "1yr"),  # the current month
        ("2025-08", "1yr"),  # 10 months back, and July before it: 11
        ("2025-07", "3yr"),  # June 2025 before it is 12 months back
        ("2023-08", "3yr"),
        ("2023-07", "5yr"),
        ("2021-08", "5yr"),
        ("2021-07", "all"),
        ("2019-01", "all"),
    ],
)
def test_the_monthly_rows_cover_the_month_and_the_one_before(month: str, window: str) -> None:
    # Today 2026-06-15: a trailing window holds the current month and the 11, 35 or 59 before.
    review = monthly_roi_review(Toolbox(RICHER), date(2026, 6, 15), month)
    by_month = [a for n, a in calls_in(review) if n == "get_roi_breakdown" and a["by"] == "month"]
    assert by_month[0] == {"by": "month", "window": window, "limit": 50}


def test_a_month_not_yet_begun_is_refused() -> None:
    with pytest.raises(MCPError) as refused:
        monthly_roi_review(Toolbox(RICHER), date(2026, 6, 15), "2026-07")
    assert (refused.value.code, str(refused.value)) == (
        -32602,
        "The month must not be later than the current one.",
    )


@pytest.mark.parametrize("month", ["0000-12", "0001-01"])
def test_a_month_without_a_month_before_in_the_calendar_is_refused(month: str) -> None:
    # The review compares the month with the one before: for these there is none (year 0 is
    # no calendar year), and the prompt failed with an error of the SDK's, code 0.
    with pytest.raises(MCPError) as refused:
        monthly_roi_review(Toolbox(RICHER), date(2026, 6, 15), month)
    assert (refused.value.code, str(refused.value)) == (
        -32602,
        "The month must be 0001-02 or later.",
    )
    # The first month that has one is reviewed (in the whole history).
    review = monthly_roi_review(Toolbox(RICHER), date(2026, 6, 15), "0001-02")
    assert "review for February 0001" in review
    assert "the row keyed 0001-01-01 (the month before)" in review
