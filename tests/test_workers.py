"""Several worker processes behind one port (issue: hold up in production).

Two `airoi serve --workers 2` processes' worth of uvicorn workers share one per-token budget
through Redis; and clients that hang up mid-request leave no connection busy in PostgreSQL.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from sqlalchemy import text

from airoi.db.engine import make_engine
from tests.conftest import _empty, bearer
from tests.factories import BundleBuilder


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def served(database_url: str, workers: int, **env: str) -> Iterator[str]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "airoi", "serve", "--port", str(port), "--workers", str(workers)],
        env={**os.environ, "AIROI_DATABASE_URL": database_url, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        else:
            pytest.fail("airoi serve did not come up")
        time.sleep(0.5)  # let the second worker start accepting too
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def _account(database_url: str) -> str:
    engine = make_engine(database_url)
    _empty(engine)
    b = BundleBuilder()
    acct = b.account()
    # A secret of its own, so no count left in Redis by an earlier run applies to it.
    token = b.token(b.user(acct), secret=f"airoi_{uuid.uuid4().hex}{uuid.uuid4().hex}")
    initiative = b.initiative(acct)
    for _ in range(600):
        b.cost_entry(initiative)
    b.load(engine)
    engine.dispose()
    return token


def test_two_workers_share_one_budget_through_redis(sqlite_url: str, redis_url: str) -> None:
    token = _account(sqlite_url)
    statuses = []
    with served(sqlite_url, 2, AIROI_RATE_LIMIT="4/hour", AIROI_REDIS_URL=redis_url) as base:
        for _ in range(12):
            # A new connection each time, so the kernel spreads them over both workers.
            with httpx.Client(base_url=base) as client:
                statuses.append(client.get("/api/v1/metrics", headers=bearer(token)).status_code)
    assert statuses.count(200) == 4, statuses
    assert statuses[4:] == [429] * 8


def test_clients_hanging_up_mid_request_leave_nothing_busy(postgresql_url: str) -> None:
    token = _account(postgresql_url)
    database = postgresql_url.rsplit("/", 1)[1]
    with served(postgresql_url, 1, AIROI_RATE_LIMIT="100000/minute") as base:
        port = int(base.rsplit(":", 1)[1])
        request = (
            f"GET /api/v1/cost_entries?limit=500 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {token}\r\n\r\n"
        ).encode()
        for _ in range(20):
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(request)
            # closed before reading a byte of the answer
        time.sleep(1.0)
        engine = make_engine(postgresql_url)
        with engine.connect() as conn:
            busy = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = :db "
                    "AND pid <> pg_backend_pid() AND state <> 'idle'"
                ),
                {"db": database},
            ).scalar()
        engine.dispose()
        assert busy == 0
        # And the server still answers a well-behaved client.
        response = httpx.get(f"{base}/api/v1/cost_entries?limit=1", headers=bearer(token))
        assert response.status_code == 200
