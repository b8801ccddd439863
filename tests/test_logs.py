"""`airoi serve`'s log (AIROI_LOG_FORMAT): every line any logger writes, the server's, the tool
SDK's and the service's own, is one JSON object with time, level and logger, or one line of
text; the access line's fields stand beside them; the SDK's per-call chatter is not written.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from airoi.db.engine import make_engine
from airoi.db.migrate import upgrade
from airoi.logs import JsonFormatter, TextFormatter
from airoi.observability import UNMATCHED_ROUTE, access_log, log_access
from tests.conftest import bearer
from tests.factories import BundleBuilder
from tests.servers import airoi_serve, free_port

# The log's format, the same over either store: SQLite alone (tests/conftest.py).
pytestmark = pytest.mark.store_independent

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
LEVELS = {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
ACCESS_KEYS = ["method", "path", "route", "status", "duration_ms", "account_id", "request_id"]
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
# Far from UTC, so a time written in local time instead is hours off.
FAR_ZONE = {"TZ": "Asia/Kathmandu"}
TEXT_LINE = re.compile(r"(\S+) (DEBUG|INFO|WARNING|ERROR|CRITICAL) ([\w.]+): (.+)")


def _tool_call(base: str, token: str) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "list_integrations", "arguments": {}},
    }
    return httpx.post(
        f"{base}/mcp", content=json.dumps(body), headers={**bearer(token), **MCP_HEADERS}
    )


def _seed(engine: Engine) -> str:
    b = BundleBuilder()
    account = b.account()
    token = b.token(b.user(account, role="owner"))
    b.initiative(account)
    b.load(engine)
    return token


def _utc(text: str, since: datetime, until: datetime) -> datetime:
    assert ISO_UTC.fullmatch(text), text
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    # Written in UTC: the server runs in a zone hours away from it.
    assert since - timedelta(seconds=1) <= moment <= until + timedelta(seconds=1), text
    return moment


def json_lines(log: str, since: datetime, until: datetime) -> list[dict[str, Any]]:
    """Every non-empty line of `log`, each one JSON object with time, level, logger and a
    message (the access line: its own fields instead)."""
    entries = []
    for line in log.splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        assert isinstance(entry, dict), line
        _utc(entry["time"], since, until)
        assert entry["level"] in LEVELS, line
        assert isinstance(entry["logger"], str) and entry["logger"], line
        if entry["logger"] == "airoi.access":
            assert list(entry) == ["time", "level", "logger", *ACCESS_KEYS], line
        else:
            assert {"time", "level", "logger", "message"} <= set(entry), line
            assert set(entry) <= {"time", "level", "logger", "message", "exception", "stack"}
            assert isinstance(entry["message"], str), line
        entries.append(entry)
    return entries


def test_serve_writes_every_line_as_one_json_object(
    db_url: str, engine: Engine, tmp_path: Path
) -> None:
    token = _seed(engine)
    log = tmp_path / "serve.log"
    since = datetime.now(UTC)
    with airoi_serve(db_url, stderr_to=log, AIROI_LOG_FORMAT="json", **FAR_ZONE) as port:
        base = f"http://127.0.0.1:{port}"
        answers = [
            httpx.get(f"{base}/api/v1/initiatives?limit=5", headers=bearer(token)),
            httpx.get(f"{base}/api/v1/roi", headers=bearer(token)),
            _tool_call(base, token),
            _tool_call(base, token),
            httpx.get(f"{base}/api/v1/no_such_route", headers=bearer(token)),
            httpx.get(f"{base}/api/v1/initiatives"),  # no token: 401
        ]
    until = datetime.now(UTC)
    assert [a.status_code for a in answers] == [200, 200, 200, 200, 404, 401]
    assert "result" in answers[2].json()
    entries = json_lines(log.read_text(), since, until)

    access = {e["request_id"]: e for e in entries if e["logger"] == "airoi.access"}
    for answer in answers:
        entry = access[answer.headers["x-request-id"]]
        assert entry["status"] == answer.status_code
        assert entry["method"] == answer.request.method
        assert entry["duration_ms"] >= 0
    by_id = {a.headers["x-request-id"]: a for a in answers}
    assert access[answers[4].headers["x-request-id"]]["route"] == UNMATCHED_ROUTE
    assert access[answers[2].headers["x-request-id"]]["route"] == "/mcp"
    assert all(access[rid]["account_id"] is not None for rid in list(by_id)[:4])
    # The query string is the client's: never in the line (SEMANTICS R15).
    assert access[answers[0].headers["x-request-id"]]["path"] == "/api/v1/initiatives"

    # The server's own lines go through the same handler.
    server_lines = [e["message"] for e in entries if e["logger"].startswith("uvicorn")]
    assert "Application startup complete." in server_lines
    assert any(m.startswith("Finished server process") for m in server_lines)
    # The tool SDK's line per call ("Terminating session: None") is not written.
    assert not [e for e in entries if e["logger"].startswith("mcp")]
    assert "Terminating session" not in log.read_text()


def test_a_failure_and_the_workers_lines_are_json_too(tmp_path: Path) -> None:
    # A PostgreSQL server that is not there: the start-up check, /readyz and a request each log
    # a failure, in the parent process and in both workers.
    password = "pw-CANARY-6d1e"
    url = f"postgresql+psycopg://airoi:{password}@127.0.0.1:9/none"
    log = tmp_path / "serve.log"
    since = datetime.now(UTC)
    with airoi_serve(
        url, "--workers", "2", stderr_to=log, AIROI_LOG_FORMAT="json", **FAR_ZONE
    ) as port:
        base = f"http://127.0.0.1:{port}"
        ready = httpx.get(f"{base}/readyz", timeout=30)
        api = httpx.get(f"{base}/api/v1/roi", headers=bearer("airoi_" + "x" * 43), timeout=30)
    until = datetime.now(UTC)
    assert (ready.status_code, api.status_code) == (503, 503)
    text = log.read_text()
    entries = json_lines(text, since, until)
    warnings = [e["message"] for e in entries if e["level"] == "WARNING" and e["logger"] == "airoi"]
    # SEMANTICS R15: by class, route and request id.
    for answer, route in ((ready, "/readyz"), (api, "/api/v1/roi")):
        rid = answer.headers["x-request-id"]
        expected = f"database unavailable on {route} (request {rid}): OperationalError"
        assert expected in warnings, warnings
    # The parent's check and each worker's.
    starts = [w for w in warnings if w.startswith("the store cannot be reached at start")]
    assert len(starts) == 3, warnings
    started = [e for e in entries if e.get("message") == "Application startup complete."]
    assert len(started) == 2  # one a worker
    assert password not in text and "x" * 43 not in text


def test_serve_in_text_writes_lines_a_person_reads(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(url)
    upgrade(engine)
    token = _seed(engine)
    engine.dispose()
    log = tmp_path / "serve.log"
    since = datetime.now(UTC)
    with airoi_serve(url, stderr_to=log, AIROI_LOG_FORMAT="text", **FAR_ZONE) as port:
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(f"{base}/api/v1/initiatives", headers=bearer(token))
        tool = _tool_call(base, token)
        missing = httpx.get(f"{base}/nowhere")
    until = datetime.now(UTC)
    assert (page.status_code, tool.status_code, missing.status_code) == (200, 200, 404)
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    parsed = []
    for line in lines:
        with pytest.raises(json.JSONDecodeError):
            json.loads(line)
        matched = TEXT_LINE.fullmatch(line)
        assert matched, line
        _utc(matched[1], since, until)
        parsed.append((matched[2], matched[3], matched[4]))
    assert ("INFO", "uvicorn.error", "Application startup complete.") in parsed
    access = [message for level, name, message in parsed if name == "airoi.access"]
    rid = page.headers["x-request-id"]
    assert any(m.startswith("GET /api/v1/initiatives 200 ") and m.endswith(rid) for m in access)
    assert any(m.startswith("GET unmatched 404 ") for m in access), access
    assert any(m.startswith("POST /mcp 200 ") for m in access), access
    assert not [name for _, name, _ in parsed if name.startswith("mcp")]


def test_a_bad_log_format_stops_serve_with_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "airoi", "serve", "--port", str(free_port())],
        env={
            **os.environ,
            "AIROI_DATABASE_URL": f"sqlite:///{tmp_path / 'none.db'}",
            "AIROI_LOG_FORMAT": "yaml",
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stderr.strip()) == (
        1,
        "AIROI_LOG_FORMAT must be one of json, text, not 'yaml'",
    )


def _formatted(formatter: logging.Formatter, log: Callable[[], None]) -> list[str]:
    """What `formatter` writes of the records `log` makes on the airoi loggers."""
    lines: list[str] = []
    handler = logging.Handler()
    handler.setFormatter(formatter)
    handler.emit = lambda record: lines.append(handler.format(record))  # type: ignore[method-assign]
    logger = logging.getLogger("airoi")
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    # Not on to pytest's capture too: a lone surrogate in a captured record cannot be sent
    # from a test worker (pytest -n) back to the runner.
    logger.propagate = False
    try:
        log()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate
    return lines


def test_a_traceback_stays_inside_the_one_object() -> None:
    def fail() -> None:
        try:
            {}["missing"]
        except KeyError:
            logging.getLogger("airoi.test").exception("lookup failed\u2028on purpose")

    (line,) = _formatted(JsonFormatter(), fail)
    assert len(line.splitlines()) == 1 and line.isascii()
    entry = json.loads(line)
    assert entry["message"] == "lookup failed\u2028on purpose"
    assert entry["exception"].startswith("Traceback (most recent call last):")
    assert entry["exception"].endswith("KeyError: 'missing'")
    # Text: the traceback under the line, as Python prints it.
    (text,) = _formatted(TextFormatter(), fail)
    assert TEXT_LINE.fullmatch(text.splitlines()[0])
    assert text.splitlines()[-1] == "KeyError: 'missing'"


@pytest.mark.parametrize(
    "path", ['/api/v1/x"\\\ny', '/api/v1/x"\\\ny\u00e9\u2028\x85', "/api/v1/\ud800"]
)
def test_an_access_line_is_one_line_of_json_whatever_the_path_holds(path: str) -> None:
    # A path is the client's text: a quote, a backslash, a line break of any kind, a non-ASCII
    # letter or a lone surrogate in it must neither end the line early nor break the JSON.
    (line,) = _formatted(
        JsonFormatter(),
        lambda: log_access("GET", path, UNMATCHED_ROUTE, 404, 0.0012345, None, "r-1"),
    )
    assert len(line.splitlines()) == 1 and line.isascii()
    entry = json.loads(line)
    assert list(entry.items())[1:] == [
        ("level", "INFO"),
        ("logger", access_log.name),
        ("method", "GET"),
        ("path", path),
        ("route", UNMATCHED_ROUTE),
        ("status", 404),
        ("duration_ms", 1.234),
        ("account_id", None),
        ("request_id", "r-1"),
    ]
    assert ISO_UTC.fullmatch(entry["time"])
