"""The typed results of the tools (their output schemas, SPEC 4.B).

Pydantic models, because the MCP SDK derives each tool's `outputSchema` from them
and validates every structured result against it. Field names follow the HTTP API
where the same figure is served there (SPEC 2.7, 2.10), so an assistant and an API
consumer read the same words. A result that shows a served row, whole or in part, declares
those fields as the row's Struct (reports/) does: the same names, types, nullability and
descriptions. tests/tools/test_models.py holds each such model against its Struct, so a field
changed on one side fails the tests until the other follows. Every list is bounded; `total`
says how many there were, so a cut list is never mistaken for the whole.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from airoi.reports.budgets import BudgetStatus, ProjectedStatus
from airoi.vocabulary import (
    BreakdownBy,
    BudgetSource,
    CostCategory,
    IntegrationStatus,
    OpexCadence,
    Outcome,
    RolledUpStatus,
    SearchKind,
    Stage,
    ValueStatus,
    Window,
)


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


NEXT_CURSOR = (
    "Null on the last page; pass it as cursor, with the same other arguments, for the next page."
)

# Descriptions more than one row shares, as their Structs share them (reports/fields.py).
WRITTEN_AT = "When the row was first written. UTC, millisecond precision."
CHANGED_AT = (
    "When the row last changed; the order of every list but /budgets. UTC, millisecond precision."
)
ENTRY_AMOUNT = "Cents, in currency. Key always present; may be null."
ENTRY_CURRENCY = "ISO 4217 code of amount_cents."
ENTRY_DATE = "The date it is reported under: period start, else creation."
CAPEX = "One-time part of total cost."
OPEX = "Running part of total cost."
AMOUNTS_CURRENCY = "ISO 4217 code of the amounts."
STAGE = "Where the initiative stands (SPEC 3)."
INTEGRATION_STATUS = (
    "active, paused, error or disconnected. error means syncs are failing; paused and "
    "disconnected mean somebody stopped it."
)
LAST_SYNCED_AT = "When data last arrived; may be old while status is active."


# The rows other rows carry: Person and Source, whole ----------------------------------------


class PersonRef(Result):
    """A person, by name only (never an e-mail address)."""

    id: int
    name: str


class SourceRef(Result):
    """Where a record came from: typed in, imported or brought in by a connection."""

    type: str | None = Field(description="How the record came in: typed in, imported or synced.")
    ref: str | None = Field(description="The id the originating system knows the record by.")
    connection_id: int | None = Field(
        description="The integration (connection) that brought it in."
    )


# get_roi_summary: GET /roi's figures (SPEC 2.10) plus roi_percent ---------------------------


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


class RoiCost(Result):
    capex_cents: int = Field(description=CAPEX)
    opex_cents: int = Field(description=OPEX)


class RoiSummary(Result):
    """The figures of GET /roi for the same arguments, plus roi_percent (SEMANTICS R10)."""

    scope: RoiScope
    period: RoiPeriod
    currency: str = Field(description="ISO 4217 code of every amount.")
    approved_value_cents: int = Field(description="Approved value entries only.")
    total_cost_cents: int = Field(description="Everything the initiatives in scope have cost.")
    net_value_cents: int = Field(description="Approved value minus total cost.")
    roi: float | None = Field(
        description=(
            "Net value divided by total cost; null when there is no cost (null is not zero)."
        )
    )
    roi_percent: float | None = Field(description="roi × 100 to two decimals; null with roi.")
    cost: RoiCost


# list_initiatives ---------------------------------------------------------------------------


class InitiativeItem(Result):
    id: int
    title: str
    stage: Stage = Field(description=STAGE)
    status: RolledUpStatus = Field(description="The stage rolled up (SEMANTICS R26).")


class InitiativeListResult(Result):
    initiatives: list[InitiativeItem] = Field(description="Most recently changed first.")
    total: int = Field(description="How many initiatives match, whether shown or not.")
    has_more: bool = Field(description="True when more match after this page.")
    next_cursor: str | None = Field(default=None, description=NEXT_CURSOR)


# get_business_cases (and get_initiative's plan): GET /business_cases's rows, whole ----------


class PlanAgainstActuals(Result):
    """The initiative's row of GET /business_cases: its business case against actuals to date."""

    initiative_id: int
    currency: str = Field(
        description=(
            "ISO 4217 code of every amount: the initiative's currency, else the account's."
        )
    )
    as_of: date = Field(description="The day the plan is held against the actuals (today).")
    has_business_case: bool = Field(
        description=(
            "Whether the initiative has a business case: at least one of its expected capex, "
            "opex, cost savings and revenue uplift is filled in."
        )
    )
    horizon_years: int | None = Field(
        description=("The initiative's roi_time_horizon_years: the years the plan's totals cover.")
    )
    planned_capex_cents: int | None = Field(
        description=(
            "The business case's capex over the horizon. Null when has_business_case is false."
        )
    )
    planned_opex_cents: int | None = Field(
        description=(
            "The business case's opex over the horizon. Null when has_business_case is false."
        )
    )
    planned_cost_cents: int | None = Field(
        description=(
            "planned_capex_cents + planned_opex_cents. Null when has_business_case is false."
        )
    )
    planned_value_cents: int | None = Field(
        description=(
            "Expected cost savings plus expected revenue uplift over the horizon. Null when "
            "has_business_case is false."
        )
    )
    planned_net_value_cents: int | None = Field(
        description=(
            "planned_value_cents − planned_cost_cents. Null when has_business_case is false."
        )
    )
    planned_roi: float | None = Field(
        description=(
            "Planned net value over planned cost; null when planned cost is 0 or "
            "has_business_case is false."
        )
    )
    plan_started_on: date | None = Field(
        description=(
            "First day of the month the initiative went live, where the plan starts; null until "
            "it has gone live, and when has_business_case is false."
        )
    )
    months_elapsed: int = Field(
        description=(
            "Months of the plan from its start month through the current month, both included, at"
            " most the horizon's; 0 until the initiative has gone live."
        )
    )
    planned_value_to_date_cents: int | None = Field(
        description=(
            "The value the plan should have delivered by now: planned value × months_elapsed / "
            "the horizon's months, rounded half to even once; 0 before the plan starts. Null when"
            " has_business_case is false, or horizon_years is null or not a positive number."
        )
    )
    planned_cost_to_date_cents: int | None = Field(
        description=(
            "What the plan should have cost by now: planned capex (at once) plus planned opex × "
            "months_elapsed / the horizon's months, rounded half to even once; 0 before the plan "
            "starts. Null when has_business_case is false, or horizon_years is null or not a "
            "positive number."
        )
    )
    approved_value_to_date_cents: int = Field(
        description=("Approved value entries dated on or before as_of.")
    )
    capex_to_date_cents: int = Field(description="Capex cost entries dated on or before as_of.")
    opex_to_date_cents: int = Field(description="Opex cost entries dated on or before as_of.")
    cost_to_date_cents: int = Field(description="capex_to_date_cents + opex_to_date_cents.")
    net_value_to_date_cents: int = Field(
        description=("approved_value_to_date_cents − cost_to_date_cents.")
    )
    roi_to_date: float | None = Field(
        description=("Net value to date over cost to date; null when cost to date is 0.")
    )
    value_realization_ratio: float | None = Field(
        description=(
            "Approved value to date over planned value to date: 1.0 means the value promised by "
            "now has arrived; null when planned value to date is null or 0."
        )
    )
    payback_month: date | None = Field(
        description=(
            "First day of the earliest month from which the cumulative net (approved value minus "
            "cost, of the entries dated to the end of each month) stays at or above 0 through the"
            " current month; null when there is no cost to date or the cumulative net is below 0 "
            "now."
        )
    )


