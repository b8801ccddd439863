"""The OpenAPI description is generated from the served routes (SPEC 1, 4.A.2, 7, 9)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from sqlalchemy import Engine

from airoi.apidocs import DOCS_PATH
from airoi.app import create_app
from airoi.settings import Settings
from tests.conftest import bearer
from tests.factories import BundleBuilder

# The description is made from the routes, not the store: SQLite alone (tests/conftest.py).
pytestmark = pytest.mark.store_independent

SPEC_PATHS = {
    "/api/v1/openapi.json",
    "/api/v1/roi",
    "/api/v1/budgets",
    "/api/v1/initiatives",
    "/api/v1/initiatives/{id}",
    "/api/v1/cost_entries",
    "/api/v1/value_entries",
    "/api/v1/metrics",
    "/api/v1/observations",
    "/api/v1/decisions",
    "/api/v1/integrations",
}
ERROR_STATUSES = {"400", "401", "403", "404", "429"}


@pytest.fixture(scope="module")
def app() -> Litestar:
    return create_app(Settings(database_url="sqlite:///:memory:"))


@pytest.fixture(scope="module")
def document(app: Litestar) -> dict[str, Any]:
    with TestClient(app) as client:
        response = client.get("/api/v1/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    return response.json()  # type: ignore[no-any-return]


def served_paths(app: Litestar) -> set[str]:
    # The /api/v1 document describes /api/v1; /healthz, /readyz and /metrics sit outside it,
    # and so do the index /api/v1 and the docs page under /api/v1/docs (pages for people,
    # not operations: tests/apidocs/test_api_docs.py).
    return {
        route.path_format
        for route in app.routes
        if "GET" in getattr(route, "methods", ())
        and route.path_format.startswith("/api/v1/")
        and not route.path_format.startswith(DOCS_PATH)
    }


def test_every_served_route_is_described_and_every_described_route_is_served(
    app: Litestar, document: dict[str, Any]
) -> None:
    assert document["openapi"].startswith("3.1")
    assert set(document["paths"]) == served_paths(app)
    # The version-1 routes served today: SPEC 4.A.2 less /roi and /budgets, which come later.
    assert set(document["paths"]) >= SPEC_PATHS


def test_only_get_is_declared(document: dict[str, Any]) -> None:
    for path, item in document["paths"].items():
        methods = {
            k for k in item if k in {"get", "put", "post", "delete", "patch", "head", "options"}
        }
        assert methods == {"get"}, path


def test_operations_are_documented(document: dict[str, Any]) -> None:
    ids = []
    for path, item in document["paths"].items():
        op = item["get"]
        ids.append(op["operationId"])
        assert op["summary"] and op["description"], path
        for param in op.get("parameters", []):
            assert param.get("description"), f"{path} {param['name']}"
        if path == "/api/v1/openapi.json":
            assert op["security"] == []  # public, said so (Redocly's security-defined)
            continue
        assert op["security"] == [{"bearerAuth": []}]
        assert ERROR_STATUSES | {"200"} <= set(op["responses"]), path
        for status in ERROR_STATUSES:
            schema = op["responses"][status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}
    assert len(ids) == len(set(ids))
    assert "listCostEntries" in ids and "getInitiative" in ids


def admits_null(schema: dict[str, Any]) -> bool:
    kinds = schema.get("type")
    return (
        kinds == "null"
        or (isinstance(kinds, list) and "null" in kinds)
        or None in schema.get("enum", ())
        or any(admits_null(option) for option in schema.get("oneOf", ()))
        or any(admits_null(option) for option in schema.get("anyOf", ()))
    )


# The one query parameter that must be given: what a breakdown splits by (SEMANTICS R37).
REQUIRED_QUERY = {("/api/v1/roi/breakdown", "by")}


def test_no_query_parameter_is_described_as_taking_null(document: dict[str, Any]) -> None:
    # A query parameter is given or left out; "null" is refused like any value not listed
    # (SEMANTICS R12), so a client made from the description must not think it can send it.
    described = 0
    for path, item in document["paths"].items():
        for param in item["get"].get("parameters", []):
            assert not admits_null(param["schema"]), (path, param)
            required = param["in"] == "path" or (path, param["name"]) in REQUIRED_QUERY
            assert param["required"] is required, (path, param)
            described += 1
    assert described >= 40
    status = next(
        param["schema"]
        for param in document["paths"]["/api/v1/value_entries"]["get"]["parameters"]
        if param["name"] == "status"
    )
    # SPEC 3: the value statuses, and nothing else.
    assert status["type"] == "string"
    assert status["enum"] == ["draft", "calculated", "reviewed", "approved", "disputed", "archived"]
    period = next(
        param["schema"]
        for param in document["paths"]["/api/v1/cost_entries"]["get"]["parameters"]
        if param["name"] == "period_from"
    )
    assert (period["type"], period["format"]) == ("string", "date")
    assert period["description"]


def test_bearer_security_scheme(document: dict[str, Any]) -> None:
    scheme = document["components"]["securitySchemes"]["bearerAuth"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"


def test_error_body_schema(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    detail = schemas["ErrorDetail"]
    assert detail["properties"]["status"]["type"] == "integer"
    assert detail["properties"]["message"]["type"] == "string"
    assert set(detail["required"]) == {"status", "message"}


def test_key_present_fields_are_required_and_nullable(document: dict[str, Any]) -> None:
    # SPEC 2.3: amount_cents is "yes (key present)": required, may hold null.
    cost = document["components"]["schemas"]["CostEntry"]
    assert "amount_cents" in cost["required"]
    kinds = {s.get("type") for s in cost["properties"]["amount_cents"]["oneOf"]}
    assert kinds == {"integer", "null"}
    assert cost["properties"]["created_at"]["format"] == "date-time"


def test_cli_prints_the_served_description(document: dict[str, Any]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "airoi", "openapi"],
        capture_output=True,
        text=True,
        check=True,
        env={"AIROI_DATABASE_URL": "sqlite:///:memory:", "PATH": ""},
    )
    assert json.loads(result.stdout) == document


def integer_schemas(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The integer branches of a property's schema (itself, or its oneOf/anyOf options)."""
    options = [schema, *schema.get("oneOf", ()), *schema.get("anyOf", ())]
    return [o for o in options if o.get("type") == "integer" or "integer" in (o.get("type") or ())]


