"""The client's table of column types is the served OpenAPI description's, and the frames
and the dlt source read that one table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airoi.client import Client, column_types
from airoi.client.column_types import COLUMNS
from airoi.client.dlt_source import DATE_COLUMNS, rest_api_config
from airoi.client.frames import (
    DECLARED,
    LEAF_KINDS,
    NULL_OBJECTS,
    NULL_OBJECTS_OF,
    kind_of,
    rows_to_arrow,
)
from airoi.client.schema import derive, render

REGENERATE = (
    "the served description differs from src/airoi/client/column_types.py; regenerate it: "
    "airoi openapi | python -m airoi.client.schema > src/airoi/client/column_types.py"
)


def test_the_table_is_derived_from_the_served_description(api: Client) -> None:
    description = api.get_json("/openapi.json")
    derived = derive(description)
    assert derived == COLUMNS, REGENERATE
    assert render(derived) == Path(column_types.__file__).read_text(), REGENERATE
    assert set(COLUMNS) == {
        "budgets",
        "business_cases",
        "cost_entries",
        "decisions",
        "deletions",
        "initiatives",
        "integrations",
        "metrics",
        "observations",
        "value_entries",
    }


def test_a_field_name_has_one_kind_in_every_list() -> None:
    # Rows of no named list (`airoi pull` passes none) are typed by field name alone.
    kinds: dict[str, set[str]] = {}
    for columns in COLUMNS.values():
        for path, (kind, _) in columns.items():
            kinds.setdefault(path.rpartition(".")[2], set()).add(kind)
    assert {leaf for leaf, found in kinds.items() if len(found) > 1} == set()
    assert LEAF_KINDS["amount_cents"] == "int"
    assert (kind_of("period_start"), kind_of("updated_at"), kind_of("name")) == (
        "date",
        "datetime",
        "",
    )
    # A field a newer service adds is typed by its ending.
    assert (kind_of("refund_cents"), kind_of("archived_at"), kind_of("colour")) == (
        "int",
        "datetime",
        "",
    )


def _description(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "paths": {
            "/api/v1/things": {
                "get": {
                    "responses": {
                        "200": {
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/ThingList"}
                                }
                            }
                        }
                    }
                }
            },
            "/api/v1/things/{id}": {"get": {}},
        },
        "components": {
            "schemas": {
                "ThingList": {
                    "type": "object",
                    "properties": {
                        "data": {"type": "array", "items": {"$ref": "#/components/schemas/Thing"}}
                    },
                },
                "Thing": {"type": "object", "properties": row},
                "Person": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "integer", "format": "int64"},
                        "name": {"type": "string"},
                    },
                },
            }
        },
    }


def test_derive_reads_kinds_nullability_and_nested_objects() -> None:
    row = {
        "id": {"type": "integer", "format": "int64"},
        "amount_cents": {"oneOf": [{"type": "integer", "format": "int64"}, {"type": "null"}]},
        "ratio": {"type": "number"},
        "locked": {"type": "boolean"},
        "on": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "kind": {"type": ["null", "string"], "enum": ["a", None]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "owner": {"oneOf": [{"$ref": "#/components/schemas/Person"}, {"type": "null"}]},
        "author": {"$ref": "#/components/schemas/Person"},
    }
    assert derive(_description(row)) == {
        "things": {
            "id": ("int", False),
            "amount_cents": ("int", True),
            "ratio": ("float", False),
            "locked": ("bool", False),
            "on": ("date", False),
            "at": ("datetime", False),
            "kind": ("text", True),
            "tags": ("list", False),
            # A field of an object that may be null may be null itself.
            "owner.id": ("int", True),
            "owner.name": ("text", True),
            "author.id": ("int", False),
            "author.name": ("text", False),
        }
    }


def test_frames_and_dlt_read_the_one_table() -> None:
    assert DECLARED["budgets"]["current_version_set_by_name"] == ("text", True)
    assert DECLARED["cost_entries"]["amount_cents"] == ("int", True)
    assert NULL_OBJECTS["owner"] == {"id": None, "name": None}
    assert NULL_OBJECTS_OF["cost_entries"]["source"] == {
        "type": None,
        "ref": None,
        "connection_id": None,
    }
    # An initiative's source is text: a null one is one null column, with or without the
    # list named (`airoi pull` names none).
    assert "source" not in NULL_OBJECTS_OF["initiatives"]
    assert "source" not in NULL_OBJECTS
    for resource in ("initiatives", None):
        names = rows_to_arrow([{"id": 1, "source": None}], resource).column_names
        assert "source" in names
        assert "source_type" not in names
    assert rows_to_arrow([{"id": 1, "source": None}]).column_names == ["id", "source"]
    assert NULL_OBJECTS["current_version_set_by"] == {"id": None, "name": None}
    assert "set_by" in NULL_OBJECTS["current_version"]
    assert DATE_COLUMNS["budgets"] == (
        "as_of",
        "budget_started_on",
        "current_version__effective_from",
        "current_version__ends_on",
    )
    assert DATE_COLUMNS["cost_entries"] == ("period_start", "period_end", "reported_on")
    resources = {r["name"]: r for r in rest_api_config("http://h/api/v1", "t")["resources"]}
    assert resources["decisions"]["columns"] == {"next_review_on": {"data_type": "date"}}
    assert resources["metrics"]["columns"] == {}
