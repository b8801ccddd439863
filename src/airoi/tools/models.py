"""The typed results of the seven tools (their output schemas, SPEC 4.B).

Pydantic models, because the MCP SDK derives each tool's `outputSchema` from them
and validates every structured result against it. Field names follow the HTTP API
where the same figure is served there (SPEC 2.7, 2.10), so an assistant and an API
consumer read the same words. Every list is bounded; `total` says how many there
were, so a cut list is never mistaken for the whole.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Stage = Literal[
    "identified",
    "reviewing",
    "implementing",
    "live",
    "paused",
    "completed",
    "rejected",
    "dismissed",
]
RolledUpStatus = Literal["not_started", "active", "completed", "inactive"]
SearchKind = Literal[
    "initiative",
    "page",
    "metric",
    "connection",
    "platform",
    "vendor",
    "person",
    "template",
    "help_article",
    "assessment",
]
SEARCH_KINDS: tuple[SearchKind, ...] = (
    "initiative",
    "page",
    "metric",
    "connection",
    "platform",
    "vendor",
    "person",
    "template",
    "help_article",
    "assessment",
)


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PersonRef(Result):
    """A person by name only (never an e-mail address)."""

    id: int
    name: str


# get_roi_summary ----------------------------------------------------------------------------


class RoiScope(Result):
    type: Literal["portfolio", "initiative"]
    id: int | None = Field(description="The initiative's id when type is initiative.")
    title: str | None = Field(description="The initiative's title when type is initiative.")


class RoiPeriod(Result):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    window: Literal["1yr", "3yr", "5yr", "all"]
    label: str
    from_: date | None = Field(alias="from", description="First day covered; null for all.")
    through: date | None = Field(description="Last day covered (today); null for all.")


class RoiCost(Result):
    capex_cents: int = Field(description="One-time part of the total cost.")
    opex_cents: int = Field(description="Running part of the total cost.")


class RoiSummary(Result):
    """The figures of GET /roi for the same arguments, plus roi_percent (SEMANTICS R10)."""

    scope: RoiScope
    period: RoiPeriod
    currency: str = Field(description="ISO 4217 code of every amount (the account currency).")
    approved_value_cents: int = Field(description="Approved value entries only.")
    total_cost_cents: int
    net_value_cents: int = Field(description="Approved value minus total cost.")
    roi: float | None = Field(description="Net value / total cost; null when there is no cost.")
    roi_percent: float | None = Field(description="roi × 100 to two decimals; null with roi.")
    cost: RoiCost


# list_initiatives ---------------------------------------------------------------------------


class InitiativeItem(Result):
    id: int
    title: str
    stage: Stage
    status: RolledUpStatus = Field(description="The stage rolled up (SEMANTICS R26).")


class InitiativeListResult(Result):
    initiatives: list[InitiativeItem] = Field(description="Most recently changed first.")
    total: int = Field(description="How many initiatives match, whether shown or not.")
    has_more: bool = Field(description="True when total is larger than the list shown.")


# get_initiative -----------------------------------------------------------------------------


class BusinessCase(Result):
    """The initiative's expected financials, in `currency` (cents)."""

    currency: str
    expected_capex_cents: int | None
    expected_opex_cents: int | None
    expected_cost_savings_cents: int | None
    expected_revenue_uplift_cents: int | None
    roi_time_horizon_years: int | None
    confidence_score: float | None


class BudgetVersionRef(Result):
    id: int
    effective_from: date
    ends_on: date | None
    capex_cents: int
    opex_cents: int
    opex_cadence: Literal["monthly", "quarterly", "annually"]
    source: Literal["approval", "revision", "manual"]
    reason: str | None
    set_by: PersonRef | None


