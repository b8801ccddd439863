"""X-Request-Id, the error body's request_id, one access-log line per request, /metrics.

The log line never holds a query value, a token, an e-mail address or a credential
(SEMANTICS R15); the error body keeps SPEC 7's status and message and adds request_id.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import Engine

from airoi.app import create_app
from airoi.logs import JsonFormatter, TextFormatter
from airoi.observability import BUCKETS, new_request_id
from airoi.settings import Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder

# Request ids, access lines and /metrics, the same over either store: SQLite alone
# (tests/conftest.py).
pytestmark = pytest.mark.store_independent

Client = TestClient[Litestar]
LOG_KEYS = {"method", "path", "route", "status", "duration_ms", "account_id", "request_id"}


@dataclass
class Seeded:
    token: str
    account_id: int
    initiative_id: int
    email: str


@pytest.fixture
def seeded(engine: Engine) -> Seeded:
    b = BundleBuilder()
    acct = b.account()
    email = "grace.hopper@example.org"
    token = b.token(b.user(acct, role="owner", name="Grace", email=email))
    initiative = b.initiative(acct)
    b.load(engine)
    return Seeded(token=token, account_id=acct, initiative_id=initiative, email=email)


@pytest.fixture
def served(db_url: str) -> Iterator[Client]:
    app = create_app(Settings(database_url=db_url, allowed_hosts=("testserver.local",)))
    with TestClient(app) as client:
        yield client
    app.state.engine.dispose()


def access_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    """The access lines' fields, as a JSON line holds them beside time, level and logger."""
    return [
        json.loads(JsonFormatter().format(r)) for r in caplog.records if r.name == "airoi.access"
    ]


def logged_lines(records: list[logging.LogRecord]) -> list[str]:
    """The airoi records as either log format writes them (AIROI_LOG_FORMAT)."""
    airoi = [r for r in records if r.name.startswith("airoi")]
    return [f.format(r) for f in (JsonFormatter(), TextFormatter()) for r in airoi]


def test_every_response_carries_a_request_id(served: Client, seeded: Seeded) -> None:
    responses = [
        served.get("/api/v1/initiatives", headers=bearer(seeded.token)),  # 200
        served.get("/api/v1/initiatives"),  # 401
        served.get("/api/v1/initiatives?bogus=1", headers=bearer(seeded.token)),  # 400
        served.get("/api/v1/no_such_route"),  # 404
        served.post("/api/v1/initiatives"),  # 405
        served.head("/api/v1/initiatives", headers=bearer(seeded.token)),
        served.get("/healthz"),
        served.get("/metrics"),
        served.get("/api/v1/openapi.json"),
        served.post("/mcp", json={}, headers=bearer(seeded.token)),
    ]
    ids = [r.headers.get("x-request-id") for r in responses]
    assert all(ids), ids
    assert len(set(ids)) == len(ids)
    for response in responses:
        if response.status_code >= 400 and response.request.url.path.startswith("/api/"):
            assert response.json()["error"]["request_id"] == response.headers["x-request-id"]


def test_a_sane_client_request_id_is_echoed_and_another_replaced(
    served: Client, seeded: Seeded
) -> None:
    sent = "req-2026.11.23:abc_DEF-42"
    response = served.get("/api/v1/roi", headers={**bearer(seeded.token), "X-Request-Id": sent})
    assert response.headers["x-request-id"] == sent
    response = served.get("/api/v1/roi", headers={"X-Request-Id": sent})
    assert response.json()["error"]["request_id"] == sent
    # A token given as the request id would be echoed and logged (SEMANTICS R15): an id as
    # long as the shortest token (43 characters, R29) is replaced, with the prefix or without.
    assert len(seeded.token.removeprefix("airoi_")) >= 43
    echoed = served.get("/healthz", headers={"X-Request-Id": "x" * 42})
    assert echoed.headers["x-request-id"] == "x" * 42
    uuid_id = "0f5d3c1e-8a4b-4c2d-9e7f-123456789abc"
    assert served.get("/healthz", headers={"X-Request-Id": uuid_id}).headers["x-request-id"] == (
        uuid_id
    )
    for insane in (
        "x" * 43,
        "has space",
        "<script>",
        "-leading-dash",
        "",
        seeded.token,
        seeded.token.removeprefix("airoi_"),
    ):
        response = served.get("/healthz", headers={"X-Request-Id": insane})
        returned = response.headers["x-request-id"]
        assert returned != insane
        assert re.fullmatch(r"[0-9a-f]{32}", returned)


