"""Every field SPEC 2 lists is carried by every interface that serves its row.

SPEC 2's tables (tests/api/spec_fields.md, a word-for-word copy of the section) are read, and each
field must be in the API's Struct (and so in the OpenAPI description and on the wire), in
the tool's result model where a tool serves the same row, and in the client's column types
(client/frames.py), which are decided by field name. A field added to SPEC and missed in
one of them fails here, naming the field and the place.
"""

from __future__ import annotations

import os
import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import msgspec
import pytest
from pydantic import BaseModel

from airoi.client.frames import NULL_OBJECTS, NULL_OBJECTS_OF, kind_of
from airoi.reports.budgets import FIGURES as BUDGET_FIGURES
from airoi.reports.budgets import BudgetList, BudgetRow, CurrentVersion
from airoi.reports.cost_entries import CostEntry, CostEntryList
from airoi.reports.decisions import Decision, DecisionList
from airoi.reports.fields import Person, Source
from airoi.reports.initiatives import Initiative, InitiativeList
from airoi.reports.integrations import Integration, IntegrationList
from airoi.reports.metrics import Metric, MetricList
from airoi.reports.observations import Observation, ObservationList
from airoi.reports.roi import RoiSummary
from airoi.reports.value_entries import ValueEntry
from airoi.tools import models as tool_models

SPEC_FIELDS = Path(__file__).with_name("spec_fields.md")


@dataclass(frozen=True)
class SpecTable:
    section: str  # "2.7"
    index: int  # its place among the section's tables, from 0
    label: str  # the line introducing the table, or the section's title
    fields: dict[str, str]  # name (dotted for nested) -> SPEC type


def spec_tables(text: str) -> list[SpecTable]:
    """The field tables of SPEC 2, each with its section and the line before it."""
    tables: list[SpecTable] = []
    section, label = "", ""
    rows: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            section, label = line.split()[1], line[3:]
            continue
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if rows is None:  # the header
                assert cells[:2] == ["Field", "Type"], line
                rows = {}
            elif not set(cells[0]) <= {"-"}:
                rows[cells[0]] = cells[1]
            continue
        if rows is not None:
            tables.append(SpecTable(section, _count(tables, section), label, rows))
            rows = None
        if line.strip():
            label = line.strip()
    if rows is not None:
        tables.append(SpecTable(section, _count(tables, section), label, rows))
    return tables


def _count(tables: list[SpecTable], section: str) -> int:
    return sum(1 for table in tables if table.section == section)


def person_fields(text: str) -> dict[str, str]:
    """SPEC 2.1's inline person reference: `{id: integer, name: string}`."""
    match = re.search(r"Person reference[^`]*`\{([^}]*)\}`", text)
    assert match, "SPEC 2.1 names the person reference's fields"
    return dict(part.strip().split(": ") for part in match.group(1).split(","))


TEXT = SPEC_FIELDS.read_text(encoding="utf-8")
TABLES = {(table.section, table.index): table for table in spec_tables(TEXT)}


def _nested(annotation: Any) -> Any:
    """The object type inside `X | None` or `list[X]`, else the annotation itself."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType, list):
        inner = [arg for arg in get_args(annotation) if arg is not type(None)]
        return _nested(inner[0]) if len(inner) == 1 else annotation
    return annotation


def wire_names(shape: Any) -> dict[str, Any]:
    """A Struct's or a pydantic model's fields by the names they are served under."""
    if isinstance(shape, type) and issubclass(shape, msgspec.Struct):
        return {f.encode_name: f.type for f in msgspec.structs.fields(shape)}
    assert isinstance(shape, type) and issubclass(shape, BaseModel), shape
    return {info.alias or name: info.annotation for name, info in shape.model_fields.items()}


def carries(shape: Any, dotted: str) -> bool:
    head, _, rest = dotted.partition(".")
    names = wire_names(shape)
    if head not in names:
        return False
    return not rest or carries(_nested(names[head]), rest)


def missing(shape: Any, table: SpecTable | dict[str, str]) -> list[str]:
    fields = table.fields if isinstance(table, SpecTable) else table
    return [name for name in fields if not carries(shape, name)]


# Each SPEC 2 table, with every interface that serves its row whole.
SOURCE, ENVELOPE, CURRENT_VERSION = ("2.1", 0), ("2.1", 1), ("2.7", 1)
SERVED: list[tuple[tuple[str, int], tuple[Any, ...]]] = [
    (SOURCE, (Source, tool_models.SourceRef)),
    (("2.2", 0), (Initiative,)),
    (("2.3", 0), (CostEntry,)),
    (("2.4", 0), (ValueEntry,)),
    (("2.5", 0), (Metric,)),
    (("2.6", 0), (Observation, tool_models.ReadingItem)),
    (("2.7", 0), (BudgetRow, tool_models.Budget)),
    (CURRENT_VERSION, (CurrentVersion, tool_models.BudgetVersionRef)),
    (("2.8", 0), (Decision, tool_models.DecisionItem)),
    (("2.9", 0), (Integration,)),
    (("2.10", 0), (RoiSummary, tool_models.RoiSummary)),
]
IDS = [f"{section}-{index}" for (section, index), _ in SERVED]
# What the client makes frames of: every row but the ROI summary (a dict from `api.roi()`).
FRAMED = [(key, shapes) for key, shapes in SERVED if key != ("2.10", 0)]
FRAMED_IDS = [f"{section}-{index}" for (section, index), _ in FRAMED]
LISTS = (
    BudgetList,
    CostEntryList,
    DecisionList,
    InitiativeList,
    IntegrationList,
    MetricList,
    ObservationList,
)


def test_the_copy_is_spec_section_2() -> None:
    """With AIROI_SPEC naming the contract's SPEC.md, the copy here must be its section 2."""
    spec = os.environ.get("AIROI_SPEC")
    if not spec:
        pytest.skip("set AIROI_SPEC to the contract's SPEC.md to compare the copy with it")
    section = re.search(
        r"^# 2\. .*?(?=^# 3\. )", Path(spec).read_text(encoding="utf-8"), re.M | re.S
    )
    assert section is not None
    copy = TEXT.split("\n", 2)[2]  # after the note saying what the file is
    assert copy.strip() == section.group(0).strip()