class Budget(Result):
    """The initiative's row of GET /budgets: approved budget against spend as of today."""

    initiative_id: int
    budgeted: bool
    status: Literal["no_budget", "scheduled", "within", "over"]
    over_parts: list[Literal["capex", "opex"]]
    currency: str | None
    as_of: date
    capex_budget_cents: int
    capex_actual_cents: int
    capex_remaining_cents: int
    opex_budget_to_date_cents: int
    opex_actual_cents: int
    budget_monthly_run_rate_cents: int
    actual_monthly_run_rate_cents: int | None
    budget_to_date_cents: int
    actual_to_date_cents: int
    variance_cents: int
    used_ratio: float | None
    spent_before_budget_cents: int
    opex_budget_fiscal_year_cents: int
    opex_budget_fiscal_ytd_cents: int
    opex_actual_fiscal_ytd_cents: int
    budget_started_on: date | None
    revised: bool
    version_count: int
    revision_pending: bool
    current_version: BudgetVersionRef | None


class CostItem(Result):
    id: int
    amount_cents: int | None
    currency: str | None
    cost_category: Literal["capex", "opex"]
    cost_type: str | None
    vendor_name: str | None
    description: str | None
    entry_date: date = Field(
        description="The date it is reported under: period start, else creation."
    )


class ValueItem(Result):
    id: int
    amount_cents: int | None
    currency: str | None
    status: Literal["draft", "calculated", "reviewed", "approved", "disputed", "archived"]
    counts_toward_roi: bool = Field(description="True exactly when status is approved.")
    entry_type: str | None
    entry_date: date = Field(
        description="The date it is reported under: period start, else creation."
    )


class NoteItem(Result):
    id: int
    author: str | None = Field(description="The author's name.")
    body: str
    created_at: str


class InitiativeDetail(Result):
    id: int
    title: str
    description: str | None
    stage: Stage
    status: RolledUpStatus
    category: str | None
    is_sample: bool
    owner: PersonRef | None
    url: str | None = Field(description="The initiative's page in the application.")
    business_case: BusinessCase
    budget: Budget
    recent_costs: list[CostItem] = Field(description="The 10 most recent cost entries.")
    cost_entry_count: int
    recent_value_entries: list[ValueItem] = Field(description="The 10 most recent value entries.")
    value_entry_count: int
    notes: list[NoteItem] = Field(description="The 10 most recent notes, newest first.")
    note_count: int


# search -------------------------------------------------------------------------------------


class SearchHit(Result):
    kind: SearchKind
    id: int | None = Field(description="The record's id, for records of the account.")
    key: str | None = Field(description="The catalog key, for pages, platforms and the like.")
    title: str
    snippet: str = Field(description="One line saying what the hit is.")
    url: str | None = Field(description="Where to open it in the application, when it has a page.")


class SearchResult(Result):
    query: str
    results: list[SearchHit] = Field(
        description="Best first: exact title matches, then prefixes, then other matches."
    )
    has_more: bool = Field(description="True when more hits matched than are shown.")


# list_integrations --------------------------------------------------------------------------


class IntegrationItem(Result):
    id: int
    platform: str
    name: str | None
    status: Literal["active", "paused", "error", "disconnected"]
    last_sync_status: str | None
    last_synced_at: str | None
    reauth_required: bool = Field(description="The platform refused the grant; reconnect.")


class IntegrationListResult(Result):
    integrations: list[IntegrationItem]
    total: int
    has_more: bool


# get_help_article ---------------------------------------------------------------------------


class HelpArticle(Result):
    id: int
    slug: str
    title: str
    summary: str
    body: str = Field(description="The article's full text, in Markdown.")
    url: str | None


# get_platform_setup_guide -------------------------------------------------------------------


class ConnectionRef(Result):
    id: int
    name: str | None
    status: Literal["active", "paused", "error", "disconnected"]
    last_synced_at: str | None


class PlatformSetupGuide(Result):
    key: str = Field(description="The platform's catalog key.")
    name: str
    category: str
    auth_type: str = Field(description="How it connects: oauth, api_key, basic, webhook, ...")
    metric_categories: list[str] = Field(description="What its connections can serve.")
    steps: list[str] = Field(description="The setup steps, in order.")
    credential_location: str = Field(description="Where to find the credential.")
    setup_script: str | None = Field(description="A script to run during setup, if any.")
    tips: list[str]
    docs_hint: str = Field(description="Where the platform's own documentation covers this.")
    connected: bool = Field(description="Whether this account has a connection to it.")
    connections: list[ConnectionRef] = Field(description="This account's connections to it.")
    connect_url: str | None = Field(description="The application page to connect it from.")