class BusinessCaseListResult(Result):
    business_cases: list[PlanAgainstActuals] = Field(
        description="Ordered by the initiative, as GET /business_cases serves them."
    )
    has_more: bool = Field(description="True when more match after this page.")
    next_cursor: str | None = Field(description=NEXT_CURSOR)


# get_initiative -----------------------------------------------------------------------------


class BusinessCase(Result):
    """The initiative's expected financials, in `currency` (cents)."""

    currency: str
    expected_capex_cents: int | None = Field(description="Business case, in cents, in currency.")
    expected_opex_cents: int | None = Field(description="Same as expected_capex_cents.")
    expected_cost_savings_cents: int | None = Field(description="Same as expected_capex_cents.")
    expected_revenue_uplift_cents: int | None = Field(description="Same as expected_capex_cents.")
    roi_time_horizon_years: int | None
    confidence_score: float | None


class BudgetVersionRef(Result):
    id: int
    effective_from: date = Field(
        description="Applies from the whole month containing this date; no day proration."
    )
    ends_on: date | None = Field(description="Last month covered, whole-month.")
    capex_cents: int = Field(description="One-off total, not accrued.")
    opex_cents: int = Field(description="A rate per opex_cadence.")
    opex_cadence: OpexCadence
    source: BudgetSource
    reason: str | None = Field(description="Words of whoever set it.")
    set_by: PersonRef | None = Field(description="Who set it, by name only.")


