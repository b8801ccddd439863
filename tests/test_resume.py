"""page.resume_cursor (SEMANTICS R36) and the shape of GET /deletions (R34).

What a later load does to a resumed walk (R32) is in tests/load/test_stamps.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
RESUMABLE = [
    "initiatives",
    "cost_entries",
    "value_entries",
    "metrics",
    "observations",
    "decisions",
    "integrations",
    "deletions",
]


def page(client: Client, token: str, path: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/v1/{path}", params=params, headers=bearer(token))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture
def five_entries(engine: Engine) -> tuple[str, list[int]]:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    initiative = b.initiative(acct)
    ids = [b.cost_entry(initiative, amount_cents=100 * k) for k in range(1, 6)]
    b.load(engine)
    return token, ids


def test_every_page_carries_the_position_after_its_last_row(
    client: Client, five_entries: tuple[str, list[int]]
) -> None:
    # SEMANTICS R36: every page, the last one included.
    token, ids = five_entries
    seen: list[int] = []
    body = page(client, token, "cost_entries", limit=2)
    while True:
        seen += [row["id"] for row in body["data"]]
        resume = body["page"]["resume_cursor"]
        assert isinstance(resume, str)
        if body["page"]["has_more"]:
            # Mid-walk the resume cursor is the next page's cursor: both stand after the
            # same last row.
            assert resume == body["page"]["next_cursor"]
            body = page(client, token, "cost_entries", limit=2, cursor=resume)
            continue
        assert body["page"]["next_cursor"] is None
        break
    assert seen == ids
    # Resumed with nothing changed since: no row again, and the same position back.
    again = page(client, token, "cost_entries", limit=2, cursor=resume)
    assert again["data"] == []
    assert again["page"] == {"has_more": False, "next_cursor": None, "resume_cursor": resume}


def test_an_empty_page_passes_back_what_it_was_given(
    client: Client, five_entries: tuple[str, list[int]]
) -> None:
    token, _ = five_entries
    for path in RESUMABLE:
        body = page(client, token, path, updated_since="2999-01-01T00:00:00Z")
        assert body == {
            "data": [],
            "page": {"has_more": False, "next_cursor": None, "resume_cursor": None},
        }, path


def test_budgets_have_no_resume_cursor(client: Client, five_entries: tuple[str, list[int]]) -> None:
    # SEMANTICS R36: every list except /budgets.
    token, _ = five_entries
    assert set(page(client, token, "budgets")["page"]) == {"has_more", "next_cursor"}


def test_a_resume_cursor_continues_only_its_own_list(
    client: Client, five_entries: tuple[str, list[int]]
) -> None:
    # SEMANTICS R13: a cursor from one endpoint given to another is refused.
    token, _ = five_entries
    resume = page(client, token, "cost_entries")["page"]["resume_cursor"]
    response = client.get("/api/v1/value_entries", params={"cursor": resume}, headers=bearer(token))
    assert response.status_code == 400
    assert "another endpoint" in response.json()["error"]["message"]


def test_deletions_refuse_a_resource_no_list_serves(
    client: Client, five_entries: tuple[str, list[int]]
) -> None:
    # SEMANTICS R34: the resource filter is one of the seven lists' names; another is 400.
    token, _ = five_entries
    for bad in ("budgets", "users", "fx_rates", "initiative"):
        response = client.get("/api/v1/deletions", params={"resource": bad}, headers=bearer(token))
        assert response.status_code == 400, bad
        assert "resource" in response.json()["error"]["message"]
