"""GET /decisions (SPEC 2.8, 4.A.11)."""

from typing import Annotated

from litestar import get
from litestar.params import Parameter

from airoi.api.common import (
    ERROR_RESPONSES,
    ApiOperation,
    ApiRequest,
    Cursor,
    InitiativeFilter,
    Limit,
    UpdatedSince,
    reading_of,
)
from airoi.listing import parse_updated_since, served_rows
from airoi.reports.decisions import DECISIONS, DecisionList
from airoi.store_access import keyset_page
from airoi.vocabulary import Outcome


@get(
    "/decisions",
    operation_id="listDecisions",
    summary="List portfolio decisions",
    description=(
        "Portfolio decisions on initiatives, each immutable once written, with the figures as "
        "they stood at decision time (a snapshot, not a recomputation)."
    ),
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Decisions"],
    # A keyset page: on the event loop on SQLite, in a worker thread otherwise (airoi.store_access).
)
@keyset_page
def list_decisions(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    initiative_id: InitiativeFilter = None,
    outcome: Annotated[
        Outcome | None, Parameter(description="Only decisions with this outcome.")
    ] = None,
) -> DecisionList:
    reading = reading_of(request)
    page = DECISIONS.served(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        updated_since=parse_updated_since(updated_since),
        initiative_id=initiative_id,
        outcome=outcome,
    )
    return DecisionList(data=served_rows(page), page=page.info)
