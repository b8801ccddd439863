"""GET /value_entries (SPEC 2.4, 4.A.7)."""

from datetime import date
from typing import Annotated, Any, Literal

import msgspec
from litestar import get
from litestar.params import Parameter
from sqlalchemy import select

from airoi.api.common import (
    ERROR_RESPONSES,
    Cursor,
    DateTimeText,
    DbDep,
    InitiativeFilter,
    Limit,
    PeriodFrom,
    PeriodTo,
    PrincipalDep,
    Source,
    UpdatedSince,
    account_rows,
    source_of,
    text_datetime,
)
from airoi.db.tables import value_entries
from airoi.listing import PageInfo, fetch_page

ValueStatus = Literal["draft", "calculated", "reviewed", "approved", "disputed", "archived"]


class ValueEntry(msgspec.Struct):
    id: int
    initiative_id: int
    amount_cents: int | None
    currency: str | None
    status: ValueStatus
    counts_toward_roi: bool
    entry_type: str | None
    period_start: date | None
    period_end: date | None
    is_estimated: bool
    confidence_score: float | None
    quality_score: float | None
    notes: str | None
    provenance: str | None
    calculation_version: int | None
    formula_id: int | None
    source: Source
    approved_at: DateTimeText | None
    created_at: DateTimeText
    updated_at: DateTimeText


class ValueEntryList(msgspec.Struct):
    data: list[ValueEntry]
    page: PageInfo


def build_value_entry(row: Any) -> ValueEntry:
    return ValueEntry(
        id=row.id,
        initiative_id=row.initiative_id,
        amount_cents=row.amount_cents,
        currency=row.currency,
        status=row.status,
        # SEMANTICS R14: only approved value counts toward ROI.
        counts_toward_roi=row.status == "approved",
        entry_type=row.entry_type,
        period_start=row.period_start,
        period_end=row.period_end,
        is_estimated=row.is_estimated,
        confidence_score=row.confidence_score,
        quality_score=row.quality_score,
        notes=row.notes,
        provenance=row.provenance,
        calculation_version=row.calculation_version,
        formula_id=row.formula_id,
        source=source_of(row),
        approved_at=text_datetime(row.approved_at),
        created_at=text_datetime(row.created_at) or "",
        updated_at=text_datetime(row.updated_at) or "",
    )


@get(
    "/value_entries",
    operation_id="listValueEntries",
    summary="List value entries",
    description=(
        "Value the account's initiatives have produced or claim, oldest change first. Only "
        "entries with status approved (counts_toward_roi true) count toward reported ROI; "
        "summing every row disagrees with GET /roi."
    ),
    responses=ERROR_RESPONSES,
    sync_to_thread=False,
)
def list_value_entries(
    principal: PrincipalDep,
    db: DbDep,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    initiative_id: InitiativeFilter = None,
    period_from: PeriodFrom = None,
    period_to: PeriodTo = None,
    status: Annotated[
        ValueStatus | None, Parameter(description="Only entries with this status.")
    ] = None,
) -> ValueEntryList:
    query = account_rows(
        db,
        principal,
        select(value_entries),
        value_entries,
        updated_since=updated_since,
        initiative_id=initiative_id,
        period_from=period_from,
        period_to=period_to,
    )
    if status is not None:
        query = query.where(value_entries.c.status == status)
    page = fetch_page(
        db,
        "value_entries",
        query,
        value_entries,
        cursor=cursor,
        limit=limit,
        build=build_value_entry,
    )
    return ValueEntryList(data=list(page.rows), page=page.info)
