"""The demo account: a realistic AI-ROI portfolio, written as a bundle (BUNDLE.md).

`airoi demo` loads what `build_demo_bundle(today)` returns and issues a token for
`DEMO_OWNER_USER_ID`. The company is a fictional freight firm, Northwind Freight,
with a dozen AI initiatives in every stage, eighteen months of costs from several
vendors in USD and EUR, value in every review status, metrics with baselines and
readings, budgets that land in every budget status (SEMANTICS R16-R25), decisions of
every outcome and connections in every status.

Every date is an offset from `today` in whole months, and amounts vary only through
a generator seeded with a fixed constant, so one `today` always gives the same
bundle and refreshing the demo on a later day moves the whole story forward.

Ids live in a high range (900_000 and up), a block per kind, so the demo never
collides with an account's own records and an id says what it is.
"""

from __future__ import annotations

import calendar
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from fractions import Fraction
from typing import Any, NamedTuple

from sqlalchemy import Connection, Engine, delete, select

from airoi.db import tables
from airoi.load import LoadReport, load_bundle
from airoi.load.kinds import SERVED_LISTS
from airoi.timeutil import format_datetime

DEMO_ACCOUNT_ID = 900_000
DEMO_ACCOUNT_NAME = "Northwind Freight (demo)"
DEMO_OWNER_USER_ID = 900_101

# Every credential, stored secret setting and error prose of the demo's connections
# contains this text, so a test can search any response or log for it (SEMANTICS R15).
DEMO_SECRET_MARKER = "demo-not-a-real"  # noqa: S105 - a marker, not a secret

_SEED = 20_240_917
_CURRENCY = "USD"
# The pending revision's annual figure (capex + 12 months of opex) is above this;
# every approved version's is below it.
_APPROVAL_THRESHOLD_CENTS = 25_000_000

_Row = dict[str, Any]

# People.
_MAYA = 900_101  # owner, COO
_DANIEL = 900_102  # admin, VP Engineering
_PRIYA = 900_103  # member, Head of Customer Support
_TOMAS = 900_104  # member, Sales Operations
_GRACE = 900_105  # viewer, FP&A analyst
_JONAS = 900_106  # member, Legal Operations (Berlin)
_SAM = 900_107  # member, former Marketing lead, removed

# Vendors.
_OPENAI = 900_201
_ANTHROPIC = 900_202
_GITHUB = 900_203
_AWS = 900_204
_AWS_OLD = 900_205  # "AWS", merged into "Amazon Web Services"
_SNOWFLAKE = 900_206
_KESTREL = 900_207  # implementation partner, invoices in EUR
_ZENDESK = 900_208
_SALESFORCE = 900_209
_MISTRAL = 900_210  # invoices in EUR
_DATADOG = 900_211

# Initiatives.
_TRIAGE = 900_301
_COPILOT = 900_302
_SALES_EMAIL = 900_303
_INVOICES = 900_304
_FORECAST = 900_305
_CONTRACTS = 900_306
_ROUTES = 900_307
_KNOWLEDGE = 900_308
_MEETING_NOTES = 900_309
_CHARGEBACKS = 900_310
_IMAGES = 900_311
_CHURN = 900_312
_SAMPLE_HR = 900_313
_SAMPLE_SUMMARIES = 900_314
_SAMPLE_CODE_REVIEW = 900_315

# Metrics.
_M_RESPONSE = 900_501
_M_AUTORESOLVE = 900_502
_M_PR_CYCLE = 900_503
_M_INVOICE_COST = 900_504
_M_REPLY_RATE = 900_505
_M_FORECAST_ERROR = 900_506
_M_CONTRACT_TURNAROUND = 900_507
_M_CSAT_LEGACY = 900_508
_M_HR_DEFLECTION = 900_509

# Connections.
_C_OPENAI = 900_801
_C_ANTHROPIC = 900_802
_C_COPILOT = 900_803
_C_ZENDESK = 900_804
_C_SALESFORCE = 900_805
_C_SNOWFLAKE = 900_806
_C_AWS = 900_807

# First id of each kind that is numbered as it is generated.
_FIRST_NOTE = 900_401
_FIRST_BUDGET = 900_601
_FIRST_DECISION = 900_701
_FIRST_COST = 901_001
_FIRST_VALUE = 902_001
_FIRST_OBSERVATION = 903_001

_FORMULA_ID = {"cost_savings": 7_101, "time_saved": 7_102, "revenue_uplift": 7_103}

_KEYS = (
    "accounts",
    "users",
    "fx_rates",
    "vendors",
    "initiatives",
    "initiative_notes",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "budget_versions",
    "decisions",
    "integrations",
    "assessments",
)


def build_demo_bundle(today: date) -> dict[str, Any]:
    """The demo account as a bundle, every date relative to `today`."""
    return _Demo(today).build()


# Provenance phrases of value entries (SPEC 2.4).
_FORMULA = "calculated from a formula"
_SYNCED = "synced from a connection"
_BY_HAND = "entered by hand"

# A vendor as named on invoices -> (vendor id after merges, invoice currency, the
# connection that brings its usage in, if any).
_INVOICED_AS: dict[str, tuple[int, str, int | None]] = {
    "OpenAI": (_OPENAI, "USD", _C_OPENAI),
    "Anthropic": (_ANTHROPIC, "USD", _C_ANTHROPIC),
    "GitHub": (_GITHUB, "USD", _C_COPILOT),
    "Amazon Web Services": (_AWS, "USD", _C_AWS),
    # Merged into Amazon Web Services: entries were repointed and keep the old name.
    "AWS": (_AWS, "USD", _C_AWS),
    "Snowflake": (_SNOWFLAKE, "USD", _C_SNOWFLAKE),
    "Kestrel Partners GmbH": (_KESTREL, "EUR", None),
    "Zendesk": (_ZENDESK, "USD", None),
    "Salesforce": (_SALESFORCE, "USD", None),
    "Mistral AI": (_MISTRAL, "EUR", None),
    "Datadog": (_DATADOG, "USD", None),
}
# The AWS connection was disconnected two months ago; AWS spend since arrives by import.
_AWS_DISCONNECTED = -2


class _CostStream(NamedTuple):
    """A recurring cost: one entry a month from month `first` through `last`."""

    initiative_id: int
    vendor: str | None  # as invoiced; None for internal work
    cost_type: str
    first: int  # month offsets from today's month
    last: int
    cents: int  # in the first month, in the vendor's currency
    growth: int  # cents added each month
    description: str


_COST_STREAMS: tuple[tuple[int, str | None, str, int, int, int, int, str], ...] = (
    # Support triage: tokens, the Zendesk AI add-on, hosting, and Kestrel's build.
    (_TRIAGE, "OpenAI", "tokens", -16, 0, 280_000, 22_000, "GPT-4o triage and reply drafts"),
    (_TRIAGE, "OpenAI", "tokens", -16, 0, 18_000, 1_000, "Embeddings for similar tickets"),
    (_TRIAGE, "Zendesk", "software", -15, 0, 240_000, 0, "Zendesk Advanced AI, 48 agents"),
    (_TRIAGE, "Amazon Web Services", "infrastructure", -16, 0, 65_000, 2_000, "Triage queue"),
    (_TRIAGE, "Kestrel Partners GmbH", "implementation", -16, -14, 1_800_000, 0, "Triage build"),
    (_TRIAGE, "OpenAI", "tokens", -10, 0, 42_000, 3_000, "GPT-4o mini intent pre-filter"),
    (_TRIAGE, "Snowflake", "infrastructure", -13, 0, 38_000, 1_500, "Support analytics"),
    (_TRIAGE, "Datadog", "software", -13, 0, 31_000, 0, "LLM observability"),
    # Coding assistant: the Claude Code pilot (Copilot seats are counted apart).
    (_COPILOT, "Anthropic", "tokens", -5, 0, 40_000, 8_000, "Claude Code pilot"),
    (_COPILOT, "GitHub", "software", -8, 0, 46_800, 0, "Copilot Enterprise, 12 staff engineers"),
    # Sales email drafting: pilot spend before its budget starts next month.
    (_SALES_EMAIL, "Anthropic", "tokens", -3, 0, 30_000, 12_000, "Email drafting pilot"),
    (_SALES_EMAIL, "Salesforce", "software", -2, 0, 150_000, 0, "Einstein add-on, pilot seats"),
    # Invoice extraction, finished three months ago.
    (_INVOICES, "Kestrel Partners GmbH", "implementation", -17, -15, 1_350_000, 0, "Build"),
    (_INVOICES, "Anthropic", "tokens", -15, -3, 110_000, 4_000, "Invoice extraction"),
    (_INVOICES, "AWS", "infrastructure", -15, -3, 52_000, 0, "Textract and S3 intake"),
    (_INVOICES, "AWS", "infrastructure", -15, -3, 21_000, 0, "Lambda matching jobs"),
    # Demand forecasting: over budget on both halves.
    (_FORECAST, "Kestrel Partners GmbH", "implementation", -14, -10, 1_500_000, 0, "Model build"),
    (_FORECAST, "Snowflake", "infrastructure", -14, 0, 380_000, 12_000, "FORECAST_WH credits"),
    (_FORECAST, "AWS", "infrastructure", -14, 0, 90_000, 4_000, "SageMaker training"),
    (_FORECAST, "OpenAI", "tokens", -8, 0, 40_000, 2_000, "Forecast commentary"),
    (_FORECAST, "Snowflake", "infrastructure", -14, 0, 46_000, 2_000, "Shipment history storage"),
    (_FORECAST, "Datadog", "software", -10, 0, 18_000, 0, "Model monitoring"),
    # Contract review: an EUR initiative, paused three months ago.
    (_CONTRACTS, "Kestrel Partners GmbH", "implementation", -12, -11, 1_250_000, 0, "Playbook"),
    (_CONTRACTS, "Anthropic", "tokens", -11, -4, 90_000, 6_000, "Contract review"),
    (_CONTRACTS, "Mistral AI", "tokens", -9, -4, 45_000, 0, "German-language contracts"),
    # Knowledge search: internal build time (no vendor) overruns the capex envelope.
    (_KNOWLEDGE, None, "implementation", -7, -4, 700_000, 0, "Platform team build time"),
    (_KNOWLEDGE, "OpenAI", "tokens", -6, 0, 15_000, 0, "Embeddings for the index"),
    (_KNOWLEDGE, "OpenAI", "tokens", -5, 0, 35_000, 6_000, "GPT-4o mini answers"),
    (_KNOWLEDGE, "Anthropic", "software", -4, 0, 30_000, 0, "Claude Team seats for the pilot"),
    (_KNOWLEDGE, "Datadog", "software", -5, 0, 12_000, 0, "Search monitoring"),
    (_KNOWLEDGE, "AWS", "infrastructure", -6, -3, 70_000, 0, "OpenSearch vector index"),
    # Billing consolidated: the same spend now arrives under the new vendor name.
    (_KNOWLEDGE, "Amazon Web Services", "infrastructure", -2, 0, 72_000, 0, "OpenSearch"),
    # Image generation, dismissed.
    (_IMAGES, "OpenAI", "tokens", -12, -9, 25_000, 5_000, "Campaign image generation"),
    # Samples.
    (_SAMPLE_HR, "OpenAI", "tokens", -6, 0, 20_000, 1_000, "Sample: HR assistant"),
    (_SAMPLE_SUMMARIES, "Anthropic", "tokens", -2, 0, 12_000, 0, "Sample: call summaries"),
)


