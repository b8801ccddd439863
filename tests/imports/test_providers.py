"""`airoi import openai` and `airoi import anthropic` (IMPORT.md; SEMANTICS R40): saved
responses in their three forms, and `--api` against a local server answering in the shapes
the providers' API references document: pages followed, 429 and 5xx tried again as
Retry-After asks, bounded; the admin key never shown.

OpenAI's amounts are dollars as a JSON number; Anthropic's are cents as a decimal string.
Every expected figure is worked out by hand from the responses written here."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from tests.conftest import bearer
from tests.imports.helpers import account_with, airoi_import, snapshot

DAY = 86_400
MARCH_1 = 1_772_323_200  # 2026-03-01T00:00:00Z


def openai_page(
    buckets: list[tuple[int, list[tuple[Any, str | None, str | None]]]],
    *,
    next_page: str | None = None,
) -> dict[str, Any]:
    """GET /v1/organization/costs: buckets of (start, results of (value, line_item, project))."""
    return {
        "object": "page",
        "data": [
            {
                "object": "bucket",
                "start_time": start,
                "end_time": start + DAY,
                "results": [
                    {
                        "object": "organization.costs.result",
                        "amount": {"value": value, "currency": "usd"},
                        "line_item": line_item,
                        "project_id": project,
                    }
                    for value, line_item, project in results
                ],
            }
            for start, results in buckets
        ],
        "has_more": next_page is not None,
        "next_page": next_page,
    }


def anthropic_page(
    buckets: list[tuple[str, list[dict[str, Any]]]], *, next_page: str | None = None
) -> dict[str, Any]:
    """GET /v1/organizations/cost_report: buckets of (day, results)."""
    return {
        "data": [
            {
                "starting_at": f"{day}T00:00:00Z",
                "ending_at": f"{day[:8]}{int(day[8:]) + 1:02d}T00:00:00Z",
                "results": results,
            }
            for day, results in buckets
        ],
        "has_more": next_page is not None,
        "next_page": next_page,
    }


def claude(
    amount: str,
    *,
    workspace: str | None = "wrk_a",
    description: str | None = None,
    model: str = "claude-sonnet-4",
) -> dict[str, Any]:
    return {
        "amount": amount,
        "currency": "USD",
        "workspace_id": workspace,
        "description": description,
        "model": model,
        "cost_type": "tokens",
        "token_type": "uncached_input_tokens",
        "service_tier": "standard",
        "context_window": "0-200k",
    }


OPENAI_PAGES = [
    # 0.06 + 12.3456789 dollars of gpt-4o input on 1 March, proj_abc; 1.5 of proj_zzz
    openai_page(
        [(MARCH_1, [(0.06, "gpt-4o, input", "proj_abc"), (12.3456789, "gpt-4o, input", "proj_abc"),
                    (1.5, "gpt-4o, input", "proj_zzz")])],
        next_page="page_2",
    ),
    # 2 March: -0.005 (a credit) and a null line item (OpenAI usage)
    openai_page([(MARCH_1 + DAY, [(-0.005, "gpt-4o, input", "proj_abc"), (2, None, "proj_abc")])]),
]  # fmt: skip
OPENAI_RULES = '[[map]]\ninitiative_id = 101\nwhere = { project_id = ["proj_abc", "proj_def"] }\n'
# By hand, in cents: 1 March gpt-4o = 6 + 1234.56789 = 1240.56789 -> 1241;
# 2 March gpt-4o = -0.5 -> 0 (half to even); 2 March "OpenAI usage" = 200.
OPENAI_EXPECTED = {
    ("2026-03-01", "gpt-4o, input"): 1241,
    ("2026-03-02", "gpt-4o, input"): 0,
    ("2026-03-02", "OpenAI usage"): 200,
}
ANTHROPIC_PAGES = [
    anthropic_page(
        [("2026-03-01", [claude("123.45", description="Claude Sonnet 4 Usage - Input Tokens"),
                         claude("0.55", description="Claude Sonnet 4 Usage - Input Tokens"),
                         claude("99", workspace="wrk_other")])],
        next_page="page_MjAyNS0wNS0xNFQwMDowMDowMFo=",
    ),
    anthropic_page([("2026-03-02", [claude("10.5", workspace=None, model="claude-haiku")])]),
]  # fmt: skip
ANTHROPIC_RULES = '[[map]]\ninitiative_id = 102\nwhere = { workspace_id = "wrk_a" }\n'
# Cents as written: 123.45 + 0.55 = 124 on 1 March; wrk_other (99) unmatched; the null
# workspace on 2 March unmatched too (10.5 cents).
ANTHROPIC_EXPECTED = {("2026-03-01", "Claude Sonnet 4 Usage - Input Tokens"): 124}


def _served(client: TestClient[Litestar], token: str) -> dict[tuple[str, str], int]:
    rows = client.get("/api/v1/cost_entries?limit=500", headers=bearer(token)).json()["data"]
    return {(row["period_start"], row["description"]): row["amount_cents"] for row in rows}


def _rules(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("form", ["pages", "array", "jsonl"])
def test_saved_openai_costs_in_each_form(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path, form: str
) -> None:
    # SEMANTICS R40; IMPORT.md: a page a file, a JSON array of pages, or JSON Lines.
    token = account_with(engine)
    if form == "pages":
        files = []
        for number, page in enumerate(OPENAI_PAGES):
            files.append(tmp_path / f"costs-{number}.json")
            files[-1].write_text(json.dumps(page), encoding="utf-8")
    elif form == "array":
        files = [tmp_path / "costs.json"]
        files[0].write_text(json.dumps(OPENAI_PAGES), encoding="utf-8")
    else:
        files = [tmp_path / "costs.jsonl"]
        files[0].write_text("\n".join(map(json.dumps, OPENAI_PAGES)) + "\n", encoding="utf-8")
    rules = _rules(tmp_path, OPENAI_RULES)
    result = airoi_import(db_url, "openai", *files, "--account", "1", "--rules", rules)
    assert result.exit_code == 0, result.output
    assert _served(client, token) == OPENAI_EXPECTED
    rows = client.get("/api/v1/cost_entries", headers=bearer(token)).json()["data"]
    assert {(row["vendor_name"], row["cost_type"], row["currency"]) for row in rows} == {
        ("OpenAI", "tokens", "USD")
    }
    assert "Rows read: 5; matched: 4; unmatched: 1" in result.output
    assert "project proj_zzz: 1 rows, 1.50 USD" in result.output


def test_saved_anthropic_cost_report_counts_cents(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    # SEMANTICS R40: Anthropic's amount is already cents, as a decimal string.
    token = account_with(engine)
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(ANTHROPIC_PAGES), encoding="utf-8")
    rules = _rules(tmp_path, ANTHROPIC_RULES)
    result = airoi_import(db_url, "anthropic", saved, "--account", "1", "--rules", rules)
    assert result.exit_code == 0, result.output
    assert _served(client, token) == ANTHROPIC_EXPECTED
    assert "workspace wrk_other: 1 rows, 0.99 USD" in result.output
    assert "workspace -: 1 rows, 0.105" not in result.output  # shown to the cent
    assert "workspace -: 1 rows, 0.10 USD" in result.output


def test_a_number_where_a_decimal_string_belongs_is_refused(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    # Units matter: a JSON number in Anthropic's amount is not taken for cents.
    account_with(engine)
    page = anthropic_page([("2026-03-01", [{**claude("1"), "amount": 12.5}])])
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(page), encoding="utf-8")
    before = snapshot(engine)
    result = airoi_import(
        db_url, "anthropic", saved, "--account", "1", "--rules", _rules(tmp_path, ANTHROPIC_RULES)
    )
    assert result.exit_code == 1
    assert (
        "report.json: page 1, data[0].results[0], column amount: must be a decimal string (cents)"
        in result.output
    )
    assert snapshot(engine) == before


# --------------------------------------------------------------- --api, a local server


class _Provider:
    """What the local server answers: pages by cursor, after some 429s and 503s."""

    def __init__(
        self,
        pages: list[dict[str, Any]],
        cursors: list[str | None],
        failures: list[int],
        key_header: str,
        key: str,
    ) -> None:
        self.pages = dict(zip(cursors, pages, strict=True))
        self.failures = list(failures)
        self.key_header = key_header
        self.key = key
        self.asked: list[dict[str, list[str]]] = []


@contextmanager
def serving(provider: _Provider, path: str) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            provider.asked.append(query)
            expected = (
                provider.key if provider.key_header == "x-api-key" else f"Bearer {provider.key}"
            )
            if url.path != path or self.headers.get(provider.key_header) != expected:
                self._send(401 if url.path == path else 404, {"error": "no"})
                return
            if provider.failures:
                status = provider.failures.pop(0)
                self._send(status, {"error": {"type": "rate_limit_error"}}, {"Retry-After": "0"})
                return
            page = provider.pages.get(query.get("page", [None])[0])
            self._send(200 if page else 400, page or {"error": "bad page"})

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


OPENAI_KEY = "sk-admin-" + "s" * 40
ANTHROPIC_KEY = "sk-ant-admin01-" + "s" * 40


def test_openai_api_pages_followed_and_429_503_retried(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    # IMPORT.md: --api follows next_page to the end and tries 429 and 5xx again.
    token = account_with(engine)
    provider = _Provider(OPENAI_PAGES, [None, "page_2"], [429, 503], "Authorization", OPENAI_KEY)
    with serving(provider, "/v1/organization/costs") as base:
        result = airoi_import(
            db_url, "openai", "--api", "--account", "1", "--rules", _rules(tmp_path, OPENAI_RULES),
            "--since", "2026-03-01", "--until", "2026-03-02",
            env={"OPENAI_ADMIN_KEY": OPENAI_KEY, "OPENAI_BASE_URL": f"{base}/v1"},
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert _served(client, token) == OPENAI_EXPECTED
    assert len(provider.asked) == 4  # two refusals, then two pages
    first = provider.asked[0]
    assert first["start_time"] == [str(MARCH_1)]
    assert first["end_time"] == [str(MARCH_1 + 2 * DAY)]  # --until is the last day, included
    assert sorted(first["group_by"]) == ["line_item", "project_id"]
    assert provider.asked[-1]["page"] == ["page_2"]
    assert OPENAI_KEY not in result.output
    (connection,) = client.get("/api/v1/integrations", headers=bearer(token)).json()["data"]
    assert (connection["platform"], connection["auth_type"]) == ("openai", "api_key")


def test_anthropic_api_with_its_base_without_v1(
    engine: Engine, db_url: str, client: TestClient[Litestar], tmp_path: Path
) -> None:
    token = account_with(engine)
    cursors = [None, "page_MjAyNS0wNS0xNFQwMDowMDowMFo="]
    provider = _Provider(ANTHROPIC_PAGES, cursors, [500], "x-api-key", ANTHROPIC_KEY)
    with serving(provider, "/v1/organizations/cost_report") as base:
        result = airoi_import(
            db_url, "anthropic", "--api", "--account", "1",
            "--rules", _rules(tmp_path, ANTHROPIC_RULES),
            "--since", "2026-03-01", "--until", "2026-03-02",
            env={"ANTHROPIC_ADMIN_KEY": ANTHROPIC_KEY, "ANTHROPIC_BASE_URL": base},
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert _served(client, token) == ANTHROPIC_EXPECTED
    assert provider.asked[1]["starting_at"] == ["2026-03-01T00:00:00Z"]
    assert provider.asked[1]["ending_at"] == ["2026-03-03T00:00:00Z"]
    assert sorted(provider.asked[1]["group_by[]"]) == ["description", "workspace_id"]
    assert ANTHROPIC_KEY not in result.output


def test_retries_are_bounded_and_nothing_is_written(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    account_with(engine)
    provider = _Provider(OPENAI_PAGES, [None, "page_2"], [429] * 50, "Authorization", OPENAI_KEY)
    before = snapshot(engine)
    with serving(provider, "/v1/organization/costs") as base:
        result = airoi_import(
            db_url, "openai", "--api", "--account", "1", "--rules", _rules(tmp_path, OPENAI_RULES),
            env={"OPENAI_ADMIN_KEY": OPENAI_KEY, "OPENAI_BASE_URL": base},
        )  # fmt: skip
    assert result.exit_code == 1
    assert "OpenAI API: page 1: answered 429 6 times; try again later" in result.output
    assert len(provider.asked) == 6
    assert snapshot(engine) == before


def test_a_wrong_key_is_named_by_its_variable_not_shown(
    engine: Engine, db_url: str, tmp_path: Path
) -> None:
    account_with(engine)
    provider = _Provider(OPENAI_PAGES, [None, "page_2"], [], "Authorization", OPENAI_KEY)
    wrong = "sk-admin-wrong-" + "w" * 30
    with serving(provider, "/v1/organization/costs") as base:
        result = airoi_import(
            db_url, "openai", "--api", "--account", "1", "--rules", _rules(tmp_path, OPENAI_RULES),
            env={"OPENAI_ADMIN_KEY": wrong, "OPENAI_BASE_URL": base},
        )  # fmt: skip
    assert result.exit_code == 1
    assert "answered 401; OPENAI_ADMIN_KEY must hold an admin key" in result.output
    assert wrong not in result.output


def test_api_without_a_key_says_which_variable(engine: Engine, db_url: str, tmp_path: Path) -> None:
    account_with(engine)
    result = airoi_import(
        db_url, "anthropic", "--api", "--account", "1", "--rules",
        _rules(tmp_path, ANTHROPIC_RULES), env={"ANTHROPIC_ADMIN_KEY": ""},
    )  # fmt: skip
    assert result.exit_code == 1
    assert "ANTHROPIC_ADMIN_KEY: not set" in result.output
