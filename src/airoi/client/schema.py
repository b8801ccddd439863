"""The column types of each list, derived from the service's OpenAPI description.

The client is installed without the server, so it cannot build the description itself: the
table it reads is `airoi.client.column_types`, written by this module from the output of
`airoi openapi` and checked against the served description by a test
(tests/client/test_column_types.py):

    airoi openapi | python -m airoi.client.schema > src/airoi/client/column_types.py

A column is named by its path in the row, the parts joined with `.` (`owner.name`,
`current_version.set_by.id`): frames flatten it with `_`, dlt's rest_api source with `__`.
Its kind is one of `int` (integer, int64), `float` (number), `bool`, `date` (string, format
date), `datetime` (string, format date-time), `list` (an array of strings) and `text` (any
other string); it is nullable when the field or any object it sits in may be null.
"""

from __future__ import annotations

import json
import sys
from typing import Any

Kind = str
# A column: (kind, nullable).
Column = tuple[Kind, bool]

API_PREFIX = "/api/v1/"


def _resolve(schemas: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    resolved: dict[str, Any] = schemas[str(ref).rpartition("/")[2]]
    return resolved


def _alternatives(node: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """The non-null alternatives of a field's schema, and whether null is one of them."""
    alternatives = node.get("oneOf") or node.get("anyOf") or [node]
    kept: list[dict[str, Any]] = []
    nullable = False
    for alternative in alternatives:
        types = alternative.get("type")
        if types == "null":
            nullable = True
            continue
        if isinstance(types, list):
            nullable = nullable or "null" in types
            rest = [t for t in types if t != "null"]
            kept.append({**alternative, "type": rest[0] if len(rest) == 1 else rest})
            continue
        kept.append(alternative)
    return kept, nullable


def _kind(node: dict[str, Any]) -> Kind:
    kind = node.get("type")
    if kind == "integer":
        return "int"
    if kind == "number":
        return "float"
    if kind == "boolean":
        return "bool"
    if kind == "array":
        return "list"
    if kind == "string":
        return {"date": "date", "date-time": "datetime"}.get(str(node.get("format")), "text")
    raise ValueError(f"No column kind for the schema {node!r}.")


def _columns_of(
    schemas: dict[str, Any], node: dict[str, Any], prefix: str, nullable: bool
) -> dict[str, Column]:
    columns: dict[str, Column] = {}
    for name, field in _resolve(schemas, node).get("properties", {}).items():
        alternatives, may_be_null = _alternatives(field)
        if len(alternatives) != 1:
            raise ValueError(f"{prefix}{name}: one type expected, got {alternatives!r}.")
        target = _resolve(schemas, alternatives[0])
        path = f"{prefix}{name}"
        if "properties" in target:
            columns.update(_columns_of(schemas, target, path + ".", nullable or may_be_null))
        else:
            columns[path] = (_kind(target), nullable or may_be_null)
    return columns


def derive(description: dict[str, Any]) -> dict[str, dict[str, Column]]:
    """Per list endpoint (`cost_entries`, ...), its columns in the order the rows give them."""
    schemas: dict[str, Any] = description["components"]["schemas"]
    tables: dict[str, dict[str, Column]] = {}
    for path, operations in description["paths"].items():
        resource = path.removeprefix(API_PREFIX)
        if "/" in resource or "{" in resource:
            continue
        answer = operations.get("get", {}).get("responses", {}).get("200", {})
        body = answer.get("content", {}).get("application/json", {}).get("schema")
        if body is None:
            continue
        data = _resolve(schemas, body).get("properties", {}).get("data")
        if data is None or data.get("type") != "array":
            continue  # not a list (/roi, /openapi.json)
        tables[resource] = _columns_of(schemas, data["items"], "", False)
    return dict(sorted(tables.items()))


def render(tables: dict[str, dict[str, Column]]) -> str:
    """The text of `airoi/client/column_types.py` for `tables`."""
    lines = [
        '"""The column types of each list: generated from `airoi openapi` by',
        "`python -m airoi.client.schema`; do not edit (see airoi.client.schema).",
        '"""',
        "",
        "from typing import Final",
        "",
        "# resource -> column path -> (kind, nullable)",
        "COLUMNS: Final[dict[str, dict[str, tuple[str, bool]]]] = {",
    ]
    for resource, columns in tables.items():
        lines.append(f"    {resource!r}: {{")
        lines.extend(
            f"        {path!r}: ({kind!r}, {nullable!r}),"
            for path, (kind, nullable) in columns.items()
        )
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines).replace("'", '"') + "\n"


def main() -> None:
    sys.stdout.write(render(derive(json.load(sys.stdin))))


if __name__ == "__main__":
    main()
