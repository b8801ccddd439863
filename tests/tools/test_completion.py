"""The tool endpoint's `logging` capability (`logging/setLevel`) and `completion/complete`
for the prompts' arguments, as the official SDK's client sees them (issue 46: the MCP
conformance suite's clients looked for both)."""

from __future__ import annotations

from datetime import date

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import PromptReference

from airoi.tools.completion import months_up_to, suggestions
from tests.conftest import bearer
from tests.tools.conftest import TODAY, Served
from tests.tools.world import World


@pytest.mark.store_independent
def test_the_sdk_client_finds_logging_and_completions(served: Served, world: World) -> None:
    async def work(client: Client) -> tuple[object, ...]:
        capabilities = client.server_capabilities
        await client.set_logging_level("info")
        window = await client.complete(
            PromptReference(type="ref/prompt", name="what_to_retire"),
            {"name": "window", "value": "3"},
        )
        month = await client.complete(
            PromptReference(type="ref/prompt", name="monthly_roi_review"),
            {"name": "month", "value": "2026-0"},
        )
        unknown = await client.complete(
            PromptReference(type="ref/prompt", name="what_to_retire"),
            {"name": "colour", "value": ""},
        )
        return capabilities, window.completion.values, month.completion.values, unknown

    async def legacy() -> tuple[object, ...]:
        # logging/setLevel is a method of the protocol revisions before 2026-07-28, which the
        # conformance suite's clients speak: the SDK's client asked to speak them too.
        http = create_mcp_http_client(headers=bearer(world.token_a))
        transport = streamable_http_client(served.mcp_url, http_client=http)
        async with http, Client(transport, mode="legacy") as client:
            return await work(client)

    capabilities, window, month, unknown = anyio.run(legacy)
    # The current revision's client completes as well.
    assert served.with_client(world.token_a, lambda c: c.complete(
        PromptReference(type="ref/prompt", name="what_to_retire"),
        {"name": "window", "value": "a"},
    )).completion.values == ["all"]  # fmt: skip
    assert capabilities.logging is not None  # type: ignore[attr-defined]
    assert capabilities.completions is not None  # type: ignore[attr-defined]
    assert window == ["3yr"]
    # Today is 2026-06-15 (tests/tools): the last complete month is May, newest first.
    assert month == ["2026-05", "2026-04", "2026-03", "2026-02", "2026-01"]
    assert unknown.completion.values == []  # type: ignore[attr-defined]


def test_suggestions_start_with_what_was_typed() -> None:
    assert date(2026, 6, 15) == TODAY
    assert suggestions("window", "", TODAY) == ["1yr", "3yr", "5yr", "all"]
    assert suggestions("min_overrun_percent", "1", TODAY) == ["10", "100"]
    assert suggestions("initiative_id", "", TODAY) is None
    assert months_up_to(date(2026, 2, 1), 3) == ["2026-02", "2026-01", "2025-12"]


def test_initiative_ids_are_completed_by_title_within_the_account(
    served: Served, world: World
) -> None:
    # Issue 46: completion/complete suggests initiative ids by title, for the token's account.
    def asked(token: str, typed: str) -> list[str]:
        async def work(client: Client) -> list[str]:
            answer = await client.complete(
                PromptReference(type="ref/prompt", name="initiative_review"),
                {"name": "initiative_id", "value": typed},
            )
            return list(answer.completion.values)

        return served.with_client(token, work)

    # "Support triage", "Triage for invoices" (A's), by title, any case; ordered by title.
    assert asked(world.token_a, "TRIAGE") == [str(world.ids["r"]), str(world.ids["r2"])]
    # Another account's "Zebra forecasting" is never suggested to A, and is to B.
    assert asked(world.token_a, "zebra") == []
    assert asked(world.token_b, "zebra") != []
    assert asked(world.token_b, "triage") == []
    # An id's first digits find it too.
    assert str(world.ids["q"]) in asked(world.token_a, str(world.ids["q"]))


@pytest.mark.store_independent
def test_the_initiative_review_prompt_names_its_calls(served: Served, world: World) -> None:
    p = world.ids["p"]

    async def work(client: Client) -> tuple[str, str, str]:
        given = await client.get_prompt("initiative_review", {"initiative_id": str(p)})
        asked = await client.get_prompt("initiative_review", {})
        try:
            await client.get_prompt("initiative_review", {"initiative_id": "Invoice capture"})
        except Exception as refused:
            said = str(refused)
        else:
            said = ""
        return given.messages[0].content.text, asked.messages[0].content.text, said  # type: ignore[union-attr]

    given, asked, said = served.with_client(world.token_a, work)
    assert f'`get_initiative` with `{{"initiative_id": {p}}}`' in given
    assert f'`list_decisions` with `{{"initiative_id": {p}}}`' in given
    assert "Ask which initiative to review" in asked and "<id>" in asked
    assert "must be an initiative's id" in said
