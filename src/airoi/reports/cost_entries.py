"""The cost entries as served (SPEC 2.3, 4.A.6): the row, its columns and its list."""

from datetime import date
from typing import Annotated

import msgspec

from airoi.db.tables import cost_entries
from airoi.listing import ResumablePageInfo, ShapedList
from airoi.reports.fields import (
    ACCOUNT_AMOUNT,
    INITIATIVE_MUST_EXIST,
    REPORTED_ON,
    Cents,
    CreatedAt,
    EntryAmount,
    EntryCurrency,
    Id,
    Source,
    UpdatedAt,
    entry_filters,
    note,
    source_shape,
)
from airoi.rows import Row, Shape, iso_ms
from airoi.vocabulary import CostCategory


class CostEntry(Row):
    id: Id
    initiative_id: Annotated[Id, note("The initiative the cost belongs to.")]
    amount_cents: EntryAmount
    currency: EntryCurrency
    account_amount_cents: Annotated[Cents | None, ACCOUNT_AMOUNT]
    cost_type: Annotated[
        str | None, note("Free kinds such as software, tokens, implementation, infrastructure.")
    ]
    cost_category: Annotated[
        CostCategory,
        note(
            "capex (one-time) or opex (running). Follows from the type unless changed by a person."
        ),
    ]
    period_start: date | None
    period_end: date | None
    reported_on: Annotated[date, REPORTED_ON]
    vendor_id: Annotated[
        Id | None,
        note(
            "The field to group spend by. Resolved from vendor_name when the entry is written; "
            "when two vendors are merged, vendor_id on existing entries is repointed and names are"
            " left alone, so one vendor's rows may carry several names. Null when no name was "
            "given; such spend is reported apart from any vendor."
        ),
    ]
    vendor_name: Annotated[str | None, note("Free text as recorded.")]
    description: str | None
    notes: str | None
    is_estimated: Annotated[bool, note("An estimate rather than an invoiced figure.")]
    locked: Annotated[bool, note("True when in a closed accounting period, so no sync changes it.")]
    source: Source
    created_at: CreatedAt
    updated_at: UpdatedAt


class CostEntryList(msgspec.Struct):
    data: list[CostEntry]
    page: ResumablePageInfo


_c = cost_entries.c
COST_ENTRY = Shape(
    CostEntry,
    _c.id,
    _c.initiative_id,
    _c.amount_cents,
    _c.currency,
    _c.account_amount_cents,
    _c.cost_type,
    _c.cost_category,
    _c.period_start,
    _c.period_end,
    _c.entry_date,
    _c.vendor_id,
    _c.vendor_name,
    _c.description,
    _c.notes,
    _c.is_estimated,
    _c.locked,
    source_shape(cost_entries),
    iso_ms(_c.created_at),
    iso_ms(_c.updated_at),
)
COST_ENTRIES = ShapedList(
    "cost_entries",
    COST_ENTRY,
    cost_entries,
    entry_filters(cost_entries, periods=True),
    must_exist=INITIATIVE_MUST_EXIST,
)
