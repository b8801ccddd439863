"""Large or hostile input answers 400 (or 404 / 401 where that is the rule), never 500,
always with the error body of SPEC 7. Token lookup is by hash (SEMANTICS R12, R13, R29).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from tests.conftest import bearer
from tests.factories import BundleBuilder

Client = TestClient[Litestar]
SRC = Path(__file__).resolve().parents[1] / "src" / "airoi"

# SPEC 4.A: each endpoint with the query parameters it declares.
ENDPOINTS: dict[str, tuple[str, ...]] = {
    "roi": ("window", "initiative_id"),
    "initiatives": ("limit", "cursor", "updated_since", "include_sample"),
    "initiatives/3": (),
    "cost_entries": (
        "limit",
        "cursor",
        "updated_since",
        "initiative_id",
        "period_from",
        "period_to",
    ),
    "value_entries": (
        "limit",
        "cursor",
        "updated_since",
        "initiative_id",
        "period_from",
        "period_to",
        "status",
    ),
    "metrics": ("limit", "cursor", "updated_since"),
    "observations": ("limit", "cursor", "updated_since", "initiative_id", "metric_key"),
    "budgets": ("limit", "cursor", "initiative_id", "include_sample", "budgeted"),
    "business_cases": ("limit", "cursor", "initiative_id", "include_sample"),
    "decisions": ("limit", "cursor", "updated_since", "initiative_id", "outcome"),
    "integrations": ("limit", "cursor", "updated_since", "platform", "status"),
}
FREE_TEXT = {"metric_key": 200, "platform": 100}  # declared strings, with their bound
LISTS = [path for path, names in ENDPOINTS.items() if "cursor" in names]
HOSTILE_VALUES = (
    "５",
    "１yr",
    "apprOved",
    "📈🔥",
    "ｔrue",
    "２０２６-01-01",
    "1e9",
    "99999999999999999999",
    "1e3",
    "1.0",
    "",
    "a\x00b",
    "\x00",
    "'; DROP TABLE initiatives; --",
    "%",
    "\u202e\ufeff",
    "x" * 10_000,
    "9" * 10_000,  # past int()'s 4300-digit limit
    # JSON's null, which the lenient conversion underneath reads as "not given" for a
    # parameter that may be left out: status=null answered every row (SEMANTICS R12).
    "null",
    "NULL",
    "nUll",
)


@pytest.fixture
def token(engine: Engine) -> str:
    b = BundleBuilder()
    acct = b.account()
    secret = b.token(b.user(acct))
    initiative = b.initiative(acct)  # id 3, the path /initiatives/3
    b.cost_entry(initiative)
    b.value_entry(initiative)
    b.load(engine)
    return secret


def spec7(response: Any) -> dict[str, Any]:
    """The response is SPEC 7's error body with the request id of its X-Request-Id."""
    assert response.status_code != 500, response.text
    body = response.json()
    assert body == {
        "error": {
            "status": response.status_code,
            "message": body["error"]["message"],
            "request_id": response.headers["x-request-id"],
        }
    }, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    return body


def refused(response: Any, status: int = 400) -> str:
    assert response.status_code == status, (response.status_code, response.text[:500])
    return str(spec7(response)["error"]["message"])


def call(client: Client, secret: str, path: str, query: str = "", **headers: str) -> Any:
    return client.get(
        f"/api/v1/{path}" + (f"?{query}" if query else ""),
        headers={**bearer(secret), **headers},
    )


@pytest.mark.store_independent
@pytest.mark.parametrize("path", list(ENDPOINTS))
def test_a_10kb_unknown_parameter_is_refused(client: Client, token: str, path: str) -> None:
    name = "q" * 10_000
    assert "Unknown query parameter" in refused(call(client, token, path, f"{name}=1"))
    assert "Unknown query parameter" in refused(call(client, token, path, f"x={'y' * 10_000}"))


@pytest.mark.parametrize(
    ("path", "name"), [("observations", "metric_key"), ("integrations", "platform")]
)
def test_a_10kb_value_of_a_free_text_filter_is_refused(
    client: Client, token: str, path: str, name: str
) -> None:
    # The description bounds these strings (200 characters); past that the value is refused.
    assert name in refused(call(client, token, path, f"{name}={'k' * 10_000}"))
    response = call(client, token, path, f"{name}={'k' * FREE_TEXT[name]}")
    assert response.status_code == 200, response.text[:500]
    # SEMANTICS R36: an empty first page has no position to resume from.
    empty = {"has_more": False, "next_cursor": None, "resume_cursor": None}
    assert response.json() == {"data": [], "page": empty}


