"""An unexpected failure answers 500 with the one error body and logs no secret (SPEC 7, R15)."""

from __future__ import annotations

import logging

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.api import metrics
from tests.conftest import bearer
from tests.factories import BundleBuilder

# The one error body, the same over either store: SQLite alone (tests/conftest.py).
pytestmark = pytest.mark.store_independent


def test_unhandled_error_is_500_without_its_message_in_body_or_log(
    client: TestClient[Litestar],
    engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    b = BundleBuilder()
    acct = b.account()
    token = b.token(b.user(acct))
    b.metric(acct)
    b.load(engine)

    secret = "5e3c" + "0ffee"  # a value bound at run time, as a token hash would be

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError(f"token_hash={secret}")

    monkeypatch.setattr(metrics.METRICS, "served", broken)
    with caplog.at_level(logging.DEBUG):
        response = client.get("/api/v1/metrics", headers=bearer(token))
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["status"] == 500
    assert secret not in response.text and "Traceback" not in response.text
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "RuntimeError" in logged
    assert "unhandled RuntimeError on /api/v1/metrics (request " in logged  # the route asked
    assert secret not in logged
    assert token not in logged
