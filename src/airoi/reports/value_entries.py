"""The value entries as served (SPEC 2.4, 4.A.7): the row, its columns and its list."""

from datetime import date
from typing import Annotated

import msgspec
from sqlalchemy import bindparam

from airoi.db.tables import value_entries
from airoi.listing import ResumablePageInfo, ShapedList
from airoi.reports.fields import (
    ACCOUNT_AMOUNT,
    INITIATIVE_MUST_EXIST,
    REPORTED_ON,
    Cents,
    CreatedAt,
    DateTimeText,
    EntryAmount,
    EntryCurrency,
    Id,
    Int64,
    Source,
    UpdatedAt,
    entry_filters,
    note,
    source_shape,
)
from airoi.rows import Row, Shape, iso_ms
from airoi.vocabulary import ValueStatus


class ValueEntry(Row):
    id: Id
    initiative_id: Annotated[Id, note("The initiative the value belongs to.")]
    amount_cents: EntryAmount
    currency: EntryCurrency
    account_amount_cents: Annotated[Cents | None, ACCOUNT_AMOUNT]
    status: Annotated[
        ValueStatus,
        note(
            "draft, calculated, reviewed, approved, disputed or archived. Only approved entries "
            "count toward reported ROI: summing every row regardless of status disagrees with GET "
            "/roi."
        ),
    ]
    counts_toward_roi: Annotated[bool, note("True exactly when status is approved.")]
    entry_type: str | None
    period_start: date | None
    period_end: date | None
    reported_on: Annotated[date, REPORTED_ON]
    is_estimated: Annotated[bool, note("An estimate rather than a measured figure.")]
    confidence_score: float | None
    quality_score: float | None
    notes: Annotated[str | None, note("Free text written by a person.")]
    provenance: Annotated[
        str | None,
        note(
            "One phrase: synced from a connection, calculated from a formula, or entered by hand."
        ),
    ]
    calculation_version: Annotated[Int64 | None, note("Version of the formula that produced it.")]
    formula_id: Annotated[Id | None, note("The formula that produced it.")]
    source: Source
    approved_at: Annotated[DateTimeText | None, note("When it was approved.")]
    created_at: CreatedAt
    updated_at: UpdatedAt


class ValueEntryList(msgspec.Struct):
    data: list[ValueEntry]
    page: ResumablePageInfo


_c = value_entries.c
VALUE_ENTRY = Shape(
    ValueEntry,
    _c.id,
    _c.initiative_id,
    _c.amount_cents,
    _c.currency,
    _c.account_amount_cents,
    _c.status,
    # SEMANTICS R14: only approved value counts toward ROI.
    _c.status == "approved",
    _c.entry_type,
    _c.period_start,
    _c.period_end,
    _c.entry_date,
    _c.is_estimated,
    _c.confidence_score,
    _c.quality_score,
    _c.notes,
    _c.provenance,
    _c.calculation_version,
    _c.formula_id,
    source_shape(value_entries),
    iso_ms(_c.approved_at),
    iso_ms(_c.created_at),
    iso_ms(_c.updated_at),
)
VALUE_ENTRIES = ShapedList(
    "value_entries",
    VALUE_ENTRY,
    value_entries,
    {**entry_filters(value_entries, periods=True), "status": _c.status == bindparam("status")},
    must_exist=INITIATIVE_MUST_EXIST,
)
