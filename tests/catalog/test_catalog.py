"""The shipped catalog: counts, integrity, lookups, and what the help articles must say."""

from __future__ import annotations

import re

import pytest

from airoi import catalog
from airoi.catalog import (
    AUTH_TYPES,
    METRIC_TYPES,
    app_pages,
    find_platform,
    help_article,
    help_articles,
    metric_library,
    page_path,
    platforms,
    templates,
)

REQUIRED_PLATFORM_CATEGORIES = {
    "model_vendor",
    "coding_assistant",
    "support_desk",
    "crm",
    "finance",
    "billing",
    "data_warehouse",
    "cloud",
    "collaboration",
}


def _article(slug: str) -> str:
    article = help_article(slug=slug)
    assert article is not None, slug
    return " ".join(article.body.split())  # one line, single spaces: phrases survive wrapping


# Counts --------------------------------------------------------------------------------


def test_at_least_twenty_platforms_covering_every_category() -> None:
    assert len(platforms()) >= 20
    assert {p.category for p in platforms()} >= REQUIRED_PLATFORM_CATEGORIES


def test_counts_of_articles_metrics_templates_pages() -> None:
    assert len(help_articles()) >= 12
    assert len(metric_library()) >= 40
    assert len(templates()) >= 10
    assert app_pages()


def test_named_platforms_are_present() -> None:
    keys = {p.key for p in platforms()}
    named = {
        "openai", "anthropic", "github_copilot", "cursor", "zendesk", "intercom", "salesforce",
        "hubspot", "netsuite", "quickbooks", "stripe", "snowflake", "bigquery", "databricks",
        "aws", "azure_openai", "google_vertex", "slack", "jira", "servicenow",
    }  # fmt: skip
    assert named <= keys


# Integrity -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "keys",
    [
        pytest.param(lambda: [p.key for p in platforms()], id="platforms"),
        pytest.param(lambda: [m.key for m in metric_library()], id="metrics"),
        pytest.param(lambda: [t.key for t in templates()], id="templates"),
        pytest.param(lambda: [p.key for p in app_pages()], id="pages"),
        pytest.param(lambda: [a.slug for a in help_articles(published_only=False)], id="slugs"),
        pytest.param(lambda: [a.id for a in help_articles(published_only=False)], id="ids"),
    ],
)
def test_keys_are_unique(keys: object) -> None:
    values = keys()  # type: ignore[operator]
    assert len(values) == len(set(values))


def test_platform_fields_are_well_formed() -> None:
    for p in platforms():
        assert p.auth_type in AUTH_TYPES, p.key
        assert p.auth_type in {
            "oauth", "api_key", "basic", "webhook", "github_app", "service_account",
        }  # fmt: skip
        assert p.metric_categories, p.key
        assert p.steps, p.key
        assert p.tips, p.key
        assert p.credential_location.strip(), p.key
        assert p.docs_hint.strip(), p.key
        assert p.setup_script is None or p.setup_script.strip(), p.key


def test_platform_text_holds_no_third_party_urls() -> None:
    url = re.compile(r"https?://|www\.")
    for p in platforms():
        text = " ".join(
            [p.credential_location, *p.steps, *p.tips, p.docs_hint, p.setup_script or ""]
        )
        assert not url.search(text), p.key


def test_warehouses_ship_a_setup_script() -> None:
    for key in ("snowflake", "bigquery", "databricks"):
        platform = find_platform(key)
        assert platform is not None
        assert platform.setup_script
    snowflake = find_platform("snowflake")
    assert snowflake is not None and snowflake.setup_script is not None
    assert "GRANT SELECT" in snowflake.setup_script


def test_metric_fields_are_well_formed() -> None:
    for m in metric_library():
        assert m.metric_type in METRIC_TYPES, m.key
        assert re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)*", m.key), m.key
        assert m.unit and m.name and m.description and m.category


def test_demo_metric_keys_are_in_the_library() -> None:
    library = {m.key for m in metric_library()}
    demo_keys = {
        "first_response_time", "auto_resolution_rate", "pr_cycle_time", "cost_per_invoice",
        "email_reply_rate", "forecast_mape", "contract_turnaround_time", "tickets_deflected",
    }  # fmt: skip
    assert demo_keys <= library


