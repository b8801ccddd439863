"""Two accounts with something of every kind the tools read, built through the real loader.

Everything of account B carries the word "Zebra", so a result for A that mentions it (or
a result for B that names anything of A) is a leak between accounts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Engine

from tests.factories import BundleBuilder

SECRETS = ("sk-SECRET-credential", "SECRET-SETTING", "SECRET ERROR PROSE")
EMAILS = ("ada@a.example", "grace@a.example", "zed@zebra.example")
A_MARKERS = ("Invoice capture", "Ada Lovelace", "Grace Hopper", "Q3 AI readiness", "Acme Vendor")
B_MARKER = "Zebra"


@dataclass
class World:
    token_a: str
    token_b: str
    token_no_api: str
    ids: dict[str, int] = field(default_factory=dict)


def build_world(engine: Engine) -> World:
    b = BundleBuilder()
    a = b.account(name="Acme", currency="USD")
    other = b.account(name="Zebra Corp", currency="USD")
    closed = b.account(name="No API", api_access=False)

    ada = b.user(a, name="Ada Lovelace", email=EMAILS[0])
    grace = b.user(a, role="member", name="Grace Hopper", email=EMAILS[1])
    b.user(a, role="member", name="Gone Person", email=None, removed_at="2026-01-01T00:00:00Z")
    zed = b.user(other, name="Zed Zebra", email=EMAILS[2])
    token_a = b.token(ada)
    token_b = b.token(zed)
    token_no_api = b.token(b.user(closed, name="Closed Owner"))

    b.fx_rate(a, "EUR", "1.10", "2025-01-01")
    ids: dict[str, Any] = {"ada": ada, "grace": grace, "zed": zed}

    p = b.initiative(
        a,
        title="Invoice capture",
        stage="live",
        description="Reads supplier invoices and matches them to purchase orders.",
        category="finance",
        owner_id=ada,
        expected_capex_cents=200_000,
        expected_opex_cents=30_000,
        expected_cost_savings_cents=900_000,
        expected_revenue_uplift_cents=None,
        roi_time_horizon_years=3,
        confidence_score=0.7,
    )
    ids["p"] = p
    ids["q"] = b.initiative(a, title="Sales email drafts", stage="implementing")
    ids["r"] = b.initiative(a, title="Support triage", stage="identified", owner_id=grace)
    ids["r2"] = b.initiative(a, title="Triage for invoices", stage="reviewing")
    ids["s"] = b.initiative(a, title="Completed pilot", stage="completed")
    ids["t"] = b.initiative(a, title="Paused chatbot", stage="paused")
    ids["u"] = b.initiative(a, title="Rejected idea", stage="rejected")
    ids["eur"] = b.initiative(a, title="Euro rollout", stage="live", currency="EUR")
    ids["sample"] = b.initiative(a, title="Sample invoice bot", stage="live", is_sample=True)

    # Twelve cost entries on p (the tool shows the ten most recent), over three years.
    months = [f"{year}-{month:02d}-01" for year in (2024, 2025, 2026) for month in (1, 3, 5, 7)]
    for index, month in enumerate(months):
        b.cost_entry(
            p,
            amount_cents=10_000 + index,
            cost_category="capex" if index % 4 == 0 else "opex",
            period_start=month,
            vendor_name="Acme Vendor",
            cost_type="software",
        )
    b.cost_entry(
        ids["q"],
        amount_cents=5_000,
        currency="EUR",
        period_start="2026-02-01",
        vendor_name="Beta Labs",
        cost_type="tokens",
    )
    b.cost_entry(ids["eur"], amount_cents=7_000, currency="EUR", period_start="2026-03-01")
    b.cost_entry(ids["eur"], amount_cents=3_000, period_start="2026-04-01")
    b.cost_entry(ids["sample"], amount_cents=99_999, period_start="2026-03-01")
    b.value_entry(p, amount_cents=300_000, period_start="2026-02-01")
    b.value_entry(p, amount_cents=50_000, period_start="2023-02-01")
    b.value_entry(p, amount_cents=777_777, status="draft", period_start="2026-04-01")
    b.value_entry(p, amount_cents=888_888, status="reviewed", period_start="2026-05-01")
    b.value_entry(ids["q"], amount_cents=20_000, period_start="2025-09-01")
    b.budget_version(
        p,
        effective_from="2026-01-01",
        capex_cents=150_000,
        opex_cents=12_000,
        approved_at="2025-12-15T00:00:00Z",
        set_by_id=ada,
        reason="Approved at the Q1 review.",
    )
    b.budget_version(
        ids["eur"],
        effective_from="2026-02-01",
        opex_cents=6_000,
        approved_at="2026-01-20T00:00:00Z",
    )
    b._add(
        "initiative_notes",
        {
            "initiative_id": p,
            "author_id": grace,
            "body": "Vendor confirmed the OCR upgrade.",
            "created_at": "2026-05-02T10:00:00Z",
        },
    )
    b._add(
        "initiative_notes",
        {
            "initiative_id": p,
            "author_id": ada,
            "body": "Kick-off done.",
            "created_at": "2026-01-05T10:00:00Z",
        },
    )
    ids["metric"] = b.metric(a, metric_key="invoices_processed", name="Invoices processed")
    ids["hours_metric"] = b.metric(a, metric_key="hours_saved", name="Hours saved")
    # Readings of A's metrics: three of one metric on p (a baseline, then two), one on q.
    ids["readings"] = [
        b.observation(
            metric_id=ids["metric"],
            initiative_id=p,
            role="baseline",
            value=120.0,
            observed_at="2026-01-31T00:00:00Z",
        ),
        b.observation(
            metric_id=ids["metric"],
            initiative_id=p,
            value=180.0,
            observed_at="2026-03-31T00:00:00Z",
        ),
        b.observation(
            metric_id=ids["metric"],
            initiative_id=p,
            value=240.5,
            observed_at="2026-05-31T00:00:00Z",
        ),
        b.observation(
            metric_id=ids["hours_metric"],
            initiative_id=ids["q"],
            value=12.0,
            observed_at="2026-04-30T00:00:00Z",
        ),
    ]
    # Portfolio decisions of A: two on p, one on q.
    ids["decisions"] = [
        b.decision(
            a,
            initiative_id=p,
            subject_title="Invoice capture",
            outcome="scale",
            rationale="Savings ahead of plan.",
            decided_by_id=ada,
            decided_at="2026-03-01T12:00:00Z",
            currency="USD",
            approved_value_cents=300_000,
            cost_to_date_cents=120_066,
            net_cents=179_934,
        ),
        b.decision(
            a,
            initiative_id=ids["q"],
            subject_title="Sales email drafts",
            outcome="fix",
            rationale="Drafts need review.",
            stage_before="implementing",
            stage_after="implementing",
            decided_by_id=grace,
        ),
        b.decision(
            a,
            initiative_id=p,
            subject_title="Invoice capture",
            outcome="continue",
            rationale="Steady.",
            decided_by_id=ada,
        ),
    ]
    ids["openai"] = b.integration(
        a,
        platform="openai",
        name="OpenAI production",
        status="active",
        last_synced_at="2026-06-14T08:00:00Z",
        credentials={"api_key": SECRETS[0]},
        settings={"note": SECRETS[1]},
        last_error=SECRETS[2],
    )
    ids["zendesk"] = b.integration(
        a, platform="zendesk", status="error", reauth_required_at="2026-06-01T00:00:00Z"
    )
    ids["assessment"] = b._add(
        "assessments", {"account_id": a, "title": "Q3 AI readiness", "status": "active"}
    )
    ids["closed_assessment"] = b._add(
        "assessments", {"account_id": a, "title": "Q1 AI readiness", "status": "closed"}
    )

    # Account B: the same kinds, every title with "Zebra" in it.
    z = b.initiative(other, title="Zebra forecasting", stage="live", owner_id=zed)
    ids["z"] = z
    b.cost_entry(z, amount_cents=44_444, period_start="2026-03-01", vendor_name="Zebra Vendor")
    b.value_entry(z, amount_cents=55_555, period_start="2026-03-01")
    b.budget_version(
        z, effective_from="2026-01-01", opex_cents=1_000, approved_at="2026-01-01T00:00:00Z"
    )
    b._add("initiative_notes", {"initiative_id": z, "author_id": zed, "body": "Zebra note."})
    ids["z_metric"] = b.metric(other, metric_key="zebra_stripes", name="Zebra stripes")
    ids["z_reading"] = b.observation(metric_id=ids["z_metric"], initiative_id=z, value=7.0)
    ids["z_decision"] = b.decision(
        other,
        initiative_id=z,
        subject_title="Zebra forecasting",
        outcome="retire",
        rationale="Zebra retired.",
        stage_after="completed",
        decided_by_id=zed,
    )
    ids["z_slack"] = b.integration(other, platform="slack", name="Zebra Slack", status="active")
    ids["z_assessment"] = b._add(
        "assessments", {"account_id": other, "title": "Zebra readiness", "status": "active"}
    )
    b.load(engine)
    return World(token_a=token_a, token_b=token_b, token_no_api=token_no_api, ids=ids)