class Budget(Result):
    """The initiative's row of GET /budgets: approved budget against spend as of today."""

    initiative_id: int
    budgeted: bool = Field(
        description=(
            "Whether an approved budget exists. When false, the figures compare spend against "
            "nothing and the row belongs out of any variance total."
        )
    )
    status: BudgetStatus = Field(
        description=(
            "no_budget, scheduled (a budget exists but has not started), within or over. over when"
            " either the capex half or the opex half is over."
        )
    )
    over_parts: list[CostCategory] = Field(description="Which half is over when status is over.")
    currency: str | None = Field(description=AMOUNTS_CURRENCY)
    as_of: date = Field(description="The day the comparison was made (today).")
    capex_budget_cents: int = Field(description="The current version's envelope.")
    capex_actual_cents: int = Field(
        description="Capex spent since the budget began; zero when budgeted is false."
    )
    capex_remaining_cents: int = Field(description="Negative when the envelope is exceeded.")
    opex_budget_to_date_cents: int = Field(
        description=(
            "Each month's rate summed from the month the budget began through the current month, "
            "at whichever version covered each month; a revision changes later months and never "
            "restates earlier ones."
        )
    )
    opex_actual_cents: int = Field(
        description="Opex spent since the budget began; zero when budgeted is false."
    )
    budget_monthly_run_rate_cents: int = Field(
        description="The current version's rate as a monthly figure."
    )
    actual_monthly_run_rate_cents: int | None = Field(
        description=(
            "Average over the last 3 complete months the budget covered; null until one complete "
            "month has passed."
        )
    )
    budget_to_date_cents: int = Field(description="Capex envelope plus opex to date.")
    actual_to_date_cents: int = Field(
        description=(
            "Zero when budgeted is false. Total spend of an unbudgeted initiative is read from the "
            "cost entries list."
        )
    )
    variance_cents: int = Field(
        description="budget_to_date_cents minus actual_to_date_cents; positive means under budget."
    )
    used_ratio: float | None = Field(
        description="Actual over budget to date; null when there is no budget to date to divide by."
    )
    spent_before_budget_cents: int = Field(
        description=(
            "Spend dated before the month the budget began; reported apart and in neither figure "
            "above."
        )
    )
    opex_budget_fiscal_year_cents: int = Field(description="The whole fiscal year's opex budget.")
    opex_budget_fiscal_ytd_cents: int = Field(description="The part of it through as_of.")
    opex_actual_fiscal_ytd_cents: int = Field(
        description="Opex spent in the fiscal year through as_of."
    )
    budget_started_on: date | None = Field(
        description="The month the first approved version took effect."
    )
    revised: bool = Field(description="Changed since first approved.")
    version_count: int = Field(description="How many versions the budget has had.")
    revision_pending: bool = Field(
        description=(
            "A revision awaits the account Owner because it would put the budget above the "
            "account's approval threshold; the figures shown remain the approved ones."
        )
    )
    current_version: BudgetVersionRef | None = Field(
        description=(
            "The approved version in effect; null when there is no budget yet or every version "
            "starts in a later month."
        )
    )
    projected_opex_fiscal_year_cents: int | None = Field(
        description=(
            "Opex spent in the fiscal year through as_of plus actual_monthly_run_rate_cents for "
            "each month of the fiscal year after the current month; null when the run rate is "
            "null."
        )
    )
    projected_fiscal_year_variance_cents: int | None = Field(
        description=(
            "opex_budget_fiscal_year_cents minus projected_opex_fiscal_year_cents; negative means "
            "the projection is over the fiscal year's opex budget; null with the projection."
        )
    )
    projected_fiscal_year_status: ProjectedStatus | None = Field(
        description=(
            "no_budget when budgeted is false; null when the projection is null; over when the "
            "projection is above opex_budget_fiscal_year_cents; else within."
        )
    )