class _ValueStream(NamedTuple):
    """A monthly value figure from month `first` through `last`."""

    initiative_id: int
    entry_type: str
    first: int
    last: int
    cents: int
    growth: int
    currency: str
    provenance: str
    connection_id: int | None


_VALUE_STREAMS: tuple[tuple[int, str, int, int, int, int, str, str, int | None], ...] = (
    (_TRIAGE, "cost_savings", -12, 0, 1_100_000, 60_000, "USD", _FORMULA, _C_ZENDESK),
    (_INVOICES, "cost_savings", -14, -3, 780_000, 25_000, "USD", _FORMULA, _C_SNOWFLAKE),
    (_FORECAST, "revenue_uplift", -9, 0, 2_100_000, 90_000, "USD", _SYNCED, _C_SNOWFLAKE),
    (_CONTRACTS, "cost_savings", -8, -4, 520_000, 20_000, "EUR", _BY_HAND, None),
    (_SAMPLE_HR, "time_saved", -5, -1, 90_000, 5_000, "USD", _BY_HAND, None),
)
# (initiative, month) -> (status, note) where review went otherwise than by age.
_REVIEW_EXCEPTIONS: dict[tuple[int, int], tuple[str, str]] = {
    (_FORECAST, -3): (
        "disputed",
        "Finance disputes the attribution: a price promotion drove most of this uplift.",
    ),
}


@dataclass(frozen=True)
class _Series:
    """A metric's baseline and its monthly readings on one initiative."""

    metric_id: int
    initiative_id: int
    baseline_first: int
    baseline_last: int
    first: int
    last: int
    baseline: float
    start: float
    end: float
    sample_size: int
    connection_id: int | None
    baseline_method: str


_SeriesShape = tuple[int, int, int, int, int, int, float, float, float, int, int | None]


