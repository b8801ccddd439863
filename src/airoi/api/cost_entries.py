"""GET /cost_entries (SPEC 2.3, 4.A.6)."""

from datetime import date
from typing import Any, Literal

import msgspec
from litestar import get
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
from airoi.db.tables import cost_entries
from airoi.listing import PageInfo, fetch_page


class CostEntry(msgspec.Struct):
    id: int
    initiative_id: int
    amount_cents: int | None
    currency: str | None
    cost_type: str | None
    cost_category: Literal["capex", "opex"]
    period_start: date | None
    period_end: date | None
    vendor_id: int | None
    vendor_name: str | None
    description: str | None
    notes: str | None
    is_estimated: bool
    locked: bool
    source: Source
    created_at: DateTimeText
    updated_at: DateTimeText


class CostEntryList(msgspec.Struct):
    data: list[CostEntry]
    page: PageInfo


def build_cost_entry(row: Any) -> CostEntry:
    return CostEntry(
        id=row.id,
        initiative_id=row.initiative_id,
        amount_cents=row.amount_cents,
        currency=row.currency,
        cost_type=row.cost_type,
        cost_category=row.cost_category,
        period_start=row.period_start,
        period_end=row.period_end,
        vendor_id=row.vendor_id,
        vendor_name=row.vendor_name,
        description=row.description,
        notes=row.notes,
        is_estimated=row.is_estimated,
        locked=row.locked,
        source=source_of(row),
        created_at=text_datetime(row.created_at) or "",
        updated_at=text_datetime(row.updated_at) or "",
    )


@get(
    "/cost_entries",
    operation_id="listCostEntries",
    summary="List cost entries",
    description=(
        "Everything the account's initiatives have cost, oldest change first. Group spend by "
        "vendor_id (names may differ after vendors are merged). With period_from/period_to an "
        "entry belongs to the period its period_start falls in."
    ),
    responses=ERROR_RESPONSES,
    sync_to_thread=False,
)
def list_cost_entries(
    principal: PrincipalDep,
    db: DbDep,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    initiative_id: InitiativeFilter = None,
    period_from: PeriodFrom = None,
    period_to: PeriodTo = None,
) -> CostEntryList:
    query = account_rows(
        db,
        principal,
        select(cost_entries),
        cost_entries,
        updated_since=updated_since,
        initiative_id=initiative_id,
        period_from=period_from,
        period_to=period_to,
    )
    page = fetch_page(
        db,
        "cost_entries",
        query,
        cost_entries,
        cursor=cursor,
        limit=limit,
        build=build_cost_entry,
    )
    return CostEntryList(data=list(page.rows), page=page.info)