class CostItem(Result):
    id: int
    amount_cents: int | None = Field(description=ENTRY_AMOUNT)
    currency: str | None = Field(description=ENTRY_CURRENCY)
    cost_category: CostCategory = Field(
        description=(
            "capex (one-time) or opex (running). Follows from the type unless changed by a person."
        )
    )
    cost_type: str | None = Field(
        description="Free kinds such as software, tokens, implementation, infrastructure."
    )
    vendor_name: str | None = Field(description="Free text as recorded.")
    description: str | None
    entry_date: date = Field(description=ENTRY_DATE)


class ValueItem(Result):
    id: int
    amount_cents: int | None = Field(description=ENTRY_AMOUNT)
    currency: str | None = Field(description=ENTRY_CURRENCY)
    status: ValueStatus = Field(
        description=(
            "draft, calculated, reviewed, approved, disputed or archived. Only approved entries "
            "count toward reported ROI: summing every row regardless of status disagrees with GET "
            "/roi."
        )
    )
    counts_toward_roi: bool = Field(description="True exactly when status is approved.")
    entry_type: str | None
    entry_date: date = Field(description=ENTRY_DATE)


class NoteItem(Result):
    id: int
    author: str | None = Field(description="The author's name.")
    body: str
    created_at: str


class InitiativeDetail(Result):
    id: int
    title: str
    description: str | None
    stage: Stage = Field(description=STAGE)
    status: RolledUpStatus
    category: str | None
    is_sample: bool = Field(description="Provisioned demo data.")
    owner: PersonRef | None = Field(description="The owner, by name only.")
    url: str | None = Field(description="The initiative's page in the application.")
    business_case: BusinessCase
    plan: PlanAgainstActuals = Field(
        description=(
            "The business case held against actuals to date: planned and actual ROI, the value "
            "and cost due by now against what arrived, and the payback month."
        )
    )
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
    platform: str = Field(description="Which system it connects to.")
    name: str | None
    status: IntegrationStatus = Field(description=INTEGRATION_STATUS)
    last_sync_status: str | None = Field(description="How the latest sync ended.")
    last_synced_at: str | None = Field(description=LAST_SYNCED_AT)
    reauth_required: bool = Field(description="The platform refused the grant; reconnect.")


class IntegrationListResult(Result):
    integrations: list[IntegrationItem] = Field(description="By platform, then id.")
    total: int = Field(description="How many connections match, whether shown or not.")
    has_more: bool = Field(description="True when more match after this page.")
    next_cursor: str | None = Field(default=None, description=NEXT_CURSOR)


# get_roi_breakdown: GET /roi/breakdown (SEMANTICS R37), its rows whole ----------------------


class BreakdownItem(Result):
    key: int | str | None = Field(
        description=(
            "The initiative id (by=initiative), the first day of the month or fiscal quarter "
            "(month, quarter), the cost type (cost_type), the vendor id (vendor) or the value "
            "entry status (value_status); null for cost with no cost type or no vendor."
        )
    )
    label: str = Field(
        description=(
            "Display name: the initiative's title, 2026-04, Q2 2026 (FY2026/27 Q1 when the "
            "fiscal year starts in another month), the cost type, the vendor's name, the "
            'status capitalised (Draft); "No cost type" and "No vendor" for a null key.'
        )
    )
    approved_value_cents: int | None = Field(
        description=(
            "Approved value entries only; null when by is cost_type or vendor. By value_status: "
            "the row's value_cents on the approved row, 0 on the others."
        )
    )
    capex_cents: int | None = Field(
        description="One-time part of total cost; null when by is value_status."
    )
    opex_cents: int | None = Field(
        description="Running part of total cost; null when by is value_status."
    )
    total_cost_cents: int | None = Field(
        description="capex_cents + opex_cents; null when by is value_status."
    )
    net_value_cents: int | None = Field(
        description=(
            "Approved value minus total cost; null when by is cost_type, vendor or value_status."
        )
    )
    roi: float | None = Field(
        description=(
            "Net value divided by total cost; null when there is no cost, and when by is "
            "cost_type, vendor or value_status."
        )
    )
    value_cents: int | None = Field(
        description=(
            "By value_status: the sum of the converted value entries in window and scope with "
            "that status, whatever it is; null for every other by."
        )
    )


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
        description=(
            "Ordered by key (null last; by value_status in the order draft, calculated, "
            "reviewed, approved, disputed, archived); across all pages they add up to "
            "get_roi_summary."
        )
    )
    has_more: bool = Field(description="True when more rows follow this page.")
    next_cursor: str | None = Field(description=NEXT_CURSOR)