def _first_of_month(year: int, month_index: int) -> date:
    index = year * 12 + month_index
    return date(index // 12, index % 12 + 1, 1)


def _fake_pem(body: str) -> str:
    return f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----"


def _cents_half_even(value: Decimal | Fraction) -> int:
    if isinstance(value, Fraction):
        value = Decimal(value.numerator) / Decimal(value.denominator)
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


class _Demo:
    def __init__(self, today: date) -> None:
        self.today = today
        self.rng = random.Random(_SEED)
        self.rows: dict[str, list[_Row]] = {key: [] for key in _KEYS}
        self.next_id = {
            "initiative_notes": _FIRST_NOTE,
            "budget_versions": _FIRST_BUDGET,
            "decisions": _FIRST_DECISION,
            "cost_entries": _FIRST_COST,
            "value_entries": _FIRST_VALUE,
            "observations": _FIRST_OBSERVATION,
        }
        self.fx: list[tuple[str, date, str]] = []

    # Dates -------------------------------------------------------------------

    def month(self, offset: int) -> date:
        """First day of the month `offset` months from today's (0 is this month)."""
        return _first_of_month(self.today.year, self.today.month - 1 + offset)

    def month_end(self, offset: int) -> date:
        return self.month(offset + 1) - timedelta(days=1)

    def day(self, offset: int, day: int) -> date:
        """Day `day` of month `offset`, never after yesterday."""
        first = self.month(offset)
        last_day = calendar.monthrange(first.year, first.month)[1]
        return min(first.replace(day=min(day, last_day)), self.today - timedelta(days=1))

    def at(self, offset: int, day: int, hour: int = 9, minute: int = 0, ms: int = 0) -> str:
        """A datetime string on day `day` of month `offset`, never after yesterday."""
        moment = datetime.combine(self.day(offset, day), time(hour, minute, 0, ms % 1000 * 1000))
        return format_datetime(moment)

    def on(self, day: date, hour: int = 9, minute: int = 0) -> str:
        return format_datetime(datetime.combine(day, time(hour, minute)))

    def take_id(self, key: str) -> int:
        value = self.next_id[key]
        self.next_id[key] += 1
        return value

    # The bundle --------------------------------------------------------------

    def build(self) -> dict[str, Any]:
        self.account_and_people()
        self.initiatives()
        self.notes()
        self.costs()
        self.values()
        self.metrics_and_observations()
        self.budgets()
        self.decisions()
        self.integrations()
        self.assessments()
        return dict(self.rows)

    def account_and_people(self) -> None:
        self.rows["accounts"].append(
            {
                "id": DEMO_ACCOUNT_ID,
                "name": DEMO_ACCOUNT_NAME,
                "currency": _CURRENCY,
                "api_access": True,
                "fiscal_year_start_month": 1,
                "approval_threshold_cents": _APPROVAL_THRESHOLD_CENTS,
                "internal": False,
            }
        )
        people = [
            (_MAYA, "Maya Chen", "maya.chen", "owner", None),
            (_DANIEL, "Daniel Okafor", "daniel.okafor", "admin", None),
            (_PRIYA, "Priya Raman", "priya.raman", "member", None),
            (_TOMAS, "Tomás Alvarez", "tomas.alvarez", "member", None),
            (_GRACE, "Grace Liu", "grace.liu", "viewer", None),
            (_JONAS, "Jonas Weber", "jonas.weber", "member", None),
            (_SAM, "Sam Porter", "sam.porter", "member", self.at(-5, 14, 17, 30)),
        ]
        for user_id, name, mailbox, role, removed_at in people:
            self.rows["users"].append(
                {
                    "id": user_id,
                    "account_id": DEMO_ACCOUNT_ID,
                    "name": name,
                    "email": f"{mailbox}@northwind-freight.example",
                    "role": role,
                    "removed_at": removed_at,
                }
            )
        # EUR into USD, three rates over the eighteen months (SEMANTICS R5).
        for offset, rate in ((-18, "1.0850"), (-9, "1.1240"), (-3, "1.1610")):
            self.fx.append(("EUR", self.month(offset), rate))
            self.rows["fx_rates"].append(
                {
                    "account_id": DEMO_ACCOUNT_ID,
                    "currency": "EUR",
                    "rate": rate,
                    "effective_from": self.month(offset).isoformat(),
                }
            )
        vendors = [
            (_OPENAI, "OpenAI", None),
            (_ANTHROPIC, "Anthropic", None),
            (_GITHUB, "GitHub", None),
            (_AWS, "Amazon Web Services", None),
            (_AWS_OLD, "AWS", _AWS),
            (_SNOWFLAKE, "Snowflake", None),
            (_KESTREL, "Kestrel Partners GmbH", None),
            (_ZENDESK, "Zendesk", None),
            (_SALESFORCE, "Salesforce", None),
            (_MISTRAL, "Mistral AI", None),
            (_DATADOG, "Datadog", None),
        ]
        for vendor_id, name, merged_into_id in vendors:
            self.rows["vendors"].append(
                {
                    "id": vendor_id,
                    "account_id": DEMO_ACCOUNT_ID,
                    "name": name,
                    "merged_into_id": merged_into_id,
                }
            )

    # Initiatives -------------------------------------------------------------

    def initiative(self, initiative_id: int, title: str, stage: str, **fields: Any) -> None:
        row: _Row = {
            "id": initiative_id,
            "account_id": DEMO_ACCOUNT_ID,
            "title": title,
            "description": None,
            "hypothesis": None,
            "stage": stage,
            "is_sample": False,
            "category": None,
            "priority": None,
            "source": None,
            "business_unit": None,
            "department": None,
            "gl_dimension_value": None,
            "owner_id": None,
            "confidence_score": None,
            "roi_time_horizon_years": None,
            "currency": _CURRENCY,
            "expected_capex_cents": None,
            "expected_opex_cents": None,
            "expected_cost_savings_cents": None,
            "expected_revenue_uplift_cents": None,
            "started_at": None,
            "went_live_at": None,
            "approved_at": None,
            "closed_at": None,
            "submitted_for_review_at": None,
            "created_at": None,
            "updated_at": None,
        }
        unknown = set(fields) - set(row)
        if unknown:
            raise ValueError(f"not an initiative field: {sorted(unknown)}")
        row.update(fields)
        if row["updated_at"] is None:
            stamps = [row[name] for name in row if name.endswith("_at") and row[name]]
            row["updated_at"] = max(stamps)
        self.rows["initiatives"].append(row)

    def initiatives(self) -> None:
        at = self.at
        self.initiative(
            _TRIAGE,
            "Support ticket triage and reply drafting",
            "live",
            description=(
                "An LLM classifies every inbound Zendesk ticket (topic, urgency, customer tier), "
                "routes it to the right queue and drafts a first reply for the agent to edit. "
                "Tier 1 shipment-status questions are answered without an agent."
            ),
            hypothesis=(
                "Automatic triage and drafted replies cut first response time by 60% and free "
                "about 2,500 agent hours a year, without lowering CSAT."
            ),
            category="Customer support automation",
            priority=1,
            source="Leadership request",
            business_unit="Operations",
            department="Customer Support",
            gl_dimension_value="CC-4100-SUPPORT",
            owner_id=_PRIYA,
            confidence_score=0.8,
            roi_time_horizon_years=3,
            expected_capex_cents=6_000_000,
            expected_opex_cents=30_000_000,
            expected_cost_savings_cents=48_000_000,
            expected_revenue_uplift_cents=0,
            created_at=at(-19, 6, 10, 12),
            submitted_for_review_at=at(-18, 3, 14),
            approved_at=at(-17, 18, 16, 30),
            started_at=at(-16, 2, 9),
            went_live_at=at(-13, 11, 7),
            updated_at=at(-1, 22, 11, 5),
        )
        self.initiative(
            _COPILOT,
            "AI coding assistant for engineering",
            "live",
            description=(
                "GitHub Copilot Business for every engineer in the platform and data teams, "
                "plus a Claude Code pilot for the integrations squad."
            ),
            hypothesis=(
                "Assisted coding shortens pull-request cycle time by 25% and saves each "
                "engineer about two hours a week."
            ),
            category="Developer productivity",
            priority=2,
            source="Employee idea",
            business_unit="Technology",
            department="Engineering",
            gl_dimension_value="CC-2200-ENG",
            owner_id=_DANIEL,
            confidence_score=0.7,
            roi_time_horizon_years=2,
            expected_capex_cents=0,
            expected_opex_cents=6_000_000,
            expected_cost_savings_cents=36_000_000,
            expected_revenue_uplift_cents=0,
            created_at=at(-20, 9, 15, 40),
            submitted_for_review_at=at(-19, 2, 10),
            approved_at=at(-18, 27, 17),
            started_at=at(-17, 1, 8),
            went_live_at=at(-17, 15, 8),
            updated_at=at(-2, 12, 9, 45),
        )
        self.initiative(
            _SALES_EMAIL,
            "Sales follow-up email drafting",
            "implementing",
            description=(
                "Claude drafts follow-up emails in Salesforce from call notes and shipment "
                "history; account executives review and send."
            ),
            hypothesis=(
                "Faster, more specific follow-ups raise the outbound reply rate from 3% to "
                "5% and add $400k of won freight revenue a year."
            ),
            category="Sales enablement",
            priority=2,
            source="AI readiness assessment",
            business_unit="Commercial",
            department="Sales",
            gl_dimension_value="CC-3100-SALES",
            owner_id=_TOMAS,
            confidence_score=0.55,
            roi_time_horizon_years=2,
            expected_capex_cents=2_000_000,
            expected_opex_cents=9_600_000,
            expected_cost_savings_cents=0,
            expected_revenue_uplift_cents=80_000_000,
            created_at=at(-8, 11, 13),
            submitted_for_review_at=at(-7, 5, 9, 30),
            approved_at=at(-4, 20, 15),
            started_at=at(-3, 1, 9),
        )
        self.initiative(
            _INVOICES,
            "Carrier invoice data extraction",
            "completed",
            description=(
                "Extract line items from carrier invoices (PDF and scanned) with Claude and "
                "AWS Textract, match them to shipments and post them to the ERP."
            ),
            hypothesis=(
                "Automated extraction drops the cost per processed invoice from $6.40 to "
                "under $1.50 and retires the outsourced keying contract."
            ),
            category="Finance automation",
            priority=1,
            source="Leadership request",
            business_unit="Finance",
            department="Accounts Payable",
            gl_dimension_value="CC-5200-AP",
            owner_id=_GRACE,
            confidence_score=0.85,
            roi_time_horizon_years=2,
            expected_capex_cents=4_500_000,
            expected_opex_cents=5_000_000,
            expected_cost_savings_cents=22_000_000,
            expected_revenue_uplift_cents=0,
            created_at=at(-22, 14, 16),
            submitted_for_review_at=at(-20, 8, 11),
            approved_at=at(-18, 10, 10),
            started_at=at(-17, 3, 9),
            went_live_at=at(-14, 20, 6),
            closed_at=at(-3, 28, 17),
        )
        self.initiative(
            _FORECAST,
            "Lane demand forecasting",
            "live",
            description=(
                "Weekly demand forecasts per lane and customer from a model trained on "
                "Snowflake shipment history, feeding capacity planning and spot pricing."
            ),
            hypothesis=(
                "Better forecasts cut empty miles and let pricing capture peak demand: "
                "$2.4M more contribution over three years."
            ),
            category="Operations analytics",
            priority=1,
            source="Leadership request",
            business_unit="Operations",
            department="Network Planning",
            gl_dimension_value="CC-4300-PLAN",
            owner_id=_DANIEL,
            confidence_score=0.6,
            roi_time_horizon_years=3,
            expected_capex_cents=8_000_000,
            expected_opex_cents=21_600_000,
            expected_cost_savings_cents=0,
            expected_revenue_uplift_cents=240_000_000,
            created_at=at(-17, 7, 9),
            submitted_for_review_at=at(-16, 12, 14),
            approved_at=at(-15, 21, 16),
            started_at=at(-14, 1, 9),
            went_live_at=at(-10, 6, 5),
        )
        self.initiative(
            _CONTRACTS,
            "Contract review assistant for Legal",
            "paused",
            description=(
                "First-pass review of customer and carrier contracts against the Legal "
                "playbook, flagging non-standard liability and payment clauses."
            ),
            hypothesis=(
                "First-pass review cuts contract turnaround from three days to one and saves "
                "outside-counsel hours."
            ),
            category="Legal operations",
            priority=3,
            source="Employee idea",
            business_unit="Corporate",
            department="Legal",
            gl_dimension_value="CC-6100-LEGAL",
            owner_id=_JONAS,
            confidence_score=0.5,
            roi_time_horizon_years=2,
            currency="EUR",
            expected_capex_cents=3_000_000,
            expected_opex_cents=8_400_000,
            expected_cost_savings_cents=15_000_000,
            expected_revenue_uplift_cents=0,
            created_at=at(-15, 3, 10),
            submitted_for_review_at=at(-14, 9, 15),
            approved_at=at(-13, 2, 11),
            started_at=at(-12, 1, 9),
            went_live_at=at(-9, 17, 8),
        )
        self.initiative(
            _ROUTES,
            "Dispatch route-planning copilot",
            "reviewing",
            description=(
                "Suggest load sequences and driver assignments to dispatchers, explaining "
                "each suggestion in plain language."
            ),
            hypothesis="Dispatchers plan a day's routes in half the time with 4% fewer miles.",
            category="Operations analytics",
            priority=2,
            source="Employee idea",
            business_unit="Operations",
            department="Dispatch",
            gl_dimension_value="CC-4200-DISPATCH",
            owner_id=_PRIYA,
            confidence_score=0.45,
            roi_time_horizon_years=3,
            expected_capex_cents=12_000_000,
            expected_opex_cents=14_400_000,
            expected_cost_savings_cents=60_000_000,
            expected_revenue_uplift_cents=0,
            created_at=at(-4, 8, 12),
            submitted_for_review_at=at(-1, 6, 10),
        )
        self.initiative(
            _KNOWLEDGE,
            "Internal knowledge search",
            "implementing",
            description=(
                "Retrieval-augmented search over Confluence, SharePoint and the SOP library, "
                "answering with citations in Slack and the intranet."
            ),
            hypothesis=(
                "Employees find procedures in seconds instead of asking colleagues: one hour "
                "saved per office employee a month."
            ),
            category="Knowledge management",
            priority=3,
            source="AI readiness assessment",
            business_unit="Technology",
            department="IT",
            gl_dimension_value="CC-2100-IT",
            owner_id=_DANIEL,
            confidence_score=0.65,
            roi_time_horizon_years=2,
            expected_capex_cents=2_500_000,
            expected_opex_cents=6_000_000,
            expected_cost_savings_cents=18_000_000,
            expected_revenue_uplift_cents=0,
            created_at=at(-10, 13, 9),
            submitted_for_review_at=at(-9, 4, 10),
            approved_at=at(-8, 19, 14),
            started_at=at(-7, 1, 9),
        )
        self.initiative(
            _MEETING_NOTES,
            "Meeting notes for account managers",
            "identified",
            description="Record and summarise customer calls into Salesforce activity notes.",
            hypothesis="Account managers spend 30 minutes less a day on call admin.",
            category="Sales enablement",
            priority=4,
            source="Employee idea",
            business_unit="Commercial",
            department="Account Management",
            owner_id=_TOMAS,
            created_at=at(-1, 3, 16, 20),
        )
        self.initiative(
            _CHARGEBACKS,
            "Autonomous chargeback dispute agent",
            "rejected",
            description=(
                "An agent that answers customer chargeback disputes end to end, including "
                "sending evidence packs to banks."
            ),
            hypothesis="Recover 40% more disputed revenue with no analyst time.",
            category="Finance automation",
            priority=5,
            source="Vendor pitch",
            business_unit="Finance",
            department="Credit Control",
            owner_id=_GRACE,
            confidence_score=0.2,
            roi_time_horizon_years=1,
            expected_capex_cents=5_000_000,
            expected_opex_cents=2_400_000,
            expected_cost_savings_cents=0,
            expected_revenue_uplift_cents=9_000_000,
            created_at=at(-9, 2, 11),
            submitted_for_review_at=at(-8, 14, 9),
            closed_at=at(-7, 3, 15),
        )
        self.initiative(
            _IMAGES,
            "Generated imagery for marketing campaigns",
            "dismissed",
            description="Generate campaign and social imagery instead of buying stock photos.",
            hypothesis="Halve the stock-photo and agency budget for social campaigns.",
            category="Marketing",
            priority=4,
            source="Employee idea",
            business_unit="Commercial",
            department="Marketing",
            owner_id=_SAM,
            confidence_score=0.4,
            roi_time_horizon_years=1,
            expected_capex_cents=0,
            expected_opex_cents=600_000,
            expected_cost_savings_cents=2_400_000,
            expected_revenue_uplift_cents=0,
            created_at=at(-14, 10, 14),
            approved_at=at(-13, 6, 10),
            started_at=at(-12, 1, 9),
            closed_at=at(-8, 26, 16),
        )
        self.initiative(
            _CHURN,
            "Customer churn early warning",
            "reviewing",
            description=(
                "Score every contract customer weekly for churn risk from volumes, claims, "
                "on-time performance and support sentiment."
            ),
            hypothesis="Saving two at-risk accounts a year pays for the model five times over.",
            category="Customer analytics",
            priority=2,
            source="AI readiness assessment",
            business_unit="Commercial",
            department="Account Management",
            owner_id=_TOMAS,
            confidence_score=0.5,
            roi_time_horizon_years=2,
            expected_capex_cents=3_500_000,
            expected_opex_cents=4_800_000,
            expected_cost_savings_cents=0,
            expected_revenue_uplift_cents=50_000_000,
            created_at=at(-3, 18, 10),
            submitted_for_review_at=at(-2, 25, 9),
        )
        self.initiative(
            _SAMPLE_HR,
            "Sample: HR policy assistant",
            "live",
            is_sample=True,
            description="A sample initiative: answer employees' HR policy questions in Slack.",
            hypothesis="Deflect 40% of HR policy tickets.",
            category="Employee experience",
            priority=3,
            source="Template",
            owner_id=_MAYA,
            roi_time_horizon_years=1,
            expected_capex_cents=0,
            expected_opex_cents=600_000,
            expected_cost_savings_cents=2_000_000,
            expected_revenue_uplift_cents=0,
            created_at=at(-8, 1, 8),
            approved_at=at(-7, 20, 8),
            started_at=at(-7, 24, 8),
            went_live_at=at(-6, 3, 8),
        )
        self.initiative(
            _SAMPLE_SUMMARIES,
            "Sample: Sales call summaries",
            "implementing",
            is_sample=True,
            description="A sample initiative: summarise recorded sales calls into the CRM.",
            category="Sales enablement",
            priority=4,
            source="Template",
            owner_id=_MAYA,
            created_at=at(-8, 1, 8, 1),
            approved_at=at(-3, 10, 8),
            started_at=at(-2, 1, 8),
        )
        self.initiative(
            _SAMPLE_CODE_REVIEW,
            "Sample: Automated code review",
            "identified",
            is_sample=True,
            description="A sample initiative: first-pass review comments on pull requests.",
            category="Developer productivity",
            source="Template",
            owner_id=_MAYA,
            created_at=at(-8, 1, 8, 2),
        )

    def notes(self) -> None:
        # ((initiative, author, month offset, day), body)
        notes: list[tuple[tuple[int, int, int, int], str]] = [
            (
                (_TRIAGE, _PRIYA, -15, 20),
                "Kick-off with Kestrel done; ticket taxonomy agreed (14 topics, 3 urgency levels).",
            ),
            (
                (_TRIAGE, _PRIYA, -13, 12),
                "Live for Tier 1 queues. Agents edit about 40% of drafted replies before sending.",
            ),
            (
                (_TRIAGE, _DANIEL, -7, 24),
                "Token spend grows with ticket volume; budget revision approved from next month.",
            ),
            (
                (_TRIAGE, _MAYA, -1, 22),
                "Tier 2 expansion requested. It is above the approval threshold, so it waits "
                "for my sign-off.",
            ),
            (
                (_COPILOT, _DANIEL, -17, 16),
                "Rolled out to 85 engineers. Seats are reviewed quarterly; unused seats go back.",
            ),
            (
                (_COPILOT, _DANIEL, -5, 3),
                "Claude Code pilot started with the integrations squad (8 people).",
            ),
            (
                (_SALES_EMAIL, _TOMAS, -3, 4),
                "Pilot with six account executives. The budget starts next month, once "
                "procurement signs the Salesforce add-on.",
            ),
            ((_INVOICES, _GRACE, -14, 21), "Live for the top 20 carriers, 78% of invoice volume."),
            (
                (_INVOICES, _GRACE, -3, 28),
                "Outsourced keying contract ended. Closing the initiative; the pipeline moves "
                "to run-the-business.",
            ),
            (
                (_FORECAST, _DANIEL, -10, 7),
                "Live for the 40 busiest lanes. MAPE 19% in the first month against 22.5% before.",
            ),
            (
                (_FORECAST, _GRACE, -4, 9),
                "Budget increase rejected: get Snowflake warehouse costs under control first.",
            ),
            (
                (_FORECAST, _GRACE, -3, 12),
                "Price promotion this month: uplift attribution disputed, see the value entry.",
            ),
            ((_CONTRACTS, _JONAS, -9, 18), "Live for NDAs and carrier agreements."),
            (
                (_CONTRACTS, _JONAS, -3, 15),
                "Paused until the works council signs off on processing personal data in "
                "contracts.",
            ),
            (
                (_KNOWLEDGE, _DANIEL, -1, 9),
                "Answer accuracy 71% in the pilot. Fixing chunking and permissions first.",
            ),
            ((_ROUTES, _PRIYA, -1, 6), "Submitted for review with two vendor quotes attached."),
            (
                (_CHARGEBACKS, _GRACE, -7, 3),
                "Rejected: banks require a human signature on dispute evidence.",
            ),
            (
                (_IMAGES, _MAYA, -8, 26),
                "Dismissed: the brand team rejected most images; licensing terms are unclear.",
            ),
            ((_CHURN, _TOMAS, -2, 25), "Data readiness checked with the analytics team."),
        ]
        for (initiative_id, author_id, offset, day), body in notes:
            self.rows["initiative_notes"].append(
                {
                    "id": self.take_id("initiative_notes"),
                    "initiative_id": initiative_id,
                    "author_id": author_id,
                    "body": body,
                    "created_at": self.at(offset, day, 15, 10),
                }
            )

    # Costs -------------------------------------------------------------------

    def cost_entry(
        self,
        initiative_id: int,
        amount_cents: int | None,
        cost_type: str,
        *,
        period: int | None,
        created: str,
        vendor: tuple[int, str] | None,
        description: str,
        currency: str = _CURRENCY,
        source: _Row | None = None,
        notes: str | None = None,
        is_estimated: bool = False,
        period_months: int = 1,
    ) -> None:
        entry_id = self.take_id("cost_entries")
        start = None if period is None else self.month(period)
        end = None if period is None else self.month_end(period + period_months - 1)
        self.rows["cost_entries"].append(
            {
                "id": entry_id,
                "initiative_id": initiative_id,
                "amount_cents": amount_cents,
                "currency": currency,
                "cost_type": cost_type,
                "cost_category": "capex" if cost_type == "implementation" else "opex",
                "period_start": None if start is None else start.isoformat(),
                "period_end": None if end is None else end.isoformat(),
                "vendor_id": None if vendor is None else vendor[0],
                "vendor_name": None if vendor is None else vendor[1],
                "description": description,
                "notes": notes,
                "is_estimated": is_estimated,
                # Months before last month are closed in the ledger.
                "locked": end is not None and end < self.month(-1),
                "source": source or {"type": "manual", "ref": None, "connection_id": None},
                "created_at": created,
                "updated_at": created,
            }
        )

    def costs(self) -> None:
        for line, row in enumerate(_COST_STREAMS):
            self.cost_stream(_CostStream._make(row), line)
        self.copilot_seats()
        self.cost_specials()

    def cost_stream(self, stream: _CostStream, line: int) -> None:
        if stream.vendor is None:
            vendor, currency, connection_id = None, _CURRENCY, None
        else:
            vendor_id, currency, connection_id = _INVOICED_AS[stream.vendor]
            vendor = (vendor_id, stream.vendor)
        usage = stream.cost_type in {"tokens", "infrastructure"}
        for step, offset in enumerate(range(stream.first, stream.last + 1)):
            amount = stream.cents + stream.growth * step
            description = stream.description
            estimated = False
            if usage:
                amount += self.rng.randint(-amount // 12, amount // 12)
                if offset == 0:  # this month so far, accrued from usage
                    days = calendar.monthrange(self.today.year, self.today.month)[1]
                    amount = amount * self.today.day // days
                    description += " (month to date)"
                    estimated = True
            month = f"{self.month(offset):%Y-%m}"
            source: _Row
            if connection_id is not None and not (
                connection_id == _C_AWS and offset >= _AWS_DISCONNECTED
            ):
                ref = f"usage/{month}/{line:02d}"
                source = {"type": "connection", "ref": ref, "connection_id": connection_id}
            elif vendor is not None:
                ref = f"AP-{month}-{line:02d}"
                source = {"type": "import", "ref": ref, "connection_id": None}
            else:
                source = {"type": "manual", "ref": None, "connection_id": None}
            # Milestones are invoiced at month end, usage early in the next month.
            if stream.cost_type == "implementation":
                created = self.at(offset, 28, 10, 30, ms=line * 10 + step)
            else:
                created = self.at(offset + 1, 3, 6, 15, ms=line * 10 + step)
            self.cost_entry(
                stream.initiative_id,
                amount,
                stream.cost_type,
                period=offset,
                created=created,
                vendor=vendor,
                description=description,
                currency=currency,
                source=source,
                is_estimated=estimated,
            )

    def copilot_seats(self) -> None:
        """GitHub Copilot Business at $19 a seat, from 85 seats growing to 140."""
        for step, offset in enumerate(range(-17, 1)):
            seats = 85 + (55 * step) // 17
            self.cost_entry(
                _COPILOT,
                seats * 1_900,
                "software",
                period=offset,
                created=self.at(offset, 2, 4, 0, ms=step),
                vendor=(_GITHUB, "GitHub"),
                description=f"GitHub Copilot Business, {seats} seats",
                source={
                    "type": "connection",
                    "ref": f"copilot-billing:{self.month(offset):%Y-%m}",
                    "connection_id": _C_COPILOT,
                },
            )

    def cost_specials(self) -> None:
        # A credit note (SEMANTICS R6: negative amounts are summed as they are).
        self.cost_entry(
            _TRIAGE,
            -41_250,
            "tokens",
            period=-5,
            created=self.at(-4, 9, 12),
            vendor=(_OPENAI, "OpenAI"),
            description="Service credit for the API incident",
            notes="Credit note CN-2291: SLA credit for degraded latency.",
            source={"type": "import", "ref": "CN-2291", "connection_id": None},
        )
        # Entries without a period are dated by their created_at (SEMANTICS R2).
        self.cost_entry(
            _TRIAGE,
            120_000,
            "implementation",
            period=None,
            created=self.at(-15, 12, 11),
            vendor=(_ZENDESK, "Zendesk"),
            description="Zendesk AI onboarding and sandbox setup fee",
        )
        self.cost_entry(
            _KNOWLEDGE,
            320_000,
            "implementation",
            period=None,
            created=self.at(-6, 19, 14),
            vendor=(_KESTREL, "Kestrel Partners GmbH"),
            currency="EUR",
            description="Security and permissions review of the document index",
            source={"type": "import", "ref": "KP-INV-2291", "connection_id": None},
        )
        # Agreed but not yet invoiced: no amount yet (SEMANTICS R6).
        self.cost_entry(
            _FORECAST,
            None,
            "implementation",
            period=0,
            created=self.at(0, 5, 10),
            vendor=(_KESTREL, "Kestrel Partners GmbH"),
            currency="EUR",
            description="Change request CR-7: holiday seasonality features",
            notes="Amount follows with Kestrel's invoice.",
            is_estimated=True,
        )
        # A prepaid year of Snowflake capacity, reported in the month it starts.
        self.cost_entry(
            _FORECAST,
            1_200_000,
            "infrastructure",
            period=-6,
            period_months=12,
            created=self.at(-6, 2, 9),
            vendor=(_SNOWFLAKE, "Snowflake"),
            description="Snowflake capacity commitment, 12 months",
            source={"type": "import", "ref": "SF-ORD-88412", "connection_id": None},
        )
        # Forecast for next month: future-dated, so it counts in no budget row (R21).
        self.cost_entry(
            _COPILOT,
            152_000,
            "software",
            period=1,
            created=self.at(-1, 20, 9),
            vendor=(_GITHUB, "GitHub"),
            description="GitHub Copilot Business seat true-up (forecast)",
            is_estimated=True,
        )

    # Value -------------------------------------------------------------------

    def value_entry(
        self,
        initiative_id: int,
        amount_cents: int | None,
        entry_type: str,
        status: str,
        *,
        period: int | None,
        created: str,
        provenance: str,
        currency: str = _CURRENCY,
        notes: str | None = None,
        is_estimated: bool = False,
        connection_id: int | None = None,
        period_months: int = 1,
    ) -> None:
        entry_id = self.take_id("value_entries")
        start = None if period is None else self.month(period)
        end = None if period is None else self.month_end(period + period_months - 1)
        formula = provenance == _FORMULA
        if formula:
            source_type = "formula"
        elif connection_id is not None:
            source_type = "connection"
        else:
            source_type = "manual"
        month = "none" if start is None else f"{start:%Y-%m}"
        ref = f"value:{initiative_id}:{entry_type}:{month}" if source_type != "manual" else None
        approved_at = None
        updated = created
        if status == "approved":
            # Approved in review about twelve days after the month (or the entry) closed.
            reviewed_from = end or date.fromisoformat(created[:10])
            approved_on = min(reviewed_from + timedelta(days=12), self.today - timedelta(days=1))
            approved_at = self.on(approved_on, 16, 45)
            updated = max(created, approved_at)
        self.rows["value_entries"].append(
            {
                "id": entry_id,
                "initiative_id": initiative_id,
                "amount_cents": amount_cents,
                "currency": currency,
                "status": status,
                "entry_type": entry_type,
                "period_start": None if start is None else start.isoformat(),
                "period_end": None if end is None else end.isoformat(),
                "is_estimated": is_estimated,
                "confidence_score": round(0.6 + self.rng.randint(0, 30) / 100, 2),
                "quality_score": round(0.7 + self.rng.randint(0, 25) / 100, 2),
                "notes": notes,
                "provenance": provenance,
                "calculation_version": 2 if formula else None,
                "formula_id": _FORMULA_ID.get(entry_type) if formula else None,
                "source": {"type": source_type, "ref": ref, "connection_id": connection_id},
                "approved_at": approved_at,
                "created_at": created,
                "updated_at": updated,
            }
        )

    def values(self) -> None:
        for row in _VALUE_STREAMS:
            stream = _ValueStream._make(row)
            for step, offset in enumerate(range(stream.first, stream.last + 1)):
                amount = stream.cents + stream.growth * step
                amount += self.rng.randint(-amount // 20, amount // 20)
                status, notes = _REVIEW_EXCEPTIONS.get(
                    (stream.initiative_id, offset), (self.status_by_age(offset), None)
                )
                self.value_entry(
                    stream.initiative_id,
                    amount,
                    stream.entry_type,
                    status,
                    period=offset,
                    created=self.at(offset + 1, 4, 7, 20, ms=step * 11),
                    provenance=stream.provenance,
                    currency=stream.currency,
                    notes=notes,
                    is_estimated=offset == 0,
                    connection_id=stream.connection_id,
                )
        # Copilot time saved: seats x 2 hours a month x $85, from Copilot usage data.
        for step, offset in enumerate(range(-16, 1)):
            seats = 85 + (55 * (step + 1)) // 17
            self.value_entry(
                _COPILOT,
                seats * 17_000,
                "time_saved",
                self.status_by_age(offset),
                period=offset,
                created=self.at(offset + 1, 5, 7, 40, ms=step),
                provenance=_FORMULA,
                connection_id=_C_COPILOT,
                is_estimated=offset == 0,
            )
        self.value_specials()

    def status_by_age(self, offset: int) -> str:
        """Older months are approved, last month is in review, this month is calculated."""
        if offset <= -2:
            return "approved"
        return "reviewed" if offset == -1 else "calculated"

    def value_specials(self) -> None:
        self.value_entry(
            _TRIAGE,
            3_000_000,
            "cost_savings",
            "archived",
            period=-12,
            period_months=3,
            created=self.at(-13, 20, 10),
            provenance=_BY_HAND,
            notes="Business-case estimate for the first quarter, superseded by monthly figures.",
            is_estimated=True,
        )
        self.value_entry(
            _INVOICES,
            1_250_000,
            "cost_savings",
            "approved",
            period=None,
            created=self.at(-10, 14, 11),
            provenance=_BY_HAND,
            notes="Cancelled the OCR scanning contract early: one-off saving.",
        )
        self.value_entry(
            _INVOICES,
            900_000,
            "cost_savings",
            "archived",
            period=-14,
            created=self.at(-13, 2, 9),
            provenance=_BY_HAND,
            notes="Duplicate of the calculated figure for the same month.",
        )
        self.value_entry(
            _SALES_EMAIL,
            1_500_000,
            "revenue_uplift",
            "draft",
            period=-1,
            created=self.at(0, 2, 15),
            provenance=_BY_HAND,
            notes="Pilot estimate from six account executives; not yet reviewed.",
            is_estimated=True,
        )
        self.value_entry(
            _KNOWLEDGE,
            None,
            "time_saved",
            "draft",
            period=-1,
            created=self.at(0, 3, 12),
            provenance=_BY_HAND,
            notes="Waiting for the pilot survey results.",
        )
        self.value_entry(
            _KNOWLEDGE,
            240_000,
            "time_saved",
            "calculated",
            period=-1,
            created=self.at(0, 4, 7, 20),
            provenance=_FORMULA,
            is_estimated=True,
        )
        self.value_entry(
            _CONTRACTS,
            400_000,
            "cost_savings",
            "archived",
            period=-9,
            created=self.at(-8, 5, 10),
            currency="EUR",
            provenance=_BY_HAND,
            notes="Entered before go-live; withdrawn.",
        )

    # Metrics -----------------------------------------------------------------

    def metrics_and_observations(self) -> None:
        # ((id, canonical key, name, metric type, unit), description)
        metrics: list[tuple[tuple[int, str, str, str, str], str]] = [
            (
                (_M_RESPONSE, "first_response_time", "First response time", "duration", "min"),
                "Median minutes from ticket creation to the first public reply.",
            ),
            (
                (
                    _M_AUTORESOLVE,
                    "auto_resolution_rate",
                    "Tickets resolved without an agent",
                    "percentage",
                    "%",
                ),
                "Share of tickets closed by an automated reply.",
            ),
            (
                (_M_PR_CYCLE, "pr_cycle_time", "Pull request cycle time", "duration", "hours"),
                "Median hours from a pull request's first commit to merge.",
            ),
            (
                (
                    _M_INVOICE_COST,
                    "cost_per_invoice",
                    "Cost per processed invoice",
                    "currency",
                    "USD",
                ),
                "Fully loaded cost of keying and matching one carrier invoice.",
            ),
            (
                (_M_REPLY_RATE, "email_reply_rate", "Outbound email reply rate", "percentage", "%"),
                "Share of follow-up emails answered within 7 days.",
            ),
            (
                (_M_FORECAST_ERROR, "forecast_mape", "Forecast error (MAPE)", "percentage", "%"),
                "Mean absolute percentage error of weekly lane volume forecasts.",
            ),
            (
                (
                    _M_CONTRACT_TURNAROUND,
                    "contract_turnaround_time",
                    "Contract turnaround time",
                    "duration",
                    "hours",
                ),
                "Hours from contract receipt to Legal's first markup.",
            ),
            (
                (_M_CSAT_LEGACY, "csat_legacy", "CSAT (old survey)", "percentage", "%"),
                "Satisfaction score from a survey tool that was retired.",
            ),
            (
                (
                    _M_HR_DEFLECTION,
                    "hr_ticket_deflection",
                    "HR tickets deflected",
                    "count",
                    "tickets",
                ),
                "Sample metric: HR questions answered without a ticket.",
            ),
        ]
        keys: dict[int, str] = {}
        for step, ((metric_id, key, name, kind, unit), description) in enumerate(metrics):
            keys[metric_id] = key
            active = metric_id != _M_CSAT_LEGACY
            created = self.at(-19 + step, 8, 9, 0)
            self.rows["metrics"].append(
                {
                    "id": metric_id,
                    "account_id": DEMO_ACCOUNT_ID,
                    "metric_key": key,
                    "name": name,
                    "description": description,
                    "metric_type": kind,
                    "unit": unit,
                    "currency_metric": kind == "currency",
                    "active": active,
                    "created_at": created,
                    "updated_at": created if active else self.at(-2, 8, 9, 0),
                }
            )
        # ((metric, initiative, baseline from, to, readings from, to, baseline, first
        # reading, last reading, sample size, connection), how the baseline was set)
        series: list[tuple[_SeriesShape, str]] = [
            (
                (_M_RESPONSE, _TRIAGE, -15, -14, -12, 0, 238.0, 190.0, 52.0, 5_200, _C_ZENDESK),
                "Median of the 8 weeks before go-live",
            ),
            (
                (_M_AUTORESOLVE, _TRIAGE, -14, -14, -12, 0, 0.0, 8.0, 34.0, 5_200, _C_ZENDESK),
                "No automated replies before go-live",
            ),
            (
                (_M_PR_CYCLE, _COPILOT, -20, -18, -16, 0, 41.5, 38.0, 27.0, 640, _C_COPILOT),
                "Median of the quarter before rollout",
            ),
            (
                (_M_INVOICE_COST, _INVOICES, -18, -16, -14, -3, 6.4, 3.2, 1.15, 9_000, None),
                "Outsourcing contract rate plus internal matching time",
            ),
            (
                (_M_REPLY_RATE, _SALES_EMAIL, -9, -4, -2, 0, 3.1, 3.6, 4.6, 1_100, _C_SALESFORCE),
                "Six months of outbound sequences before the pilot",
            ),
            (
                (_M_FORECAST_ERROR, _FORECAST, -22, -11, -9, 0, 22.5, 19.0, 13.0, 40, _C_SNOWFLAKE),
                "Spreadsheet forecast error over the previous year",
            ),
            (
                (_M_CONTRACT_TURNAROUND, _CONTRACTS, -12, -10, -8, -4, 72.0, 40.0, 20.0, 60, None),
                "Sampled from 60 contracts in the matter system",
            ),
            (
                (_M_HR_DEFLECTION, _SAMPLE_HR, -7, -7, -5, -1, 0.0, 40.0, 95.0, 300, None),
                "No assistant before go-live",
            ),
        ]
        for shape, method in series:
            self.observation_series(_Series(*shape, baseline_method=method), keys[shape[0]])

    def observation(
        self,
        item: _Series,
        metric_key: str,
        *,
        value: float | None,
        role: str,
        months: tuple[int, int],
        ms: int,
    ) -> None:
        first, last = months
        source: _Row = {"type": "manual", "ref": None, "connection_id": None}
        if item.connection_id is not None:
            ref = f"{metric_key}/{self.month(first):%Y-%m}"
            source = {"type": "connection", "ref": ref, "connection_id": item.connection_id}
        created = self.at(last + 1, 1, 3, 0, ms=ms)
        self.rows["observations"].append(
            {
                "id": self.take_id("observations"),
                "metric_id": item.metric_id,
                "metric_key": metric_key,
                "initiative_id": item.initiative_id,
                "value": value,
                "role": role,
                "baseline_method": item.baseline_method if role == "baseline" else None,
                "observed_at": self.at(last + 1, 1, 2, 0),
                "period_start": self.month(first).isoformat(),
                "period_end": self.month_end(last).isoformat(),
                "is_estimated": role == "reading" and last == 0,
                "sample_size": None if value is None else item.sample_size,
                "quality_score": None if value is None else 0.9 if role == "baseline" else 0.8,
                "source": source,
                "created_at": created,
                "updated_at": created,
            }
        )

    def observation_series(self, item: _Series, metric_key: str) -> None:
        baseline_months = (item.baseline_first, item.baseline_last)
        self.observation(
            item, metric_key, value=item.baseline, role="baseline", months=baseline_months, ms=0
        )
        span = item.last - item.first
        for step, offset in enumerate(range(item.first, item.last + 1)):
            share = Fraction(step, span) if span else Fraction(1)
            trend = item.start + (item.end - item.start) * float(share)
            value: float | None = round(trend * (1 + self.rng.randint(-4, 4) / 100), 1)
            if item.metric_id == _M_RESPONSE and offset == 0:
                value = None  # the Zendesk connection failed before this reading arrived
            self.observation(
                item, metric_key, value=value, role="reading", months=(offset, offset), ms=step + 1
            )

    # Budgets -----------------------------------------------------------------

    def budget(
        self,
        initiative_id: int,
        *,
        starts: int,
        capex: int,
        opex: int,
        cadence: str = "monthly",
        source: str = "approval",
        status: str = "approved",
        approved_at: str | None = None,
        set_by: int = _MAYA,
        reason: str,
        ends: int | None = None,
    ) -> None:
        """A budget version taking effect in month `starts` (an offset from today's)."""
        self.rows["budget_versions"].append(
            {
                "id": self.take_id("budget_versions"),
                "initiative_id": initiative_id,
                "effective_from": self.month(starts).isoformat(),
                "ends_on": None if ends is None else self.month_end(ends).isoformat(),
                "capex_cents": capex,
                "opex_cents": opex,
                "opex_cadence": cadence,
                "source": source,
                "reason": reason,
                "set_by_id": set_by,
                "status": status,
                "approved_at": approved_at,
            }
        )

    def budgets(self) -> None:
        at = self.at
        # Support triage: approved, revised upward, and a revision above the approval
        # threshold waiting for the Owner (R24 revision_pending).
        self.budget(
            _TRIAGE,
            starts=-16,
            capex=6_000_000,
            opex=750_000,
            approved_at=at(-17, 18, 16, 30),
            reason="Business case approved",
        )
        self.budget(
            _TRIAGE,
            starts=-6,
            capex=6_000_000,
            opex=1_200_000,
            source="revision",
            approved_at=at(-7, 25, 11),
            set_by=_DANIEL,
            reason="Ticket volume up 30%; token spend grows with it",
        )
        self.budget(
            _TRIAGE,
            starts=1,
            capex=9_500_000,
            opex=1_600_000,
            source="revision",
            status="pending",
            set_by=_PRIYA,
            reason="Extend triage and drafting to Tier 2 queues",
        )
        # Coding assistant: a quarterly cadence (R17: a third of it each month).
        self.budget(
            _COPILOT,
            starts=-17,
            capex=0,
            opex=780_000,
            cadence="quarterly",
            approved_at=at(-18, 27, 17),
            set_by=_DANIEL,
            reason="Copilot seats for engineering",
        )
        # Sales email drafting: approved, starting next month, so scheduled (R18, R25).
        self.budget(
            _SALES_EMAIL,
            starts=1,
            capex=2_000_000,
            opex=400_000,
            approved_at=at(-1, 14, 10),
            reason="Approved after the pilot",
        )
        # Invoice extraction: an annual cadence that ended with the work (R16, R19).
        self.budget(
            _INVOICES,
            starts=-17,
            ends=-3,
            capex=4_500_000,
            opex=3_000_000,
            cadence="annually",
            approved_at=at(-18, 10, 10),
            reason="Business case approved",
        )
        # Demand forecasting: over on both halves, and an increase was refused.
        self.budget(
            _FORECAST,
            starts=-14,
            capex=8_000_000,
            opex=600_000,
            approved_at=at(-15, 21, 16),
            reason="Business case approved",
        )
        self.budget(
            _FORECAST,
            starts=-4,
            capex=8_000_000,
            opex=1_100_000,
            source="revision",
            status="rejected",
            set_by=_DANIEL,
            reason="Snowflake compute above plan",
        )
        # Contract review: a budget in EUR, the initiative's currency (R4).
        self.budget(
            _CONTRACTS,
            starts=-12,
            capex=3_000_000,
            opex=350_000,
            source="manual",
            approved_at=at(-13, 2, 11),
            set_by=_JONAS,
            reason="Legal department budget line LG-07",
        )
        # Knowledge search: internal build time overran the capex envelope.
        self.budget(
            _KNOWLEDGE,
            starts=-7,
            capex=2_500_000,
            opex=250_000,
            approved_at=at(-8, 19, 14),
            set_by=_DANIEL,
            reason="Business case approved",
        )
        # A sample budget, so include_sample has something to show.
        self.budget(
            _SAMPLE_HR,
            starts=-6,
            capex=0,
            opex=50_000,
            approved_at=at(-7, 20, 8),
            reason="Sample budget",
        )

    # Decisions ---------------------------------------------------------------

    def rate(self, currency: str, on: date) -> Decimal:
        """SEMANTICS R5: the latest rate on or before `on`, else the earliest."""
        if currency == _CURRENCY:
            return Decimal(1)
        rates = sorted((start, rate) for code, start, rate in self.fx if code == currency)
        chosen = rates[0][1]
        for start, rate in rates:
            if start <= on:
                chosen = rate
        return Decimal(chosen)

    def convert(self, amount: int, currency: str, into: str, on: date) -> int:
        return _cents_half_even(Decimal(amount) * self.rate(currency, on) / self.rate(into, on))

    def to_date(self, key: str, initiative_id: int, currency: str, through: date) -> int:
        total = 0
        for entry in self.rows[key]:
            if entry["initiative_id"] != initiative_id or entry["amount_cents"] is None:
                continue
            if key == "value_entries" and entry["status"] != "approved":
                continue
            dated = date.fromisoformat((entry["period_start"] or entry["created_at"])[:10])
            if dated <= through:
                total += self.convert(entry["amount_cents"], entry["currency"], currency, dated)
        return total

    def decision(
        self,
        initiative_id: int,
        outcome: str,
        *,
        stages: tuple[str, str],
        on: tuple[int, int],
        by: int,
        rationale: str,
        review_in_months: int | None,
        subject_title: str | None = None,
    ) -> None:
        """A decision on day `on[1]` of month `on[0]`, with the figures as they stood then."""
        initiative = next(row for row in self.rows["initiatives"] if row["id"] == initiative_id)
        currency = initiative["currency"] or _CURRENCY
        offset, day = on
        decided_on = self.day(offset, day)
        planned = (initiative["expected_cost_savings_cents"] or 0) + (
            initiative["expected_revenue_uplift_cents"] or 0
        )
        # The part of the plan due: months live over the months of the ROI horizon.
        horizon_months = 12 * (initiative["roi_time_horizon_years"] or 1)
        live_on = date.fromisoformat((initiative["went_live_at"] or initiative["started_at"])[:10])
        elapsed = (decided_on.year - live_on.year) * 12 + decided_on.month - live_on.month
        share = Fraction(max(0, min(elapsed, horizon_months)), horizon_months)
        review = None
        if review_in_months is not None:
            review = self.month(offset + review_in_months).replace(day=15).isoformat()
        self.snapshot_decision(
            initiative_id=initiative_id,
            subject_title=subject_title or initiative["title"],
            outcome=outcome,
            stages=stages,
            decided_at=self.at(offset, day, 15, 0),
            decided_by=by,
            rationale=rationale,
            next_review_on=review,
            currency=currency,
            approved=self.to_date("value_entries", initiative_id, currency, decided_on),
            cost=self.to_date("cost_entries", initiative_id, currency, decided_on),
            planned=planned,
            planned_to_date=_cents_half_even(planned * share),
        )

    def snapshot_decision(
        self,
        *,
        initiative_id: int | None,
        subject_title: str,
        outcome: str,
        stages: tuple[str, str],
        decided_at: str,
        decided_by: int,
        rationale: str,
        next_review_on: str | None,
        currency: str,
        approved: int,
        cost: int,
        planned: int,
        planned_to_date: int,
    ) -> None:
        net = approved - cost
        self.rows["decisions"].append(
            {
                "id": self.take_id("decisions"),
                "account_id": DEMO_ACCOUNT_ID,
                "initiative_id": initiative_id,
                "subject_title": subject_title,
                "outcome": outcome,
                "rationale": rationale,
                "stage_before": stages[0],
                "stage_after": stages[1],
                "decided_at": decided_at,
                "decided_by_id": decided_by,
                "next_review_on": next_review_on,
                "currency": currency,
                "approved_value_cents": approved,
                "cost_to_date_cents": cost,
                "net_cents": net,
                "planned_value_cents": planned,
                "planned_value_to_date_cents": planned_to_date,
                "roi": None if cost == 0 else net / cost,
                "created_at": decided_at,
                "updated_at": decided_at,
            }
        )

    def decisions(self) -> None:
        # About an initiative deleted since, so initiative_id is null (SPEC 2.8).
        self.snapshot_decision(
            initiative_id=None,
            subject_title="Careers site chatbot",
            outcome="retire",
            stages=("live", "dismissed"),
            decided_at=self.at(-13, 9, 15, 0),
            decided_by=_MAYA,
            rationale="Candidates preferred the FAQ page; usage stayed under 50 chats a month.",
            next_review_on=None,
            currency=_CURRENCY,
            approved=0,
            cost=1_184_000,
            planned=1_500_000,
            planned_to_date=625_000,
        )
        self.decision(
            _FORECAST,
            "continue",
            stages=("implementing", "live"),
            on=(-10, 5),
            by=_MAYA,
            rationale="Backtest beat the spreadsheet forecast on 36 of 40 lanes; go live.",
            review_in_months=3,
        )
        self.decision(
            _TRIAGE,
            "continue",
            stages=("live", "live"),
            on=(-10, 14),
            by=_DANIEL,
            rationale="First response time down by half with CSAT flat. Keep going.",
            review_in_months=3,
            subject_title="Support ticket auto-triage",  # renamed since
        )
        self.decision(
            _IMAGES,
            "retire",
            stages=("implementing", "dismissed"),
            on=(-8, 26),
            by=_MAYA,
            rationale="Brand team rejected most generated images; licensing terms are unclear.",
            review_in_months=None,
        )
        self.decision(
            _TRIAGE,
            "scale",
            stages=("live", "live"),
            on=(-4, 18),
            by=_MAYA,
            rationale="Savings ahead of plan; prepare the Tier 2 expansion.",
            review_in_months=2,
        )
        self.decision(
            _CONTRACTS,
            "pause",
            stages=("live", "paused"),
            on=(-3, 15),
            by=_MAYA,
            rationale="The works council review of personal data processing must finish first.",
            review_in_months=3,
        )
        self.decision(
            _INVOICES,
            "retire",
            stages=("live", "completed"),
            on=(-3, 28),
            by=_MAYA,
            rationale="Target cost per invoice reached; the pipeline moves to run-the-business.",
            review_in_months=None,
        )
        self.decision(
            _COPILOT,
            "continue",
            stages=("live", "live"),
            on=(-2, 12),
            by=_DANIEL,
            rationale="Cycle time down 30%; seat utilisation at 92%.",
            review_in_months=3,
        )
        self.decision(
            _KNOWLEDGE,
            "fix",
            stages=("implementing", "implementing"),
            on=(-1, 9),
            by=_DANIEL,
            rationale="Answer accuracy of 71% is too low to roll out; fix chunking first.",
            review_in_months=1,
        )

    # Connections -------------------------------------------------------------

    def integrations(self) -> None:
        marker = DEMO_SECRET_MARKER
        connections: list[_Row] = [
            {
                "id": _C_OPENAI,
                "platform": "openai",
                "name": "OpenAI production org",
                "description": "Usage and cost by project for the production organisation.",
                "status": "active",
                "auth_type": "api_key",
                "last_sync_status": "success",
                "last_synced_at": self.on(self.today - timedelta(days=1), 23, 10),
                "reauth_required_at": None,
                "external_account_id": "org-demo-northwind",
                "external_account_name": "Northwind Freight",
                "primary_source_categories": ["ai_spend"],
                "metric_categories": ["ai_spend", "token_usage"],
                "connected_by_id": _DANIEL,
                "credentials": {"api_key": f"sk-{marker}-key-openai"},
                "settings": {"sync_interval_minutes": 60, "projects": ["support", "search"]},
                "last_error": None,
                "created": self.at(-16, 4, 10),
            },
            {
                "id": _C_ANTHROPIC,
                "platform": "anthropic",
                "name": "Anthropic workspace",
                "description": "Claude usage and cost by workspace.",
                "status": "active",
                "auth_type": "api_key",
                "last_sync_status": "success",
                "last_synced_at": self.on(self.today - timedelta(days=1), 23, 20),
                "reauth_required_at": None,
                "external_account_id": "wrkspc-demo-01",
                "external_account_name": "Northwind Freight",
                "primary_source_categories": [],
                "metric_categories": ["ai_spend", "token_usage"],
                "connected_by_id": _DANIEL,
                "credentials": {"admin_api_key": f"sk-ant-admin-{marker}-key"},
                "settings": {"sync_interval_minutes": 60},
                "last_error": None,
                "created": self.at(-15, 10, 11),
            },
            {
                "id": _C_COPILOT,
                "platform": "github_copilot",
                "name": "GitHub Copilot (northwind-freight)",
                "description": "Seat assignments, billing and usage metrics.",
                "status": "active",
                "auth_type": "github_app",
                "last_sync_status": "success",
                "last_synced_at": self.on(self.today - timedelta(days=4), 4, 0),
                "reauth_required_at": None,
                "external_account_id": "northwind-freight",
                "external_account_name": "Northwind Freight on GitHub",
                "primary_source_categories": ["developer_productivity"],
                "metric_categories": ["developer_productivity", "seat_usage"],
                "connected_by_id": _DANIEL,
                "credentials": {
                    "installation_id": "31415926",
                    "private_key": _fake_pem(marker),
                },
                "settings": {"webhook_secret": f"whsec-{marker}-secret"},
                "last_error": None,
                "created": self.at(-17, 2, 9),
            },
            {
                "id": _C_ZENDESK,
                "platform": "zendesk",
                "name": "Zendesk support",
                "description": "Ticket volumes, response times and AI resolutions.",
                "status": "error",
                "auth_type": "oauth",
                "last_sync_status": "failed",
                "last_synced_at": self.at(0, 1, 2, 0),
                # The platform revoked the grant: only a person reconnecting can fix it.
                "reauth_required_at": self.at(0, 2, 2, 5),
                "external_account_id": "northwind.zendesk.com",
                "external_account_name": "Northwind Freight Support",
                "primary_source_categories": ["support_operations"],
                "metric_categories": ["support_operations", "customer_satisfaction"],
                "connected_by_id": _PRIYA,
                "credentials": {
                    "access_token": f"zd-{marker}-access-token",
                    "refresh_token": f"zd-{marker}-refresh-token",
                },
                "settings": {"subdomain": "northwind", "brand_ids": [360001, 360002]},
                "last_error": (
                    "401 invalid_grant from Zendesk: refresh token revoked by an administrator "
                    f"(request {marker}-req-7f3a)"
                ),
                "created": self.at(-15, 14, 13),
            },
            {
                "id": _C_SALESFORCE,
                "platform": "salesforce",
                "name": "Salesforce Sales Cloud",
                "description": "Email activity and opportunity outcomes for the pilot team.",
                "status": "paused",
                "auth_type": "oauth",
                "last_sync_status": "success",
                "last_synced_at": self.at(-1, 28, 6, 0),
                "reauth_required_at": None,
                "external_account_id": "00D5e000000DEMO",
                "external_account_name": "Northwind Freight",
                "primary_source_categories": ["sales_pipeline"],
                "metric_categories": ["sales_pipeline", "email_engagement"],
                "connected_by_id": _TOMAS,
                "credentials": {
                    "access_token": f"00D-{marker}-token",
                    "refresh_token": f"5Aep-{marker}-refresh",
                },
                "settings": {"instance_url": "https://northwind-demo.my.salesforce.example"},
                "last_error": None,
                "created": self.at(-3, 3, 10),
            },
            {
                "id": _C_SNOWFLAKE,
                "platform": "snowflake",
                "name": "Snowflake analytics warehouse",
                "description": "Custom metrics from the analytics models.",
                "status": "error",
                "auth_type": "service_account",
                "last_sync_status": "failed: warehouse suspended",
                "last_synced_at": self.on(self.today - timedelta(days=2), 5, 0),
                # Failing, but retrying can fix it, so no reauthorisation is required.
                "reauth_required_at": None,
                "external_account_id": "NWF-DEMO.eu-central-1",
                "external_account_name": "NORTHWIND_ANALYTICS",
                "primary_source_categories": ["custom_metrics", "revenue"],
                "metric_categories": ["custom_metrics", "revenue", "cloud_cost"],
                "connected_by_id": _GRACE,
                "credentials": {
                    "user": "AIROI_SVC",
                    "private_key": _fake_pem(f"{marker}-rsa"),
                },
                "settings": {"warehouse": "ANALYTICS_WH", "role": "AIROI_READER"},
                "last_error": (
                    "Warehouse ANALYTICS_WH is suspended; the scheduled sync will retry "
                    f"(query {marker}-01b2)"
                ),
                "created": self.at(-14, 6, 15),
            },
            {
                "id": _C_AWS,
                "platform": "aws",
                "name": "AWS Cost Explorer",
                "description": "Tagged cloud spend. Replaced by the billing export.",
                "status": "disconnected",
                "auth_type": "service_account",
                "last_sync_status": "success",
                "last_synced_at": self.at(-2, 27, 3, 0),
                "reauth_required_at": None,
                "external_account_id": "123456789012",
                "external_account_name": "northwind-prod",
                "primary_source_categories": [],
                "metric_categories": ["cloud_cost"],
                "connected_by_id": _DANIEL,
                "credentials": {
                    "role_arn": "arn:aws:iam::123456789012:role/airoi-demo",
                    "external_id": f"{marker}-external-id",
                },
                "settings": {"cost_allocation_tag": "initiative"},
                "last_error": None,
                "created": self.at(-16, 20, 12),
            },
        ]
        for connection in connections:
            created = connection.pop("created")
            updated = max(
                created,
                connection["last_synced_at"] or created,
                connection["reauth_required_at"] or created,
            )
            self.rows["integrations"].append(
                {
                    **connection,
                    "account_id": DEMO_ACCOUNT_ID,
                    "simulated": False,
                    "created_at": created,
                    "updated_at": updated,
                }
            )

    def assessments(self) -> None:
        self.rows["assessments"].extend(
            [
                {
                    "id": 900_901,
                    "account_id": DEMO_ACCOUNT_ID,
                    "title": f"AI readiness assessment {self.month(-20).year}",
                    "status": "closed",
                    "created_at": self.at(-20, 11, 10),
                },
                {
                    "id": 900_902,
                    "account_id": DEMO_ACCOUNT_ID,
                    "title": "Generative AI vendor risk review",
                    "status": "active",
                    "created_at": self.at(-2, 4, 10),
                },
            ]
        )


class DemoRefused(Exception):
    """The store holds something of its own where the demo lives; nothing is changed."""


def reset_demo_account(conn: Connection) -> list[tuple[str, int, int]]:
    """Remove every row of the demo account, so `airoi demo` can rebuild it for a new today.

    The demo's decisions are dated relative to today, and decisions never change once
    written, so a refresh on a later month rebuilds the account instead of upserting it.
    It runs inside the load's transaction: a demo bundle the store refuses leaves the demo
    as it was. Only the demo account is touched; an account of the store's own that holds
    the demo's id is refused, not removed. Returns the served rows removed, as (list,
    account, id), so that those the new demo does not give again leave tombstones
    (SEMANTICS R34).
    """
    name = conn.execute(
        select(tables.accounts.c.name).where(tables.accounts.c.id == DEMO_ACCOUNT_ID)
    ).scalar()
    if name is not None and name != DEMO_ACCOUNT_NAME:
        raise DemoRefused(
            f"Account {DEMO_ACCOUNT_ID}, where the demo lives, holds another account; "
            "nothing was changed."
        )
    removed: list[tuple[str, int, int]] = []
    for resource in SERVED_LISTS:
        table = tables.metadata.tables[resource]
        ids = select(table.c.id).where(table.c.account_id == DEMO_ACCOUNT_ID)
        removed.extend(
            (resource, DEMO_ACCOUNT_ID, row_id) for row_id in conn.execute(ids).scalars()
        )
    demo_users = select(tables.users.c.id).where(tables.users.c.account_id == DEMO_ACCOUNT_ID)
    conn.execute(delete(tables.tokens).where(tables.tokens.c.user_id.in_(demo_users)))
    for table in reversed(tables.metadata.sorted_tables):
        if table is tables.accounts or "account_id" not in table.c:
            continue
        if table is tables.deletions:
            continue  # the demo's tombstones stay, as long as the store (SEMANTICS R34)
        conn.execute(delete(table).where(table.c.account_id == DEMO_ACCOUNT_ID))
    conn.execute(delete(tables.accounts).where(tables.accounts.c.id == DEMO_ACCOUNT_ID))
    return removed


def load_demo(
    engine: Engine, bundle: dict[str, Any], *, say: Callable[[str], None] | None = None
) -> LoadReport:
    """Load the demo account afresh in one transaction, as `airoi demo` does.

    The demo's rows carry a realistic history (rows created and changed over the months
    before today). When the demo account is made, it is loaded as `airoi load --keep-stamps`
    loads, keeping the bundle's updated_at values: nobody can have copied an account that
    did not exist. A refresh is an ordinary load: every row it makes again takes the load's
    stamp, later than any a copy has seen (SEMANTICS R32), so a copy of the demo account
    stays exact. Whether the account exists is read under the store's lock.
    """
    made: list[bool] = []

    def reset(conn: Connection) -> list[tuple[str, int, int]]:
        exists = conn.execute(
            select(tables.accounts.c.id).where(tables.accounts.c.id == DEMO_ACCOUNT_ID)
        ).first()
        made.append(exists is None)
        return reset_demo_account(conn)

    return load_bundle(engine, bundle, before=reset, keep_stamps=lambda: made[0], say=say)
