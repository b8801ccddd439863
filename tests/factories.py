"""Typed builders of test data. Every record goes through the real loader (one write path).

b = BundleBuilder()
acct = b.account()
owner = b.user(acct, role="owner")
secret = b.token(owner)
init = b.initiative(acct, stage="live")
b.cost_entry(init, amount_cents=12_345)
b.load(engine)
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from datetime import datetime
from typing import Any

from sqlalchemy import Engine

from airoi.load import LoadReport, load_bundle


class BundleBuilder:
    def __init__(self, first_id: int = 1) -> None:
        self.data: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._ids = itertools.count(first_id)
        self._tokens = itertools.count(1)

    def _add(self, key: str, record: dict[str, Any]) -> int:
        record.setdefault("id", next(self._ids))
        self.data[key].append({k: v for k, v in record.items() if v is not ...})
        return int(record["id"])

    def account(self, *, name: str = "Acme", currency: str = "USD", **fields: Any) -> int:
        return self._add("accounts", {"name": name, "currency": currency, **fields})

    def user(
        self,
        account_id: int,
        *,
        role: str = "owner",
        name: str = "Ada Lovelace",
        email: str | None = "ada@example.com",
        **fields: Any,
    ) -> int:
        return self._add(
            "users",
            {"account_id": account_id, "role": role, "name": name, "email": email, **fields},
        )

    def token(self, user_id: int, *, secret: str | None = None, **fields: Any) -> str:
        secret = secret or f"airoi_test-token-{next(self._tokens):04d}-" + "x" * 32
        self.data["tokens"].append({"user_id": user_id, "token": secret, **fields})
        return secret

    def fx_rate(self, account_id: int, currency: str, rate: str, effective_from: str) -> None:
        self.data["fx_rates"].append(
            {
                "account_id": account_id,
                "currency": currency,
                "rate": rate,
                "effective_from": effective_from,
            }
        )

    def initiative(
        self,
        account_id: int,
        *,
        title: str = "Support triage bot",
        stage: str = "live",
        **fields: Any,
    ) -> int:
        return self._add(
            "initiatives", {"account_id": account_id, "title": title, "stage": stage, **fields}
        )

    def cost_entry(
        self,
        initiative_id: int,
        *,
        amount_cents: int | None = 10_000,
        cost_category: str = "opex",
        **fields: Any,
    ) -> int:
        return self._add(
            "cost_entries",
            {
                "initiative_id": initiative_id,
                "amount_cents": amount_cents,
                "cost_category": cost_category,
                **fields,
            },
        )

    def value_entry(
        self,
        initiative_id: int,
        *,
        amount_cents: int | None = 50_000,
        status: str = "approved",
        **fields: Any,
    ) -> int:
        return self._add(
            "value_entries",
            {
                "initiative_id": initiative_id,
                "amount_cents": amount_cents,
                "status": status,
                **fields,
            },
        )

    def metric(
        self,
        account_id: int,
        *,
        metric_key: str = "tickets_resolved",
        name: str = "Tickets resolved",
        **fields: Any,
    ) -> int:
        return self._add(
            "metrics", {"account_id": account_id, "metric_key": metric_key, "name": name, **fields}
        )

    def observation(self, *, value: float | None = 1.0, **fields: Any) -> int:
        return self._add("observations", {"value": value, **fields})

    def decision(
        self,
        account_id: int,
        *,
        outcome: str = "continue",
        subject_title: str = "Triage bot",
        rationale: str = "On track.",
        stage_before: str = "live",
        stage_after: str = "live",
        **fields: Any,
    ) -> int:
        return self._add(
            "decisions",
            {
                "account_id": account_id,
                "outcome": outcome,
                "subject_title": subject_title,
                "rationale": rationale,
                "stage_before": stage_before,
                "stage_after": stage_after,
                **fields,
            },
        )

    def integration(
        self, account_id: int, *, platform: str = "openai", status: str = "active", **fields: Any
    ) -> int:
        fields.setdefault("primary_source_categories", [])
        fields.setdefault("metric_categories", [])
        return self._add(
            "integrations",
            {"account_id": account_id, "platform": platform, "status": status, **fields},
        )

    def budget_version(
        self,
        initiative_id: int,
        *,
        effective_from: str,
        status: str = "approved",
        capex_cents: int = 0,
        opex_cents: int = 0,
        opex_cadence: str = "monthly",
        **fields: Any,
    ) -> int:
        return self._add(
            "budget_versions",
            {
                "initiative_id": initiative_id,
                "effective_from": effective_from,
                "status": status,
                "capex_cents": capex_cents,
                "opex_cents": opex_cents,
                "opex_cadence": opex_cadence,
                **fields,
            },
        )

    def load(
        self, engine: Engine, *, now: datetime | None = None, keep_stamps: bool = False
    ) -> LoadReport:
        """Load through the real loader; `keep_stamps` keeps given updated_at values
        (SEMANTICS R32), for tests that need rows stamped as they say."""
        return load_bundle(engine, dict(self.data), now=now, keep_stamps=keep_stamps)
