"""The typed results of the tools (their output schemas, SPEC 4.B).

Pydantic models, because the MCP SDK derives each tool's `outputSchema` from them
and validates every structured result against it. Field names follow the HTTP API
where the same figure is served there (SPEC 2.7, 2.10), so an assistant and an API
consumer read the same words. A result that shows a served row, whole or in part, takes
those fields (name, type, description) from the API's Struct (tools/derive.py), so they
are written once; only the fields a tool alone has are written here. Every list is
bounded; `total` says how many there were, so a cut list is never mistaken for the whole.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from airoi.reports.breakdown import BreakdownRow
from airoi.reports.budgets import BudgetRow, CurrentVersion
from airoi.reports.cost_entries import CostEntry
from airoi.reports.decisions import Decision
from airoi.reports.fields import Person, Source
from airoi.reports.initiatives import Initiative
from airoi.reports.integrations import Integration
from airoi.reports.observations import Observation
from airoi.reports.roi import RoiCost as RoiCostRow
from airoi.reports.roi import RoiSummary as RoiSummaryRow
from airoi.reports.value_entries import ValueEntry
from airoi.tools.derive import derived
from airoi.vocabulary import BreakdownBy, RolledUpStatus, SearchKind, Window


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


# get_roi_summary ----------------------------------------------------------------------------


class RoiScope(Result):
    type: Literal["portfolio", "initiative"]
    id: int | None = Field(description="The initiative's id when type is initiative.")
    title: str | None = Field(description="The initiative's title when type is initiative.")


class RoiPeriod(Result):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    window: Window
    label: str
    from_: date | None = Field(alias="from", description="First day covered; null for all.")
    through: date | None = Field(description="Last day covered (today); null for all.")


# list_initiatives ---------------------------------------------------------------------------


NEXT_CURSOR = (
    "Null on the last page; pass it as cursor, with the same other arguments, for the next page."
)


class InitiativeListResult(Result):
    initiatives: list[InitiativeItem] = Field(description="Most recently changed first.")
    total: int = Field(description="How many initiatives match, whether shown or not.")
    has_more: bool = Field(description="True when more match after this page.")
    next_cursor: str | None = Field(default=None, description=NEXT_CURSOR)


# get_initiative -----------------------------------------------------------------------------


class NoteItem(Result):
    id: int
    author: str | None = Field(description="The author's name.")
    body: str
    created_at: str


# Results that show a served row, whole or in part -------------------------------------------


def _entry_date() -> FieldInfo:
    return FieldInfo(description="The date it is reported under: period start, else creation.")


if TYPE_CHECKING:
    # What the type checker sees: a result whose fields, made below from the API's Structs,
    # it cannot know. Pydantic checks every one when the result is made.
    class PersonRef(Result):
        def __init__(self, **fields: Any) -> None: ...

    class RoiCost(Result):
        def __init__(self, **fields: Any) -> None: ...

    class RoiSummary(Result):
        def __init__(self, **fields: Any) -> None: ...

    class InitiativeItem(Result):
        def __init__(self, **fields: Any) -> None: ...

    class BusinessCase(Result):
        def __init__(self, **fields: Any) -> None: ...

    class BudgetVersionRef(Result):
        def __init__(self, **fields: Any) -> None: ...

    class Budget(Result):
        def __init__(self, **fields: Any) -> None: ...

    class CostItem(Result):
        def __init__(self, **fields: Any) -> None: ...

    class ValueItem(Result):
        def __init__(self, **fields: Any) -> None: ...

    class InitiativeDetail(Result):
        def __init__(self, **fields: Any) -> None: ...

    class IntegrationItem(Result):
        def __init__(self, **fields: Any) -> None: ...

    class ConnectionRef(Result):
        def __init__(self, **fields: Any) -> None: ...

    class BreakdownItem(Result):
        def __init__(self, **fields: Any) -> None: ...

    class DecisionItem(Result):
        def __init__(self, **fields: Any) -> None: ...

    class SourceRef(Result):
        def __init__(self, **fields: Any) -> None: ...

    class ReadingItem(Result):
        def __init__(self, **fields: Any) -> None: ...

else:
    PersonRef = derived("PersonRef", Person, base=Result)

    # get_roi_summary: GET /roi's figures (SPEC 2.10) plus roi_percent.
    RoiCost = derived("RoiCost", RoiCostRow, base=Result)
    RoiSummary = derived(
        "RoiSummary",
        RoiSummaryRow,
        ("scope", RoiScope, Field()),
        ("period", RoiPeriod, Field()),
        "currency",
        "approved_value_cents",
        "total_cost_cents",
        "net_value_cents",
        "roi",
        (
            "roi_percent",
            float | None,
            Field(description="roi × 100 to two decimals; null with roi."),
        ),
        ("cost", RoiCost, Field()),
        base=Result,
        doc="The figures of GET /roi for the same arguments, plus roi_percent (SEMANTICS R10).",
    )

    # list_initiatives
    InitiativeItem = derived(
        "InitiativeItem",
        Initiative,
        "id",
        "title",
        "stage",
        ("status", RolledUpStatus, Field(description="The stage rolled up (SEMANTICS R26).")),
        base=Result,
    )

    # get_initiative
    BusinessCase = derived(
        "BusinessCase",
        Initiative,
        ("currency", str, Field()),
        "expected_capex_cents",
        "expected_opex_cents",
        "expected_cost_savings_cents",
        "expected_revenue_uplift_cents",
        "roi_time_horizon_years",
        "confidence_score",
        base=Result,
        doc="The initiative's expected financials, in `currency` (cents).",
    )
    BudgetVersionRef = derived(
        "BudgetVersionRef", CurrentVersion, base=Result, refs={Person: PersonRef}
    )
    Budget = derived(
        "Budget",
        BudgetRow,
        base=Result,
        refs={CurrentVersion: BudgetVersionRef, Person: PersonRef},
        doc="The initiative's row of GET /budgets: approved budget against spend as of today.",
    )
    CostItem = derived(
        "CostItem",
        CostEntry,
        "id",
        "amount_cents",
        "currency",
        "cost_category",
        "cost_type",
        "vendor_name",
        "description",
        ("entry_date", date, _entry_date()),
        base=Result,
    )
    ValueItem = derived(
        "ValueItem",
        ValueEntry,
        "id",
        "amount_cents",
        "currency",
        "status",
        "counts_toward_roi",
        "entry_type",
        ("entry_date", date, _entry_date()),
        base=Result,
    )
    InitiativeDetail = derived(
        "InitiativeDetail",
        Initiative,
        "id",
        "title",
        "description",
        "stage",
        ("status", RolledUpStatus, Field()),
        "category",
        "is_sample",
        "owner",
        ("url", str | None, Field(description="The initiative's page in the application.")),
        ("business_case", BusinessCase, Field()),
        ("budget", Budget, Field()),
        (
            "recent_costs",
            list[CostItem],
            Field(description="The 10 most recent cost entries."),
        ),
        ("cost_entry_count", int, Field()),
        (
            "recent_value_entries",
            list[ValueItem],
            Field(description="The 10 most recent value entries."),
        ),
        ("value_entry_count", int, Field()),
        ("notes", list[NoteItem], Field(description="The 10 most recent notes, newest first.")),
        ("note_count", int, Field()),
        base=Result,
        refs={Person: PersonRef},
    )

    # list_integrations, get_platform_setup_guide
    IntegrationItem = derived(
        "IntegrationItem",
        Integration,
        "id",
        "platform",
        "name",
        "status",
        "last_sync_status",
        "last_synced_at",
        (
            "reauth_required",
            bool,
            Field(description="The platform refused the grant; reconnect."),
        ),
        base=Result,
    )
    ConnectionRef = derived(
        "ConnectionRef", Integration, "id", "name", "status", "last_synced_at", base=Result
    )

    # get_roi_breakdown: GET /roi/breakdown's rows (SEMANTICS R37), whole.
    BreakdownItem = derived("BreakdownItem", BreakdownRow, base=Result)

    # list_decisions: GET /decisions's rows, whole.
    DecisionItem = derived("DecisionItem", Decision, base=Result, refs={Person: PersonRef})

    # list_metric_readings: GET /observations's rows, whole.
    SourceRef = derived("SourceRef", Source, base=Result)
    ReadingItem = derived("ReadingItem", Observation, base=Result, refs={Source: SourceRef})


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


class IntegrationListResult(Result):
    integrations: list[IntegrationItem] = Field(description="By platform, then id.")
    total: int = Field(description="How many connections match, whether shown or not.")
    has_more: bool = Field(description="True when more match after this page.")
    next_cursor: str | None = Field(default=None, description=NEXT_CURSOR)


# get_roi_breakdown --------------------------------------------------------------------------


class RoiBreakdown(Result):
    """GET /roi/breakdown for the same arguments (SEMANTICS R37), its page flattened."""

    scope: RoiScope
    period: RoiPeriod
    currency: str = Field(description="ISO 4217 code of every amount.")
    by: BreakdownBy = Field(description="The dimension split along.")
    vendor_id: int | None = Field(
        description="The vendor whose cost alone is split, when one was given; null otherwise."
    )
    data: list[BreakdownItem] = Field(
        description="Ordered by key (null last); across all pages they add up to get_roi_summary."
    )
    has_more: bool = Field(description="True when more rows follow this page.")
    next_cursor: str | None = Field(description=NEXT_CURSOR)


# list_decisions -----------------------------------------------------------------------------


class DecisionListResult(Result):
    decisions: list[DecisionItem] = Field(
        description="Oldest change first, as GET /decisions serves them."
    )
    has_more: bool = Field(description="True when more match after this page.")
    next_cursor: str | None = Field(description=NEXT_CURSOR)


# list_metric_readings -----------------------------------------------------------------------


class ReadingListResult(Result):
    readings: list[ReadingItem] = Field(
        description="Oldest change first, as GET /observations serves them."
    )
    has_more: bool = Field(description="True when more match after this page.")
    next_cursor: str | None = Field(description=NEXT_CURSOR)


# get_help_article ---------------------------------------------------------------------------


class HelpArticle(Result):
    id: int
    slug: str
    title: str
    summary: str
    body: str = Field(description="The article's full text, in Markdown.")
    url: str | None


# get_platform_setup_guide -------------------------------------------------------------------


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
    connected: bool = Field(
        description=(
            "Whether this account has a connection to it, whatever its status (the same as "
            "has_connection; see has_working_connection)."
        )
    )
    has_connection: bool = Field(
        description="Whether this account has a connection to it, whatever its status."
    )
    has_working_connection: bool = Field(
        description=(
            "Whether one of those connections is active and needs no reconnecting; false "
            "when every one is paused, disconnected, in error or refused by the platform."
        )
    )
    connections: list[ConnectionRef] = Field(description="This account's connections to it.")
    connect_url: str | None = Field(description="The application page to connect it from.")