# list_decisions: GET /decisions's rows, whole -----------------------------------------------


class DecisionItem(Result):
    id: int
    initiative_id: int | None = Field(description="Null when the initiative no longer exists.")
    subject_title: str = Field(description="The initiative's title at decision time.")
    outcome: Outcome = Field(description="continue, scale, fix, pause or retire.")
    outcome_label: str = Field(description="Display wording of the outcome.")
    rationale: str = Field(description="Always present.")
    stage_before: Stage = Field(description="The initiative's stage before the decision.")
    stage_after: Stage = Field(description="The initiative's stage after the decision.")
    stage_changed: bool = Field(
        description=(
            "Whether stage_before and stage_after differ; some outcomes leave the stage unchanged."
        )
    )
    decided_at: str | None = Field(
        description="The date to report the decision under. Key always present; may be null."
    )
    decided_by: PersonRef | None = Field(description="Who decided, by name only.")
    next_review_on: date | None = Field(
        description="Suggested from the outcome; may be changed by the decider."
    )
    currency: str | None = Field(description=AMOUNTS_CURRENCY)
    approved_value_cents: int | None = Field(
        description=(
            "Approved value at the moment of the decision (a snapshot, not a recomputation)."
        )
    )
    cost_to_date_cents: int | None = Field(description="Cost to date at decision time.")
    net_cents: int | None = Field(
        description="approved_value_cents minus cost_to_date_cents at decision time."
    )
    planned_value_cents: int | None = Field(description="Total promised by the business case.")
    planned_value_to_date_cents: int | None = Field(
        description="The part of the plan due by the decision date."
    )
    roi: float | None = Field(description="Ratio at decision time; null when there was no cost.")
    created_at: str = Field(description=WRITTEN_AT)
    updated_at: str = Field(description=CHANGED_AT)


class DecisionListResult(Result):
    decisions: list[DecisionItem] = Field(
        description="Oldest change first, as GET /decisions serves them."
    )
    has_more: bool = Field(description="True when more match after this page.")
    next_cursor: str | None = Field(description=NEXT_CURSOR)


# list_metric_readings: GET /observations's rows, whole --------------------------------------


class ReadingItem(Result):
    id: int
    metric_id: int | None = Field(description="The metric read.")
    metric_key: str | None = Field(description="The metric's canonical key.")
    initiative_id: int | None = Field(description="The initiative the reading is about.")
    value: float | None = Field(
        description="The reading, in the metric's unit. Key always present; may be null."
    )
    role: str | None = Field(description="baseline or reading.")
    baseline_method: str | None = Field(
        description="How a baseline was arrived at, when it is one."
    )
    observed_at: str | None = Field(description="When the reading was taken.")
    period_start: date | None
    period_end: date | None
    is_estimated: bool
    sample_size: int | None = Field(description="How many observations the reading summarises.")
    quality_score: float | None
    source: SourceRef
    created_at: str = Field(description=WRITTEN_AT)
    updated_at: str = Field(description=CHANGED_AT)


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


class ConnectionRef(Result):
    id: int
    name: str | None
    status: IntegrationStatus = Field(description=INTEGRATION_STATUS)
    last_synced_at: str | None = Field(description=LAST_SYNCED_AT)


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