def test_every_id_cent_and_count_is_int64(document: dict[str, Any]) -> None:
    # SEMANTICS R13 (ids are BIGINT), R38 (amounts fit 64 bits, and pass 2**31): a generator
    # types a plain integer as 32-bit.
    seen = 0
    for name, schema in document["components"]["schemas"].items():
        for field, prop in schema.get("properties", {}).items():
            for option in integer_schemas(prop):
                if (name, field) == ("ErrorDetail", "status"):  # an HTTP status code
                    assert (option["format"], option["minimum"], option["maximum"]) == (
                        "int32",
                        100,
                        599,
                    )
                    continue
                assert option.get("format") == "int64", (name, field)
                seen += 1
    assert seen >= 50
    for path, item in document["paths"].items():
        for param in item["get"].get("parameters", []):
            if param["name"] == "id" or param["name"].endswith("_id"):
                assert param["schema"]["format"] == "int64", (path, param["name"])


def test_conditional_and_refused_answers_are_declared(document: dict[str, Any]) -> None:
    rate_limit = {
        f"{prefix}RateLimit-{part}"
        for prefix in ("", "X-")
        for part in ("Limit", "Remaining", "Reset")
    }
    for path, item in document["paths"].items():
        op = item["get"]
        responses = op["responses"]
        assert op.get("tags"), path
        # Every GET under /api/v1 is tagged and may be answered 304 (airoi.conditional).
        assert "content" not in responses["304"], path
        assert {"ETag", "X-Request-Id"} <= set(responses["200"]["headers"]), path
        assert {"ETag", "X-Request-Id"} <= set(responses["304"]["headers"]), path
        if path == "/api/v1/openapi.json":
            # Needs no token, so it is never counted against a budget.
            assert not rate_limit & set(responses["200"]["headers"])
            continue
        assert rate_limit <= set(responses["200"]["headers"]), path
        assert rate_limit <= set(responses["304"]["headers"]), path
        for status in ("429", "503"):
            assert "Retry-After" in responses[status]["headers"], (path, status)
            schema = responses[status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorBody"}
        for headers in (r.get("headers", {}) for r in responses.values()):
            for header in headers.values():
                assert header["schema"]["type"] in {"string", "integer"}
                assert header["description"]
                assert not header.get("required")


def test_spec_field_notes_are_described(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]

    def described(name: str, field: str) -> str:
        text: str = schemas[name]["properties"][field].get("description", "")
        return text

    # SPEC 2's notes, each next to its field.
    assert "positive means under budget" in described("BudgetRow", "variance_cents")
    assert "exactly when status is approved" in described("ValueEntry", "counts_toward_roi")
    assert "group spend by" in described("CostEntry", "vendor_id").lower()
    assert "null is not zero" in described("RoiSummary", "roi")
    assert "person must reconnect" in described("Integration", "reauth_required_at")
    texts = [
        prop["description"]
        for schema in schemas.values()
        for prop in schema.get("properties", {}).values()
        if "description" in prop
    ]
    assert len(set(texts)) >= 100


def test_declared_headers_are_served(
    client: TestClient[Litestar], engine: Engine, document: dict[str, Any]
) -> None:
    b = BundleBuilder()
    account = b.account()
    token = b.token(b.user(account))
    b.initiative(account)
    b.load(engine)
    declared = document["paths"]["/api/v1/initiatives"]["get"]["responses"]
    # Access-Control-Allow-Origin is sent only to an Origin AIROI_CORS_ORIGINS allows.
    for answer in declared.values():
        answer["headers"] = {
            name: header
            for name, header in answer.get("headers", {}).items()
            if name != "Access-Control-Allow-Origin"
        }
    ok = client.get("/api/v1/initiatives", headers=bearer(token))
    assert ok.status_code == 200
    assert {name.lower() for name in declared["200"]["headers"]} <= set(ok.headers.keys())
    again = client.get(
        "/api/v1/initiatives", headers={**bearer(token), "If-None-Match": ok.headers["etag"]}
    )
    assert again.status_code == 304
    assert again.content == b""
    assert {name.lower() for name in declared["304"]["headers"]} <= set(again.headers.keys())
