"""Property: with account A's token, nothing of another account is served, and another
account's initiative answers 404 wherever it is named (SPEC 4.A, SEMANTICS R15, R31).

Random accounts (random numbers of initiatives, entries of each kind, users with distinctive
names, integrations) go through the real loader; every endpoint is walked page by page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from tests.conftest import _empty, bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
LISTS = (
    "initiatives",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "budgets",
    "business_cases",
    "decisions",
    "integrations",
)
# One row per initiative of the account (SPEC 4.A.10, SEMANTICS R43), samples included.
PER_INITIATIVE = ("budgets", "business_cases")
FILTERED = (
    "roi",
    "cost_entries",
    "value_entries",
    "observations",
    "budgets",
    "business_cases",
    "decisions",
)
STATUSES = ("draft", "calculated", "reviewed", "approved", "disputed", "archived")


@dataclass
class Account:
    token: str
    names: set[str] = field(default_factory=set)
    ids: dict[str, set[int]] = field(default_factory=dict)


shapes = st.fixed_dictionaries(
    {
        "initiatives": st.integers(1, 3),
        "costs": st.integers(0, 3),
        "values": st.integers(0, 3),
        "observations": st.integers(0, 2),
        "decisions": st.integers(0, 2),
        "integrations": st.integers(0, 2),
        "users": st.integers(1, 3),
        "samples": st.booleans(),
    }
)


def build(engine: Engine, plans: list[dict[str, Any]]) -> list[Account]:
    b = BundleBuilder()
    accounts: list[Account] = []
    for n, plan in enumerate(plans):
        acct = b.account(name=f"Acct{n}")
        users = [
            b.user(acct, name=f"Zq{n}x{k} Person", email=f"p{n}-{k}@example.com")
            for k in range(plan["users"])
        ]
        account = Account(token=b.token(users[0]))
        account.names = {f"Zq{n}x{k} Person" for k in range(plan["users"])}
        ids: dict[str, set[int]] = {name: set() for name in LISTS}
        metric = b.metric(acct, metric_key=f"key_{n}", name=f"Metric {n}")
        ids["metrics"].add(metric)
        for i in range(plan["initiatives"]):
            owner = users[i % len(users)]
            initiative = b.initiative(
                acct,
                title=f"Init {n}-{i}",
                owner_id=owner,
                is_sample=plan["samples"] and i == 0,
            )
            ids["initiatives"].add(initiative)
            for k in range(plan["costs"]):
                ids["cost_entries"].add(
                    b.cost_entry(initiative, amount_cents=100 * (k + 1), period_start="2026-01-01")
                )
            for k in range(plan["values"]):
                ids["value_entries"].add(
                    b.value_entry(initiative, status=STATUSES[k % len(STATUSES)])
                )
            for k in range(plan["observations"]):
                ids["observations"].add(
                    b.observation(metric_id=metric, initiative_id=initiative, value=float(k))
                )
            for _ in range(plan["decisions"]):
                ids["decisions"].add(
                    b.decision(acct, initiative_id=initiative, decided_by_id=owner)
                )
        for k in range(plan["integrations"]):
            ids["integrations"].add(
                b.integration(
                    acct, platform=f"plat{n}", name=f"Conn {n}-{k}", connected_by_id=users[-1]
                )
            )
        account.ids = ids
        accounts.append(account)
    b.load(engine)
    return accounts


def walk(client: Client, token: str, path: str, **params: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {**params, "limit": 2, **({"cursor": cursor} if cursor else {})}
        response = client.get(f"/api/v1/{path}", params=query, headers=bearer(token))
        assert response.status_code == 200, (path, response.text)
        page = response.json()
        rows.extend(page["data"])
        if not page["page"]["has_more"]:
            return rows
        cursor = page["page"]["next_cursor"]


def identifiers(value: Any) -> set[int]:
    """Every id and initiative_id anywhere in a JSON value (nested people and sources too)."""
    found: set[int] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("id", "initiative_id", "metric_id", "connection_id") and isinstance(
                item, int
            ):
                found.add(item)
            found |= identifiers(item)
    elif isinstance(value, list):
        for item in value:
            found |= identifiers(item)
    return found


def all_ids(account: Account) -> set[int]:
    return set().union(*account.ids.values())


def check(client: Client, accounts: list[Account]) -> None:
    for me in accounts:
        others = [a for a in accounts if a is not me]
        foreign_ids = set().union(*(all_ids(a) for a in others)) - all_ids(me)
        foreign_names = set().union(*(a.names for a in others))
        bodies: list[Any] = []
        for path in LISTS:
            per_initiative = path in PER_INITIATIVE
            extra = {"include_sample": "true"} if per_initiative or path == "initiatives" else {}
            rows = walk(client, me.token, path, **extra)
            bodies.append(rows)
            expected = me.ids["initiatives"] if per_initiative else me.ids[path]
            key = "initiative_id" if per_initiative else "id"
            assert {r[key] for r in rows} == expected, path
        for initiative in me.ids["initiatives"]:
            one = client.get(f"/api/v1/initiatives/{initiative}", headers=bearer(me.token))
            assert one.status_code == 200
            bodies.append(one.json())
            roi = client.get(
                "/api/v1/roi", params={"initiative_id": initiative}, headers=bearer(me.token)
            )
            assert roi.status_code == 200
            bodies.append(roi.json())
        bodies.append(client.get("/api/v1/roi", headers=bearer(me.token)).json())
        served = json.dumps(bodies)
        leaked = identifiers(bodies) & foreign_ids
        assert not leaked, leaked
        for name in foreign_names:
            assert name not in served, name
        assert "@example.com" not in served
        # SEMANTICS R31, SPEC 4.A.5: another account's initiative is missing, never forbidden.
        for other in others:
            for initiative in other.ids["initiatives"]:
                response = client.get(f"/api/v1/initiatives/{initiative}", headers=bearer(me.token))
                assert response.status_code == 404, response.text
                for path in FILTERED:
                    response = client.get(
                        f"/api/v1/{path}",
                        params={"initiative_id": initiative},
                        headers=bearer(me.token),
                    )
                    assert response.status_code == 404, (path, response.text)
                    assert set(response.json()) == {"error"}


@settings(
    max_examples=5,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plans=st.lists(shapes, min_size=2, max_size=3))
def test_no_account_sees_another(
    client: Client, engine: Engine, plans: list[dict[str, Any]]
) -> None:
    _empty(engine)
    accounts = build(engine, plans)
    check(client, accounts)
