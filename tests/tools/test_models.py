"""tools/models.py: a result that shows a served row declares the row's fields as its Struct
(reports/) does, so a field written in both places cannot drift.

Each such model is compared with the one `derived` makes from the Struct (its JSON schema,
in order: names, types, nullability, descriptions, required lists, titles). A field changed
in the Struct fails here until the model follows, and the other way round. The fields only
the tool has (its own) are taken from the model as written; only the Struct's are checked.
"""

from __future__ import annotations

import copy
import inspect
import json
from dataclasses import dataclass
from typing import Any, Literal

import msgspec
import pytest
from pydantic import BaseModel, Field

from airoi.reports import roi
from airoi.reports.breakdown import BreakdownRow
from airoi.reports.budgets import BudgetRow, CurrentVersion
from airoi.reports.business_cases import BusinessCaseRow
from airoi.reports.cost_entries import CostEntry
from airoi.reports.decisions import Decision
from airoi.reports.fields import Person, Source
from airoi.reports.initiatives import Initiative
from airoi.reports.integrations import Integration
from airoi.reports.observations import Observation
from airoi.reports.value_entries import ValueEntry
from airoi.tools import models
from tests.tools.derive import derived


@dataclass(frozen=True)
class Shown:
    """A tool model and the served row it shows: `picked`, the Struct's fields it takes (in
    any order; the rest of its fields are its own), or None for the whole row in the Struct's
    order. A part of a row describes itself; a whole row takes the Struct's docstring unless
    `own_doc`."""

    model: type[models.Result]
    struct: type[msgspec.Struct]
    picked: tuple[str, ...] | None = None
    own_doc: bool = False


SHOWN = [
    Shown(models.PersonRef, Person),
    Shown(models.SourceRef, Source),
    Shown(models.RoiCost, roi.RoiCost),
    Shown(
        models.RoiSummary,
        roi.RoiSummary,
        ("currency", "approved_value_cents", "total_cost_cents", "net_value_cents", "roi"),
    ),
    Shown(models.InitiativeItem, Initiative, ("id", "title", "stage")),
    Shown(
        models.BusinessCase,
        Initiative,
        (
            "expected_capex_cents",
            "expected_opex_cents",
            "expected_cost_savings_cents",
            "expected_revenue_uplift_cents",
            "roi_time_horizon_years",
            "confidence_score",
        ),
    ),
    Shown(models.BudgetVersionRef, CurrentVersion),
    Shown(models.Budget, BudgetRow, own_doc=True),
    Shown(models.PlanAgainstActuals, BusinessCaseRow, own_doc=True),
    Shown(
        models.CostItem,
        CostEntry,
        (
            "id",
            "amount_cents",
            "currency",
            "cost_category",
            "cost_type",
            "vendor_name",
            "description",
        ),
    ),
    Shown(
        models.ValueItem,
        ValueEntry,
        ("id", "amount_cents", "currency", "status", "counts_toward_roi", "entry_type"),
    ),
    Shown(
        models.InitiativeDetail,
        Initiative,
        ("id", "title", "description", "stage", "category", "is_sample", "owner"),
    ),
    Shown(
        models.IntegrationItem,
        Integration,
        ("id", "platform", "name", "status", "last_sync_status", "last_synced_at"),
    ),
    Shown(models.ConnectionRef, Integration, ("id", "name", "status", "last_synced_at")),
    Shown(models.BreakdownItem, BreakdownRow),
    Shown(models.DecisionItem, Decision),
    Shown(models.ReadingItem, Observation),
]
# The nested rows: each Struct shown inside another as its tool model.
REFS: dict[type[msgspec.Struct], type[BaseModel]] = {
    Person: models.PersonRef,
    Source: models.SourceRef,
    CurrentVersion: models.BudgetVersionRef,
}
# The results that show no served row's fields: the tool's own through and through.
OWN = {
    models.RoiScope,  # the tool says when id and title are null; the API leaves them out
    models.RoiPeriod,
    models.InitiativeListResult,
    models.NoteItem,
    models.SearchHit,
    models.SearchResult,
    models.IntegrationListResult,
    models.RoiBreakdown,
    models.DecisionListResult,
    models.BusinessCaseListResult,
    models.ReadingListResult,
    models.HelpArticle,
    models.PlatformSetupGuide,
}


def reference(shown: Shown) -> type[BaseModel]:
    """The model `shown.model` would be if made from its Struct's fields (`derived`)."""
    model = shown.model
    if shown.picked is None:
        doc = model.__doc__ if shown.own_doc else None
        return derived(model.__name__, shown.struct, base=models.Result, refs=REFS, doc=doc)
    fields = model.model_fields
    not_shown = set(shown.picked) - set(fields)
    assert not not_shown, f"{model.__name__} does not show {sorted(not_shown)}"
    chosen: list[Any] = [
        name if name in shown.picked else (name, info.annotation, copy.copy(info))
        for name, info in fields.items()
    ]
    return derived(
        model.__name__, shown.struct, *chosen, base=models.Result, refs=REFS, doc=model.__doc__
    )


def schema_text(model: type[BaseModel], mode: Literal["validation", "serialization"]) -> str:
    """The model's JSON schema as text, so the order of fields and lists counts too."""
    return json.dumps(model.model_json_schema(mode=mode), indent=1, ensure_ascii=False)


@pytest.mark.parametrize("shown", SHOWN, ids=[s.model.__name__ for s in SHOWN])
@pytest.mark.parametrize("mode", ["validation", "serialization"])
def test_a_model_shows_its_rows_fields_as_the_struct_declares_them(
    shown: Shown, mode: Literal["validation", "serialization"]
) -> None:
    assert schema_text(shown.model, mode) == schema_text(reference(shown), mode)


def test_every_result_is_either_held_to_a_struct_or_its_own() -> None:
    results = {
        value
        for value in vars(models).values()
        if inspect.isclass(value)
        and issubclass(value, models.Result)
        and value is not models.Result
    }
    held = {shown.model for shown in SHOWN}
    assert not held & OWN
    assert results == held | OWN


def test_a_field_that_drifts_from_its_struct_is_caught() -> None:
    """The comparison itself: a copy of a model with one Struct field's description changed
    is told apart from the Struct's."""

    class CostItem(models.CostItem):
        vendor_name: str | None = Field(description="Something else.")

    shown = Shown(CostItem, CostEntry, ("id", "vendor_name"))
    assert schema_text(CostItem, "validation") != schema_text(reference(shown), "validation")
