"""The bundles the loader's tests start from, and what they read back.

Every test runs on SQLite and PostgreSQL (the `engine` fixture). Bundles are
built as plain dicts so each test shows exactly what it loads.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from airoi.db.tables import metadata
from airoi.load import BundleError, LoadReport, load_bundle

NOW = datetime(2026, 3, 1, 12, 0, 0)
LATER = datetime(2026, 3, 2, 8, 30, 0, 250_000)
SECRET = "airoi_bundle-test-secret-" + "s" * 40

Bundle = dict[str, Any]


def base_bundle() -> Bundle:
    """Two accounts; account 1 holds one initiative with one record of every kind."""
    return {
        "accounts": [
            {"id": 1, "name": "Acme", "currency": "USD"},
            {"id": 2, "name": "Globex", "currency": "EUR", "internal": True},
        ],
        "users": [
            {"id": 1, "account_id": 1, "name": "Ada", "email": "ada@acme.example", "role": "owner"},
            {"id": 2, "account_id": 2, "name": "Bo", "email": "bo@globex.example", "role": "admin"},
        ],
        "tokens": [{"user_id": 1, "token": SECRET}],
        "fx_rates": [
            {"account_id": 1, "currency": "EUR", "rate": "1.0850", "effective_from": "2026-01-01"},
        ],
        "vendors": [
            {"id": 1, "account_id": 1, "name": "OpenAI"},
            {"id": 2, "account_id": 1, "name": "Anthropic"},
            {"id": 3, "account_id": 2, "name": "Mistral AI"},
        ],
        "integrations": [
            {
                "id": 4,
                "account_id": 1,
                "platform": "openai",
                "status": "active",
                "auth_type": "api_key",
                "credentials": {"api_key": "sk-test"},
                "primary_source_categories": ["ai_usage"],
                "metric_categories": ["ai_usage"],
            },
        ],
        "metrics": [
            {
                "id": 6,
                "account_id": 1,
                "metric_key": "tickets_deflected",
                "name": "Tickets deflected",
            }
        ],
        "initiatives": [
            {
                "id": 5,
                "account_id": 1,
                "title": "Support triage bot",
                "stage": "live",
                "owner_id": 1,
            },
            {"id": 7, "account_id": 2, "title": "Contract review", "stage": "reviewing"},
        ],
        "initiative_notes": [{"id": 51, "initiative_id": 5, "author_id": 1, "body": "Kick-off"}],
        "budget_versions": [
            {
                "id": 41,
                "initiative_id": 5,
                "effective_from": "2026-01-01",
                "capex_cents": 500_000,
                "opex_cents": 20_000,
                "status": "approved",
                "set_by_id": 1,
            },
        ],
        "cost_entries": [
            {
                "id": 17,
                "initiative_id": 5,
                "amount_cents": 1_000,
                "currency": "EUR",
                "cost_type": "tokens",
                "period_start": "2026-02-01",
                "vendor_name": "openai",
            },
            {
                "id": 18,
                "initiative_id": 5,
                "amount_cents": 50_000,
                "cost_type": "implementation",
                "period_start": "2026-01-15",
                "vendor_id": 2,
            },
        ],
        "value_entries": [
            {
                "id": 21,
                "initiative_id": 5,
                "amount_cents": 90_000,
                "status": "approved",
                "period_start": "2026-02-01",
            },
        ],
        "observations": [
            {"id": 31, "metric_id": 6, "initiative_id": 5, "value": 120.5, "role": "baseline"},
        ],
        "decisions": [
            {
                "id": 9,
                "account_id": 1,
                "initiative_id": 5,
                "subject_title": "Support triage bot",
                "outcome": "scale",
                "rationale": "Deflection doubled.",
                "stage_before": "live",
                "stage_after": "live",
                "decided_at": "2026-02-20T10:00:00Z",
                "decided_by_id": 1,
            },
        ],
        "assessments": [{"id": 61, "account_id": 1, "title": "AI readiness", "status": "active"}],
    }


BASE_COUNTS = {
    "accounts": 2,
    "users": 2,
    "tokens": 1,
    "fx_rates": 1,
    "vendors": 3,
    "integrations": 1,
    "metrics": 1,
    "initiatives": 2,
    "initiative_notes": 1,
    "budget_versions": 1,
    "cost_entries": 2,
    "value_entries": 1,
    "observations": 1,
    "decisions": 1,
    "assessments": 1,
}


def snapshot(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table a load writes, to prove a refused bundle wrote nothing (the
    store's secret, SEMANTICS R13, is the store's from its making)."""
    with engine.connect() as conn:
        return {
            table.name: sorted((tuple(row) for row in conn.execute(select(table))), key=repr)
            for table in metadata.sorted_tables
            if table.name != "store_secret"
        }


def rows(engine: Engine, table: Any, **where: Any) -> list[dict[str, Any]]:
    query = select(table).where(*(table.c[k] == v for k, v in where.items()))
    with engine.connect() as conn:
        return [dict(row) for row in conn.execute(query.order_by(*table.primary_key)).mappings()]


def one(engine: Engine, table: Any, **where: Any) -> dict[str, Any]:
    found = rows(engine, table, **where)
    assert len(found) == 1, found
    return found[0]


def refused(engine: Engine, bundle: Bundle | Path) -> list[str]:
    """Load a bundle that must be refused; return its problems, checking nothing changed."""
    before = snapshot(engine)
    with pytest.raises(BundleError) as caught:
        load_bundle(engine, bundle, now=LATER)
    assert snapshot(engine) == before
    assert caught.value.problems == str(caught.value).split("\n")
    return caught.value.problems


def loaded(engine: Engine, bundle: Bundle | None = None, now: datetime = NOW) -> LoadReport:
    return load_bundle(engine, base_bundle() if bundle is None else bundle, now=now)


def record(bundle: Bundle, key: str, record_id: int) -> dict[str, Any]:
    return next(r for r in bundle[key] if r.get("id") == record_id)


# The stages as a problem line names the values a stage may take.
STAGES = "identified, reviewing, implementing, live, paused, completed, rejected, dismissed"
