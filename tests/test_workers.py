"""Several worker processes behind one port (issue: hold up in production).

Two `airoi serve --workers 2` processes' worth of uvicorn workers share one per-token budget
through Redis; clients that hang up mid-request leave no connection busy in PostgreSQL; and
/metrics answers the sum over the workers, whichever of them is asked.
"""

from __future__ import annotations

import itertools
import os
import secrets
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text

from airoi.db.engine import make_engine
from airoi.serving import GRACEFUL_SHUTDOWN_SECONDS
from tests.conftest import _empty, bearer
from tests.factories import BundleBuilder
from tests.servers import airoi_serve


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _started(database_url: str, workers: int, **env: str) -> tuple[subprocess.Popen[bytes], int]:
    """`airoi serve --workers N` on a free port, once /healthz answers: the process, its port."""
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "airoi", "serve", "--port", str(port), "--workers", str(workers)],
        env={**os.environ, "AIROI_DATABASE_URL": database_url, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(200):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return server, port
        except httpx.TransportError:
            time.sleep(0.05)
    server.kill()
    server.wait()
    pytest.fail("airoi serve did not come up")


@contextmanager
def served(database_url: str, workers: int, **env: str) -> Iterator[str]:
    server, port = _started(database_url, workers, **env)
    try:
        time.sleep(0.5)  # let the second worker start accepting too
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


def _account(database_url: str) -> str:
    engine = make_engine(database_url)
    _empty(engine)
    # Ids and a secret of its own, so no count left in Redis by an earlier run applies: the
    # budget is the person's (SEMANTICS R39), keyed by the user's id.
    b = BundleBuilder(first_id=10**6 + secrets.randbelow(10**9))
    acct = b.account()
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


def _exposed(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _scrape(base: str) -> httpx.Response:
    # A new connection each time, so the scrapes too land on either worker.
    with httpx.Client(base_url=base, timeout=10) as client:
        return client.get("/metrics")


def test_metrics_are_the_sum_over_the_workers_and_never_go_back(
    sqlite_url: str, tmp_path: Path
) -> None:
    # A counter scraped from one worker, then another, read 40, 40, 40, 0, 40: each answered
    # its own. Now any worker answers the sum over both, so it only ever grows.
    token = _account(sqlite_url)
    counted = (
        "airoi_http_requests_total",
        (("method", "GET"), ("route", "/api/v1/initiatives"), ("status", "200")),
    )
    env = {"AIROI_RATE_LIMIT": "100000/minute", "TMPDIR": str(tmp_path)}
    sent = 0
    seen: list[float] = []
    with airoi_serve(sqlite_url, "--workers", "2", **env) as port:
        base = f"http://127.0.0.1:{port}"
        # The workers record into a private directory `airoi serve` made for this run.
        made = list(tmp_path.glob("airoi-metrics-*"))
        assert len(made) == 1, made
        assert made[0].is_dir()
        for _ in range(25):
            for _ in range(4):
                with httpx.Client(base_url=base, timeout=10) as client:
                    answer = client.get("/api/v1/initiatives", headers=bearer(token))
                assert answer.status_code == 200
                sent += 1
            scraped = _scrape(base)
            assert scraped.headers.get_list("content-type") == [CONTENT_TYPE_LATEST]
            seen.append(_exposed(scraped.text).get(counted, 0.0))
        # A request is counted once its answer is sent: the last ones may trail a moment.
        deadline = time.monotonic() + 10
        while True:
            samples = _exposed(_scrape(base).text)
            seen.append(samples.get(counted, 0.0))
            if seen[-1] >= sent or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        # Both workers answered requests and both are in the sum: each one's process metrics,
        # by pid, beside the other's.
        pids = {
            dict(labels)["pid"]
            for (name, labels), _ in samples.items()
            if name == "process_cpu_seconds_total"
        }
        memory = [
            value for (name, _), value in samples.items() if name == "process_resident_memory_bytes"
        ]
    assert all(later >= earlier for earlier, later in itertools.pairwise(seen)), seen
    assert seen[-1] == sent, (seen, sent)
    assert len(pids) == 2, pids
    assert len(memory) == 2
    assert all(value > 0 for value in memory)
    # Removed when the server stopped.
    assert not list(tmp_path.glob("airoi-metrics-*"))


@pytest.mark.parametrize("workers", ["1", "2"])
def test_an_operators_metrics_directory_loses_only_the_old_counts(
    sqlite_url: str, tmp_path: Path, workers: str
) -> None:
    # PROMETHEUS_MULTIPROC_DIR set by the operator is used as it is, emptied of the counts a
    # run killed before it left there (they would be added to this run's), and of nothing
    # else: it may hold other files. Stopped by SIGTERM, the run leaves none of its own (one
    # worker left them: the server raised the signal again once shut down).
    directory = tmp_path / "metrics"
    directory.mkdir()
    (directory / "store.db").write_text("not the metrics'")
    unmatched = ("GET", "unmatched", "404")
    left = MmapedDict(str(directory / "counter_4194000.db"))
    key = mmap_key(
        "airoi_http_requests",
        "airoi_http_requests_total",
        ["method", "route", "status"],
        list(unmatched),
        "Requests answered, by method, route and status.",
    )
    left.write_value(key, 1000.0, 0.0)
    left.close()
    counted = (
        "airoi_http_requests_total",
        tuple(sorted(zip(("method", "route", "status"), unmatched, strict=True))),
    )
    sent = 7
    with airoi_serve(
        sqlite_url, "--workers", workers, PROMETHEUS_MULTIPROC_DIR=str(directory)
    ) as port:
        assert not (directory / "counter_4194000.db").exists()
        for _ in range(sent):
            assert httpx.get(f"http://127.0.0.1:{port}/no/such/place").status_code == 404
        deadline = time.monotonic() + 10
        while True:
            value = _exposed(_scrape(f"http://127.0.0.1:{port}").text).get(counted)
            if value == sent or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert value == sent
        assert list(directory.glob("counter_*.db"))  # the workers recorded there
    assert directory.is_dir()
    assert sorted(path.name for path in directory.iterdir()) == ["store.db"]
    assert (directory / "store.db").read_text() == "not the metrics'"


@pytest.mark.parametrize("workers", [1, 2])
def test_a_client_that_never_reads_does_not_hold_the_stop(sqlite_url: str, workers: int) -> None:
    # Fifty answers asked for and none read: the server stopped listening at SIGTERM, then
    # waited for that connection as long as the client stayed (72 s, a second SIGTERM too).
    server, port = _started(sqlite_url, workers)
    reader = socket.socket()
    try:
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.connect(("127.0.0.1", port))
        reader.sendall(b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n" * 50)
        time.sleep(1)  # its answers fill what the kernel holds, and the server waits to send
        stopped = time.monotonic()
        server.terminate()
        server.wait(timeout=GRACEFUL_SHUTDOWN_SECONDS + 10)
        assert time.monotonic() - stopped < GRACEFUL_SHUTDOWN_SECONDS + 10
    finally:
        reader.close()
        if server.poll() is None:
            server.kill()
            server.wait()
