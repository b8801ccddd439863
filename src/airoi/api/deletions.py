"""GET /deletions: the tombstones of rows a load removed (SEMANTICS R34).

A copy made with `updated_since` and cursors sees every row that changed, but a removed
row simply stops being served. Each tombstone names the list that served the row and its
id, stamped with the load that removed it; an initiative's also means its budget row is
gone. A row given again later is served again with a later `updated_at`, so a copy that
drops a row only when its own `updated_at` is not later than `deleted_at` stays equal to
the service in whatever order it applies the two.
"""

from typing import Annotated

import msgspec
from litestar import get
from litestar.params import Parameter
from sqlalchemy import bindparam

from airoi.api.common import (
    ERROR_RESPONSES,
    ApiOperation,
    ApiRequest,
    Cursor,
    Id,
    Limit,
    UpdatedSince,
    note,
    reading_of,
    timestamp,
)
from airoi.db.tables import deletions
from airoi.listing import (
    ResumablePageInfo,
    ShapedList,
    changed_since,
    parse_updated_since,
    served_rows,
)
from airoi.rows import Row, Shape, iso_ms
from airoi.store import keyset_page
from airoi.vocabulary import ServedList

Resource = ServedList


class Deletion(Row):
    resource: Annotated[Resource, note("The list the row was served in.")]
    id: Annotated[Id, note("The id of the row that was deleted.")]
    deleted_at: Annotated[str, timestamp("When the row was deleted.")]


class DeletionList(msgspec.Struct):
    data: list[Deletion]
    page: ResumablePageInfo


_c = deletions.c
DELETION = Shape(Deletion, _c.resource, _c.record_id, iso_ms(_c.deleted_at))
DELETIONS = ShapedList(
    "deletions",
    DELETION,
    deletions,
    {
        "updated_since": changed_since(deletions, "deleted_at"),
        "resource": _c.resource == bindparam("resource"),
    },
    order=("deleted_at", "seq"),
)


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
    # A keyset page: on the event loop on SQLite, in a worker thread otherwise (airoi.store).
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