def test_template_metrics_exist_in_the_library() -> None:
    library = {m.key for m in metric_library()}
    for t in templates():
        assert t.suggested_metric_keys, t.key
        assert set(t.suggested_metric_keys) <= library, t.key
        assert t.typical_cost_types, t.key


def test_page_paths_are_relative_and_cover_the_named_pages() -> None:
    paths = {p.path for p in app_pages()}
    for page in app_pages():
        assert page.path.startswith("/"), page.key
        assert "://" not in page.path, page.key
    assert {
        "/initiatives", "/initiatives/{id}", "/roi", "/budgets", "/decisions", "/integrations",
        "/integrations/connect/{platform}", "/settings/organization/mcp-access", "/help/{slug}",
        "/metrics", "/assessments/{id}", "/templates/{key}",
    } <= paths  # fmt: skip


# Lookups -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("github_copilot", "github_copilot"),
        ("GitHub Copilot", "github_copilot"),
        ("github-copilot", "github_copilot"),
        ("  GITHUBCOPILOT ", "github_copilot"),
        ("Azure OpenAI", "azure_openai"),
        ("azure-openai", "azure_openai"),
        ("QuickBooks Online", "quickbooks"),
        ("quickbooks", "quickbooks"),
        ("Google BigQuery", "bigquery"),
        ("Amazon Web Services", "aws"),
        ("AWS", "aws"),
        ("openai", "openai"),
    ],
)
def test_find_platform_by_key_or_name(text: str, key: str) -> None:
    found = find_platform(text)
    assert found is not None
    assert found.key == key


@pytest.mark.parametrize("text", ["", "   ", "-_-", "no such platform", "open"])
def test_find_platform_misses(text: str) -> None:
    assert find_platform(text) is None


def test_page_path_fills_placeholders_and_encodes_them() -> None:
    assert page_path("roi") == "/roi"
    assert page_path("initiative", id="42") == "/initiatives/42"
    assert page_path("integration_connect", platform="github_copilot") == (
        "/integrations/connect/github_copilot"
    )
    assert page_path("help_article", slug="a/b c") == "/help/a%2Fb%20c"


def test_page_path_refuses_unknown_pages_and_wrong_parameters() -> None:
    with pytest.raises(KeyError):
        page_path("no_such_page")
    with pytest.raises(ValueError, match="missing id"):
        page_path("initiative")
    with pytest.raises(ValueError, match="unexpected slug"):
        page_path("roi", slug="x")


def test_every_placeholder_of_every_page_can_be_filled() -> None:
    for page in app_pages():
        filled = page_path(page.key, **dict.fromkeys(page.parameters, "x"))
        assert "{" not in filled, page.key


# Help articles -------------------------------------------------------------------------


def test_unpublished_draft_is_filtered() -> None:
    everything = help_articles(published_only=False)
    drafts = [a for a in everything if not a.published]
    assert drafts, "keep one unpublished draft so the filter is exercised"
    draft = drafts[0]
    assert draft not in help_articles()
    assert help_article(slug=draft.slug) is None
    assert help_article(id=draft.id) is None


def test_help_article_by_id_or_slug_and_id_wins() -> None:
    roi = help_article(slug="how-roi-is-computed")
    tokens = help_article(slug="personal-access-tokens")
    assert roi is not None and tokens is not None
    assert help_article(id=roi.id) == roi
    assert help_article(id=tokens.id, slug=roi.slug) == tokens  # SEMANTICS R28
    assert help_article() is None
    assert help_article(slug="no-such-article") is None
    assert help_article(id=987654) is None


def test_articles_are_well_formed() -> None:
    for a in help_articles(published_only=False):
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", a.slug), a.slug
        assert a.title and a.summary and "\n" not in a.summary
        assert a.body.lstrip().startswith("#"), a.slug
        assert not a.body.startswith("id:"), a.slug