def test_spec_tables_are_read() -> None:
    # The reading itself: every table is found, with fields a test below could miss.
    assert {key for key, _ in SERVED} | {ENVELOPE} == set(TABLES)
    assert TABLES[SOURCE].label.startswith("Source object")
    assert TABLES[ENVELOPE].label.startswith("List envelope")
    assert TABLES[CURRENT_VERSION].label == "current_version object:"
    assert "submitted_for_review_at" in TABLES[("2.2", 0)].fields
    assert TABLES[CURRENT_VERSION].fields["set_by"] == "person reference, null"
    assert "cost.opex_cents" in TABLES[("2.10", 0)].fields
    assert person_fields(TEXT) == {"id": "integer", "name": "string"}


@pytest.mark.parametrize(("key", "shapes"), SERVED, ids=IDS)
def test_every_spec_field_is_served(key: tuple[str, int], shapes: tuple[Any, ...]) -> None:
    table = TABLES[key]
    for shape in shapes:
        assert missing(shape, table) == [], f"SPEC {table.section} ({table.label}): {shape}"


def test_person_and_envelope_fields_are_served() -> None:
    person = person_fields(TEXT)
    for shape in (Person, tool_models.PersonRef):
        assert missing(shape, person) == [], shape
    envelope = TABLES[ENVELOPE]
    for shape in LISTS:
        assert missing(shape, envelope) == [], shape


# SPEC 2's types and the column type the client gives a field of each (frames.kind_of).
CLIENT_KINDS = {
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "string (date)": "date",
    "string (datetime)": "datetime",
    "array": "list",
}
NESTED = ("person reference", "source object", "object")


def _client_kind(spec_type: str) -> str | None:
    for spec, kind in CLIENT_KINDS.items():
        if spec_type.startswith(spec):
            return kind
    return None


@pytest.mark.parametrize(("key", "shapes"), FRAMED, ids=FRAMED_IDS)
def test_the_client_types_every_spec_field(key: tuple[str, int], shapes: tuple[Any, ...]) -> None:
    """A field the client does not know by name would come out as text (or Arrow's guess)."""
    table = TABLES[key]
    wrong = {}
    for dotted, spec_type in table.fields.items():
        leaf = dotted.rsplit(".", 1)[-1]
        kind = _client_kind(spec_type)
        if kind is not None and kind_of(leaf) != kind:
            wrong[dotted] = (spec_type, kind_of(leaf))
    assert wrong == {}, f"SPEC {table.section} ({table.label})"


def test_the_client_flattens_every_nested_object_with_its_spec_fields() -> None:
    """A null nested object becomes its fields' columns, null (frames.NULL_OBJECTS)."""
    person = list(person_fields(TEXT))
    nested = {}
    for key, _ in SERVED:
        if key == CURRENT_VERSION:
            continue
        for name, spec_type in TABLES[key].fields.items():
            if spec_type.startswith(NESTED) and "." not in name:
                nested[name] = spec_type
    assert nested, "SPEC 2 has nested objects"
    for name, spec_type in nested.items():
        if spec_type.startswith("person reference"):
            expected = person
        elif spec_type.startswith("source object"):
            # A cost or value entry's source; an initiative's `source` is text (SPEC 2.2).
            for resource in ("cost_entries", "value_entries"):
                assert list(NULL_OBJECTS_OF[resource][name]) == list(TABLES[SOURCE].fields)
            continue
        else:
            assert name == "current_version", name
            expected = list(TABLES[CURRENT_VERSION].fields)
        assert list(NULL_OBJECTS[name]) == expected, name
    current_version = TABLES[CURRENT_VERSION].fields
    assert list(NULL_OBJECTS["current_version_set_by"]) == person
    assert current_version["set_by"].startswith("person reference")


def test_the_budget_figures_are_the_rows_fields_but_those_it_is_given() -> None:
    """finance/budgets.py computes the row (a dataclass, as finance imports nothing of the
    API); the row is made from it by name, so the two lists must stay one."""
    given = {"initiative_id", "currency", "as_of"}
    assert set(BUDGET_FIGURES) | given == set(BudgetRow.__struct_fields__)
    assert not set(BUDGET_FIGURES) & given
