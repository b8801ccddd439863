"""What the OpenAPI description says beyond what the framework writes from the handlers: the
bounds every value keeps, the errors every operation can answer, its tags and who to ask.

The common API linters (Spectral's `spectral:oas` and OWASP rulesets, Redocly's `recommended`)
ask each integer for a format and bounds, each string for a length, each array for a size,
each operation for its 401, 429 and 500, and the document for declared tags, a contact and a
licence. Each bound here is one the service keeps: integers are 64-bit (SEMANTICS R38), a text
is at most what a load takes (`airoi.load.values.MAX_TEXT`), a list at most what a page or a
list field holds. What the linters ask that the contract does not allow is listed in
docs/api.md with the clause that keeps it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from airoi import __version__
from airoi.listing import MAX_LIMIT
from airoi.load.values import MAX_LIST_ITEMS, MAX_TEXT
from airoi.serving import MAX_TARGET_BYTES

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
# A served date-time (2026-03-01T09:30:00.125Z, SEMANTICS R3) and a date.
TEXT_LENGTHS: Final = {"date-time": 24, "date": 10}
MAX_ITEMS: Final = max(MAX_LIMIT, MAX_LIST_ITEMS)
LIMITED: Final = frozenset({"maxLength", "enum", "const"})
ERROR_BODY: Final = {"$ref": "#/components/schemas/ErrorBody"}
TAGS: Final = {
    "ROI": "The ROI summary and its breakdowns (SPEC 4.A.3, SEMANTICS R37).",
    "Initiatives": "AI initiatives and their business cases.",
    "Costs": "Cost entries, each with its amount in the account currency.",
    "Value": "Value entries; only approved value counts toward ROI.",
    "Metrics": "Metrics and their readings (observations).",
    "Budgets": "Budget against spend, one row per initiative.",
    "Business cases": "Each initiative's business case against its actuals (SEMANTICS R43-R45).",
    "Decisions": "Portfolio decisions, immutable once written.",
    "Connections": "The account's connections (integrations).",
    "Deletions": "Tombstones of removed rows, for copies that stay exact (SEMANTICS R34).",
    "Description": "This description.",
}
# docs/operating.md: AIROI_CORS_ORIGINS names the origins a browser page may read from.
CORS_HEADER: Final = {
    "description": (
        "The request's Origin, when AIROI_CORS_ORIGINS allows it; absent otherwise (the "
        "default: no origin is allowed)."
    ),
    "required": False,
    "schema": {"type": "string", "format": "uri", "maxLength": 2048},
}
INVALID_QUERY: Final = "A query parameter the operation does not take (SEMANTICS R12)."
ERRORS: Final = {
    "401": "The token is missing or not valid (SEMANTICS R29); the message says why.",
    "429": "Too many requests from this user: wait Retry-After seconds (SEMANTICS R39).",
    "500": "The service failed; the request id names it in the log.",
}


def _schemas(node: Any) -> Iterator[dict[str, Any]]:
    """Every schema object in the document (anything with a `type`), depth first."""
    if isinstance(node, dict):
        if isinstance(node.get("type"), str | list):
            yield node
        for value in node.values():
            yield from _schemas(value)
    elif isinstance(node, list):
        for item in node:
            yield from _schemas(item)


def _types(schema: dict[str, Any]) -> set[str]:
    kinds = schema["type"]
    return set(kinds) if isinstance(kinds, list) else {kinds}


def _bound(schema: dict[str, Any]) -> None:
    kinds = _types(schema)
    if "integer" in kinds:
        # An integer bounded inside 32 bits (an HTTP status, a page's limit) says so.
        low, high = schema.get("minimum", INT64_MIN), schema.get("maximum", INT64_MAX)
        narrow = low >= -(2**31) and high < 2**31
        schema.setdefault("format", "int32" if narrow else "int64")
        schema.setdefault("minimum", low)
        schema.setdefault("maximum", high)
    if "string" in kinds and not LIMITED & schema.keys():
        schema["maxLength"] = TEXT_LENGTHS.get(schema.get("format", ""), MAX_TEXT)
    if "array" in kinds and "maxItems" not in schema:
        schema["maxItems"] = MAX_ITEMS


def _declared_errors(operation: dict[str, Any], headers: dict[str, Any]) -> None:
    responses = operation.setdefault("responses", {})
    for status, description in ERRORS.items():
        if status in responses:
            continue
        answer: dict[str, Any] = {
            "description": description,
            "content": {"application/json": {"schema": ERROR_BODY}},
        }
        if status == "429":
            answer["headers"] = headers
        responses[status] = answer


def described(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with what the linters ask of it that the service keeps (in place)."""
    info = document.setdefault("info", {})
    info.setdefault("contact", {"name": "The operator of this service"})
    info.setdefault("license", {"name": "MIT", "identifier": "MIT"})
    info.setdefault("version", __version__)
    for server in document.get("servers", []):
        server.setdefault("x-internal", False)
    used: set[str] = set()
    rate_limited: dict[str, Any] = {}
    for item in document.get("paths", {}).values():
        for operation in (value for value in item.values() if isinstance(value, dict)):
            used.update(operation.get("tags", ()))
            limited = operation.get("responses", {}).get("429", {}).get("headers")
            if limited:
                rate_limited = limited
    for item in document.get("paths", {}).values():
        for operation in (value for value in item.values() if isinstance(value, dict)):
            if "security" not in operation:
                operation["security"] = []  # public: it needs no token
            if operation["security"]:
                _declared_errors(operation, rate_limited)
            else:
                responses = operation.setdefault("responses", {})
                for status, description in (("400", INVALID_QUERY), ("500", ERRORS["500"])):
                    responses.setdefault(
                        status,
                        {
                            "description": description,
                            "content": {"application/json": {"schema": ERROR_BODY}},
                        },
                    )
            for answer in operation.get("responses", {}).values():
                answer.setdefault("headers", {}).setdefault(
                    "Access-Control-Allow-Origin", CORS_HEADER
                )
    document["tags"] = [
        {"name": name, "description": TAGS.get(name, name)} for name in sorted(used)
    ]
    # A query value is bounded by the request's target (longer is answered 414): a bound of
    # its own would make a longer value one the service must refuse, and it need not (a
    # date-time may carry an offset and any fraction of a second, SEMANTICS R3).
    for item in document.get("paths", {}).values():
        for operation in (value for value in item.values() if isinstance(value, dict)):
            for parameter in operation.get("parameters", ()):
                for schema in _schemas(parameter.get("schema")):
                    if "string" in _types(schema) and not LIMITED & schema.keys():
                        schema["maxLength"] = MAX_TARGET_BYTES
    for schema in list(_schemas(document)):
        _bound(schema)
    return document
