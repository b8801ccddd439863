"""The HTTP API served for real: uvicorn in a thread on a loopback port, per database.

Same approach as tests/tools/conftest.py: one server per database URL (and cursor secret) for
the session, reading the store that the `db_url` fixture empties per test, with today fixed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from airoi.client import Client
from airoi.settings import Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder
from tests.servers import RunningServer

TODAY = date(2026, 6, 15)
FIRST_LOAD = datetime(2026, 6, 1, 9, 0)
LATER = datetime(2026, 6, 10, 9, 0)


@pytest.fixture(scope="session")
def _api_servers() -> Iterator[dict[tuple[str, bytes | None], RunningServer]]:
    servers: dict[tuple[str, bytes | None], RunningServer] = {}
    yield servers
    for server in servers.values():
        server.stop()


def _served(
    servers: dict[tuple[str, bytes | None], RunningServer], db_url: str, secret_key: bytes | None
) -> str:
    """The /api/v1 address of the session's server reading the store of `db_url` and signing
    cursors with `secret_key` (None: the store's own secret)."""
    if (db_url, secret_key) not in servers:
        # One server and one token serve every test of the session, and copies walk in pages
        # of two rows: the default limit (600 a minute) was reached. Rate limits have tests
        # of their own.
        settings = Settings(
            database_url=db_url,
            today=TODAY,
            rate_limit="1000000/minute",
            secret_key=secret_key,
        )
        servers[db_url, secret_key] = RunningServer(settings)
    return f"{servers[db_url, secret_key].base_url}/api/v1"


@pytest.fixture
def base_url(db_url: str, _api_servers: dict[tuple[str, bytes | None], RunningServer]) -> str:
    """The /api/v1 address of the running app reading the store of `db_url`."""
    return _served(_api_servers, db_url, None)


# The cursor key of `rotated_url`'s server.
ROTATED_KEY = b"rotated-" + b"k" * 40


@pytest.fixture
def rotated_url(db_url: str, _api_servers: dict[tuple[str, bytes | None], RunningServer]) -> str:
    """The /api/v1 address of the same store served with another cursor secret (as after
    AIROI_SECRET_KEY was set or changed): every cursor issued before is refused. One server
    for the session, as for `base_url`: it keeps nothing a test could see but what the
    store holds (its token rows are dropped as the store changes, its budget is past reach)."""
    return _served(_api_servers, db_url, ROTATED_KEY)


@dataclass
class Account:
    """One account with something of every kind, and the builder to change it later."""

    builder: BundleBuilder
    token: str
    account_id: int
    initiatives: list[int]
    cost_entries: list[int]

    def load(self, engine: Engine, now: datetime) -> None:
        self.builder.load(engine, now=now)


# The rows of each list `build_account` makes (budgets: one row per initiative).
ACCOUNT_ROWS: dict[str, int] = {
    "initiatives": 3,
    "cost_entries": 7,
    "value_entries": 6,
    "metrics": 1,
    "observations": 3,
    "decisions": 1,
    "integrations": 1,
    "budgets": 3,
}


def build_account(engine: Engine, now: datetime = FIRST_LOAD) -> Account:
    b = BundleBuilder(first_id=1000)
    acct = b.account()
    owner = b.user(acct, role="owner")
    token = b.token(owner)
    inits = [
        b.initiative(acct, title=f"Initiative {n}", currency="USD", owner_id=owner)
        for n in range(3)
    ]
    costs = [
        b.cost_entry(
            inits[n % 3],
            amount_cents=10_000 + n,
            currency="USD",
            period_start=f"2026-0{1 + n % 5}-01",
            period_end=f"2026-0{1 + n % 5}-28",
            vendor_name="OpenAI",
        )
        for n in range(7)
    ]
    for n in range(5):
        b.value_entry(
            inits[n % 3],
            amount_cents=50_000 + n,
            currency="USD",
            status="approved" if n % 2 == 0 else "draft",
            period_start="2026-02-01",
        )
    b.value_entry(inits[0], amount_cents=None, currency="USD", status="draft")
    metric = b.metric(acct)
    for n in range(3):
        b.observation(
            metric_id=metric, initiative_id=inits[0], value=1.5 * n, period_start="2026-03-01"
        )
    b.decision(acct, initiative_id=inits[1], decided_at="2026-05-01T10:00:00Z")
    b.integration(acct)
    b.budget_version(inits[0], effective_from="2026-01-01", capex_cents=100_000, opex_cents=5_000)
    b.load(engine, now=now)
    return Account(b, token, acct, inits, costs)


@pytest.fixture
def account(engine: Engine) -> Account:
    return build_account(engine)


@pytest.fixture
def api(base_url: str, account: Account) -> Iterator[Client]:
    with Client(base_url, account.token, page_size=2) as client:
        yield client


def raw_walk(base_url: str, token: str, resource: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of a list by plain HTTP, one big page at a time (the reference)."""
    rows: list[dict[str, Any]] = []
    query: dict[str, Any] = {**params, "limit": 500}
    while True:
        response = httpx.get(f"{base_url}/{resource}", params=query, headers=bearer(token))
        assert response.status_code == 200, response.text
        body = response.json()
        rows += body["data"]
        if not body["page"]["has_more"]:
            return rows
        query["cursor"] = body["page"]["next_cursor"]