def test_help_topics_are_covered() -> None:
    slugs = {a.slug for a in help_articles()}
    assert {
        "personal-access-tokens", "incremental-sync", "how-roi-is-computed",
        "why-only-approved-value-counts", "budgets-and-run-rates", "currencies-and-conversion",
        "tool-endpoint-for-assistants", "connections-and-statuses",
    } <= slugs  # fmt: skip


def test_roi_article_states_the_rules() -> None:
    body = _article("how-roi-is-computed")
    assert "Only approved value counts" in body
    assert "ROI is null when there is no cost" in body
    assert "not zero" in body
    for window in ("`1yr`", "`3yr`", "`5yr`", "`all`"):
        assert window in body


def test_approved_value_article() -> None:
    body = _article("why-only-approved-value-counts")
    assert "counts_toward_roi" in body
    assert "status=approved" in body
    for status in ("draft", "calculated", "reviewed", "approved", "disputed", "archived"):
        assert f"`{status}`" in body


def test_tokens_article() -> None:
    body = _article("personal-access-tokens")
    assert "airoi token issue --user" in body
    assert "printed **once**" in body
    assert "hash" in body
    assert "401" in body and "403" in body


def test_sync_article() -> None:
    body = _article("incremental-sync")
    for phrase in ("updated_since", "cursor", "next_cursor", "has_more", "Upsert", "inclusive"):
        assert phrase in body, phrase
    assert "500" in body


def test_budgets_article() -> None:
    body = _article("budgets-and-run-rates")
    for phrase in (
        "monthly", "quarterly", "annually", "actual_monthly_run_rate_cents",
        "budget_monthly_run_rate_cents", "revision_pending", "fiscal year", "over_parts",
    ):  # fmt: skip
        assert phrase in body, phrase


def test_currency_article() -> None:
    body = _article("currencies-and-conversion")
    assert "half to even" in body
    assert "entry date" in body


def test_tool_endpoint_article() -> None:
    body = _article("tool-endpoint-for-assistants")
    assert "/mcp" in body
    assert "same personal access token" in body
    for tool in (
        "get_roi_summary", "list_initiatives", "get_initiative", "search",
        "list_integrations", "get_help_article", "get_platform_setup_guide",
    ):  # fmt: skip
        assert f"`{tool}`" in body, tool


def test_connections_article() -> None:
    body = _article("connections-and-statuses")
    for phrase in ("`active`", "`paused`", "`error`", "`disconnected`", "reauth_required_at"):
        assert phrase in body, phrase


def test_articles_claim_only_served_paths() -> None:
    served = {
        "/openapi.json", "/roi", "/initiatives", "/cost_entries", "/value_entries", "/metrics",
        "/observations", "/budgets", "/business_cases", "/decisions", "/integrations", "/mcp",
        "/api/v1",
    }  # fmt: skip
    for a in help_articles():
        for path in re.findall(r"`(?:GET )?(/[a-z_./0-9]+)", a.body):
            root = "/" + path.strip("/").split("/")[0]
            if path.startswith("/api/v1/"):
                root = "/" + path.removeprefix("/api/v1/").split("/")[0]
            assert root in served or path in served, (a.slug, path)


# Reading -------------------------------------------------------------------------------


def test_results_are_cached_and_immutable() -> None:
    assert platforms() is platforms()
    assert metric_library() is metric_library()
    with pytest.raises(AttributeError):
        platforms()[0].key = "changed"  # type: ignore[misc]


def test_bad_front_matter_is_refused() -> None:
    with pytest.raises(catalog.CatalogError, match="no '---'"):
        catalog._parse_article("x.md", "id: 1\nslug: x\n")
    with pytest.raises(catalog.CatalogError, match="lacks"):
        catalog._parse_article("x.md", "id: 1\nslug: x\n---\n# X\n")
    with pytest.raises(catalog.CatalogError, match="published"):
        catalog._parse_article(
            "x.md", "id: 1\nslug: x\ntitle: X\nsummary: S\npublished: yes\n---\n# X\n"
        )


def test_page_path_takes_a_key_placeholder() -> None:
    assert page_path("template", key="coding_assistant_rollout") == (
        "/templates/coding_assistant_rollout"
    )
