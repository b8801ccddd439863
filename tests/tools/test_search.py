"""search: every kind SPEC 4.B names, ranked, restricted by types, capped (R15, R27)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from airoi.reports.search import MAX_RESULTS, QueryRefused, normalise
from tests.factories import BundleBuilder
from tests.tools.conftest import APP_URL, Served, as_json
from tests.tools.world import A_MARKERS, B_MARKER, EMAILS, World


def search(served: Served, token: str, query: str, *types: str) -> list[dict[str, Any]]:
    arguments: dict[str, Any] = {"query": query}
    if types:
        arguments["types"] = list(types)
    body = served.ok(token, "search", arguments)
    assert body["query"] == query
    hits: list[dict[str, Any]] = body["results"]
    for hit in hits:
        assert set(hit) == {"kind", "id", "key", "title", "snippet", "url"}
        assert "\n" not in hit["snippet"]
        assert hit["url"] is None or hit["url"].startswith(APP_URL + "/")
    return hits


def one(hits: list[dict[str, Any]], kind: str, title: str) -> dict[str, Any]:
    found = [h for h in hits if h["kind"] == kind and h["title"] == title]
    assert len(found) == 1, hits
    return found[0]


def account_records(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [h for h in hits if h["id"] is not None and h["kind"] != "help_article"]


def test_every_kind_is_found(served: Served, world: World) -> None:
    token = world.token_a
    p = one(search(served, token, "invoice capture", "initiative"), "initiative", "Invoice capture")
    assert (p["id"], p["url"]) == (world.ids["p"], f"{APP_URL}/initiatives/{world.ids['p']}")
    # By description too.
    assert one(
        search(served, token, "purchase orders", "initiative"), "initiative", "Invoice capture"
    )
    page = one(search(served, token, "budgets", "page"), "page", "Budgets")
    assert (page["key"], page["url"]) == ("budgets", f"{APP_URL}/budgets")
    own = one(search(served, token, "invoices processed", "metric"), "metric", "Invoices processed")
    assert (own["id"], own["key"]) == (world.ids["metric"], "invoices_processed")
    library = one(search(served, token, "ai spend", "metric"), "metric", "AI spend")
    assert (library["id"], library["key"]) == (None, "ai_spend")
    connection = one(
        search(served, token, "openai", "connection"), "connection", "OpenAI production"
    )
    assert connection["id"] == world.ids["openai"]
    assert "active" in connection["snippet"]
    platform = one(search(served, token, "anthropic", "platform"), "platform", "Anthropic")
    assert platform["url"] == f"{APP_URL}/integrations/connect/anthropic"
    vendor = one(search(served, token, "acme", "vendor"), "vendor", "Acme Vendor")
    assert vendor["snippet"] == "Vendor on 12 cost entries"
    person = one(search(served, token, "grace", "person"), "person", "Grace Hopper")
    assert person["id"] == world.ids["grace"]
    template = one(
        search(served, token, "code review", "template"), "template", "AI-assisted code review"
    )
    assert template["url"] == f"{APP_URL}/templates/ai_code_review"
    article = one(
        search(served, token, "how roi is computed", "help_article"),
        "help_article",
        "How ROI is computed",
    )
    assert (article["id"], article["key"]) == (5, "how-roi-is-computed")
    assert article["url"] == f"{APP_URL}/help/how-roi-is-computed"
    assessment = one(
        search(served, token, "readiness", "assessment"), "assessment", "Q3 AI readiness"
    )
    assert assessment["url"] == f"{APP_URL}/assessments/{world.ids['assessment']}"


def test_what_search_leaves_out(served: Served, world: World) -> None:
    token = world.token_a
    # Connected platforms are found as connections, not offered again as platforms.
    assert not [h for h in search(served, token, "openai", "platform") if h["key"] == "openai"]
    assert not search(served, token, "Q1 AI readiness", "assessment")  # closed
    assert not search(served, token, "gone person", "person")  # removed from the account
    assert not search(served, token, "change notifications", "help_article")  # a draft (R28)
    # People by name only: never an e-mail address, nor found by one (SEMANTICS R15).
    assert not search(served, token, "a.example", "person")
    text = as_json(search(served, token, "lovelace"))
    for email in EMAILS:
        assert email not in text


def test_ranking_exact_then_prefix_then_substring(served: Served, engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    b.initiative(acct, title="Forecast pilot for sales", stage="live")
    b.initiative(acct, title="Sales", stage="live")
    b.initiative(acct, title="Better sales emails", stage="live")
    b.initiative(acct, title="Cold outreach", stage="live", description="More sales meetings.")
    b.load(engine)
    hits = search(served, token, "SALES", "initiative")
    assert [h["title"] for h in hits] == [
        "Sales",  # exact
        "Better sales emails",  # substring, then by title
        "Forecast pilot for sales",
        "Cold outreach",  # description only
    ]
    prefix = search(served, token, "sal", "initiative")
    assert prefix[0]["title"] == "Sales"
    mixed = search(served, token, "budgets")
    assert mixed[0]["kind"] == "page"  # the exact title wins over partial ones of any kind


def test_results_are_capped(served: Served, engine: Engine) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    for n in range(MAX_RESULTS + 5):
        b.initiative(acct, title=f"Widget {n:02d}", stage="live")
    b.load(engine)
    body = served.ok(token, "search", {"query": "widget"})
    assert len(body["results"]) == MAX_RESULTS
    assert body["has_more"] is True


def test_wildcards_in_the_query_are_literal(served: Served, world: World) -> None:
    assert not search(served, world.token_a, "%%", "initiative")
    assert not search(served, world.token_a, "__", "initiative")


def test_wildcards_and_the_escape_character_match_themselves(
    served: Served, engine: Engine
) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    for title in (
        "Net 5% growth",
        "Net 50 growth",
        "rate_limit",
        "rate limit",
        "A/B test",
        "AB test",
    ):
        b.initiative(acct, title=title, stage="live")
    b.load(engine)

    def found(query: str) -> set[str]:
        return {h["title"] for h in search(served, token, query, "initiative")}

    assert found("5%") == {"Net 5% growth"}
    assert found("e_l") == {"rate_limit"}
    assert found("a/b") == {"A/B test"}
    assert found("t 5") == {"Net 5% growth", "Net 50 growth"}


@pytest.mark.parametrize("query", ["\x00\x00", "sales\x00", "\x00%", "ab\x07", "in\x1bitiative"])
def test_a_query_with_a_control_character_is_refused(
    served: Served, world: World, query: str
) -> None:
    # SEMANTICS R27: a NUL ended the SQLite LIKE pattern, so "\x00\x00" matched every record.
    sentence = served.refused(world.token_a, "search", {"query": query})
    assert sentence == "The query must be plain text without control characters."


def test_a_lone_surrogate_is_not_text_to_search_for() -> None:
    with pytest.raises(QueryRefused, match="control characters"):
        normalise("ab\ud800")


@pytest.mark.parametrize("query", ["  ", "\t\n", " \u00a0 \u2003 ", "\r\n\r\n"])
def test_a_query_of_whitespace_only_is_too_short(served: Served, world: World, query: str) -> None:
    sentence = served.refused(world.token_a, "search", {"query": query})
    assert sentence == "The query must be at least 2 characters long."


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        ({"query": "a"}, "The query must be at least 2 characters long."),
        ({"query": ""}, "The query must be at least 2 characters long."),
        ({"query": "  a  "}, "The query must be at least 2 characters long."),
        ({}, "The query argument is required."),
        ({"query": "sales", "types": ["initiative", "spaceship"]}, "types"),
        ({"query": "sales", "types": "initiative"}, "types"),
        # An empty list names no kind; it used to answer as if omitted (every kind).
        ({"query": "sales", "types": []}, "The types argument is not valid: List should have at"),
        ({"query": "x" * 201}, "query"),
    ],
)
def test_bad_queries_are_tool_errors(
    served: Served, world: World, arguments: dict[str, Any], words: str
) -> None:
    assert words in served.refused(world.token_a, "search", arguments)


def test_search_never_crosses_accounts(served: Served, world: World) -> None:
    # Account B's search for A's words finds nothing of A, and the other way round.
    # Shipped content (pages, library, templates, help) is the same for both; compare records.
    for query in ("invoice", "ada", "grace", "acme", "readiness", "openai", "processed"):
        text = as_json(account_records(search(served, world.token_b, query)))
        for marker in A_MARKERS:
            assert marker not in text
        assert "invoices_processed" not in text
    for query in ("zebra", "zed", "stripes", "slack"):
        hits = search(served, world.token_a, query)
        assert B_MARKER not in as_json(hits)
    zebra = search(served, world.token_b, "zebra")
    assert {h["kind"] for h in zebra} == {
        "initiative",
        "metric",
        "connection",
        "vendor",
        "person",
        "assessment",
    }
