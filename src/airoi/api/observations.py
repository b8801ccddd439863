"""GET /observations (SPEC 2.6, 4.A.9)."""

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
from airoi.reports.observations import OBSERVATIONS, ObservationList
from airoi.store_access import keyset_page


@get(
    "/observations",
    operation_id="listObservations",
    summary="List metric observations",
    description="Readings and baselines of the account's metrics, oldest change first.",
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Observations"],
    # A keyset page: on the event loop on SQLite, in a worker thread otherwise (airoi.store_access).
)
@keyset_page
def list_observations(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    initiative_id: InitiativeFilter = None,
    metric_key: Annotated[
        str | None,
        Parameter(
            description="Only readings of the metric with this canonical key.", max_length=200
        ),
    ] = None,
) -> ObservationList:
    reading = reading_of(request)
    page = OBSERVATIONS.served(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        updated_since=parse_updated_since(updated_since),
        initiative_id=initiative_id,
        metric_key=metric_key,
    )
    return ObservationList(data=served_rows(page), page=page.info)