@pytest.mark.store_independent
@pytest.mark.parametrize("path", LISTS)
def test_random_cursors_are_refused(client: Client, token: str, path: str) -> None:
    rng = os.urandom
    forged = [
        "".join(f"%{b:02X}" for b in rng(24)),  # random bytes, mostly not UTF-8
        "%FF%FE%FD",
        "%C3%28",  # an invalid UTF-8 sequence
        "%ED%A0%80",  # an encoded surrogate
        "%00",
        "eyJ1IjoiMjAyNi0wMS0wMSIsImkiOjF9",  # base64 of a plausible shape, never issued
        "A" * 200,
        "A" * 10_000,
        "%F0%9F%93%88",
    ]
    for cursor in forged:
        assert "cursor" in refused(call(client, token, path, f"cursor={cursor}"))


@pytest.mark.parametrize(
    ("path", "name"),
    [(path, name) for path, names in ENDPOINTS.items() for name in names],
)
def test_hostile_values_never_crash(client: Client, token: str, path: str, name: str) -> None:
    for value in HOSTILE_VALUES:
        response = client.get(f"/api/v1/{path}", params={name: value}, headers=bearer(token))
        if name in FREE_TEXT and len(value) <= FREE_TEXT[name] and "\x00" not in value:
            # A declared free-text filter: a valid query that matches nothing.
            assert response.status_code == 200, (value[:40], response.text[:500])
            assert response.json()["data"] == []
        else:
            message = refused(response)
            assert name in message, (value[:40], message)


@pytest.mark.parametrize(
    ("path", "query"),
    [
        ("cost_entries", "limit=1e9"),
        ("cost_entries", "limit=99999999999999999999"),
        ("cost_entries", "limit=5.0"),
        ("cost_entries", "limit=%EF%BC%95"),  # a full-width 5
        ("cost_entries", "limit="),
        ("cost_entries", "limit=1%00"),
        ("cost_entries", "initiative_id=1e3"),
        ("roi", "initiative_id=1e3"),
        ("budgets", "initiative_id=3.0"),
        ("observations", "initiative_id=3%00"),
        ("roi", "window=%EF%BC%91yr"),
        ("roi", "window="),
        ("value_entries", "status=apprOved"),
        ("decisions", "outcome=%00"),
        ("metrics", "updated_since=2026-03-01T00:00:00Z%00"),
        ("initiatives", "include_sample="),
        ("cost_entries", "limit=1&limit=2"),
        ("cost_entries", "initiative_id=3&initiative_id=3"),
        ("roi", "window=all&window=all"),
        ("integrations", "platform=a&platform=b"),
        # A NUL byte: PostgreSQL text cannot hold one (it was a 500 there), refused everywhere.
        ("observations", "metric_key=a%00b"),
        ("integrations", "platform=%00"),
    ],
)
def test_malformed_values_are_refused(client: Client, token: str, path: str, query: str) -> None:
    name = query.split("=", maxsplit=1)[0]
    assert name in refused(call(client, token, path, query))


@pytest.mark.store_independent
def test_integers_are_written_in_digits(client: Client, token: str) -> None:
    # 1e3 and 3.0 were once read as 1000 and 3 by the lenient conversion (SEMANTICS R12).
    assert call(client, token, "cost_entries", "initiative_id=3").status_code == 200
    assert call(client, token, "roi", "initiative_id=3").status_code == 200
    for query in ("initiative_id=3.0", "initiative_id=3e0", "initiative_id=%EF%BC%93"):
        assert "initiative_id" in refused(call(client, token, "cost_entries", query))
        assert "initiative_id" in refused(call(client, token, "roi", query))


