"""tests/tools/derive.py: a tool result made from an API row Struct keeps its fields' types and
descriptions, in the order asked, and refuses what it cannot carry over."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from airoi.reports.fields import Cents, note
from tests.tools.derive import derived


class Base(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Owner(msgspec.Struct):
    """Somebody."""

    id: int
    name: str


class Row(msgspec.Struct):
    """A row."""

    id: int
    kind: Annotated[Literal["a", "b"], note("Which kind.")]
    amount_cents: Annotated[Cents | None, note("Cents.")]
    owners: list[Owner]
    owner: Annotated[Owner | None, note("The owner.")]


class Renamed(msgspec.Struct, rename={"from_": "from"}):
    from_: str


OwnerRef = derived("OwnerRef", Owner, base=Base)


def test_all_fields_in_order_with_types_and_descriptions() -> None:
    model = derived("RowRef", Row, base=Base, refs={Owner: OwnerRef})
    schema = model.model_json_schema()
    assert list(schema["properties"]) == ["id", "kind", "amount_cents", "owners", "owner"]
    assert schema["description"] == "A row."
    assert schema["properties"]["kind"] == {
        "description": "Which kind.",
        "enum": ["a", "b"],
        "title": "Kind",
        "type": "string",
    }
    assert schema["properties"]["amount_cents"]["description"] == "Cents."
    assert schema["properties"]["amount_cents"]["anyOf"] == [{"type": "integer"}, {"type": "null"}]
    assert schema["properties"]["owner"]["description"] == "The owner."
    assert schema["required"] == ["id", "kind", "amount_cents", "owners", "owner"]
    row = model(id=1, kind="a", amount_cents=None, owners=[{"id": 2, "name": "Ann"}], owner=None)
    assert row.model_dump() == {
        "id": 1,
        "kind": "a",
        "amount_cents": None,
        "owners": [{"id": 2, "name": "Ann"}],
        "owner": None,
    }
    with pytest.raises(ValidationError):
        model(id=1, kind="c", amount_cents=None, owners=[], owner=None)


def test_picked_and_own_fields_in_the_order_given() -> None:
    model = derived(
        "Picked",
        Row,
        "kind",
        ("extra", bool, Field(description="Only the tool has it.")),
        "id",
        base=Base,
    )
    schema = model.model_json_schema()
    assert list(schema["properties"]) == ["kind", "extra", "id"]
    assert schema["properties"]["extra"]["description"] == "Only the tool has it."
    assert "description" not in schema  # a part of the row is not the row


def test_what_cannot_be_carried_over_is_refused() -> None:
    with pytest.raises(TypeError, match="no field 'nope'"):
        derived("X", Row, "nope", base=Base)
    with pytest.raises(TypeError, match="no tool model is given for Owner"):
        derived("X", Row, "owner", base=Base)
    with pytest.raises(TypeError, match="renamed on the wire"):
        derived("X", Renamed, base=Base)
