"""GET /integrations (SPEC 2.9, 4.A.12). Credentials, settings and error prose are never read."""

from typing import Annotated

from litestar import get
from litestar.params import Parameter

from airoi.api.common import (
    ERROR_RESPONSES,
    ApiOperation,
    ApiRequest,
    Cursor,
    Limit,
    UpdatedSince,
    reading_of,
)
from airoi.listing import parse_updated_since, served_rows
from airoi.reports.integrations import INTEGRATIONS, IntegrationList
from airoi.store_access import keyset_page
from airoi.vocabulary import IntegrationStatus


@get(
    "/integrations",
    operation_id="listIntegrations",
    summary="List connections",
    description=(
        "The account's connections to other platforms, with status and last sync. "
        "Credentials, stored settings and error prose are never served."
    ),
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Integrations"],
    # A keyset page: on the event loop on SQLite, in a worker thread otherwise (airoi.store_access).
)
@keyset_page
def list_integrations(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    platform: Annotated[
        str | None, Parameter(description="Only connections to this platform.", max_length=100)
    ] = None,
    status: Annotated[
        IntegrationStatus | None, Parameter(description="Only connections with this status.")
    ] = None,
) -> IntegrationList:
    reading = reading_of(request)
    page = INTEGRATIONS.served(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        updated_since=parse_updated_since(updated_since),
        platform=platform,
        status=status,
    )
    return IntegrationList(data=served_rows(page), page=page.info)