@pytest.mark.parametrize(
    ("path", "query", "detail"),
    [
        ("value_entries", "status=null", "Invalid enum value 'null'"),
        ("decisions", "outcome=Null", "Invalid enum value 'Null'"),
        ("integrations", "status=NULL", "Invalid enum value 'NULL'"),
        ("cost_entries", "period_from=null", "Invalid RFC3339 encoded date"),
        ("value_entries", "period_to=NULL", "Invalid RFC3339 encoded date"),
    ],
)
def test_null_is_not_a_way_to_leave_a_filter_out(
    client: Client, token: str, path: str, query: str, detail: str
) -> None:
    # SEMANTICS R12: a value that is not listed, or not a date, is refused; "null" is neither.
    # It used to filter nothing: a template filled from an empty variable got every row.
    name = query.split("=", maxsplit=1)[0]
    assert refused(call(client, token, path, query)) == (
        f"The {name} parameter is not valid: {detail}."
    )
    # A free-text filter takes "null" as the text it is.
    response = call(client, token, "observations", "metric_key=null")
    # SEMANTICS R36: an empty first page has no position to resume from.
    empty = {"has_more": False, "next_cursor": None, "resume_cursor": None}
    assert response.json() == {"data": [], "page": empty}


@pytest.mark.store_independent
def test_a_leading_zero_is_refused_in_our_words(client: Client, token: str) -> None:
    # SEMANTICS R12: a whole number is written as JSON writes one. "05" was refused with the
    # validator's "Expected `int`, got `str`"; the path id used to take it as 5.
    for path, query, name in (
        ("cost_entries", "limit=05", "limit"),
        ("cost_entries", "initiative_id=03", "initiative_id"),
        ("roi", "initiative_id=03", "initiative_id"),
        ("budgets", "limit=00", "limit"),
    ):
        assert refused(call(client, token, path, query)) == (
            f"The {name} parameter must be a whole number written in digits, with no leading zero."
        )
    response = client.get("/api/v1/initiatives/03", headers=bearer(token))
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "The id must be a whole number from 1 to 9223372036854775807, with no leading zero."
    )
    assert call(client, token, "cost_entries", "limit=10").status_code == 200
    # Other values that are no whole number are not told about zeros.
    assert refused(call(client, token, "cost_entries", "limit=1e3")) == (
        "The limit parameter must be a whole number written in digits."
    )


@pytest.mark.parametrize("path", list(ENDPOINTS))
def test_a_nul_byte_and_empty_values(client: Client, token: str, path: str) -> None:
    for query in ("%00=1", "=1", "&&", "a%00b=c"):
        response = call(client, token, path, query)
        assert response.status_code in (200, 400), (query, response.text)
        if response.status_code == 400:
            spec7(response)


@pytest.mark.parametrize("path", list(ENDPOINTS))
def test_a_10kb_authorization_header_is_401(client: Client, token: str, path: str) -> None:
    for header in (
        "Bearer " + "x" * 10_000,
        "Bearer " + token + "x" * 10_000,
        "x" * 10_000,
        "Bearer " + "é" * 5_000,
    ):
        response = client.get(f"/api/v1/{path}", headers={"Authorization": header.encode()})
        refused(response, 401)


@pytest.mark.store_independent
def test_very_long_paths(client: Client, token: str) -> None:
    for path in (
        "a" * 10_000,
        "initiatives/" + "9" * 10_000,
        "initiatives/" + "1" * 5_000 + "/x",
        "/".join(["cost_entries"] * 800),
        "initiatives/%00",
        "initiatives/%F0%9F%93%88",
    ):
        response = call(client, token, path)
        assert response.status_code in (400, 404), (path[:40], response.status_code)
        spec7(response)


def test_a_token_differing_in_its_last_character_is_401(client: Client, token: str) -> None:
    assert call(client, token, "metrics").status_code == 200
    near = token[:-1] + ("y" if token[-1] != "y" else "z")
    refused(call(client, near, "metrics"), 401)
    refused(call(client, token[:-1], "metrics"), 401)
    refused(call(client, token + "x", "metrics"), 401)
    refused(call(client, token.upper(), "metrics"), 401)


def test_tokens_are_looked_up_by_hash_never_compared() -> None:
    # SEMANTICS R29: the secret is hashed and the hash looked up; no string comparison of it.
    auth = (SRC / "auth.py").read_text()
    assert re.search(r"tokens\.c\.token_hash\s*==\s*bindparam\(\"token_hash\"\)", auth)
    assert re.search(r"\{\"token_hash\":\s*hash_token\(secret\)\}", auth)
    comparison = re.compile(r"(==|!=)\s*secret\b|\bsecret\s*(==|!=)")
    offenders = [
        f"{path.relative_to(SRC)}:{n}"
        for path in SRC.rglob("*.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if comparison.search(line)
    ]
    assert offenders == []
