"""list_integrations (R15), get_help_article (R28) and get_platform_setup_guide (SPEC 4.B)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from airoi import catalog
from tests.tools.conftest import APP_URL, Served, as_json
from tests.tools.world import SECRETS, World


def test_list_integrations_serves_no_secrets(served: Served, world: World) -> None:
    body = served.ok(world.token_a, "list_integrations")
    assert (body["total"], body["has_more"]) == (2, False)
    assert body["integrations"] == [
        {
            "id": world.ids["openai"],
            "platform": "openai",
            "name": "OpenAI production",
            "status": "active",
            "last_sync_status": None,
            "last_synced_at": "2026-06-14T08:00:00.000Z",
            "reauth_required": False,
        },
        {
            "id": world.ids["zendesk"],
            "platform": "zendesk",
            "name": None,
            "status": "error",
            "last_sync_status": None,
            "last_synced_at": None,
            "reauth_required": True,
        },
    ]
    text = as_json(body)
    for secret in SECRETS:  # SEMANTICS R15
        assert secret not in text
    only_b = served.ok(world.token_b, "list_integrations")
    assert [i["id"] for i in only_b["integrations"]] == [world.ids["z_slack"]]


def test_list_integrations_takes_only_a_page(served: Served, world: World) -> None:
    # SEMANTICS R12, R27: an argument is refused by name, neither read as a filter nor ignored.
    assert served.ok(world.token_a, "list_integrations", {})["total"] == 2
    sentence = served.refused(world.token_a, "list_integrations", {"status": "error"})
    assert sentence == "Unknown argument 'status'; this tool accepts: limit, cursor."


def article(served: Served, token: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return served.ok(token, "get_help_article", arguments)


@pytest.mark.store_independent
def test_get_help_article_by_id_or_slug(served: Served, world: World) -> None:
    by_id = article(served, world.token_a, {"id": 5})
    by_slug = article(served, world.token_a, {"slug": "how-roi-is-computed"})
    assert by_id == by_slug
    assert by_id["title"] == "How ROI is computed"
    assert by_id["url"] == f"{APP_URL}/help/how-roi-is-computed"
    assert by_id["body"] == catalog.help_article(id=5).body  # type: ignore[union-attr]
    # SEMANTICS R28: when both are given, the id wins.
    both = article(served, world.token_a, {"id": 2, "slug": "how-roi-is-computed"})
    assert both["slug"] == "personal-access-tokens"
    assert article(served, world.token_b, {"id": 5}) == by_id


@pytest.mark.store_independent
@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({}, "Give the article's id or its slug."),
        ({"id": 90}, "No published help article has the id 90."),  # a draft (R28)
        ({"slug": "change-notifications"}, "No published help article has the slug"),
        ({"slug": "no-such-article"}, "No published help article has the slug"),
        ({"id": 404}, "No published help article has the id 404."),
        ({"id": "five"}, "The id argument must be an integer."),
        # The id wins even when it names nothing and the slug would have.
        ({"id": 404, "slug": "how-roi-is-computed"}, "id 404"),
    ],
)
def test_get_help_article_refusals(
    served: Served, world: World, arguments: dict[str, Any], words: str
) -> None:
    assert words in served.refused(world.token_a, "get_help_article", arguments)


@pytest.mark.parametrize("name", ["openai", "OpenAI", "open ai", "Open-AI"])
def test_platform_setup_guide_with_this_accounts_connection(
    served: Served, world: World, name: str
) -> None:
    guide = served.ok(world.token_a, "get_platform_setup_guide", {"platform": name})
    entry = catalog.find_platform("openai")
    assert entry is not None
    assert guide["key"] == "openai"
    assert guide["steps"] == list(entry.steps)
    assert guide["credential_location"] == entry.credential_location
    assert guide["tips"] == list(entry.tips)
    assert guide["auth_type"] == "api_key"
    assert guide["connected"] is True
    # An active connection the platform has not refused: there and working.
    assert (guide["has_connection"], guide["has_working_connection"]) == (True, True)
    assert guide["connections"] == [
        {
            "id": world.ids["openai"],
            "name": "OpenAI production",
            "status": "active",
            "last_synced_at": "2026-06-14T08:00:00.000Z",
        }
    ]
    assert guide["connect_url"] == f"{APP_URL}/integrations/connect/openai"
    text = as_json(guide)
    for secret in SECRETS:
        assert secret not in text


def test_platform_setup_guide_is_per_account(served: Served, world: World) -> None:
    # Account B has no OpenAI connection; A has none to Slack.
    for_b = served.ok(world.token_b, "get_platform_setup_guide", {"platform": "openai"})
    assert (for_b["connected"], for_b["connections"]) == (False, [])
    slack_a = served.ok(world.token_a, "get_platform_setup_guide", {"platform": "Slack"})
    assert (slack_a["connected"], slack_a["connections"]) == (False, [])
    slack_b = served.ok(world.token_b, "get_platform_setup_guide", {"platform": "slack"})
    assert [c["id"] for c in slack_b["connections"]] == [world.ids["z_slack"]]
    zendesk = served.ok(world.token_a, "get_platform_setup_guide", {"platform": "zendesk"})
    assert zendesk["connections"][0]["status"] == "error"
    # A connection in error (and refused by the platform) is there, but not working.
    assert (zendesk["has_connection"], zendesk["has_working_connection"]) == (True, False)
    assert zendesk["connected"] is True  # SPEC 4.B: whether the account has connected it
    for absent in (for_b, slack_a):
        assert (absent["has_connection"], absent["has_working_connection"]) == (False, False)


@pytest.mark.store_independent
@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"platform": "myspace"}, "No platform is named 'myspace'"),
        ({"platform": ""}, "platform"),
        ({}, "The platform argument is required."),
    ],
)
def test_platform_setup_guide_refusals(
    served: Served, world: World, arguments: dict[str, Any], words: str
) -> None:
    assert words in served.refused(world.token_a, "get_platform_setup_guide", arguments)


@pytest.mark.parametrize(
    ("connections", "has", "working"),
    [
        ([], False, False),
        ([("active", None)], True, True),
        ([("active", "2026-06-01")], True, False),  # the platform refused the grant
        ([("disconnected", None)], True, False),
        ([("paused", None)], True, False),
        ([("error", None), ("active", None)], True, True),
    ],
)
def test_has_working_connection_is_an_active_one_needing_no_reconnecting(
    monkeypatch: pytest.MonkeyPatch,
    connections: list[tuple[str, str | None]],
    has: bool,
    working: bool,
) -> None:
    # Issue 23: `connected` said true for a disconnected or failing connection.
    from types import SimpleNamespace

    from airoi.auth import Principal
    from airoi.catalog import Pages
    from airoi.reports import lookups
    from airoi.tools import service

    rows = [
        SimpleNamespace(
            id=i + 1, name=None, status=status, last_synced_at=None, reauth_required_at=reauth
        )
        for i, (status, reauth) in enumerate(connections)
    ]
    monkeypatch.setattr(lookups, "list_integrations", lambda *a, **k: (rows, len(rows)))
    guide = service.platform_setup_guide(
        None,  # type: ignore[arg-type]
        cast(Principal, None),
        platform="openai",
        pages=Pages(APP_URL),
    )
    assert (guide.connected, guide.has_connection, guide.has_working_connection) == (
        has,
        has,
        working,
    )
