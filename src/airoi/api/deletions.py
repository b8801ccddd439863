"""GET /deletions (SEMANTICS R34): the tombstones are airoi.reports.deletions's."""

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
from airoi.listing import (
    parse_updated_since,
    served_rows,
)
from airoi.reports.deletions import DELETIONS, DeletionList, Resource
from airoi.store_access import keyset_page


@get(
    "/deletions",
    operation_id="listDeletions",
    summary="List deleted rows",
    description=(
        "One tombstone for every row a list served that has since been removed, oldest "
        "first by deleted_at. updated_since matches deleted_at (inclusive). A copy drops the "
        "row of that resource and id unless its updated_at is later than deleted_at (the row "
        "was given again). An initiative's tombstone also removes its budget row."
    ),
    responses=ERROR_RESPONSES,
    operation_class=ApiOperation,
    tags=["Deletions"],
    # A keyset page: on the event loop on SQLite, in a worker thread otherwise (airoi.store_access).
)
@keyset_page
def list_deletions(
    request: ApiRequest,
    limit: Limit = 100,
    cursor: Cursor = None,
    updated_since: UpdatedSince = None,
    resource: Annotated[
        Resource | None, Parameter(description="Only tombstones of rows of this list.")
    ] = None,
) -> DeletionList:
    reading = reading_of(request)
    page = DELETIONS.served(
        reading.db,
        reading.principal.account_id,
        cursors=reading.cursors,
        cursor=cursor,
        limit=limit,
        updated_since=parse_updated_since(updated_since),
        resource=resource,
    )
    return DeletionList(data=served_rows(page), page=page.info)