def test_made_up_request_ids_differ_between_requests_and_workers(served: Client) -> None:
    # Each answer names its own request, and two workers never make the same ids: each
    # draws its own (a forked child too, which starts with its parent's generator).
    ids = {served.get("/healthz").headers["x-request-id"] for _ in range(200)}
    assert len(ids) == 200
    assert all(re.fullmatch(r"[0-9a-f]{32}", made) for made in ids)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's own process
        os.write(write, new_request_id().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    childs = os.read(read, 64).decode()
    os.close(read)
    assert re.fullmatch(r"[0-9a-f]{32}", childs)
    assert childs != new_request_id()


def test_one_access_line_per_request_without_secrets(
    served: Client, seeded: Seeded, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="airoi")
    query_values = ["2026-01-02T03:04:05Z", "417", "secret-looking-cursor-value"]
    served.get(
        "/api/v1/initiatives",
        params={"updated_since": query_values[0], "limit": query_values[1]},
        headers={**bearer(seeded.token), "X-Request-Id": "trace-1"},
    )
    served.get(
        "/api/v1/cost_entries",
        params={"cursor": query_values[2]},
        headers=bearer(seeded.token),
    )
    served.get(f"/api/v1/initiatives/{seeded.initiative_id}", headers=bearer(seeded.token))
    served.get("/api/v1/initiatives", params={"limit": "9"}, headers=bearer("airoi_" + "z" * 43))
    lines = access_lines(caplog)
    assert len(lines) == 4
    for line in lines:
        assert set(line) == {"time", "level", "logger", *LOG_KEYS}
        assert isinstance(line["duration_ms"], float | int) and line["duration_ms"] >= 0
        assert "?" not in str(line["path"])
    first, second, third, fourth = lines
    assert first == {
        **first,
        "method": "GET",
        "path": "/api/v1/initiatives",
        "route": "/api/v1/initiatives",
        "status": 200,
        "account_id": seeded.account_id,
        "request_id": "trace-1",
    }
    assert second["status"] == 400 and second["account_id"] == seeded.account_id
    assert third["route"] == "/api/v1/initiatives/{id}"
    assert fourth["status"] == 401 and fourth["account_id"] is None
    # SEMANTICS R15: nothing the client sent as a secret or a value, nor a person's e-mail,
    # reaches any airoi log line, in either format. The service's own random request ids, the
    # times and the durations are left out of the search: "417" can turn up in any by chance.
    made_up = re.compile(
        r'"request_id":"[0-9a-f]{32}"|"duration_ms":[0-9.e-]+|"time":"[^"]*"'
        r"|request [0-9a-f]{32}|[0-9.e-]+ ms|^\S+Z "
    )
    airoi_text = "\n".join(made_up.sub("", line) for line in logged_lines(caplog.records) if line)
    for forbidden in [
        seeded.token,
        seeded.token.removeprefix("airoi_"),
        "z" * 43,
        seeded.email,
        *query_values,
    ]:
        assert forbidden not in airoi_text, forbidden


def test_a_path_is_logged_only_in_the_form_a_route_serves(
    served: Client, seeded: Seeded, caplog: pytest.LogCaptureFixture
) -> None:
    # SEMANTICS R15: a client's path can hold a token pasted into it, an e-mail address or a
    # query string escaped into the path; such a path was written to the log as it came.
    caplog.set_level(logging.INFO, logger="airoi")
    secret_paths = [
        (f"/api/v1/{seeded.token}", 404),
        ("/api/v1/initiatives/bob%40example.com", 400),
        (f"/api/v1/initiatives/{seeded.token}", 400),
        ("/api/v1/initiatives%3Fsecret=hunter2", 404),
    ]
    for path, status in secret_paths:
        assert served.get(path, headers=bearer(seeded.token)).status_code == status, path
    served.get(f"/api/v1/initiatives/{seeded.initiative_id}", headers=bearer(seeded.token))
    served.get("/api/v1/cost_entries", params={"limit": "7"}, headers=bearer(seeded.token))
    lines = access_lines(caplog)
    assert [(line["path"], line["status"]) for line in lines] == [
        (None, 404),
        (None, 400),
        (None, 400),
        (None, 404),
        (f"/api/v1/initiatives/{seeded.initiative_id}", 200),
        ("/api/v1/cost_entries", 200),
    ]
    assert [line["route"] for line in lines[1:3]] == ["/api/v1/initiatives/{id}"] * 2
    logged = "\n".join(logged_lines(caplog.records))
    for forbidden in (seeded.token.removeprefix("airoi_"), "bob@example.com", "hunter2"):
        assert forbidden not in logged, forbidden


def exposed(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Each sample of a Prometheus text exposition, by name and labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def series(name: str, **labels: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    return name, tuple(sorted(labels.items()))


def test_metrics_count_requests_by_route_template_and_status(
    served: Client, seeded: Seeded
) -> None:
    for _ in range(2):
        served.get(f"/api/v1/initiatives/{seeded.initiative_id}", headers=bearer(seeded.token))
    served.get("/api/v1/initiatives/999999", headers=bearer(seeded.token))
    served.get("/api/v1/metrics")
    served.get("/no/such/place")
    response = served.get("/metrics")  # no token
    assert response.status_code == 200
    text = response.text
    # The names, types and labels dashboards were built on.
    assert "# TYPE airoi_http_requests_total counter" in text
    assert "# TYPE airoi_http_request_duration_seconds histogram" in text
    samples = exposed(text)
    by_id = {"method": "GET", "route": "/api/v1/initiatives/{id}"}
    requests = "airoi_http_requests_total"
    assert samples[series(requests, **by_id, status="200")] == 2
    assert samples[series(requests, **by_id, status="404")] == 1
    assert samples[series(requests, method="GET", route="/api/v1/metrics", status="401")] == 1
    assert samples[series(requests, method="GET", route="unmatched", status="404")] == 1
    duration = "airoi_http_request_duration_seconds"
    assert samples[series(f"{duration}_count", **by_id, status="200")] == 2
    buckets = [
        (dict(labels)["le"], value)
        for (name, labels), value in samples.items()
        if name == f"{duration}_bucket"
        and dict(labels) | {"le": ""} == {**by_id, "status": "200", "le": ""}
    ]
    assert [bound for bound, _ in buckets] == [*(str(b) for b in BUCKETS), "+Inf"]  # as before
    assert buckets[-1][1] == 2
    # Ids stay out of the labels: one series per route template, not per record.
    assert f"/api/v1/initiatives/{seeded.initiative_id}" not in text
    assert "/no/such/place" not in text
    # One process: no `_created` series beside the counts (the workers' sum has none either).
    assert "_created" not in text


def test_metrics_answer_with_one_content_type(served: Client) -> None:
    response = served.get("/metrics")
    # The text format's own type, once: the framework appended a second charset before.
    assert response.headers.get_list("content-type") == [CONTENT_TYPE_LATEST]
    assert CONTENT_TYPE_LATEST.count("charset") == 1


def test_metrics_are_gzipped_for_a_scraper_that_asks(served: Client) -> None:
    # Prometheus sends Accept-Encoding: gzip; the body is the same exposition either way.
    served.get("/api/v1/initiatives")  # a series to count beside the process metrics
    plain = served.get("/metrics", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers
    raw = served.get("/metrics", headers={"Accept-Encoding": "gzip"})
    assert raw.headers["content-encoding"] == "gzip"
    assert raw.headers["vary"] == "Accept-Encoding"
    assert raw.headers.get_list("content-type") == [CONTENT_TYPE_LATEST]
    # httpx undid the gzip; what it read is the text format, the same families as unzipped.
    assert int(raw.headers["content-length"]) < len(raw.content)
    names = {family.name for family in text_string_to_metric_families(raw.text)}
    assert names == {family.name for family in text_string_to_metric_families(plain.text)}
    assert "airoi_http_requests" in names


def test_metrics_include_the_process_metrics(served: Client) -> None:
    samples = exposed(served.get("/metrics").text)
    for name in (
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_max_fds",
        "process_start_time_seconds",
    ):
        assert samples[series(name)] > 0, name
    # This process's own figures: it started before now, and holds at least its stdio open.
    assert samples[series("process_start_time_seconds")] <= time.time()
    assert samples[series("process_open_fds")] >= 3
